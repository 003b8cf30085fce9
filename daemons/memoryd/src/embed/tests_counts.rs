//! The counts of rows with a vector and rows queued (`table::counts`, kept by triggers)
//! against the tables counted whole, through every writer of the two tables, and the
//! backfill driven as the poll loop drives it: rows a catch-up adds after it went idle
//! are still embedded, and the counts a request reads are exact at once.

use super::model::Embedder;
use super::quant;
use super::table::{self, Counts, Done};
use super::tests::model_dir;
use super::tests_late::{drive, id_of, DRIVE_LIMIT};
use super::vectors::Vectors;
use super::DIM;
use crate::fixture::{user, World};
use crate::index::{Budget, Index};
use std::time::{Duration, Instant};

const SAID: [&str; 3] = [
    "the heron stood in the reeds",
    "a quiet bird at the water",
    "the vault word is plumquartz",
];

/// A state directory with `SAID` in one session, indexed, with the vector tables made.
fn said() -> (World, Index) {
    let w = World::new();
    let lines: String = SAID.iter().map(|t| user(t).to_line()).collect();
    w.append("main", 0, &lines);
    let mut ix = w.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    table::prepare(ix.conn(), "model").unwrap();
    (w, ix)
}

/// The two tables counted whole, as `counts` must read them.
fn counted(ix: &Index) -> Counts {
    Counts {
        stored: table::stored(ix.conn()).unwrap(),
        pending: table::pending(ix.conn()).unwrap(),
    }
}

/// Every queued row stored with a made-up code and piece, as the backfill stores them.
fn store_queued(ix: &Index) -> usize {
    let jobs = table::next_jobs(ix.conn(), 100, |_| false, 0).unwrap();
    let code = quant::encode(&[1.0 / (DIM as f32).sqrt(); DIM]);
    let done: Vec<Done> = jobs
        .into_iter()
        .map(|j| (j, code.clone(), vec![[7; super::bits::WORDS]]))
        .collect();
    table::store(ix.conn(), &done).unwrap().len()
}

#[track_caller]
fn exact(ix: &Index, when: &str) {
    assert_eq!(
        table::counts(ix.conn()).unwrap(),
        counted(ix),
        "the kept counts against the tables, {when}"
    );
}

/// The counts a request reads are kept by triggers, not counted per request: they must
/// match the tables after every kind of change any writer makes to them.
#[test]
fn the_kept_counts_match_the_tables_after_every_writer() {
    let (w, mut ix) = said();
    exact(&ix, "with every row queued");
    assert_eq!(table::counts(ix.conn()).unwrap().pending, 3);
    assert_eq!(store_queued(&ix), 3);
    exact(&ix, "after a stored batch");
    assert_eq!(table::counts(ix.conn()).unwrap().stored, 3);

    // A row embedded again (queued again for damaged pieces) is updated in place.
    let id: i64 = ix
        .conn()
        .query_row("SELECT rowid FROM docs WHERE text = ?1", [SAID[1]], |r| {
            r.get(0)
        })
        .unwrap();
    ix.conn()
        .execute("UPDATE vec_pieces SET pieces = x'0102' WHERE id = ?1", [id])
        .unwrap();
    assert_eq!(table::pieces(ix.conn(), id).unwrap(), None);
    exact(&ix, "with a row queued again for its pieces");
    assert_eq!(store_queued(&ix), 1);
    exact(&ix, "after that row was embedded again");
    assert_eq!(table::counts(ix.conn()).unwrap().stored, 3, "the row once");

    // A damaged code dropped at load, its row queued again.
    ix.conn()
        .execute("UPDATE vecs SET code = x'0102' WHERE id = ?1", [id])
        .unwrap();
    let _ = table::load_slice(ix.conn(), i64::MIN, 100).unwrap();
    exact(&ix, "after a damaged code was dropped at load");
    assert_eq!(store_queued(&ix), 1);

    // A row said after the backfill, and a forget that drops a row (the log's other
    // rows are read again as new rows, and queued).
    w.append("main", 0, &user("the otter slid down the bank").to_line());
    ix.catch_up(Budget::UNLIMITED).unwrap();
    exact(&ix, "after a catch-up added a row");
    crate::fixture::rewrite_without(&w.log("main", 0), "plumquartz");
    assert_eq!(ix.forget(&[("main".into(), 0)]).unwrap(), 1);
    exact(&ix, "after a forget dropped rows");
    assert_eq!(store_queued(&ix), 3);
    exact(&ix, "after the backfill caught up");

    // A queued id whose text row is gone (a damaged database) is dropped by next_jobs.
    ix.conn()
        .execute("INSERT INTO embed_queue (id) VALUES (999999)", [])
        .unwrap();
    exact(&ix, "with an orphan queued");
    assert!(table::next_jobs(ix.conn(), 10, |_| false, 0)
        .unwrap()
        .is_empty());
    exact(&ix, "after the orphan was dropped");

    // Another model: every code cleared and every row queued again.
    assert!(table::adopt(ix.conn(), "another").unwrap());
    exact(&ix, "after another model took the index");
    while table::clear_slice(ix.conn(), 1).unwrap() {
        exact(&ix, "after a slice of the clear");
    }
    exact(&ix, "after another model cleared the codes");
    assert_eq!(
        table::counts(ix.conn()).unwrap(),
        Counts {
            stored: 0,
            pending: 3
        }
    );
}

