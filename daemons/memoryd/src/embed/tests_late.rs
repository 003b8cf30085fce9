//! The pieces' table (`table`, `vec_pieces`) against a real index in a temporary state
//! directory: pieces kept for exactly the rows whose vectors are, and an index made before
//! rows kept their pieces embedded again. No model is needed: the codes and pieces are
//! made up, the table does not read them.

use super::bits::{Bits, WORDS};
use super::quant::{self, Code};
use super::table::{self, Done, Job};
use super::DIM;
use crate::fixture::{user, World};
use crate::index::{Budget, Index};

const TEXTS: [&str; 3] = [
    "the heron stood in the reeds",
    "a quiet bird at the water",
    "the vault word is plumquartz",
];

fn code() -> Code {
    quant::encode(&[1.0 / (DIM as f32).sqrt(); DIM])
}

fn piece(seed: u64) -> Bits {
    [seed; WORDS]
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

fn id_of(ix: &Index, text: &str) -> i64 {
    ix.conn()
        .query_row("SELECT rowid FROM docs WHERE text = ?1", [text], |r| {
            r.get(0)
        })
        .unwrap()
}

#[test]
fn an_index_with_vectors_but_no_pieces_is_embedded_again() {
    let (_w, ix) = world();
    embed_all(&ix);
    assert_eq!(
        (
            table::stored(ix.conn()).unwrap(),
            table::pending(ix.conn()).unwrap()
        ),
        (3, 0)
    );
    // As an index made before rows kept their pieces: codes, no pieces table.
    ix.conn().execute_batch("DROP TABLE vec_pieces").unwrap();
    assert!(
        table::create(ix.conn()).unwrap(),
        "it says it queued every row"
    );
    assert_eq!(table::stored(ix.conn()).unwrap(), 0);
    assert_eq!(table::pending(ix.conn()).unwrap(), 3);
    let jobs = embed_all(&ix);
    for j in &jobs {
        assert_eq!(
            table::pieces(ix.conn(), j.id).unwrap(),
            Some(vec![piece(j.id as u64)])
        );
    }
    // Made again with its pieces, an index is not embedded again at the next start.
    assert!(!table::create(ix.conn()).unwrap());
    assert_eq!(table::pending(ix.conn()).unwrap(), 0);
    assert_eq!(table::stored(ix.conn()).unwrap(), 3);
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

/// Fails: a damaged pieces row is read as none and never queued again (a damaged code
/// is, by `load_slice`), so every recall that has the row among its candidates keeps the
/// merge's order, for good. Remove the ignore when damaged pieces are embedded again.
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
