//! The rows dropped from the index since the vector store in memory last looked, so the
//! store lets go of their codes too. Whoever drops a row (a forget, a rewritten or
//! removed log, a session gone), the database's own trigger takes its code off disk; the
//! store in memory is told here, by a trigger of the same delete, so no path that drops
//! rows has to know about the store. Without it a forgotten row's code stayed in memory
//! until memoryd restarted, and a row given the same id later (ids are record times) was
//! found by meaning through the forgotten text's code until it was embedded itself.
//!
//! The table and its trigger are `TEMP`: this connection's alone, made when the vector
//! side starts (`watch`), gone when the connection closes (the store is loaded again
//! from the codes on disk then) and when the vector side goes away (`unwatch`), so they
//! never hold ids nobody reads.

use rusqlite::Connection;

const WATCH: &str = "
CREATE TEMP TABLE IF NOT EXISTS dropped_rows (id INTEGER PRIMARY KEY);
CREATE TEMP TRIGGER IF NOT EXISTS dropped_row_seen AFTER DELETE ON main.docs_content BEGIN
    INSERT OR IGNORE INTO dropped_rows (id) VALUES (old.id);
END;
";

/// Ids one look takes (`take`): a forget of a long session drops tens of thousands of
/// rows at once, and a look is this many primary-key lookups and one range delete on
/// the loop's thread, so a tick's look stays short and the rest waits for the next.
pub const TAKE: usize = 4_096;

/// Starts noting dropped rows on `conn`, from none: a vector side starting loads its
/// store from the codes on disk, so nothing noted before concerns it.
pub fn watch(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(WATCH)?;
    conn.execute_batch("DELETE FROM temp.dropped_rows;")
}

/// Stops noting them and forgets those noted: the vector side is gone.
pub fn unwatch(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "DROP TRIGGER IF EXISTS temp.dropped_row_seen; DROP TABLE IF EXISTS temp.dropped_rows;",
    )
}

/// What one look found (`take`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Taken {
    /// Rows dropped whose code the store must let go of: they have none on disk now.
    pub gone: Vec<i64>,
    /// The look read as many as it may: more may be waiting.
    pub more: bool,
}