/// An index whose vector tables were made before the counts were kept is counted once,
/// when the counts are made, and kept from there.
#[test]
fn an_index_made_before_the_counts_were_kept_is_counted_once() {
    let (_w, ix) = said();
    assert_eq!(store_queued(&ix), 3);
    ix.conn()
        .execute_batch(
            "DROP TRIGGER count_vec_added; DROP TRIGGER count_vec_dropped;
             DROP TRIGGER count_queued; DROP TRIGGER count_unqueued; DROP TABLE embed_counts;",
        )
        .unwrap();
    table::create(ix.conn()).unwrap();
    exact(&ix, "counted when the counts were made");
    assert_eq!(table::counts(ix.conn()).unwrap().stored, 3);
    // Made once: a later start does not count again, the triggers keep it (a count too
    // low is not looked for: see the next test for one too high).
    ix.conn()
        .execute("UPDATE embed_counts SET vecs = 2", [])
        .unwrap();
    table::create(ix.conn()).unwrap();
    assert_eq!(table::counts(ix.conn()).unwrap().stored, 2);
}

/// Regression: an older memoryd writing to the index (a downgrade, then back) knows
/// nothing of the counts and replaces a code a row already had, which the triggers count
/// as one more, for good: `Status` said more vectors than rows. A start finds counts
/// above the rows indexed and counts the tables again.
#[test]
fn counts_above_the_rows_indexed_are_counted_again_at_start() {
    let (_w, ix) = said();
    assert_eq!(store_queued(&ix), 3);
    // What an older memoryd's store does to a row embedded again.
    let id = id_of(&ix, SAID[0]);
    ix.conn()
        .execute(
            "INSERT OR REPLACE INTO vecs (id, class, code) SELECT id, class, code FROM vecs WHERE id = ?1",
            [id],
        )
        .unwrap();
    assert_eq!(table::counts(ix.conn()).unwrap().stored, 4, "inflated");
    table::create(ix.conn()).unwrap();
    exact(&ix, "after the next start");
    assert_eq!(table::counts(ix.conn()).unwrap().stored, 3);
}

/// A request's wake no longer counts the queue, and the backfill no longer starts from a
/// count: rows a catch-up queues after the backfill went idle must still be embedded,
/// started by the wake a request gives (`service::refresh`) and nothing else.
#[test]
fn rows_said_after_the_backfill_went_idle_are_embedded_after_a_wake() {
    let Some(dir) = model_dir() else { return };
    let (w, mut ix) = said();
    let mut v = Vectors::open(&dir).expect("the model is there");
    drive(&mut v, &ix);
    assert_eq!(v.counts(ix.conn()), (3, 0));

    for round in ["the otter slid down the bank", "a kingfisher on the branch"] {
        w.append("main", 0, &user(round).to_line());
        ix.catch_up(Budget::UNLIMITED).unwrap();
        assert!(v.deadline().is_none(), "idle until woken");
        v.wake();
        assert!(v.deadline().is_some(), "a wake asks for a turn");
        drive(&mut v, &ix);
        assert!(v.has_vector(id_of(&ix, round)), "{round} embedded");
        assert_eq!(v.counts(ix.conn()).1, 0, "nothing left queued");
        exact(&ix, "after the new row's backfill");
    }
    assert_eq!(v.counts(ix.conn()), (5, 0));
}

