//! The pieces' table (`table`, `vec_pieces`) against a real index in a temporary state
//! directory: pieces kept for exactly the rows whose vectors are, and an index made before
//! rows kept their pieces upgraded with its vectors kept. Most need no model: the codes
//! and pieces are made up, the table does not read them. The backfill's counts are
//! checked by driving `Vectors` with the real model, as the poll loop does (SKIPPED
//! without it: `embed::tests::model_dir`).

use super::bits::{Bits, WORDS};
use super::late::Question;
use super::quant::{self, Code};
use super::store::Store;
use super::table::{self, Done, Job, Queued};
use super::vectors::{Vectors, MIN_COSINE};
use super::DIM;
use crate::fixture::{user, World};
use crate::hybrid::{recall_late, recall_with, CANDIDATES};
use crate::index::{Budget, Index};
use crate::query::time;
use proto::label::DataClass;
use std::time::{Duration, Instant};

const NOW: time::Day = (2026, 12, 1);

const TEXTS: [&str; 3] = [
    "the heron stood in the reeds",
    "a quiet bird at the water",
    "the vault word is plumquartz",
];

fn code() -> Code {
    quant::encode(&[1.0 / (DIM as f32).sqrt(); DIM])
}

/// A code along axis `k` alone: codes on different axes are unrelated (cosine 0).
fn axis(k: usize) -> Code {
    let mut v = [0.0; DIM];
    v[k] = 1.0;
    quant::encode(&v)
}

fn piece(seed: u64) -> Bits {
    [seed; WORDS]
}

/// Every stored code, by id, as the table holds it.
fn codes(ix: &Index) -> Vec<(i64, Vec<u8>)> {
    let mut stmt = ix
        .conn()
        .prepare("SELECT id, code FROM vecs ORDER BY id")
        .unwrap();
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    rows.map(Result::unwrap).collect()
}

/// The index as a memoryd made it before rows kept their pieces: codes, and no pieces
/// table or trigger.
fn as_made_before_pieces(ix: &Index) {
    ix.conn()
        .execute_batch("DROP TRIGGER pieces_row_dropped; DROP TABLE vec_pieces")
        .unwrap();
}

/// A state directory with `TEXTS` said in one session, indexed, with the tables made.
fn world() -> (World, Index) {
    let w = World::new();
    let lines: String = TEXTS.iter().map(|t| user(t).to_line()).collect();
    w.append("main", 0, &lines);
    let mut ix = w.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    table::prepare(ix.conn(), "model").unwrap();
    (w, ix)
}

/// Every queued row embedded (made-up codes, one piece each) and stored.
fn embed_all(ix: &Index) -> Vec<Job> {
    let jobs = table::next_jobs(ix.conn(), 100, |_| false, 0).unwrap();
    let done: Vec<Done> = jobs
        .iter()
        .map(|j| (j.clone(), code(), vec![piece(j.id as u64)]))
        .collect();
    assert_eq!(table::store(ix.conn(), &done).unwrap().len(), jobs.len());
    jobs
}

