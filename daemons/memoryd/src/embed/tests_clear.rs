//! Another model taking over an index (`table::adopt`, then `table::clear_slice` a tick
//! at a time) against a real index in a temporary state directory: the old model's codes
//! and pieces are never read while they wait, the counts stay exact after every slice,
//! a clear interrupted between slices resumes, and rows forgotten meanwhile leave
//! nothing behind. The clear driven by `Vectors` needs the real model (SKIPPED without
//! it: `embed::tests::model_dir`); the rest makes its codes up.

use super::bits::{Bits, WORDS};
use super::model::Embedder;
use super::quant;
use super::table::{self, Counts, Done, Queued};
use super::tests::model_dir;
use super::tests_late::{id_of, DRIVE_LIMIT};
use super::vectors::Vectors;
use super::DIM;
use crate::fixture::{rewrite_without, user, World};
use crate::index::{Budget, Index};
use proto::label::DataClass;
use std::collections::BTreeSet;
use std::time::Instant;

/// Said in two sessions, so that a forget in one leaves the other's rows as they were.
const SAID: [(&str, &str); 9] = [
    ("main", "the heron stood in the reeds"),
    ("main", "a quiet bird at the water"),
    ("main", "the vault word is plumquartz"),
    ("main", "we planted tomatoes along the fence"),
    ("main", "the train to the coast leaves at nine"),
    ("side", "my sister collects old maps"),
    ("side", "the kettle whistled in the kitchen"),
    ("side", "a parcel of books arrived from the shop"),
    ("side", "the dentist moved the appointment to friday"),
];

/// A question sharing no word with `SAID[0]`, which only its meaning finds.
const ASKED: &str = "which wading bird waited among marsh grasses";

/// The pieces the old model stored: no model makes them, so they are known on sight.
const OLD_PIECE: Bits = [0x5a5a_5a5a_5a5a_5a5a; WORDS];

/// A state directory with `SAID` indexed, and every row embedded by model `old` with
/// `code` of its text and `OLD_PIECE` for pieces.
fn embedded_by(old: &str, code: impl Fn(&str) -> quant::Code) -> (World, Index) {
    let w = World::new();
    for (session, text) in SAID {
        w.append(session, 0, &user(text).to_line());
    }
    let mut ix = w.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    table::prepare(ix.conn(), old).unwrap();
    let jobs = table::next_jobs(ix.conn(), 100, |_| false, 0).unwrap();
    assert_eq!(jobs.len(), SAID.len());
    let done: Vec<Done> = jobs
        .into_iter()
        .map(|j| {
            let c = code(&j.text);
            (j, c, vec![OLD_PIECE])
        })
        .collect();
    assert_eq!(table::store(ix.conn(), &done).unwrap().len(), SAID.len());
    (w, ix)
}

fn made_up(_: &str) -> quant::Code {
    quant::encode(&[1.0 / (DIM as f32).sqrt(); DIM])
}

fn ids(ix: &Index, sql: &str) -> BTreeSet<i64> {
    let mut stmt = ix.conn().prepare(sql).unwrap();
    let rows = stmt.query_map([], |r| r.get(0)).unwrap();
    rows.map(Result::unwrap).collect()
}

/// Rows whose code and pieces the old model left (its pieces are `OLD_PIECE`).
fn old_rows(ix: &Index) -> BTreeSet<i64> {
    let mut stmt = ix
        .conn()
        .prepare("SELECT id FROM vec_pieces WHERE pieces = ?1")
        .unwrap();
    let blob = super::late::to_bytes(&[OLD_PIECE]);
    let rows = stmt.query_map([blob], |r| r.get(0)).unwrap();
    rows.map(Result::unwrap).collect()
}

/// The kept counts against the tables counted whole: the new model's codes (above the
/// bound) and every row queued.
#[track_caller]
fn exact(ix: &Index, when: &str) {
    let counted = Counts {
        stored: table::stored(ix.conn()).unwrap(),
        pending: table::pending(ix.conn()).unwrap(),
    };
    assert_eq!(table::counts(ix.conn()).unwrap(), counted, "{when}");
}

