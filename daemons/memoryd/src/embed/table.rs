//! The vectors in the index database, and the queue of rows still to embed.
//!
//! `vecs` holds one code per text row (keyed by the row's id, with its class so a scan
//! can filter without reading the text), `vec_pieces` the row's word pieces for late
//! interaction (`late`; read only for a recall's candidates, never loaded whole),
//! `embed_queue` the ids of rows to embed (no code yet, or a code but no pieces), and
//! `embed_meta` which model made the codes. Three triggers on FTS5's content table
//! (`docs_content`) keep the queue exact in the same transaction as the text: a row
//! added is queued, a row dropped takes its code, its pieces and its queue entry with it
//! (the pieces' trigger is its own, as the pieces came later). So a crash
//! anywhere leaves no row unqueued and no code for a row that is gone, and the text
//! index's own code (catch-up, ingest) needs no change to feed the vectors.
//!
//! An index made before rows kept their pieces keeps its codes when it is opened by
//! this memoryd (`create`): its rows are queued for their pieces, newest first, and
//! recall uses their vectors meanwhile (docs/memoryd.md, 'Late interaction').
//!
//! `embed_counts` holds how many rows `vecs` and `embed_queue` hold, kept by triggers on
//! those two tables in the same transaction as every change to them, whoever makes it
//! (a stored batch, a catch-up or forget dropping rows, a damaged code or pieces queued
//! again, a slice of a clear). So `counts` is one row read, whatever the tables hold,
//! and exact: a request never counts a table (docs/memoryd.md, 'Vectors and the
//! model'). The tables are counted when `create`
//! first makes the counts (a new index, or one made before they were kept), and again at
//! a start that finds them above the rows indexed (an older memoryd wrote to the index:
//! `INFLATED`). The triggers count a REPLACE that
//! overwrites a row as an insert alone (SQLite fires no delete trigger for it), so every
//! writer of these two tables inserts new rows or updates in place (`store`'s upsert),
//! never `INSERT OR REPLACE`.
//!
//! Another model (or the first one) takes over the index without a pass over its rows:
//! `adopt` records the new model at once with a bound in `embed_meta` (`stale_up_to`):
//! codes and pieces of rows with an id up to it are another model's, and those rows are
//! not all queued yet. Nothing reads them as vectors meanwhile (`load_slice`, `pieces`,
//! `store` and `next_jobs` look above the bound, and `embed_counts.vecs` counts only
//! codes above it), and `clear_slice` clears them and queues their rows a bounded slice
//! at a time, from the newest rows down, lowering the bound in the same transaction; at
//! the bottom the bound goes. So a crash between slices resumes at the bound, and every
//! tick of a model change is one slice (docs/memoryd.md, 'Vectors and the model').

use super::bits::Bits;
use super::late;
use super::quant::{self, Code};
use rusqlite::{params, Connection, OptionalExtension};

