//! Newer tellings first against a real index, with each row's word pieces written as the
//! worker stores them but made up here: records meant to tell the same thing get pieces a
//! few signs apart, others pieces of their own, and the question's pieces are one of a
//! telling's (the model is not needed to test the stage's rule; what the model calls
//! alike is measured in docs/measurements/memoryd.md, "Newer tellings first").

use super::*;
use crate::embed::bits::WORDS;
use crate::embed::late;
use crate::fixture::{user_at, World};
use crate::index::Budget;
use proto::label::DataClass;

/// Pieces of one made-up meaning: `n` codes drawn from `start`.
fn pieces(start: u64, n: usize) -> Vec<Bits> {
    let mut x = start
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            let mut p = [0u64; WORDS];
            for w in &mut p {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *w = x;
            }
            p
        })
        .collect()
}

/// `of` with a few signs of each piece turned over (which ones by `salt`): another
/// telling of the same thing.
fn retold(of: &[Bits], salt: u32) -> Vec<Bits> {
    of.iter()
        .map(|p| {
            let mut q = *p;
            q[0] ^= 0b1011 << salt;
            q[3] ^= 0b1_0000_0001 << salt;
            q
        })
        .collect()
}

/// A question whose pieces are the first two of `of`, as rows of the model.
fn asking(of: &[Bits]) -> Question {
    let rows: Vec<Vec<f32>> = of
        .iter()
        .take(2)
        .map(|p| {
            (0..DIM)
                .map(|i| {
                    if p[i / 64] >> (i % 64) & 1 == 1 {
                        1.0
                    } else {
                        -1.0
                    }
                })
                .collect()
        })
        .collect();
    Question::new(&rows)
}

/// An index of the owner's `lines` (time, text, pieces), in order, each row with its
/// pieces stored.
fn index_of(lines: &[(&str, &str, Vec<Bits>)]) -> (World, Index) {
    let world = World::new();
    let log: String = lines
        .iter()
        .map(|(t, s, _)| user_at(t, s).to_line())
        .collect();
    world.append("main", 0, &log);
    let mut ix = world.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    table::prepare(ix.conn(), "made up").unwrap();
    for (_, text, p) in lines {
        let id = id_of(&ix, text);
        ix.conn()
            .execute(
                "INSERT OR REPLACE INTO vec_pieces (id, pieces) VALUES (?1, ?2)",
                rusqlite::params![id, late::to_bytes(p)],
            )
            .unwrap();
    }
    (world, ix)
}

fn id_of(ix: &Index, text: &str) -> i64 {
    ix.conn()
        .query_row("SELECT rowid FROM docs WHERE text = ?1", [text], |r| {
            r.get(0)
        })
        .unwrap()
}

/// The hits `texts` in that order, as the ranking before the stage gives them.
fn ranked(ix: &Index, texts: &[&str]) -> Vec<(i64, Hit)> {
    let ids: Vec<i64> = texts.iter().map(|t| id_of(ix, t)).collect();
    let mut by_id: HashMap<i64, Hit> = ix
        .hits_by_ids(&ids, DataClass::Private)
        .unwrap()
        .into_iter()
        .collect();
    ids.iter()
        .map(|id| (*id, by_id.remove(id).unwrap()))
        .collect()
}

/// The stage's order of `texts` for `q` asked with `question`'s pieces.
fn order(ix: &Index, question: &Question, q: &str, texts: &[&str], limit: usize) -> Vec<String> {
    newer_first(NEWER, ix, question, q, None, ranked(ix, texts), limit)
        .unwrap()
        .into_iter()
        .map(|h| h.text)
        .collect()
}

const BISCUIT: &str = "We adopted a puppy! A little spaniel, we're calling him Biscuit.";
const OTIS: &str = "We've renamed the puppy, he's called Otis now.";
const WALK: &str = "Long walk along the canal this morning.";
const JAN: &str = "2025-01-10T09:00:00.000Z";
const MAR: &str = "2025-03-16T09:00:00.000Z";
const JUN: &str = "2025-06-01T09:00:00.000Z";
const NOW_ASKED: &str = "What is the puppy called now?";

/// The puppy's two names, a walk, and the question's pieces.
fn puppy() -> (World, Index, Question) {
    let dog = pieces(1, 12);
    let question = asking(&dog);
    let (w, ix) = index_of(&[
        (JAN, BISCUIT, dog.clone()),
        (MAR, OTIS, retold(&dog, 0)),
        (JUN, WALK, pieces(2, 7)),
    ]);
    (w, ix, question)
}

#[test]
fn the_latest_telling_of_a_changed_fact_ranks_above_the_earlier_one() {
    let (_w, ix, question) = puppy();
    assert_eq!(
        order(&ix, &question, NOW_ASKED, &[BISCUIT, WALK, OTIS], 10),
        [OTIS, WALK, BISCUIT]
    );
    assert_eq!(
        order(&ix, &question, NOW_ASKED, &[BISCUIT, OTIS, WALK], 10),
        [OTIS, BISCUIT, WALK]
    );
}