/// Regression: a request's wake left the counts as the last tick had counted them, so
/// the `Status` answered right after a catch-up that dropped rows said the vectors of
/// rows that were gone, until the next tick counted both tables again. The counts read
/// after the wake are exact at once, and stay exact while the backfill re-embeds.
#[test]
fn the_counts_a_request_reads_are_exact_right_after_a_catch_up_drops_rows() {
    let Some(dir) = model_dir() else { return };
    let (w, mut ix) = said();
    let mut v = Vectors::open(&dir).expect("the model is there");
    drive(&mut v, &ix);
    assert_eq!(v.counts(ix.conn()), (3, 0));

    // The log rewritten by a forget while memoryd was not told: the catch-up finds it
    // replaced, drops its rows (and their vectors) and reads the two left as new rows.
    crate::fixture::rewrite_without(&w.log("main", 0), "plumquartz");
    ix.catch_up(Budget::UNLIMITED).unwrap();
    v.wake();
    assert_eq!(
        v.counts(ix.conn()),
        (0, 2),
        "as a Status answered right after the catch-up"
    );
    exact(&ix, "right after the catch-up");
    drive(&mut v, &ix);
    assert_eq!(v.counts(ix.conn()), (2, 0));
    assert_eq!(v.progress(), (2, 0), "the status line's counts too");
    exact(&ix, "after the backfill");
}

/// A `Status` can come before the vector side's first tick has made its tables (a new
/// index, or one made before the counts were kept): it is answered with nothing counted,
/// not with an error about a missing table.
#[test]
fn counts_asked_before_the_first_tick_are_zero_not_an_error() {
    let Some(dir) = model_dir() else { return };
    let w = World::new();
    w.append("main", 0, &user("the heron stood in the reeds").to_line());
    let mut ix = w.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    let mut v = Vectors::open(&dir).expect("the model is there");
    v.wake();
    assert_eq!(v.counts(ix.conn()), (0, 0));
    drive(&mut v, &ix);
    assert_eq!(v.counts(ix.conn()), (1, 0));
}

/// The kept counts row damaged so that reading it fails (a value that is not a whole
/// number, as only a hand-edited or damaged database holds), from another connection, as
/// another process would. The triggers still add to it without failing, so every
/// writer goes on working, and it is below any count of rows, so the check at start
/// (`table::create`) leaves it: only the read fails.
fn damage_the_counts(ix: &Index) {
    ix.conn()
        .execute("UPDATE embed_counts SET vecs = -0.5, queued = -0.5", [])
        .unwrap();
    assert!(table::counts(ix.conn()).is_err(), "the read now fails");
}

/// Turns of the poll loop as the daemon runs them, each at the deadline the service asks
/// for, until nothing is due but the periodic pass minutes away: caught up, the model
/// loaded, the backfill idle.
fn run_service_idle(svc: &mut crate::service::FrameService) {
    use plumbing::Service;
    let mut out = plumbing::Outbox::default();
    let give_up = Instant::now() + DRIVE_LIMIT;
    loop {
        let Some(due) = svc.deadline() else { return };
        if due > Instant::now() + Duration::from_secs(60) {
            return;
        }
        assert!(Instant::now() < give_up, "the service never went idle");
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        svc.timer(&mut out, due.max(Instant::now()));
    }
}

/// Regression: a failed read of the vector counts failed every request that reads them
/// on its way (Status, Nudge, every Recall after its catch-up, and a Forget after its
/// rows were already dropped), where before a vector-side problem never failed a
/// recall. Each is answered, with the counts last read.
#[test]
fn a_failed_read_of_the_vector_counts_fails_no_request() {
    use proto::config::Config;
    use proto::label::DataClass;
    use proto::memory::{LogRef, Request, Response};
    let Some(dir) = model_dir() else { return };
    let w = World::new();
    let lines: String = SAID[..2].iter().map(|t| user(t).to_line()).collect();
    w.append("main", 0, &lines);
    w.append("pw", 0, &user(SAID[2]).to_line());
    let mut cfg = Config {
        state_dir: w.dir.path().to_path_buf(),
        ..Config::default()
    };
    cfg.memory.embed_model = dir;
    let mut svc =
        crate::service::FrameService::new(w.dir.path().join("config.toml"), cfg, w.index());
    run_service_idle(&mut svc);
    let status = |svc: &mut crate::service::FrameService| match svc.answer(Request::Status) {
        Response::Status(s) => (s.vectors, s.vectors_pending),
        other => panic!("Status: {other:?}"),
    };
    assert_eq!(status(&mut svc), (3, 0));

    damage_the_counts(&w.index());
    assert_eq!(status(&mut svc), (3, 0), "the counts last read");
    let hits = svc.answer(Request::Recall {
        query: "heron".into(),
        max_class: DataClass::Private,
        limit: 10,
    });
    assert!(
        matches!(&hits, Response::Hits(h) if !h.is_empty()),
        "{hits:?}"
    );
    let nudged = svc.answer(Request::Nudge {
        session: "main".into(),
    });
    assert!(matches!(nudged, Response::Status(_)), "{nudged:?}");
    // The log rewritten as /forget does, its one row gone: dropped from the index (and
    // its vector with it) before the counts are read.
    crate::fixture::rewrite_without(&w.log("pw", 0), "plumquartz");
    let forgot = svc.answer(Request::Forget {
        logs: vec![LogRef {
            session: "pw".into(),
            epoch: 0,
        }],
    });
    assert_eq!(forgot, Response::Forgot { rows: 1 });
}