const CREATE: &str = "
CREATE TABLE IF NOT EXISTS vecs (id INTEGER PRIMARY KEY, class INTEGER NOT NULL, code BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS embed_queue (id INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS embed_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS embed_row_added AFTER INSERT ON docs_content BEGIN
    INSERT OR IGNORE INTO embed_queue (id) VALUES (new.id);
END;
CREATE TRIGGER IF NOT EXISTS embed_row_dropped AFTER DELETE ON docs_content BEGIN
    DELETE FROM embed_queue WHERE id = old.id;
    DELETE FROM vecs WHERE id = old.id;
END;
CREATE TABLE IF NOT EXISTS vec_pieces (id INTEGER PRIMARY KEY, pieces BLOB NOT NULL);
CREATE TRIGGER IF NOT EXISTS pieces_row_dropped AFTER DELETE ON docs_content BEGIN
    DELETE FROM vec_pieces WHERE id = old.id;
END;
CREATE TABLE IF NOT EXISTS embed_counts (
    id INTEGER PRIMARY KEY CHECK (id = 1), vecs INTEGER NOT NULL, queued INTEGER NOT NULL);
";

/// The bound kept in `embed_meta` as SQL, NULL when none is kept. memoryd writes it as
/// an integer in decimal; anything else (a damaged or hand-edited index) reads as the
/// largest id, so every code is taken for another model's and the clear goes over all of
/// them again: a damaged bound costs a backfill, never an old model's code used as the
/// new one's (SQLite would read "abc" as 0, and nothing would be stale).
macro_rules! kept_bound {
    () => {
        "(SELECT CASE WHEN value = CAST(CAST(value AS INTEGER) AS TEXT) \
         THEN CAST(value AS INTEGER) ELSE 9223372036854775807 END \
         FROM embed_meta WHERE key = 'stale_up_to')"
    };
}

/// The bound of a clear under way as SQL: codes and pieces of rows with ids up to it are
/// another model's (`kept_bound`; the smallest id when none is kept, so nothing is
/// stale). Row ids are record times in milliseconds, never below 0, so the smallest id
/// is below every row.
macro_rules! stale_bound {
    () => {
        concat!("coalesce(", kept_bound!(), ", -9223372036854775807 - 1)")
    };
}

/// The triggers that keep `embed_counts`. `vecs` counts the codes of the model in
/// `embed_meta` alone: a stale code (at or below the clear's bound) was not counted when
/// `adopt` set the count to zero, so neither a slice of the clear nor a dropped row
/// taking its stale code along counts it out again. A new code is never stale (`store`
/// writes none at or below the bound). Made again at every start (`create`): an index
/// from before the bound had a `count_vec_dropped` without it.
const COUNT_TRIGGERS: &str = concat!(
    "
CREATE TRIGGER IF NOT EXISTS count_vec_added AFTER INSERT ON vecs BEGIN
    UPDATE embed_counts SET vecs = vecs + 1;
END;
DROP TRIGGER IF EXISTS count_vec_dropped;
CREATE TRIGGER count_vec_dropped AFTER DELETE ON vecs WHEN old.id > ",
    stale_bound!(),
    " BEGIN
    UPDATE embed_counts SET vecs = vecs - 1;
END;
CREATE TRIGGER IF NOT EXISTS count_queued AFTER INSERT ON embed_queue BEGIN
    UPDATE embed_counts SET queued = queued + 1;
END;
CREATE TRIGGER IF NOT EXISTS count_unqueued AFTER DELETE ON embed_queue BEGIN
    UPDATE embed_counts SET queued = queued - 1;
END;
"
);

/// The counts `embed_counts` starts from when `create` first makes it: the one time
/// the two tables are counted whole (`counts`). The triggers keep it from then on; the
/// row is made before anything is queued in the same transaction, so the triggers count
/// that too.
const COUNT_ONCE: &str = concat!(
    "INSERT INTO embed_counts (id, vecs, queued)
    VALUES (1, (SELECT count(*) FROM vecs WHERE id > ",
    stale_bound!(),
    "), (SELECT count(*) FROM embed_queue))"
);

/// Whether the kept counts say more than the index can hold: more codes, or more rows
/// queued, than rows indexed (as the index's `files` keep them, one row per log). Only an
/// older memoryd writing to the index can do that: it knows nothing of the counts, and
/// its `INSERT OR REPLACE` of a code the row already had is counted as one more by the
/// triggers, for good. Looked at once per start; a count that is too low is not seen,
/// but shows only a wrong number (docs/memoryd.md, 'Vectors and the model').
const INFLATED: &str = "SELECT EXISTS (SELECT 1 FROM embed_counts
    WHERE max(vecs, queued) > (SELECT coalesce(sum(rows), 0) FROM files))";

/// The two tables counted whole again, for counts found `INFLATED`.
const RECOUNT: &str = concat!(
    "UPDATE embed_counts SET vecs = (SELECT count(*) FROM vecs WHERE id > ",
    stale_bound!(),
    "), queued = (SELECT count(*) FROM embed_queue)"
);

/// Rows a slice of a clear takes (`clear_slice`): their codes and pieces cleared, with
/// `secure_delete` overwriting what they held, and the rows queued, in one transaction on
/// the poll loop's thread, which a request arriving then waits for. A row's code and
/// pieces are about 1.8 KB (388 bytes and 29 pieces of 48), so a slice frees about
/// 0.9 MB. Measured at a million rows (docs/measurements/memoryd.md, 'Another model, a
/// slice a tick'): on a busy machine a slice of 500 took 2.4 to 4.6 ms at the median and
/// about 20 ms at the 99th percentile (its longest, 23 to 111 ms, the disk stalling
/// under other writers; 12 ms on a quiet machine), where slices of 1 000 had a 99th
/// percentile near 30 ms. A million rows are then 2 000 slices, about a minute of
/// ticks, while the backfill (hours at that size) already embeds the newest rows.
pub const CLEAR_SLICE: usize = 500;

/// Queues every text row that has a code but no pieces: for an index made before rows
/// kept their pieces, whose codes are kept (`create`).
const SEED_PIECES: &str = "INSERT OR IGNORE INTO embed_queue (id)
    SELECT id FROM docs_content WHERE id NOT IN (SELECT id FROM vec_pieces)";

/// What `create` queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queued {
    /// Nothing: the tables were there, and the queue is as it was left.
    Nothing,
    /// Every row, a slice a tick (`clear_slice`): the index had no triggers yet (the
    /// model was just configured).
    Unembedded,
    /// Every row without pieces, its code kept: an index made before rows kept their
    /// pieces.
    ForPieces,
}

/// `create` then `adopt`, and the clear run to its end: the tables for codes made by
/// `model`, every row queued that needs it, for a caller that has its model already (the
/// benches). Returns whether anything was queued.
pub fn prepare(conn: &Connection, model: &str) -> rusqlite::Result<bool> {
    let queued = create(conn)?;
    let other = adopt(conn, model)?;
    while clear_slice(conn, CLEAR_SLICE)? {}
    Ok(other || queued != Queued::Nothing)
}

/// Makes the tables and triggers, and says what it queued. Which model made the stored
/// codes is not looked at here: that waits for a model to load (`adopt`), so a model that
/// fails to load never costs the codes made by a good one.
pub fn create(conn: &Connection) -> rusqlite::Result<Queued> {
    let had_triggers: bool = conn.query_row(
        "SELECT count(*) = 2 FROM sqlite_master WHERE type = 'trigger'
             AND name IN ('embed_row_added', 'embed_row_dropped')",
        [],
        |r| r.get(0),
    )?;
    let had_pieces: bool = conn.query_row(
        "SELECT count(*) = 1 FROM sqlite_master WHERE type = 'table' AND name = 'vec_pieces'",
        [],
        |r| r.get(0),
    )?;
    let tx = conn.unchecked_transaction()?;
    tx.execute_batch(CREATE)?;
    tx.execute_batch(COUNT_TRIGGERS)?;
    // Looked up first: the statement itself would count both tables before it found
    // the row there, at every start.
    let counted: bool = tx.query_row("SELECT EXISTS (SELECT 1 FROM embed_counts)", [], |r| {
        r.get(0)
    })?;
    if !counted {
        tx.execute(COUNT_ONCE, [])?;
    } else if tx.query_row(INFLATED, [], |r| r.get::<_, bool>(0))? {
        plumbing::notice!(
            "vectors: the kept counts said more than the rows indexed (an older memoryd \
             wrote to this index); counted again"
        );
        tx.execute(RECOUNT, [])?;
    }
    let queued = if !had_triggers {
        // Every row is to be queued: as for another model, a slice a tick
        // (`clear_slice`), newest first, not all in this tick. The newest row is read by
        // itself, a lookup at the end of the key: folded into the insert, SQLite scanned
        // the whole table for it.
        let newest: Option<i64> =
            tx.query_row("SELECT max(id) FROM docs_content", [], |r| r.get(0))?;
        if let Some(newest) = newest {
            keep_bound(&tx, newest)?;
        }
        Queued::Unembedded
    } else if !had_pieces {
        // Codes stored before rows kept their pieces: the codes stay (at a million rows
        // the backfill takes hours, and recall by meaning needs them all that time), and
        // every row is embedded again for its pieces, newest first. Until a recall's
        // candidates all have pieces, the merge's order is its answer (docs/memoryd.md,
        // 'Late interaction').
        tx.execute(SEED_PIECES, [])?;
        Queued::ForPieces
    } else {
        Queued::Nothing
    };
    tx.commit()?;
    Ok(queued)
}

/// Takes the loaded model (`model`, its content fingerprint) as the maker of the codes.
/// When they were made by another (or by none: the first model), the bound of the clear
/// (`stale_up_to`) is raised over every stored code and pieces, so none of them is read
/// or counted as this model's from this transaction on, and `embed_counts.vecs` is set
/// to none. Nothing is cleared or queued here: `clear_slice` does that a slice a tick. A
/// second change while a clear is under way raises the bound over what the model between
/// stored. Returns whether it started over.
pub fn adopt(conn: &Connection, model: &str) -> rusqlite::Result<bool> {
    let tx = conn.unchecked_transaction()?;
    let made_by: Option<String> = tx
        .query_row(
            "SELECT value FROM embed_meta WHERE key = 'model'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    let other = made_by.as_deref() != Some(model);
    if other {
        // Three lookups at the end of a primary key (and the kept bound): no pass over
        // the rows, whatever the index holds.
        let top: Option<i64> = tx.query_row(
            concat!(
                "SELECT max(coalesce((SELECT max(id) FROM vecs), ",
                stale_bound!(),
                "), coalesce((SELECT max(id) FROM vec_pieces), ",
                stale_bound!(),
                "), ",
                stale_bound!(),
                ")"
            ),
            [],
            |r| r.get(0),
        )?;
        if let Some(top) = top.filter(|&t| t > i64::MIN) {
            keep_bound(&tx, top)?;
        }
        tx.execute(
            "INSERT OR REPLACE INTO embed_meta (key, value) VALUES ('model', ?1)",
            [model],
        )?;
        tx.execute("UPDATE embed_counts SET vecs = 0", [])?;
    }
    tx.commit()?;
    Ok(other)
}

/// Keeps `bound` as the clear's bound, in decimal (what `kept_bound` reads back).
fn keep_bound(conn: &Connection, bound: i64) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO embed_meta (key, value) VALUES ('stale_up_to', ?1)",
        [bound.to_string()],
    )?;
    Ok(())
}

/// The bound of a clear under way (`kept_bound`), `None` when there is none: codes and
/// pieces of rows with ids up to it are another model's.
pub fn stale_up_to(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached(concat!("SELECT ", kept_bound!()))?
        .query_row([], |r| r.get(0))
}

/// The lowest id a vector may be read or stored for: above the clear's bound.
fn floor(conn: &Connection) -> rusqlite::Result<i64> {
    Ok(stale_up_to(conn)?.unwrap_or(i64::MIN))
}

/// One slice of a clear under way: the codes and pieces of the `n` newest rows at or
/// below the bound (and of any id between them, a row or not) cleared, those rows
/// queued, the bound lowered past them, in one transaction; the bound goes with the last
/// slice. Returns whether any of the clear is left. Costs the slice, never the index:
/// each statement is a range of a primary key (`CLEAR_SLICE`).
pub fn clear_slice(conn: &Connection, n: usize) -> rusqlite::Result<bool> {
    let tx = conn.unchecked_transaction()?;
    let Some(top) = stale_up_to(&tx)? else {
        return Ok(false);
    };
    // The newest row left below the slice; none: this slice is the last.
    let below: Option<i64> = tx
        .prepare_cached(
            "SELECT id FROM docs_content WHERE id <= ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2",
        )?
        .query_row(
            params![top, i64::try_from(n.max(1)).unwrap_or(i64::MAX)],
            |r| r.get(0),
        )
        .optional()?;
    let bottom = below.unwrap_or(i64::MIN);
    // Cleared under the old bound: the count trigger passes over stale codes, which
    // `embed_counts.vecs` never counted.
    tx.prepare_cached("DELETE FROM vecs WHERE id > ?1 AND id <= ?2")?
        .execute([bottom, top])?;
    tx.prepare_cached("DELETE FROM vec_pieces WHERE id > ?1 AND id <= ?2")?
        .execute([bottom, top])?;
    tx.prepare_cached(
        "INSERT OR IGNORE INTO embed_queue (id)
         SELECT id FROM docs_content WHERE id > ?1 AND id <= ?2",
    )?
    .execute([bottom, top])?;
    match below {
        Some(b) => tx
            .prepare_cached("UPDATE embed_meta SET value = ?1 WHERE key = 'stale_up_to'")?
            .execute([b.to_string()])?,
        None => tx
            .prepare_cached("DELETE FROM embed_meta WHERE key = 'stale_up_to'")?
            .execute([])?,
    };
    tx.commit()?;
    Ok(below.is_some())
}

/// Rows with a code and rows queued to embed, as `embed_counts` keeps them: one row
/// read, whatever the tables hold. A count below zero (only a hand-edited database has
/// one) reads as zero; nothing but `Status` reads these, so a wrong count can never stop
/// the backfill (`next_jobs` looks at the queue itself).
pub fn counts(conn: &Connection) -> rusqlite::Result<Counts> {
    let mut stmt = conn.prepare_cached("SELECT vecs, queued FROM embed_counts WHERE id = 1")?;
    let (vecs, queued): (i64, i64) = stmt
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?
        .unwrap_or((0, 0));
    Ok(Counts {
        stored: u64::try_from(vecs).unwrap_or(0),
        pending: u64::try_from(queued).unwrap_or(0),
    })
}

/// `counts`, or `None` when the index does not keep them yet: before `create` first ran
/// on it (a new index, or one made before they were kept). One more lookup, of the
/// schema, for the requests that come before the vector side's first tick.
pub fn counts_if_kept(conn: &Connection) -> rusqlite::Result<Option<Counts>> {
    let kept: bool = conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'embed_counts')",
        )?
        .query_row([], |r| r.get(0))?;
    if kept {
        counts(conn).map(Some)
    } else {
        Ok(None)
    }
}