/// Nothing at or below the bound is read as the new model's: not loaded, not read as a
/// candidate's pieces, not handed to the worker, not stored.
#[track_caller]
fn nothing_stale_is_read(ix: &Index) {
    let Some(bound) = table::stale_up_to(ix.conn()).unwrap() else {
        return;
    };
    let (loaded, _) = table::load_slice(ix.conn(), i64::MIN, 1_000).unwrap();
    assert!(
        loaded.iter().all(|(id, _, _)| *id > bound),
        "a code at or below the bound {bound} was loaded"
    );
    for id in ids(ix, "SELECT id FROM vec_pieces") {
        if id <= bound {
            assert_eq!(table::pieces(ix.conn(), id).unwrap(), None, "row {id}");
        }
    }
    let jobs = table::next_jobs(ix.conn(), 100, |_| false, 0).unwrap();
    assert!(jobs.iter().all(|j| j.id > bound), "a row waiting was fed");
}

/// Every row queued for the new model and no code or pieces left: what a clear ends in.
#[track_caller]
fn cleared(ix: &Index) {
    assert_eq!(
        table::stale_up_to(ix.conn()).unwrap(),
        None,
        "the bound went"
    );
    let rows = ids(ix, "SELECT id FROM docs_content");
    assert_eq!(
        ids(ix, "SELECT id FROM embed_queue"),
        rows,
        "every row queued"
    );
    assert!(ids(ix, "SELECT id FROM vecs").is_empty(), "no code left");
    assert!(
        ids(ix, "SELECT id FROM vec_pieces").is_empty(),
        "no pieces left"
    );
    exact(ix, "at the end of the clear");
}

/// Regression: another model cleared every code and pieces and queued every row in one
/// transaction on the poll loop's thread, which at a million rows held the loop (and
/// every request) for 10 to 35 s, past the watchdog. Now no tick clears more than one
/// slice, the first tick after the model loads included, and meanwhile nothing of the old
/// model is loaded, searched, read as pieces or counted as the new model's.
#[test]
fn a_model_change_clears_at_most_one_slice_a_tick_and_never_uses_the_old_codes() {
    let Some(dir) = model_dir() else { return };
    let model = Embedder::load(&dir).expect("the model loads");
    // The old model's codes are this model's own vectors of the texts: were one used, a
    // question in a row's own words would find it at once.
    let (_w, ix) = embedded_by("another", |t| quant::encode(&model.embed(&[t]).unwrap()[0]));
    let mut v = Vectors::open(&dir).expect("the model is there");
    const SLICE: usize = 2;
    v.clear_slice = SLICE;
    let give_up = Instant::now() + DRIVE_LIMIT;
    let mut ticks_clearing = 0;
    let mut found_after_the_clear = false;
    while let Some(at) = v.deadline() {
        assert!(Instant::now() < give_up, "the clear did not end");
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        let before = old_rows(&ix);
        v.tick(ix.conn());
        let after = old_rows(&ix);
        assert!(after.is_subset(&before));
        assert!(
            before.len() - after.len() <= SLICE,
            "one tick cleared {} rows, more than a slice ({SLICE})",
            before.len() - after.len()
        );
        if after.len() < before.len() {
            ticks_clearing += 1;
            // Newest first: what is left is older than what went.
            let went = before.difference(&after).min().copied();
            assert!(after.iter().all(|&id| Some(id) < went), "newest first");
        }
        exact(&ix, "after a tick");
        assert_eq!(v.progress().0, table::stored(ix.conn()).unwrap());
        nothing_stale_is_read(&ix);
        // Until the model has loaded nobody knows the codes are another's (the start
        // loads them meanwhile, and no recall searches them without a model); from the
        // tick it loads in, none is held.
        if v.ready() {
            for id in &after {
                assert!(!v.has_vector(*id), "row {id}'s old code is in memory");
            }
        }
        if v.ready() {
            let hits = crate::hybrid::recall(&ix, Some(&v), ASKED, DataClass::Secret, 10).unwrap();
            let found = hits.iter().any(|h| h.text == SAID[0].1);
            let heron = id_of(&ix, SAID[0].1);
            assert!(
                !(found && after.contains(&heron)),
                "a recall found a row by its old model's code"
            );
            found_after_the_clear = found && after.is_empty();
        }
        if v.ready() && !after.is_empty() {
            for (_, text) in SAID {
                let near = v
                    .asker()
                    .and_then(|a| a.ask(text, u8::MAX, 20))
                    .map(|a| a.near)
                    .unwrap_or_default();
                assert!(
                    near.iter().all(|n| !after.contains(&n.id)),
                    "a recall by meaning found an old model's code"
                );
            }
        }
    }
    assert!(ticks_clearing >= SAID.len() / SLICE, "a slice a tick");
    assert!(
        found_after_the_clear,
        "the question finds its row by meaning once the new model embedded it"
    );
    assert!(old_rows(&ix).is_empty());
    assert_eq!(table::stale_up_to(ix.conn()).unwrap(), None);
    assert_eq!(
        table::counts(ix.conn()).unwrap(),
        Counts {
            stored: SAID.len() as u64,
            pending: 0
        },
        "every row embedded again, once"
    );
    for (_, text) in SAID {
        let id = id_of(&ix, text);
        assert!(v.has_vector(id));
        assert!(table::pieces(ix.conn(), id).unwrap().is_some(), "{text}");
    }
}

