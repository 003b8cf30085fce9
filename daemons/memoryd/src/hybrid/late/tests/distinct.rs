//! Late interaction's last pick, copies after records saying something else
//! (`hybrid::distinct`), against the real model as the module above.

use super::*;
use crate::hybrid::distinct::{Distinct, OFF};
use crate::hybrid::{recall_calibrated, Calibration, Seen, CALIBRATION};

/// Regression: in a long history of small talk about a project, copies of a few
/// everyday remarks about it (a greeting or a sign-off apart) took the first places,
/// and the record saying what it is built with came after all of them
/// (docs/memoryd.md, "Hits that say something else").
#[test]
fn copies_of_everyday_remarks_do_not_hold_every_place() {
    let Some(m) = model() else { return };
    let answer = "Settled it: Heron will be Django with Postgres.";
    let remarks = [
        "picked a new font for the Heron landing page",
        "picked the speaker for the Heron tech meetup",
    ];
    let openers = [
        "",
        "By the way, ",
        "Hmm, ",
        "Also, ",
        "Quick one: ",
        "Right, ",
    ];
    let closers = ["", " Thoughts?", " Anyway.", " Long day."];
    let mut talk: Vec<String> = Vec::new();
    for (i, opener) in openers.iter().enumerate() {
        for (j, closer) in closers.iter().enumerate() {
            let remark = remarks[(i + j) % remarks.len()];
            talk.push(format!("{opener}{remark}.{closer}"));
        }
    }
    let mut texts: Vec<&str> = talk.iter().map(String::as_str).collect();
    texts.insert(texts.len() / 2, answer);
    let e = embedded(m, &[("main", 0, &texts)]);
    let q = "Which tech did I pick for Heron?";
    let (near, pieces) = e.ask(q, DataClass::Private);
    let hits = |distinct: Distinct| {
        let cal = Calibration {
            distinct,
            ..CALIBRATION
        };
        let s = Seen {
            near: &near,
            pieces: Some(&pieces),
            embedded: &|_| true,
        };
        let hits = recall_calibrated(cal, &e.ix, s, q, DataClass::Private, 3, NOW).unwrap();
        hits.into_iter().map(|h| h.text).collect::<Vec<_>>()
    };
    let now = hits(CALIBRATION.distinct);
    assert!(at(&now, answer) < 3, "{now:?}");
    // Without the rule the copies hold the first places.
    let before = hits(OFF);
    assert!(at(&before, answer) > at(&now, answer), "{before:?}");
}