fn count(ix: &Index, table: &str) -> i64 {
    ix.conn()
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

pub(super) fn id_of(ix: &Index, text: &str) -> i64 {
    ix.conn()
        .query_row("SELECT rowid FROM docs WHERE text = ?1", [text], |r| {
            r.get(0)
        })
        .unwrap()
}

/// Regression: an index made before rows kept their pieces had every vector dropped and
/// every row queued, so recall by meaning was gone for the hours a long history's
/// backfill takes. Now the vectors stay as they were and only the pieces are made again;
/// a row that had no vector yet is still one more row with a code when it gets one.
#[test]
fn an_upgraded_index_keeps_every_vector_and_queues_every_row_without_pieces() {
    let (w, mut ix) = world();
    embed_all(&ix);
    // A row said after the last backfill: queued, no vector yet.
    w.append("main", 0, &user("the otter slid down the bank").to_line());
    ix.catch_up(Budget::UNLIMITED).unwrap();
    let before = codes(&ix);
    assert_eq!(before.len(), 3);
    as_made_before_pieces(&ix);
    assert_eq!(table::create(ix.conn()).unwrap(), Queued::ForPieces);
    let after = codes(&ix);
    assert!(
        after == before,
        "every vector is kept as it was: {} of {} rows have a code",
        after.len(),
        before.len()
    );
    assert_eq!(table::stored(ix.conn()).unwrap(), 3);
    assert_eq!(
        table::pending(ix.conn()).unwrap(),
        4,
        "every row without pieces"
    );
    let jobs = table::next_jobs(ix.conn(), 100, |_| false, 0).unwrap();
    let ids: Vec<i64> = jobs.iter().map(|j| j.id).collect();
    let mut newest_first = ids.clone();
    newest_first.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(ids, newest_first, "newest first");
    let done: Vec<Done> = jobs
        .iter()
        .map(|j| (j.clone(), code(), vec![piece(j.id as u64)]))
        .collect();
    let stored = table::store(ix.conn(), &done).unwrap();
    assert_eq!(stored.len(), 4);
    assert_eq!(
        table::stored(ix.conn()).unwrap(),
        4,
        "the row that had no vector is the only one more with a code"
    );
    for j in &jobs {
        assert_eq!(
            table::pieces(ix.conn(), j.id).unwrap(),
            Some(vec![piece(j.id as u64)])
        );
    }
    // With its pieces, an index is not queued again at the next start.
    assert_eq!(table::create(ix.conn()).unwrap(), Queued::Nothing);
    assert_eq!(table::pending(ix.conn()).unwrap(), 0);
    assert_eq!(table::stored(ix.conn()).unwrap(), 4);
}

/// The real upgrade from the last release: its index has the queue's triggers and the
/// codes, but neither pieces nor kept counts. The codes stay, the counts are made exact
/// from the tables, every row is queued for its pieces, and once the queue is drained the
/// counts say every row has its code, once.
#[test]
fn an_index_from_before_pieces_and_kept_counts_keeps_its_vectors_and_counts_them_exactly() {
    let (w, mut ix) = world();
    embed_all(&ix);
    // A row said after the last backfill: queued, no vector yet.
    w.append("main", 0, &user("the otter slid down the bank").to_line());
    ix.catch_up(Budget::UNLIMITED).unwrap();
    let before = codes(&ix);
    as_made_before_pieces(&ix);
    ix.conn()
        .execute_batch(
            "DROP TRIGGER count_vec_added; DROP TRIGGER count_vec_dropped;
             DROP TRIGGER count_queued; DROP TRIGGER count_unqueued; DROP TABLE embed_counts;",
        )
        .unwrap();

    assert_eq!(table::create(ix.conn()).unwrap(), Queued::ForPieces);
    assert!(codes(&ix) == before, "every vector is kept as it was");
    let rows = count(&ix, "docs_content");
    assert_eq!(rows, 4);
    let kept = table::counts(ix.conn()).unwrap();
    assert_eq!(kept.stored, 3);
    assert_eq!(kept.pending, 4, "every row queued for its pieces");
    assert_eq!(kept.stored, table::stored(ix.conn()).unwrap());
    assert_eq!(kept.pending, table::pending(ix.conn()).unwrap());

    assert_eq!(embed_all(&ix).len(), 4);
    let drained = table::counts(ix.conn()).unwrap();
    assert_eq!((drained.stored, drained.pending), (4, 0), "each row once");
    assert_eq!(drained.stored, table::stored(ix.conn()).unwrap());
    assert_eq!(count(&ix, "vec_pieces"), rows);
    assert_eq!(table::create(ix.conn()).unwrap(), Queued::Nothing);
    assert_eq!(
        table::counts(ix.conn()).unwrap(),
        drained,
        "not counted again"
    );
}

/// Regression: while an upgraded index's rows wait for their pieces, a recall is by
/// words and meaning together, in the merge's order (no candidate can be weighed by
/// pieces it does not have), not by words alone. The vectors are made up: the row
/// "a quiet bird at the water" is the only one near the question, and shares no word
/// with it.
#[test]
fn a_recall_during_the_pieces_backfill_uses_the_kept_vectors_in_the_merges_order() {
    let (_w, ix) = world();
    let jobs = table::next_jobs(ix.conn(), 100, |_| false, 0).unwrap();
    let done: Vec<Done> = jobs
        .iter()
        .enumerate()
        .map(|(k, j)| (j.clone(), axis(k), vec![piece(j.id as u64)]))
        .collect();
    table::store(ix.conn(), &done).unwrap();
    let bird = id_of(&ix, TEXTS[1]);
    let bird_code = &done.iter().find(|d| d.0.id == bird).unwrap().1;
    as_made_before_pieces(&ix);
    table::create(ix.conn()).unwrap();
    // The backfill has reached the newest row only.
    let first = table::next_jobs(ix.conn(), 1, |_| false, 0).unwrap();
    assert_eq!(first[0].text, TEXTS[2]);
    let one: Vec<Done> = first
        .into_iter()
        .map(|j| (j, code(), vec![piece(9)]))
        .collect();
    table::store(ix.conn(), &one).unwrap();
    assert_eq!(table::pieces(ix.conn(), bird).unwrap(), None);

    // The store as memoryd loads it at start, from the table.
    let mut store = Store::default();
    let mut after = i64::MIN;
    while let (loaded, Some(last)) = table::load_slice(ix.conn(), after, 100).unwrap() {
        for (id, class, code) in &loaded {
            store.put(*id, u8::try_from(*class).unwrap(), code);
        }
        after = last;
    }
    let near = store.nearest(bird_code, u8::MAX, CANDIDATES as usize, MIN_COSINE);
    assert_eq!(near.iter().map(|n| n.id).collect::<Vec<_>>(), [bird]);
    let question = Question::new(&[vec![1.0; DIM]]);
    let texts = |hits: Vec<proto::memory::Hit>| -> Vec<String> {
        hits.into_iter().map(|h| h.text).collect()
    };
    let q = "where is the heron";
    let late = texts(recall_late(&ix, &near, &question, q, DataClass::Secret, 10, NOW).unwrap());
    let merge = texts(recall_with(&ix, &near, q, DataClass::Secret, 10, NOW).unwrap());
    let words = texts(recall_with(&ix, &[], q, DataClass::Secret, 10, NOW).unwrap());
    assert_eq!(late, merge, "the merge's order while rows lack pieces");
    assert!(
        late.iter().any(|t| t == TEXTS[0]),
        "found by its words: {late:?}"
    );
    assert!(
        late.iter().any(|t| t == TEXTS[1]),
        "found by its kept vector: {late:?}"
    );
    assert!(
        !words.iter().any(|t| t == TEXTS[1]),
        "not by words: {words:?}"
    );
}

#[test]
fn a_dropped_row_takes_its_pieces_with_it() {
    let (w, mut ix) = world();
    embed_all(&ix);
    let gone = id_of(&ix, TEXTS[2]);
    assert!(table::pieces(ix.conn(), gone).unwrap().is_some());
    let log = w.log("main", 0);
    crate::fixture::rewrite_without(&log, "plumquartz");
    assert_eq!(ix.forget(&[("main".into(), 0)]).unwrap(), 1);
    assert_eq!(table::pieces(ix.conn(), gone).unwrap(), None);
    // A forget indexes the log's rows left anew: they are queued again, as their
    // vectors are. No pieces are kept for a row that is gone.
    assert_eq!(count(&ix, "vec_pieces"), count(&ix, "vecs"));
    assert_eq!(
        count(&ix, "vecs") + count(&ix, "embed_queue"),
        count(&ix, "docs_content")
    );
    let orphans: i64 = ix
        .conn()
        .query_row(
            "SELECT count(*) FROM vec_pieces WHERE id NOT IN (SELECT id FROM docs_content)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(orphans, 0);
}

#[test]
fn store_keeps_pieces_only_for_rows_whose_text_is_unchanged() {
    let (_w, ix) = world();
    let jobs = table::next_jobs(ix.conn(), 100, |_| false, 0).unwrap();
    let done: Vec<Done> = jobs
        .iter()
        .map(|j| {
            let mut job = j.clone();
            // The row was replaced by other text after the worker read it.
            if job.text == TEXTS[0] {
                job.text = "the heron flew off".into();
            }
            (job, code(), vec![piece(7)])
        })
        .collect();
    let stored = table::store(ix.conn(), &done).unwrap();
    assert_eq!(stored.len(), 2);
    let changed = id_of(&ix, TEXTS[0]);
    assert_eq!(table::pieces(ix.conn(), changed).unwrap(), None);
    assert_eq!(table::pending(ix.conn()).unwrap(), 1, "it is still queued");
    for t in &TEXTS[1..] {
        assert_eq!(
            table::pieces(ix.conn(), id_of(&ix, t)).unwrap(),
            Some(vec![piece(7)])
        );
    }
}

#[test]
fn damaged_pieces_read_as_none_and_leave_the_vector() {
    let (_w, ix) = world();
    embed_all(&ix);
    let id = id_of(&ix, TEXTS[1]);
    ix.conn()
        .execute("UPDATE vec_pieces SET pieces = x'0102' WHERE id = ?1", [id])
        .unwrap();
    assert_eq!(table::pieces(ix.conn(), id).unwrap(), None);
    assert_eq!(table::stored(ix.conn()).unwrap(), 3);
}

/// Regression: a damaged pieces row was read as none and never queued again (a damaged
/// code is, by `load_slice`), so every recall that had the row among its candidates kept
/// the merge's order, for good.
#[test]
fn damaged_pieces_are_queued_to_be_embedded_again() {
    let (_w, ix) = world();
    embed_all(&ix);
    let id = id_of(&ix, TEXTS[1]);
    ix.conn()
        .execute("UPDATE vec_pieces SET pieces = x'0102' WHERE id = ?1", [id])
        .unwrap();
    // Read by a recall, then the index opened again at the next start.
    assert_eq!(table::pieces(ix.conn(), id).unwrap(), None);
    table::create(ix.conn()).unwrap();
    table::adopt(ix.conn(), "model").unwrap();
    assert_eq!(
        table::pending(ix.conn()).unwrap(),
        1,
        "the row is queued again"
    );
    embed_all(&ix);
    assert_eq!(
        table::pieces(ix.conn(), id).unwrap(),
        Some(vec![piece(id as u64)])
    );
}

/// How long `drive` lets the backfill of a few rows take, the model's load included,
/// before the test fails instead of hanging: a debug build loads and runs the model in
/// seconds here.
pub(super) const DRIVE_LIMIT: Duration = Duration::from_secs(300);

/// `Vectors` for the real model, opened on `ix` and given its first turn (the tables
/// made, the counts taken), as memoryd's start does; `None` without the model
/// (`embed::tests::model_dir`).
fn started(ix: &Index) -> Option<Vectors> {
    let dir = super::tests::model_dir()?;
    let mut v = Vectors::open(&dir).expect("the model is there");
    v.tick(ix.conn());
    Some(v)
}

/// Turns of the poll loop, each at the deadline `Vectors` asks for, until it has its model
/// and nothing left to do.
pub(super) fn drive(v: &mut Vectors, ix: &Index) {
    let give_up = Instant::now() + DRIVE_LIMIT;
    while let Some(at) = v.deadline() {
        assert!(
            Instant::now() < give_up,
            "the backfill did not end: {:?}",
            v.progress()
        );
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        v.tick(ix.conn());
    }
    assert!(v.ready(), "the model loaded");
}

/// Regression: a row embedded again after an upgrade (it had its vector, and waited for
/// its pieces) was counted as one more row with a vector, so `memoryd status` said twice
/// the rows there are. And the vectors counted from the start of the backfill are the
/// ones kept, not none.
#[test]
fn after_an_upgrade_the_backfill_counts_each_row_once() {
    let (_w, ix) = world();
    let Some(mut v) = started(&ix) else { return };
    drive(&mut v, &ix);
    assert_eq!(v.progress(), (3, 0));
    drop(v);

    as_made_before_pieces(&ix);
    let mut v = started(&ix).expect("the model is there");
    assert_eq!(
        v.progress(),
        (3, 3),
        "every row keeps its vector and waits for its pieces"
    );
    drive(&mut v, &ix);
    assert_eq!(v.progress(), (3, 0), "each row once");
    assert_eq!(table::stored(ix.conn()).unwrap(), 3);
    for t in TEXTS {
        let id = id_of(&ix, t);
        assert!(v.has_vector(id));
        assert!(table::pieces(ix.conn(), id).unwrap().is_some(), "{t}");
    }
    drop(v);

    // Another model's codes still go, and are counted from none.
    ix.conn()
        .execute(
            "UPDATE embed_meta SET value = 'another' WHERE key = 'model'",
            [],
        )
        .unwrap();
    ix.conn()
        .execute("UPDATE vecs SET code = ?1", [quant::to_bytes(&code())])
        .unwrap();
    let mut v = started(&ix).expect("the model is there");
    drive(&mut v, &ix);
    assert_eq!(v.progress(), (3, 0));
    let made_up = quant::to_bytes(&code());
    assert!(
        codes(&ix).iter().all(|(_, c)| *c != made_up),
        "every code is the loaded model's"
    );
}

/// Regression: a row whose pieces were dropped as damaged keeps its vector and is
/// embedded again; it was then counted as one more row with a vector.
#[test]
fn a_row_embedded_again_for_damaged_pieces_is_counted_once() {
    let (_w, ix) = world();
    let Some(mut v) = started(&ix) else { return };
    drive(&mut v, &ix);
    assert_eq!(v.progress(), (3, 0));
    let id = id_of(&ix, TEXTS[1]);
    ix.conn()
        .execute("UPDATE vec_pieces SET pieces = x'0102' WHERE id = ?1", [id])
        .unwrap();
    // A recall reads them, as its candidate's.
    assert_eq!(table::pieces(ix.conn(), id).unwrap(), None);
    v.wake();
    drive(&mut v, &ix);
    assert!(table::pieces(ix.conn(), id).unwrap().is_some());
    assert_eq!(v.progress(), (3, 0), "the row once");
}