/// A clear is kept in the database, not in memory: a memoryd stopped (or killed) between
/// slices starts where it stopped, newest rows first, and ends with every row queued once
/// and nothing of the old model left; the counts are exact after every slice.
#[test]
fn a_clear_interrupted_between_slices_resumes_where_it_stopped() {
    let (w, ix) = embedded_by("old", made_up);
    assert!(table::adopt(ix.conn(), "new").unwrap());
    exact(&ix, "after the new model took the index");
    assert_eq!(table::counts(ix.conn()).unwrap().stored, 0);
    nothing_stale_is_read(&ix);
    assert!(table::clear_slice(ix.conn(), 2).unwrap());
    exact(&ix, "after the first slice");
    nothing_stale_is_read(&ix);
    let all = ids(&ix, "SELECT id FROM docs_content");
    let newest: BTreeSet<i64> = all.iter().rev().take(2).copied().collect();
    assert_eq!(ids(&ix, "SELECT id FROM embed_queue"), newest);
    let bound = table::stale_up_to(ix.conn())
        .unwrap()
        .expect("a clear under way");
    drop(ix);

    // The next start: the tables made again, the same model adopted again.
    let ix = w.index();
    assert_eq!(table::create(ix.conn()).unwrap(), Queued::Nothing);
    assert!(!table::adopt(ix.conn(), "new").unwrap(), "the same model");
    assert_eq!(table::stale_up_to(ix.conn()).unwrap(), Some(bound));
    exact(&ix, "after the start");
    let mut slices = 1;
    while table::clear_slice(ix.conn(), 2).unwrap() {
        slices += 1;
        exact(&ix, "after a slice");
        nothing_stale_is_read(&ix);
    }
    assert_eq!(
        slices,
        SAID.len() / 2,
        "the rows cleared once, by slices of 2"
    );
    cleared(&ix);
}

