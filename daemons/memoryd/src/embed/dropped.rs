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
/// rows at once, and a look is one indexed read and one delete of this many on the
/// loop's thread (well under a millisecond), so the rest waits for the next tick.
pub const TAKE: usize = 4_096;

/// Starts noting dropped rows on `conn`.
pub fn watch(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(WATCH)
}

/// Stops noting them and forgets those noted: the vector side is gone.
pub fn unwatch(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "DROP TRIGGER IF EXISTS temp.dropped_row_seen; DROP TABLE IF EXISTS temp.dropped_rows;",
    )
}

/// Up to `n` ids of rows dropped since the last look, taken off the list; fewer than
/// `n` when that was all of them.
pub fn take(conn: &Connection, n: usize) -> rusqlite::Result<Vec<i64>> {
    let tx = conn.unchecked_transaction()?;
    let ids: Vec<i64> = tx
        .prepare_cached("SELECT id FROM temp.dropped_rows ORDER BY id LIMIT ?1")?
        .query_map([i64::try_from(n).unwrap_or(i64::MAX)], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    if let Some(&last) = ids.last() {
        // Read in key order: everything up to the last one read goes.
        tx.prepare_cached("DELETE FROM temp.dropped_rows WHERE id <= ?1")?
            .execute([last])?;
    }
    tx.commit()?;
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::tests_late::{drive, id_of};
    use crate::embed::vectors::Vectors;
    use crate::fixture::{rewrite_without, user, World};
    use crate::index::{Budget, Index};

    const SAID: [&str; 4] = [
        "the heron stood in the reeds",
        "the vault word is plumquartz",
        "we planted tomatoes along the fence",
        "the kettle whistled in the kitchen",
    ];

    fn world() -> (World, Index) {
        let w = World::new();
        for text in SAID {
            w.append("main", 0, &user(text).to_line());
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
        v.wake();
        drive(&mut v, &ix);
        assert!(
            !v.has_vector(ids[1]),
            "the forgotten row's code is still held"
        );
        // The rows kept were read again and embedded again.
        for text in SAID.iter().filter(|t| !t.contains("plumquartz")) {
            assert!(v.has_vector(id_of(&ix, text)), "{text:?} has no code");
        }
    }

    /// A look takes at most what it is asked for, and the next the rest; once unwatched,
    /// nothing more is noted. (A forget drops every row of the log it names and reads
    /// the log again, so every row of it is noted, the ones kept included: their codes
    /// went with them on disk too, and they are embedded again.)
    #[test]
    fn dropped_rows_are_taken_a_bounded_look_at_a_time_until_unwatched() {
        let (w, mut ix) = world();
        watch(ix.conn()).unwrap();
        assert!(take(ix.conn(), 10).unwrap().is_empty());
        let mut want: Vec<i64> = SAID.iter().map(|t| id_of(&ix, t)).collect();
        want.sort_unstable();
        rewrite_without(&w.log("main", 0), "plumquartz");
        assert_eq!(ix.forget(&[("main".into(), 0)]).unwrap(), 1);
        let mut taken = take(ix.conn(), 3).unwrap();
        assert_eq!(taken.len(), 3);
        taken.extend(take(ix.conn(), 3).unwrap());
        assert_eq!(taken, want);
        assert!(take(ix.conn(), 3).unwrap().is_empty());

        unwatch(ix.conn()).unwrap();
        rewrite_without(&w.log("main", 0), "heron");
        assert_eq!(ix.forget(&[("main".into(), 0)]).unwrap(), 1);
        watch(ix.conn()).unwrap();
        assert!(
            take(ix.conn(), 10).unwrap().is_empty(),
            "noted while unwatched"
        );
    }
}