/// What `counts` reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Rows with a code (`vecs`).
    pub stored: u64,
    /// Rows queued to embed (`embed_queue`), set-aside rows and rows in flight included.
    pub pending: u64,
}

/// Rows still to embed, counted in the table: a scan of the queue, for checking
/// `counts` (tests, `scripts/bench memory`), never for a request.
pub fn pending(conn: &Connection) -> rusqlite::Result<u64> {
    let n: i64 = conn.query_row("SELECT count(*) FROM embed_queue", [], |r| r.get(0))?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Rows with a code of the model in `embed_meta` (above a clear's bound), counted in the
/// table: a scan of `vecs` (about 90 ms at a million rows), for checking `counts`, never
/// for a request.
pub fn stored(conn: &Connection) -> rusqlite::Result<u64> {
    let n: i64 = conn.query_row(
        concat!("SELECT count(*) FROM vecs WHERE id > ", stale_bound!()),
        [],
        |r| r.get(0),
    )?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// A row to embed.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: i64,
    pub class: i64,
    pub text: String,
}

/// Up to `n` queued rows above a clear's bound, newest first (the recent past is what is
/// asked about most), skipping ids for which `skip` is true (already handed to the
/// worker). Reads at most
/// `n + skipped` queued ids, by their primary key: the caller bounds that sum
/// (`vectors::MAX_QUEUE_READ`). A queued id whose text row is gone (only a damaged
/// database has one) is dropped from the queue.
pub fn next_jobs(
    conn: &Connection,
    n: usize,
    skip: impl Fn(i64) -> bool,
    skipped: usize,
) -> rusqlite::Result<Vec<Job>> {
    // Rows at or below a clear's bound wait for it: a code stored for one there would be
    // taken for another model's and cleared.
    let floor = floor(conn)?;
    let mut stmt = conn.prepare_cached(
        "SELECT q.id, d.class, d.text FROM embed_queue q LEFT JOIN docs d ON d.rowid = q.id
         WHERE q.id > ?2 ORDER BY q.id DESC LIMIT ?1",
    )?;
    let want = i64::try_from(n + skipped).unwrap_or(i64::MAX);
    let rows = stmt.query_map(params![want, floor], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, Option<i64>>(1)?,
            r.get::<_, Option<String>>(2)?,
        ))
    })?;
    let mut jobs = Vec::new();
    let mut orphans = Vec::new();
    for row in rows {
        let (id, class, text) = row?;
        match (class, text) {
            (Some(class), Some(text)) if !skip(id) && jobs.len() < n => {
                jobs.push(Job { id, class, text })
            }
            (None, _) | (_, None) => orphans.push(id),
            _ => {}
        }
    }
    for id in orphans {
        conn.execute("DELETE FROM embed_queue WHERE id = ?1", [id])?;
    }
    Ok(jobs)
}