/// Rows dropped while a clear is under way (a forget re-reads its log: the rows it keeps
/// come back as new rows, with the same ids) take their codes and pieces with them,
/// above the bound and below it, and are queued again like any row.
#[test]
fn rows_forgotten_during_a_clear_leave_no_code_or_pieces() {
    let (w, mut ix) = embedded_by("old", made_up);
    assert!(table::adopt(ix.conn(), "new").unwrap());
    // The newest rows (the side session's) cleared and queued; the new model embeds one.
    assert!(table::clear_slice(ix.conn(), 3).unwrap());
    let jobs = table::next_jobs(ix.conn(), 1, |_| false, 0).unwrap();
    let code = quant::encode(&[-1.0 / (DIM as f32).sqrt(); DIM]);
    let done: Vec<Done> = jobs
        .into_iter()
        .map(|j| (j, code.clone(), vec![[3; WORDS]]))
        .collect();
    assert_eq!(table::store(ix.conn(), &done).unwrap().len(), 1);
    exact(&ix, "with one row of the new model");
    assert_eq!(table::counts(ix.conn()).unwrap().stored, 1);

    // One row forgotten in each session: the side one above the bound, the main one
    // below it.
    let bound = table::stale_up_to(ix.conn()).unwrap().unwrap();
    let (above, below) = (id_of(&ix, SAID[8].1), id_of(&ix, SAID[2].1));
    assert!(above > bound && below <= bound);
    rewrite_without(&w.log("side", 0), "dentist");
    rewrite_without(&w.log("main", 0), "plumquartz");
    let forgotten = ix
        .forget(&[("side".into(), 0), ("main".into(), 0)])
        .unwrap();
    assert_eq!(forgotten, 2);
    exact(&ix, "after the forget");
    nothing_stale_is_read(&ix);
    let rows = ids(&ix, "SELECT id FROM docs_content");
    for table in ["vecs", "vec_pieces", "embed_queue"] {
        let left = ids(&ix, &format!("SELECT id FROM {table}"));
        assert!(
            left.is_subset(&rows),
            "{table} keeps a forgotten row's entry"
        );
    }
    while table::clear_slice(ix.conn(), 3).unwrap() {
        exact(&ix, "after a slice");
    }
    assert_eq!(table::stale_up_to(ix.conn()).unwrap(), None);
    assert!(old_rows(&ix).is_empty(), "no old pieces left");
    assert_eq!(
        ids(&ix, "SELECT id FROM embed_queue"),
        rows.difference(&ids(&ix, "SELECT id FROM vecs"))
            .copied()
            .collect(),
        "every row without a code queued"
    );
    exact(&ix, "at the end");
}

/// A third model loading while the second one's clear is under way starts over: what the
/// second stored is stale too, nothing of either is read, and the clear ends with every
/// row queued for the third.
#[test]
fn a_second_model_change_during_a_clear_starts_over() {
    let (_w, ix) = embedded_by("first", made_up);
    assert!(table::adopt(ix.conn(), "second").unwrap());
    assert!(table::clear_slice(ix.conn(), 4).unwrap());
    let jobs = table::next_jobs(ix.conn(), 100, |_| false, 0).unwrap();
    assert_eq!(jobs.len(), 4);
    let code = quant::encode(&[-1.0 / (DIM as f32).sqrt(); DIM]);
    let done: Vec<Done> = jobs
        .into_iter()
        .map(|j| (j, code.clone(), vec![[3; WORDS]]))
        .collect();
    assert_eq!(table::store(ix.conn(), &done).unwrap().len(), 4);
    assert_eq!(table::counts(ix.conn()).unwrap().stored, 4);
    let (loaded, _) = table::load_slice(ix.conn(), i64::MIN, 100).unwrap();
    assert_eq!(loaded.len(), 4, "the second model's codes are its own");

    assert!(table::adopt(ix.conn(), "third").unwrap());
    exact(&ix, "after the third model took the index");
    assert_eq!(table::counts(ix.conn()).unwrap().stored, 0);
    nothing_stale_is_read(&ix);
    let (loaded, _) = table::load_slice(ix.conn(), i64::MIN, 100).unwrap();
    assert!(
        loaded.is_empty(),
        "no code of the second model is the third's"
    );
    assert!(table::next_jobs(ix.conn(), 100, |_| false, 0)
        .unwrap()
        .is_empty());
    while table::clear_slice(ix.conn(), 4).unwrap() {
        exact(&ix, "after a slice");
        nothing_stale_is_read(&ix);
    }
    cleared(&ix);
}

