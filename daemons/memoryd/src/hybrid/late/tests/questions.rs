//! Questions against their answers: an owner's earlier question, or earlier ones naming
//! the same month or year, never outrank the answer; a name in the question still counts;
//! a reply is matched through the question before it; the one record holding a code stays
//! first.

use super::*;

#[test]
fn an_owners_earlier_question_does_not_outrank_the_answer() {
    let Some(m) = model() else { return };
    let answer = "The boat is called Wavedancer, painted blue.";
    let earlier = "What is the boat called?";
    let e = embedded(
        m,
        &[
            ("notes", 0, &[answer]),
            (
                "owner",
                0,
                &[
                    earlier,
                    "I am not sure, I don't remember its name.",
                    "What was the name of the boat again?",
                    "Which name did we give the boat?",
                ],
            ),
        ],
    );
    let q = "What is the boat called?";
    let hits = e.late(q, DataClass::Private, 5);
    assert_eq!(hits[0], answer, "{hits:?}");
    // The stage alone, the earlier question first in the merge: asking again is not
    // an answer.
    assert_eq!(
        e.rerank_only(q, &[earlier, answer], DataClass::Private),
        [answer, earlier]
    );
}

/// What the words find first (every word of the question, or the time it names, or the
/// name it asks about) stays first after the stage: the merge's order weighs names,
/// time cues and rare words, and the pieces must not undo it.
#[test]
fn where_words_find_the_answer_first_late_interaction_keeps_it_first() {
    let Some(m) = model() else { return };
    let lines = [
        "The wifi password at the cabin is pine-cone-77",
        "The router at the cabin sits in the loft",
        "Our dentist is Dr. Alvarez on Queen Street",
        "The dentist said to floss every evening",
        "Juniper the cat sees Dr. Okafor at the vet",
        "The cat food is kept in the hallway cupboard",
    ];
    let e = embedded(m, &[("main", 0, &lines)]);
    for (q, answer) in [
        ("cabin wifi password", lines[0]),
        ("dentist Alvarez", lines[2]),
        ("Juniper vet", lines[4]),
    ] {
        let words = e.ix.search_at(q, DataClass::Private, 5, NOW).unwrap();
        assert_eq!(words[0].hit.text, answer, "{q}: words alone find it first");
        let hits = e.late(q, DataClass::Private, 5);
        assert_eq!(hits[0], answer, "{q}: {hits:?}");
    }
}

#[test]
fn a_name_in_the_question_still_beats_a_record_about_another_person() {
    let Some(m) = model() else { return };
    let caroline = "Caroline painted a sunrise over the lake last summer";
    let melanie = "Melanie painted a sunrise over the lake last summer";
    let e = embedded(m, &[("main", 0, &[caroline, melanie])]);
    let hits = e.late(
        "What did Caroline paint at the lake?",
        DataClass::Private,
        5,
    );
    assert_eq!(hits[0], caroline, "{hits:?}");
}

/// Fails: the stage scores both records by their pieces alike and the merge's place
/// (1/11 against 1/12) is all that is left of the month; the merge alone puts October
/// first. Remove the ignore when the stage weighs the question's time span.
#[test]
fn a_question_naming_a_month_still_prefers_the_records_from_that_month() {
    let Some(m) = model() else { return };
    // The October record is the longer and the older: bm25 and recency both prefer March.
    let october = "Booked the car in for a service at the garage on Elm Road";
    let march = "Booked the car in for its service at the garage";
    let e = embedded_at(
        m,
        &[(
            "main",
            0,
            vec![
                ("2023-10-12T09:00:00.000Z", october),
                ("2024-03-02T09:00:00.000Z", march),
            ],
        )],
    );
    let q = "when did I book the car service at the garage in October 2023?";
    let words = e.ix.search_at(q, DataClass::Private, 5, NOW).unwrap();
    assert_eq!(words[0].hit.text, october, "words alone prefer October");
    let merged = e.merge_alone(q, DataClass::Private, 5);
    assert_eq!(merged[0], october, "the merge alone prefers October");
    let hits = e.late(q, DataClass::Private, 5);
    assert_eq!(hits[0], october, "{hits:?}");
}