/// A finished job: its row, its vector's code and its pieces (`late`).
pub type Done = (Job, Code, Vec<Bits>);

/// Stores the codes and pieces of finished jobs and takes them off the queue, in one
/// transaction. A job whose row changed since it was read (dropped, or replaced by other
/// text) is not stored: its vector would describe text that is no longer there; nor is
/// one at or below a clear's bound, where a code is taken for another model's. Returns
/// the places of the jobs stored.
pub fn store(conn: &Connection, done: &[Done]) -> rusqlite::Result<Vec<usize>> {
    let tx = conn.unchecked_transaction()?;
    let floor = floor(&tx)?;
    let mut stored = Vec::new();
    {
        // An upsert, not a REPLACE: a row embedded again is updated in place, so the
        // count triggers see no insert for it (see the module doc).
        let mut put = tx.prepare_cached(
            "INSERT INTO vecs (id, class, code)
             SELECT ?1, ?2, ?3 WHERE ?1 > ?5
                 AND EXISTS (SELECT 1 FROM docs WHERE rowid = ?1 AND text = ?4)
             ON CONFLICT (id) DO UPDATE SET class = excluded.class, code = excluded.code",
        )?;
        let mut pieces =
            tx.prepare_cached("INSERT OR REPLACE INTO vec_pieces (id, pieces) VALUES (?1, ?2)")?;
        let mut unqueue = tx.prepare_cached("DELETE FROM embed_queue WHERE id = ?1")?;
        for (at, (job, code, p)) in done.iter().enumerate() {
            let row = params![job.id, job.class, quant::to_bytes(code), job.text, floor];
            if put.execute(row)? == 1 {
                pieces.execute(params![job.id, late::to_bytes(p)])?;
                unqueue.execute([job.id])?;
                stored.push(at);
            }
        }
    }
    tx.commit()?;
    Ok(stored)
}