/// The first model configured on an index that has rows queues them the same way, a
/// slice a tick, newest first, rather than all in the first tick.
#[test]
fn the_first_model_queues_an_existing_index_a_slice_at_a_time() {
    let w = World::new();
    for (session, text) in SAID {
        w.append(session, 0, &user(text).to_line());
    }
    let mut ix = w.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    assert_eq!(table::create(ix.conn()).unwrap(), Queued::Unembedded);
    assert_eq!(table::pending(ix.conn()).unwrap(), 0, "nothing queued yet");
    assert!(table::adopt(ix.conn(), "model").unwrap());
    assert!(table::clear_slice(ix.conn(), 4).unwrap());
    let all = ids(&ix, "SELECT id FROM docs_content");
    let newest: BTreeSet<i64> = all.iter().rev().take(4).copied().collect();
    assert_eq!(ids(&ix, "SELECT id FROM embed_queue"), newest);
    exact(&ix, "after the first slice");
    while table::clear_slice(ix.conn(), 4).unwrap() {}
    cleared(&ix);
}

/// An index from before the clear's bound has the count trigger that counts out every
/// dropped code: under it each slice would count the stale codes out a second time (the
/// count was set to none when the new model took the index). A start makes it again.
#[test]
fn an_index_from_before_the_bound_counts_a_clear_exactly_after_a_start() {
    let (_w, ix) = embedded_by("old", made_up);
    ix.conn()
        .execute_batch(
            "DROP TRIGGER count_vec_dropped;
             CREATE TRIGGER count_vec_dropped AFTER DELETE ON vecs BEGIN
                 UPDATE embed_counts SET vecs = vecs - 1;
             END;",
        )
        .unwrap();
    assert_eq!(table::create(ix.conn()).unwrap(), Queued::Nothing);
    assert!(table::adopt(ix.conn(), "new").unwrap());
    let code = quant::encode(&[-1.0 / (DIM as f32).sqrt(); DIM]);
    let mut more = true;
    while more {
        more = table::clear_slice(ix.conn(), 4).unwrap();
        // The new model embeds what the slice queued (a count below zero would read as
        // none, so the counts are checked with codes of the new model there).
        let jobs = table::next_jobs(ix.conn(), 100, |_| false, 0).unwrap();
        let done: Vec<Done> = jobs
            .into_iter()
            .map(|j| (j, code.clone(), vec![[3; WORDS]]))
            .collect();
        table::store(ix.conn(), &done).unwrap();
        exact(&ix, "after a slice and its rows embedded");
    }
    assert_eq!(
        table::counts(ix.conn()).unwrap(),
        Counts {
            stored: SAID.len() as u64,
            pending: 0
        }
    );
    assert!(old_rows(&ix).is_empty());
}

/// Regression: a bound that is not an integer (a damaged or hand-edited index) read as 0
/// in SQLite, so nothing was stale and the old model's codes were loaded and searched as
/// the new one's, and never cleared. Now it reads as the largest id: everything is
/// cleared and embedded again.
#[test]
fn a_damaged_bound_takes_every_code_for_another_models() {
    for damaged in ["abc", "-5x", "1e5", ""] {
        let (_w, ix) = embedded_by("old", made_up);
        ix.conn()
            .execute(
                "INSERT OR REPLACE INTO embed_meta (key, value) VALUES ('stale_up_to', ?1)",
                [damaged],
            )
            .unwrap();
        assert_eq!(
            table::stale_up_to(ix.conn()).unwrap(),
            Some(i64::MAX),
            "{damaged:?}"
        );
        let (codes, _) = table::load_slice(ix.conn(), i64::MIN, 100).unwrap();
        assert!(codes.is_empty(), "{damaged:?}: an old code was loaded");
        let any = id_of(&ix, SAID[0].1);
        assert_eq!(table::pieces(ix.conn(), any).unwrap(), None, "{damaged:?}");
        while table::clear_slice(ix.conn(), 4).unwrap() {}
        assert_eq!(table::stale_up_to(ix.conn()).unwrap(), None);
        assert!(old_rows(&ix).is_empty(), "{damaged:?}: old pieces left");
        assert_eq!(
            ids(&ix, "SELECT id FROM embed_queue"),
            ids(&ix, "SELECT id FROM docs_content"),
            "{damaged:?}: every row queued"
        );
    }
}