#[test]
fn the_hits_that_come_back_stay_the_same() {
    let (_w, ix, question) = puppy();
    // The later telling is below the hits asked for: it is not brought in.
    assert_eq!(
        order(&ix, &question, NOW_ASKED, &[BISCUIT, WALK, OTIS], 2),
        [BISCUIT, WALK]
    );
}

#[test]
fn a_question_not_about_the_present_keeps_the_ranking() {
    let (_w, ix, question) = puppy();
    for q in [
        "What was the puppy called before?",
        "What is the puppy called?",
    ] {
        assert_eq!(
            order(&ix, &question, q, &[BISCUIT, WALK, OTIS], 10),
            [BISCUIT, WALK, OTIS],
            "{q}"
        );
    }
    let span = crate::query::time::Span {
        from: "2025-01-01".into(),
        to: "2025-01-31".into(),
    };
    let kept = newer_first(
        NEWER,
        &ix,
        &question,
        "What is the puppy called now, as of January?",
        Some(&span),
        ranked(&ix, &[BISCUIT, WALK, OTIS]),
        10,
    )
    .unwrap();
    assert_eq!(kept[0].text, BISCUIT);
}

#[test]
fn about_now_reads_the_present_in_so_many_words() {
    for q in [
        "Where does Farah live now?",
        "Which city is Farah in these days?",
        "Who is my current boss?",
        "Which gym am I a member of at the moment?",
        "What name did we give our spaniel in the end?",
        "Where did Noor end up moving?",
    ] {
        assert!(about_now(q, None), "{q}");
    }
    for q in [
        "Where does Farah live?",
        "What town did Ines settle in?",
        "When is Ledgerly due?",
        "What happened towards the end of summer?",
        "How long has Caroline had her current group of friends for?",
    ] {
        assert!(!about_now(q, None), "{q}");
    }
}

#[test]
fn hits_telling_different_things_keep_their_order() {
    let (_w, ix, question) = puppy();
    // The walk is later than the first telling, and like nothing in it.
    assert_eq!(
        order(&ix, &question, NOW_ASKED, &[BISCUIT, WALK], 10),
        [BISCUIT, WALK]
    );
}

#[test]
fn a_later_telling_about_another_subject_supersedes_nothing() {
    let date = pieces(7, 10);
    let (ledgerly, lantern) = (
        "Had to move Ledgerly's finish date, it's 18 June now.",
        "Had to move Lantern's finish date, it's 2 August now.",
    );
    let (_w, ix) = index_of(&[
        (JAN, ledgerly, date.clone()),
        (MAR, lantern, retold(&date, 1)),
    ]);
    assert_eq!(
        order(
            &ix,
            &asking(&date),
            "When is Ledgerly due now?",
            &[ledgerly, lantern],
            10
        ),
        [ledgerly, lantern]
    );
}

#[test]
fn an_earlier_telling_never_moves_above_a_later_one() {
    let (_w, ix, question) = puppy();
    assert_eq!(
        order(&ix, &question, NOW_ASKED, &[OTIS, WALK, BISCUIT], 10),
        [OTIS, WALK, BISCUIT]
    );
}

#[test]
fn a_third_telling_supersedes_the_second() {
    let lesson = pieces(3, 9);
    let (tue, wed, thu) = (
        "Spanish class is on Tuesday evenings.",
        "Spanish moved to Wednesdays, the teacher changed her schedule.",
        "Spanish is switching to Thursday evenings from next week.",
    );
    let (_w, ix) = index_of(&[
        (JAN, tue, lesson.clone()),
        (MAR, wed, retold(&lesson, 0)),
        (JUN, thu, retold(&lesson, 2)),
        ("2025-07-01T09:00:00.000Z", WALK, pieces(4, 7)),
    ]);
    assert_eq!(
        order(
            &ix,
            &asking(&lesson),
            "Which night is Spanish now?",
            &[wed, WALK, tue, thu],
            10
        ),
        [thu, WALK, wed, tue]
    );
}

#[test]
fn a_hit_without_pieces_stays_where_it_is() {
    let dog = pieces(1, 12);
    let (w, mut ix) = index_of(&[(JAN, BISCUIT, dog.clone()), (JUN, WALK, pieces(2, 7))]);
    // Otis is logged but the backfill has not reached it.
    w.append("main", 0, &user_at(MAR, OTIS).to_line());
    ix.catch_up(Budget::UNLIMITED).unwrap();
    assert_eq!(
        order(&ix, &asking(&dog), NOW_ASKED, &[BISCUIT, WALK, OTIS], 10),
        [BISCUIT, WALK, OTIS]
    );
}

#[test]
fn alike_is_one_for_the_same_pieces_and_low_for_others() {
    let a = pieces(5, 10);
    assert!((alike(&a, &a) - 1.0).abs() < 1e-6);
    assert!(alike(&a, &retold(&a, 0)) > NEWER.same);
    assert!(alike(&a, &pieces(6, 10)) < NEWER.same);
    assert_eq!(alike(&a, &[]), 0.0);
}