/// The pieces of row `id` (`late`), `None` when it has none stored, they are damaged, or
/// they are another model's (at or below a clear's bound, read in the same statement).
/// Damaged pieces are dropped and the row queued in the same database, so it is
/// embedded again (at once when the backfill is running, else after the next start: the
/// queue outlives the process); meanwhile its vector is still used. The only other rows
/// with a vector and no pieces are those of an index made before rows kept their pieces,
/// queued by `create` until the backfill reaches them: `store` writes both in one
/// transaction.
pub fn pieces(conn: &Connection, id: i64) -> rusqlite::Result<Option<Vec<Bits>>> {
    let mut stmt = conn.prepare_cached(concat!(
        "SELECT pieces FROM vec_pieces WHERE id = ?1 AND id > ",
        stale_bound!()
    ))?;
    let Some(blob) = stmt
        .query_row([id], |r| r.get::<_, Vec<u8>>(0))
        .optional()?
    else {
        return Ok(None);
    };
    let read = late::from_bytes(&blob);
    if read.is_none() {
        plumbing::warn!("pieces of row {id} are damaged; embedding it again");
        conn.execute("DELETE FROM vec_pieces WHERE id = ?1", [id])?;
        conn.execute("INSERT OR IGNORE INTO embed_queue (id) VALUES (?1)", [id])?;
    }
    Ok(read)
}

