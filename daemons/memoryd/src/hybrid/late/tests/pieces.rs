//! What the question's pieces find beside the words: a paraphrase sharing no word with
//! the question, while an exact code still comes first and a candidate without pieces
//! keeps the merge's order.

use super::*;

/// The LoCoMo turn the stage was built for, in its conversation as LoCoMo has it, and
/// turns of another talk that hold the question's words ("Audrey", "take care").
const LILIES: &str = "Audrey: They're called Peruvian Lilies. They are so awesome - they have \
    such bright colors and delicate petals.";
const Q_FLOWERS: &str = "What kind of flowers does Audrey take care of?";
const GARDEN: &[&str] = &[
    "Audrey: It's going great! The flowers are looking great and my veggie patch is coming along.",
    "Andrew: Those flowers look great! What kind are they?",
    LILIES,
    "Andrew: They're beautiful! So vibrant and eye-catching. Are they difficult to care for?",
    "Audrey: Nope, they're easy to take care of, perfect for me! Just gotta water them and make \
     sure they get enough sun.",
];
const TAKE_CARE: &[&str] = &[
    "Andrew: Take care of yourself, Audrey!",
    "Audrey: I take care of the dogs every morning before work.",
    "Andrew: Audrey, take care and talk soon!",
    "Andrew: You take such good care of your pups.",
    "Audrey: I take care of my grandma on Sundays.",
    "Andrew: We went hiking with the dogs on Saturday.",
    "Audrey: I got a new tattoo on my arm last week.",
    "Andrew: Caring for a puppy takes a lot of patience.",
    "Andrew: What kind of music do you like, Audrey?",
];
/// Turns that hold the question's "flowers", none of them the answer.
const FLOWERS: &[&str] = &[
    "Andrew: I bought flowers for my mom's birthday.",
    "Audrey: The dogs knocked over the flowers on the table.",
    "Andrew: What kind of dog food do you buy?",
];

#[test]
fn a_paraphrase_with_no_shared_word_is_found_by_its_pieces() {
    let Some(m) = model() else { return };
    let e = embedded(
        m,
        &[
            ("garden", 0, GARDEN),
            ("chat", 0, TAKE_CARE),
            ("more", 0, FLOWERS),
        ],
    );
    let hits = e.late(Q_FLOWERS, DataClass::Private, 10);
    let lilies = at(&hits, LILIES);
    // Second at worst: the partner's question holding "flowers" and "kind" may come
    // first, as LoCoMo marks either.
    assert!(lilies < 2, "{hits:?}");
    for t in TAKE_CARE.iter().chain(FLOWERS) {
        assert!(lilies < at(&hits, t), "{t:?} before the lilies: {hits:?}");
    }
    // The merge alone (recall before this stage) has every turn holding "flowers"
    // ahead of it, and some holding "take care".
    let merged = e.merge_alone(Q_FLOWERS, DataClass::Private, 10);
    assert!(at(&merged, LILIES) >= 3, "{merged:?}");
}

#[test]
fn exact_codes_still_come_first_with_late_interaction() {
    let Some(m) = model() else { return };
    let code = "ticket 4471 is open";
    let e = embedded(
        m,
        &[(
            "main",
            0,
            &[
                "The plumber fixed the broken boiler heating, the ticket is closed",
                "The broken boiler heating needs a plumber",
                code,
            ],
        )],
    );
    let q = "was the broken boiler heating fixed by the plumber, ticket 4471?";
    let hits = e.late(q, DataClass::Private, 5);
    assert_eq!(hits[0], code, "{hits:?}");
}

#[test]
fn a_candidate_without_pieces_keeps_the_merges_order() {
    let Some(m) = model() else { return };
    let e = embedded(m, &[("garden", 0, GARDEN), ("chat", 0, TAKE_CARE)]);
    let merged = e.merge_alone(Q_FLOWERS, DataClass::Private, 10);
    assert_ne!(e.late(Q_FLOWERS, DataClass::Private, 10), merged);
    // The backfill has not reached one of the candidates yet.
    e.ix.conn()
        .execute("DELETE FROM vec_pieces WHERE id = ?1", [e.id(TAKE_CARE[0])])
        .unwrap();
    assert_eq!(e.late(Q_FLOWERS, DataClass::Private, 10), merged);
}