/// Up to `n` ids noted since the last look (at least one), taken off the list. Of
/// those, the rows that have a code on disk again are left out of `gone`: a row a forget
/// read again under the same id and embedded again since (the store was given that fresh
/// code when it was stored) must keep it. No transaction: only this thread uses the
/// connection, so nothing is noted between the read and the delete, and a look that
/// finds nothing (every recall and tick makes one) is one read of an empty table.
pub fn take(conn: &Connection, n: usize) -> rusqlite::Result<Taken> {
    let n = n.max(1);
    let noted: Vec<(i64, bool)> = conn
        .prepare_cached(
            "SELECT d.id, EXISTS (SELECT 1 FROM main.vecs v WHERE v.id = d.id)
             FROM temp.dropped_rows d ORDER BY d.id LIMIT ?1",
        )?
        .query_map([i64::try_from(n).unwrap_or(i64::MAX)], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<Result<_, _>>()?;
    if let Some(&(last, _)) = noted.last() {
        // Read in key order: everything up to the last one read goes.
        conn.prepare_cached("DELETE FROM temp.dropped_rows WHERE id <= ?1")?
            .execute([last])?;
    }
    Ok(Taken {
        more: noted.len() >= n,
        gone: noted
            .into_iter()
            .filter(|&(_, coded)| !coded)
            .map(|(id, _)| id)
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::tests_late::{drive, id_of};
    use crate::embed::vectors::Vectors;
    use crate::embed::{quant, table, DIM};
    use crate::fixture::{rewrite_without, user_at, World};
    use crate::index::{Budget, Index};

    const SAID: [&str; 4] = [
        "the heron stood in the reeds",
        "the vault word is plumquartz",
        "we planted tomatoes along the fence",
        "the kettle whistled in the kitchen",
    ];

    /// `SAID` in one log, a minute apart: each row's id is its own time, so a row read
    /// again after a forget gets the id it had.
    fn world() -> (World, Index) {
        let w = World::new();
        for (minute, text) in SAID.iter().enumerate() {
            let time = format!("2026-11-30T06:0{minute}:00.000Z");
            w.append("main", 0, &user_at(&time, text).to_line());
        }
        let mut ix = w.index();
        ix.catch_up(Budget::UNLIMITED).unwrap();
        (w, ix)
    }

    /// Regression: a forgotten row's code stayed in the store in memory until memoryd
    /// started again (nothing told the store the row was gone).
    #[test]
    fn a_forgotten_rows_code_leaves_the_store_in_memory() {
        let (w, mut ix) = world();
        let Some(dir) = crate::embed::tests::model_dir() else {
            return;
        };
        let mut v = Vectors::open(&dir).expect("the model is there");
        v.tick(ix.conn());
        drive(&mut v, &ix);
        let ids: Vec<i64> = SAID.iter().map(|t| id_of(&ix, t)).collect();
        assert!(ids.iter().all(|&id| v.has_vector(id)), "every row embedded");

        rewrite_without(&w.log("main", 0), "plumquartz");
        assert_eq!(ix.forget(&[("main".into(), 0)]).unwrap(), 1);
        // What a recall does before it searches, with no tick between.
        while v.let_go_of_dropped(ix.conn()).unwrap() {}
        assert!(
            !v.has_vector(ids[1]),
            "the forgotten row's code is still held"
        );
        v.wake();
        drive(&mut v, &ix);
        assert!(!v.has_vector(ids[1]), "the forgotten row's code came back");
        // The rows kept were read again and embedded again.
        for text in SAID.iter().filter(|t| !t.contains("plumquartz")) {
            assert!(v.has_vector(id_of(&ix, text)), "{text:?} has no code");
        }
    }

    /// Regression: a row a forget read again and the backfill embedded again before the
    /// look at the dropped rows lost its fresh code from the store (the look let go of
    /// every id noted), and was not found by meaning until memoryd started again.
    #[test]
    fn a_row_embedded_again_before_the_look_keeps_its_code() {
        let (w, mut ix) = world();
        table::prepare(ix.conn(), "model").unwrap();
        watch(ix.conn()).unwrap();
        let kept = id_of(&ix, SAID[0]);
        rewrite_without(&w.log("main", 0), "plumquartz");
        assert_eq!(ix.forget(&[("main".into(), 0)]).unwrap(), 1);
        assert_eq!(id_of(&ix, SAID[0]), kept, "read again under its own id");
        // The backfill stores a fresh code for that kept row before the look.
        let job = table::next_jobs(ix.conn(), 10, |_| false, 0)
            .unwrap()
            .into_iter()
            .find(|j| j.id == kept)
            .expect("the kept row is queued again");
        let code = quant::encode(&[0.05; DIM]);
        assert_eq!(
            table::store(ix.conn(), &[(job, code, Vec::new())]).unwrap(),
            vec![0]
        );

        let taken = take(ix.conn(), TAKE).unwrap();
        assert!(!taken.more);
        assert!(!taken.gone.contains(&kept), "{taken:?}");
        assert_eq!(taken.gone.len(), SAID.len() - 1, "{taken:?}");
    }

    /// A look takes at most what it is asked for, and the next the rest; once unwatched,
    /// nothing is noted. (A forget drops every row of the log it names and reads the log
    /// again, so every row of it is noted, the ones kept included: their codes went with
    /// them on disk too, and they are embedded again.)
    #[test]
    fn dropped_rows_are_taken_a_bounded_look_at_a_time_until_unwatched() {
        let (w, mut ix) = world();
        table::create(ix.conn()).unwrap();
        watch(ix.conn()).unwrap();
        assert_eq!(take(ix.conn(), 10).unwrap(), Taken::default());
        let mut want: Vec<i64> = SAID.iter().map(|t| id_of(&ix, t)).collect();
        want.sort_unstable();
        rewrite_without(&w.log("main", 0), "plumquartz");
        assert_eq!(ix.forget(&[("main".into(), 0)]).unwrap(), 1);
        let first = take(ix.conn(), 3).unwrap();
        assert!(first.more);
        let second = take(ix.conn(), 3).unwrap();
        assert!(!second.more);
        let taken: Vec<i64> = first.gone.into_iter().chain(second.gone).collect();
        assert_eq!(taken, want);
        assert_eq!(take(ix.conn(), 3).unwrap(), Taken::default());

        unwatch(ix.conn()).unwrap();
        rewrite_without(&w.log("main", 0), "heron");
        assert_eq!(ix.forget(&[("main".into(), 0)]).unwrap(), 1);
        let left: i64 = ix
            .conn()
            .query_row(
                "SELECT count(*) FROM temp.sqlite_master WHERE name LIKE 'dropped_row%'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(left, 0, "the table or trigger outlived unwatch");
    }
}