/// Regression: one failed read of the counts at the end of a tick went through the
/// tick's error handler, which stops the loading of the stored codes for the whole run:
/// every code past the first slice stayed out of memory, found by words only. A status
/// read must not stop the work.
#[test]
fn a_failed_read_of_the_counts_does_not_stop_loading_the_codes() {
    use super::vectors::LOAD_SLICE;
    let Some(dir) = model_dir() else { return };
    let w = World::new();
    let ix = w.index();
    let model = Embedder::load(&dir).expect("the model loads");
    table::prepare(ix.conn(), model.fingerprint()).unwrap();
    // More codes than one slice loads (the rows need no text to be loaded).
    let last = i64::try_from(LOAD_SLICE).unwrap() + 1;
    let code = quant::to_bytes(&quant::encode(&[1.0 / (DIM as f32).sqrt(); DIM]));
    let tx = ix.conn().unchecked_transaction().unwrap();
    for id in 1..=last {
        tx.execute(
            "INSERT INTO vecs (id, class, code) VALUES (?1, 1, ?2)",
            rusqlite::params![id, code],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    damage_the_counts(&ix);

    let mut v = Vectors::open(&dir).expect("the model is there");
    drive(&mut v, &ix);
    assert!(v.has_vector(1), "the first slice");
    assert!(
        v.has_vector(last),
        "the codes past the first slice are loaded"
    );
    assert_eq!(v.progress(), (0, 0), "no counts were ever read");
}

/// Regression: before the vector side's first tick its counts read (0, 0) even when the
/// index kept exact counts, so a `Status` right after a start said no row had a vector.
#[test]
fn counts_asked_before_the_first_tick_are_the_kept_counts() {
    let Some(dir) = model_dir() else { return };
    let (_w, ix) = said();
    assert_eq!(store_queued(&ix), 3);
    let mut v = Vectors::open(&dir).expect("the model is there");
    assert_eq!(v.counts(ix.conn()), (3, 0), "before the first tick");
    exact(&ix, "as read before the first tick");
}

/// Another model sets the count of vectors to none itself, and its clear queues the rows
/// a slice at a time: rows queued already (a new row, a row waiting for its pieces) must
/// be counted once, and the triggers must count the backfill afterwards.
#[test]
fn another_model_sets_the_counts_exactly_and_leaves_the_triggers_in_place() {
    let (w, mut ix) = said();
    assert_eq!(store_queued(&ix), 3);
    let id = id_of(&ix, SAID[1]);
    ix.conn()
        .execute("UPDATE vec_pieces SET pieces = x'0102' WHERE id = ?1", [id])
        .unwrap();
    assert_eq!(table::pieces(ix.conn(), id).unwrap(), None);
    w.append("main", 0, &user("the otter slid down the bank").to_line());
    ix.catch_up(Budget::UNLIMITED).unwrap();
    exact(&ix, "with a row queued for its pieces and a new one");

    assert!(table::adopt(ix.conn(), "another").unwrap());
    exact(&ix, "after another model took the index");
    while table::clear_slice(ix.conn(), 2).unwrap() {}
    exact(&ix, "after another model cleared the codes");
    assert_eq!(
        table::counts(ix.conn()).unwrap(),
        Counts {
            stored: 0,
            pending: 4
        }
    );
    assert_eq!(store_queued(&ix), 4);
    exact(&ix, "after the backfill, the triggers counting again");
    assert_eq!(table::counts(ix.conn()).unwrap().stored, 4);
    assert!(
        !table::adopt(ix.conn(), "another").unwrap(),
        "the same model"
    );
    exact(&ix, "after the same model was adopted again");
}