/// The owner asking in sequence: earlier questions naming a year, and the replies that
/// repeat them, hold no code of a later question naming a day of that year. Read as
/// codes, "1" and "2023" pinned every record holding them first, and the earlier
/// askings took the first hits from the answer.
#[test]
fn earlier_questions_naming_the_same_year_are_not_pinned_above_the_answer() {
    let Some(m) = model() else { return };
    let answer = "Gina: I found the perfect spot for my clothing store, a corner shop downtown!";
    let asked = [
        "What setback did Melanie face in October 2023?",
        "You asked: What setback did Melanie face in October 2023?",
        "How many times has Melanie gone to the beach in 2023?",
        "You asked: How many times has Melanie gone to the beach in 2023?",
    ];
    let e = embedded_at(
        m,
        &[
            (
                "chat",
                0,
                vec![
                    (
                        "2023-02-01T10:00:00.000Z",
                        "Jon: Hey Gina, any news about the shop?",
                    ),
                    ("2023-02-01T10:01:00.000Z", answer),
                    ("2023-02-01T10:02:00.000Z", "Jon: Wow, that is great news!"),
                ],
            ),
            ("owner", 0, asked.iter().map(|a| (T, *a)).collect()),
        ],
    );
    let q = "What did Gina find for her clothing store on 1 February, 2023?";
    let hits = e.late(q, DataClass::Private, 3);
    assert_eq!(hits[0], answer, "{hits:?}");
    assert!(asked.iter().all(|a| at(&hits, a) > 0), "{hits:?}");
}

/// A reply is matched through the turn it answers, the one just before it, above a turn
/// the same question merely follows: the same words, the question after them instead of
/// before, lend less.
#[test]
fn a_reply_is_matched_through_the_question_before_it_above_one_the_question_follows() {
    let Some(m) = model() else { return };
    // The same pieces as `ANSWER` (a space is no piece), in another talk where the
    // same question comes after it.
    let before_the_question = "Yes! It was amazing. ";
    let e = embedded(
        m,
        &[
            ("s", 0, &[ASKED, ANSWER]),
            ("t", 0, &[before_the_question, ASKED]),
        ],
    );
    assert!(e
        .ix
        .around(e.id(ANSWER), DataClass::Private)
        .unwrap()
        .iter()
        .any(|n| n.id == e.id(ASKED) && n.just_before));
    // The other first in the merge: only the turn before lifts the reply past it.
    assert_eq!(
        e.rerank_only(Q_TRIP, &[before_the_question, ANSWER], DataClass::Private),
        [ANSWER, before_the_question]
    );
}

/// An exact code still matches exactly when the only record holding it is an owner's
/// question: it stays pinned (below a record that says something about the code), not
/// weighed as a question among records near in meaning.
#[test]
fn the_only_record_holding_a_code_stays_first_even_when_it_is_a_question() {
    let Some(m) = model() else { return };
    let asked = "Why does backup job 4471 keep failing?";
    let e = embedded(
        m,
        &[(
            "s",
            0,
            &[
                asked,
                "The nightly backup job failed again on the NAS.",
                "Backups keep failing since the disk filled up.",
                "The backup job for the photos finished fine.",
                "Job queue for backups is stuck.",
            ],
        )],
    );
    let hits = e.late("what about job 4471?", DataClass::Private, 3);
    assert_eq!(hits[0], asked, "{hits:?}");
    let e = embedded(
        m,
        &[(
            "s",
            0,
            &[asked, "Job 4471 fails because its target disk is full."],
        )],
    );
    let hits = e.late("what about job 4471?", DataClass::Private, 3);
    assert_eq!(
        hits[..2],
        ["Job 4471 fails because its target disk is full.", asked],
        "{hits:?}"
    );
}
