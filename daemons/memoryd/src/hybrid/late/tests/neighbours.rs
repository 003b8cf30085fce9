//! What a neighbour's pieces lend a record found only through them: a place below a
//! record that matches the question itself, and nothing across an epoch or session
//! boundary or from above the caller's class.

use super::*;

/// A turn that matches the question by itself.
const HOLDER: &str = "Nate's trip to the Grand Canyon was wonderful.";

#[test]
fn a_record_found_only_through_its_neighbours_pieces_ranks_below_one_that_matches_itself() {
    let Some(m) = model() else { return };
    let alone = "Yes! It was great.";
    let e = embedded(
        m,
        &[
            ("main", 0, &[ASKED, ANSWER]),
            ("other", 0, &[HOLDER]),
            ("third", 0, &["Okay, see you soon.", alone]),
        ],
    );
    // The reply by itself says next to nothing of the trip.
    assert!(
        e.own_match(Q_TRIP, ANSWER) < e.own_match(Q_TRIP, HOLDER) / 2.0,
        "the reply matches the question by itself"
    );
    let hits = e.late(Q_TRIP, DataClass::Private, 10);
    let answer = at(&hits, ANSWER);
    assert!(answer < hits.len(), "the answer is found: {hits:?}");
    assert!(at(&hits, HOLDER) < answer, "{hits:?}");
    assert!(answer < at(&hits, alone), "{hits:?}");
    // The stage alone, the answer ahead in the merge: its neighbour's match lifts it
    // past a like reply with no such neighbour, and not past the turn that matches by
    // itself (a neighbour's match counts less than one's own).
    assert_eq!(
        e.rerank_only(Q_TRIP, &[alone, ANSWER], DataClass::Private),
        [ANSWER, alone]
    );
    assert_eq!(
        e.rerank_only(Q_TRIP, &[ANSWER, HOLDER], DataClass::Private),
        [HOLDER, ANSWER]
    );
}

#[test]
fn a_neighbours_pieces_never_lift_a_record_across_an_epoch_or_session_boundary() {
    let Some(m) = model() else { return };
    // Like replies: one after the question in its own log, one opening the next epoch
    // and one another session's, whose rows sit right after the question's by row id.
    let (next_epoch, other_session) = ("Yes!! It was amazing.", "Yes, it was amazing!");
    let e = embedded(
        m,
        &[
            ("a", 0, &["Small talk first.", ASKED]),
            ("a", 1, &[next_epoch]),
            ("b", 0, &[other_session]),
            (
                "d",
                0,
                &["Nate, how was the trip to the Grand Canyon?", ANSWER],
            ),
        ],
    );
    let asked = e.id(ASKED);
    for t in [next_epoch, other_session] {
        assert!(
            e.id(t) - asked <= 2,
            "{t:?} is not next to the question by row id"
        );
        assert!(!e
            .ix
            .around(e.id(t), DataClass::Private)
            .unwrap()
            .iter()
            .any(|n| n.id == asked));
    }
    // The two across a boundary go first in the merge; only the reply in the
    // question's own log is lifted past them.
    let order = e.rerank_only(
        Q_TRIP,
        &[next_epoch, other_session, ANSWER],
        DataClass::Private,
    );
    assert_eq!(order[0], ANSWER, "{order:?}");
    let hits = e.late(Q_TRIP, DataClass::Private, 10);
    assert!(
        at(&hits, ANSWER) < at(&hits, next_epoch).min(at(&hits, other_session)),
        "{hits:?}"
    );
}

#[test]
fn a_neighbour_above_the_callers_class_lends_nothing() {
    let Some(m) = model() else { return };
    // Matches the question in part by itself (a trip), less than the question lends.
    let reference = "We went on a trip to the lake.";
    let e = embedded(m, &[("s", 0, &[ASKED, ANSWER]), ("t", 0, &[reference])]);
    // In FTS5's content table itself (`class` is `c6`): an update of `docs` is a
    // delete and an insert, which drops the row's vector and pieces with it.
    let set_class = |text: &str, class: i64| {
        e.ix.conn()
            .execute(
                "UPDATE docs_content SET c6 = ?1 WHERE id = ?2",
                rusqlite::params![class, e.id(text)],
            )
            .unwrap();
    };
    let order = |max_class| e.rerank_only(Q_TRIP, &[reference, ANSWER], max_class);
    // All public: the question lends its match and the answer passes the reference.
    for t in [ASKED, ANSWER, reference] {
        set_class(t, 0);
    }
    assert_eq!(order(DataClass::Public), [ANSWER, reference]);
    // The question above the answer's own class: it lends nothing, whoever asks.
    set_class(ASKED, 1);
    assert_eq!(order(DataClass::Private), [reference, ANSWER]);
    assert_eq!(order(DataClass::Secret), [reference, ANSWER]);
    // Both private: a private caller is lent the question's match, a public one is not.
    set_class(ANSWER, 1);
    assert_eq!(order(DataClass::Private), [ANSWER, reference]);
    assert_eq!(order(DataClass::Public), [reference, ANSWER]);
    let asked = e.id(ASKED);
    assert!(e
        .ix
        .around(e.id(ANSWER), DataClass::Private)
        .unwrap()
        .iter()
        .any(|n| n.id == asked));
    assert!(!e
        .ix
        .around(e.id(ANSWER), DataClass::Public)
        .unwrap()
        .iter()
        .any(|n| n.id == asked));
}
