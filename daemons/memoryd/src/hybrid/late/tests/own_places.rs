//! Late interaction's head start for the vector side's own places
//! (`hybrid::Calibration::own_slots`), against the real model as the module above.

use super::*;
use crate::hybrid::{recall_calibrated, Calibration, Seen, CALIBRATION};

/// Regression: in a long history naming a friend in dozens of messages of small talk,
/// the words half filled the merge's places with them (each holds the question's one
/// shared word, the name) and the record saying the birthday, nearest in meaning,
/// entered late interaction with no head start at all (docs/memoryd.md, "The vector
/// side's own places").
#[test]
fn the_nearest_in_meaning_keeps_a_head_start_when_word_hits_share_only_a_name() {
    let Some(m) = model() else { return };
    let birthday = "Viktor turns 40 on 3 May.";
    let cities = [
        "Tallinn", "Ghent", "Lyon", "Utrecht", "Bologna", "Graz", "Brno", "Nantes", "Porto",
        "Malmo", "Krakow", "Leeds", "Bergen", "Turin", "Seville", "Aarhus",
    ];
    let mut talk: Vec<String> = Vec::new();
    for (i, city) in cities.iter().enumerate() {
        for round in 0..3 {
            talk.push(format!(
                "Viktor is back from a trip to {city}, round {round}."
            ));
            talk.push(format!(
                "Viktor and I argued about films for an hour ({i}, {round})."
            ));
            talk.push(format!(
                "Viktor sent me a ridiculous video of a goat in {city} ({round})."
            ));
            talk.push(format!(
                "Viktor is thinking about getting a cat, take {i}.{round}."
            ));
        }
    }
    let mut texts: Vec<&str> = talk.iter().map(String::as_str).collect();
    texts.insert(texts.len() / 2, birthday);
    let e = embedded(m, &[("main", 0, &texts)]);
    let q = "When should I send Viktor a card?";
    let (near, pieces) = e.ask(q, DataClass::Private);
    let seen = |own_slots: f32| {
        // Copies of the small talk left in their places (`hybrid::distinct` would move
        // them), so only the head start decides.
        let cal = Calibration {
            own_slots,
            distinct: crate::hybrid::distinct::OFF,
            ..CALIBRATION
        };
        let s = Seen {
            near: &near,
            pieces: Some(&pieces),
            embedded: &|_| true,
        };
        let hits = recall_calibrated(cal, &e.ix, s, q, DataClass::Private, 10, NOW).unwrap();
        hits.into_iter().map(|h| h.text).collect::<Vec<_>>()
    };
    let now = seen(CALIBRATION.own_slots);
    assert!(at(&now, birthday) < 10, "{now:?}");
    // Without the head start, the small talk holds all the first places.
    let before = seen(0.0);
    assert!(at(&before, birthday) > at(&now, birthday), "{before:?}");
}
