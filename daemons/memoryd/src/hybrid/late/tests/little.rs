//! Late interaction when the words found little of the question
//! (`hybrid::Calibration::little`), against the real model as the module above.

use super::*;
use crate::hybrid::{recall_calibrated, Calibration, Seen, CALIBRATION, LITTLE_FLOOR};

/// The earlier remark a later one only makes sense with: the model puts it at about 0.21
/// from the trigger, below `MIN_COSINE`, and nearer than anything else in the history.
const CUE: &str = "Learning to say no has made me much less stressed.";
/// Said weeks later: it shares no word with the remark it recalls.
const TRIGGER: &str = "I ended up volunteering for that project, and now I'm totally overwhelmed.";

/// Long turns about other things, each holding one word of the trigger.
const LONG_TURNS: [&str; 4] = [
    "Project Gutenberg hosts sixty thousand free e-books, mostly older literature whose \
     copyright has expired.",
    "The bridge project across the estuary will use prestressed concrete beams and open \
     in the spring of next year.",
    "The ferry timetable changes on the first of May, with fewer crossings on Sundays and \
     none after nine; totally normal for the season.",
    "Our road resurfacing project closes the north lane between the roundabout and the \
     station for three weeks in June.",
];

/// The recall of `TRIGGER` under `cal` in a history of `texts`, the vector side asked
/// as a recall asks it (down to `LITTLE_FLOOR`).
fn recalled(m: &'static Embedder, texts: &[&str], cal: Calibration) -> Vec<String> {
    hits_of(m, texts, TRIGGER, cal)
        .into_iter()
        .map(|h| h.text)
        .collect()
}

/// The hits of `q` under `cal` in a history of `texts`, as `recalled`.
fn hits_of(m: &'static Embedder, texts: &[&str], q: &str, cal: Calibration) -> Vec<Hit> {
    let e = embedded(m, &[("main", 0, texts)]);
    let (v, pieces) = m.embed_question(q).unwrap();
    let near = e.store.nearest(
        &quant::encode(&v),
        u8::MAX,
        CANDIDATES as usize,
        LITTLE_FLOOR,
    );
    let s = Seen {
        near: &near,
        pieces: Some(&pieces),
        embedded: &|_| true,
    };
    recall_calibrated(cal, &e.ix, s, q, DataClass::Private, 10, NOW).unwrap()
}

/// Regression: a remark recalled by a later one that shares none of its words ranked
/// below long turns each holding one word of it ("project"), or was not a candidate at
/// all when its cosine was below `MIN_COSINE`, though the vector side put it first
/// (docs/memoryd.md, "When the words found little").
#[test]
fn a_short_remark_beats_long_turns_sharing_one_word_when_the_words_found_little() {
    let Some(m) = model() else { return };
    let mut texts: Vec<&str> = LONG_TURNS.to_vec();
    texts.insert(2, CUE);
    let now = recalled(m, &texts, CALIBRATION);
    assert_eq!(at(&now, CUE), 0, "{now:?}");
    // Without the rule the long turns are the hits and the remark is not among them.
    let before = recalled(
        m,
        &texts,
        Calibration {
            little: -1.0,
            ..CALIBRATION
        },
    );
    assert!(at(&before, CUE) > at(&now, CUE), "{before:?}");
}

/// The vector side's rows below `MIN_COSINE` count only when the words found little: a
/// turn holding the whole question keeps them out of the hits.
#[test]
fn a_record_below_the_floor_is_no_hit_when_the_words_found_the_question() {
    let Some(m) = model() else { return };
    let whole = "I ended up volunteering for the project and now I'm totally overwhelmed.";
    let mut texts: Vec<&str> = LONG_TURNS.to_vec();
    texts.insert(2, CUE);
    texts.push(whole);
    let hits = recalled(m, &texts, CALIBRATION);
    assert_eq!(at(&hits, whole), 0, "{hits:?}");
    assert_eq!(at(&hits, CUE), usize::MAX, "{hits:?}");
}

/// The floor still keeps a question about nothing in the history from recalling noise:
/// with no word of it found, the rows below `MIN_COSINE` are no hits.
#[test]
fn a_question_sharing_no_word_with_the_history_recalls_nothing_below_the_floor() {
    let Some(m) = model() else { return };
    let mut texts: Vec<&str> = LONG_TURNS.to_vec();
    texts.insert(2, CUE);
    let q = "Why am I so exhausted after agreeing to everything?";
    let hits = hits_of(m, &texts, q, CALIBRATION);
    let floor = (MIN_COSINE * f32::from(proto::memory::FULLY_RELEVANT)).round() as u16;
    assert!(hits.iter().all(|h| h.relevance >= floor), "{hits:?}");
}