/// Up to `n` stored codes with ids above `after` and above a clear's bound (another
/// model's codes are never loaded), in id order, for loading the store in slices, and the
/// last id read (`None`: nothing was left). A blob that is not a code is
/// dropped and its row queued again rather than loaded (the triggers count both).
pub fn load_slice(conn: &Connection, after: i64, n: usize) -> rusqlite::Result<Slice> {
    let mut stmt =
        conn.prepare_cached("SELECT id, class, code FROM vecs WHERE id > ?1 ORDER BY id LIMIT ?2")?;
    let after = after.max(floor(conn)?);
    let rows = stmt.query_map(params![after, i64::try_from(n).unwrap_or(i64::MAX)], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, Vec<u8>>(2)?,
        ))
    })?;
    let mut out = Vec::new();
    let mut damaged = Vec::new();
    let mut last = None;
    for row in rows {
        let (id, class, blob) = row?;
        last = Some(id);
        match quant::from_bytes(&blob) {
            Some(code) => out.push((id, class, code)),
            None => damaged.push(id),
        }
    }
    for id in damaged {
        plumbing::warn!("vector of row {id} is damaged; embedding it again");
        conn.execute("DELETE FROM vecs WHERE id = ?1", [id])?;
        conn.execute("INSERT OR IGNORE INTO embed_queue (id) VALUES (?1)", [id])?;
    }
    Ok((out, last))
}

/// Loaded codes (id, class, code) and the last id read.
pub type Slice = (Vec<(i64, i64, Code)>, Option<i64>);
