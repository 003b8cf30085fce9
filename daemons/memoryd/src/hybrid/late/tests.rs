//! Late interaction against a real index and the real model: session logs in a
//! temporary state directory, every row embedded as the daemon's worker does (its
//! vector and its pieces stored by `embed::table`), the question embedded as the
//! daemon's recall does. Without the model these say SKIPPED (`embed::tests::model_dir`).

use super::*;
use crate::embed::model::Embedder;
use crate::embed::quant;
use crate::embed::store::{Near, Store};
use crate::embed::table;
use crate::embed::vectors::MIN_COSINE;
use crate::fixture::{user_at, World};
use crate::hybrid::{recall_late, recall_with, CANDIDATES};
use crate::index::{class_rank, Budget};
use crate::query::time;
use std::sync::OnceLock;

const NOW: time::Day = (2026, 12, 1);
const T: &str = "2026-11-20T10:00:00.000Z";

/// The model, loaded once for every test of this module (it is some 90 MB).
fn model() -> Option<&'static Embedder> {
    static MODEL: OnceLock<Option<Embedder>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let dir = crate::embed::tests::model_dir()?;
            Some(Embedder::load(&dir).expect("load the model"))
        })
        .as_ref()
}

/// A state directory whose sessions are written, indexed and embedded.
struct Embedded {
    _world: World,
    ix: Index,
    store: Store,
    model: &'static Embedder,
}

/// One epoch's log: its session, its epoch and its owner's turns as (time, text).
type TimedLog<'a> = (&'a str, u64, Vec<(&'a str, &'a str)>);

/// Writes each `(session, epoch, texts)` as the owner's turns, indexes them and embeds
/// every row, vector and pieces, as the worker stores them.
fn embedded(model: &'static Embedder, logs: &[(&str, u64, &[&str])]) -> Embedded {
    let timed: Vec<TimedLog<'_>> = logs
        .iter()
        .map(|(s, e, texts)| (*s, *e, texts.iter().map(|t| (T, *t)).collect()))
        .collect();
    embedded_at(model, &timed)
}

/// `embedded` with each turn's time given: `(session, epoch, [(time, text)])`.
fn embedded_at(model: &'static Embedder, logs: &[TimedLog<'_>]) -> Embedded {
    let world = World::new();
    for (session, epoch, lines) in logs {
        let lines: String = lines.iter().map(|(t, s)| user_at(t, s).to_line()).collect();
        world.append(session, *epoch, &lines);
    }
    let mut ix = world.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    table::prepare(ix.conn(), model.fingerprint()).unwrap();
    let jobs = table::next_jobs(ix.conn(), 10_000, |_| false, 0).unwrap();
    let texts: Vec<&str> = jobs.iter().map(|j| j.text.as_str()).collect();
    let done: Vec<table::Done> = model
        .embed_records(&texts)
        .unwrap()
        .into_iter()
        .zip(jobs)
        .map(|(e, job)| (job, quant::encode(&e.vector), e.pieces))
        .collect();
    assert_eq!(table::store(ix.conn(), &done).unwrap().len(), done.len());
    let mut store = Store::default();
    for (job, code, _) in &done {
        store.put(job.id, u8::try_from(job.class).unwrap(), code);
    }
    Embedded {
        _world: world,
        ix,
        store,
        model,
    }
}

impl Embedded {
    /// What the vector side finds for `q` at `max_class`, and the question's pieces.
    fn ask(&self, q: &str, max_class: DataClass) -> (Vec<Near>, Question) {
        let (v, pieces) = self.model.embed_question(q).unwrap();
        let rank = u8::try_from(class_rank(max_class)).unwrap();
        let near = self
            .store
            .nearest(&quant::encode(&v), rank, CANDIDATES as usize, MIN_COSINE);
        (near, pieces)
    }

    /// The recall with late interaction, as the daemon answers it.
    fn late(&self, q: &str, max_class: DataClass, limit: u32) -> Vec<String> {
        let (near, pieces) = self.ask(q, max_class);
        let hits = recall_late(&self.ix, &near, &pieces, q, max_class, limit, NOW).unwrap();
        hits.into_iter().map(|h| h.text).collect()
    }

    /// The merge's order alone, as recall was before late interaction.
    fn merge_alone(&self, q: &str, max_class: DataClass, limit: u32) -> Vec<String> {
        let (near, _) = self.ask(q, max_class);
        let hits = recall_with(&self.ix, &near, q, max_class, limit, NOW).unwrap();
        hits.into_iter().map(|h| h.text).collect()
    }

    fn id(&self, text: &str) -> i64 {
        self.ix
            .conn()
            .query_row("SELECT rowid FROM docs WHERE text = ?1", [text], |r| {
                r.get(0)
            })
            .unwrap()
    }

    /// The mean of the question's best cosines against row `text`'s own pieces.
    fn own_match(&self, q: &str, text: &str) -> f32 {
        let (_, pieces) = self.ask(q, DataClass::Private);
        let stored = table::pieces(self.ix.conn(), self.id(text))
            .unwrap()
            .unwrap();
        let best = pieces.best(&stored);
        best.iter().sum::<f32>() / best.len() as f32
    }

    /// `rerank` over the given candidates, in that merge order, with no cosines: the
    /// order comes from the pieces and the places alone.
    fn rerank_only(&self, q: &str, fused: &[&str], max_class: DataClass) -> Vec<String> {
        let (_, pieces) = self.ask(q, max_class);
        let fused: Vec<(i64, Hit)> = fused
            .iter()
            .map(|t| {
                let id = self.id(t);
                let hit = self
                    .ix
                    .hits_by_ids(&[id], DataClass::Secret)
                    .unwrap()
                    .remove(0)
                    .1;
                (id, hit)
            })
            .collect();
        let n = fused.len();
        let asked = Asked {
            pieces: &pieces,
            cosine: &HashMap::new(),
            background: 0.0,
            near_place: &HashMap::new(),
            own_slots: 0.0,
            match_weight: 1.0,
            codes: &Codes::default(),
            first: None,
            span: None,
            max_class,
            distinct: crate::hybrid::distinct::DISTINCT,
        };
        rerank(&self.ix, asked, fused, Vec::new(), n)
            .unwrap()
            .into_iter()
            .map(|h| h.text)
            .collect()
    }
}

fn at(hits: &[String], text: &str) -> usize {
    hits.iter().position(|h| h == text).unwrap_or(usize::MAX)
}

/// A question and the turn after it that answers it only with the question's help.
const Q_TRIP: &str = "How was Nate's trip to the Grand Canyon?";
const ASKED: &str = "How was your trip to the Grand Canyon, Nate?";
const ANSWER: &str = "Yes! It was amazing.";
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

mod distinct;
mod little;
mod own_places;
