//! Making deleted text leave the disk. Deleting a row from FTS5 only adds a tombstone: the
//! row's words stay in the older segments until they are merged, and SQLite's pages (in
//! the database and in its WAL) keep the deleted bytes until overwritten. So whenever rows
//! are dropped (a log rewritten, shrunk or removed, or a `Forget`), the index is marked
//! `purge_due` in the same transaction, and `purge` then merges every segment into one
//! (FTS5 `optimize`: tombstones and what they delete both go), with `secure_delete` on
//! (see `schema::connect`) so freed pages are zeroed, and checkpoints the WAL with
//! `TRUNCATE`, so the WAL file is emptied. The mark is cleared only after that, so a crash
//! at any point leaves it set and the next start purges again.

use super::{Index, IndexError};
use rusqlite::{Connection, OptionalExtension};

/// Marks the index as holding deleted text not yet purged: called in the transaction
/// that deletes rows.
pub(super) fn mark_due(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('purge_due', '1')",
        [],
    )
    .map(drop)
}

impl Index {
    /// Whether dropped rows may still be on disk.
    pub(crate) fn purge_due(&self) -> bool {
        self.purge_pending
    }

    /// Purges when rows were dropped since the last purge. Returns whether it did. Costs
    /// a rewrite of the full-text index (about a second per few hundred thousand rows on
    /// a small machine), so it runs after a `Forget` and after a catch-up that dropped
    /// rows, never inside a recall.
    pub fn purge_if_due(&mut self) -> Result<bool, IndexError> {
        if !self.purge_pending {
            return Ok(false);
        }
        self.purge()?;
        Ok(true)
    }

    /// Merges the FTS5 segments, empties the WAL, then clears the mark (see the module).
    pub fn purge(&mut self) -> Result<(), IndexError> {
        let run = |conn: &Connection| -> rusqlite::Result<()> {
            conn.execute("INSERT INTO docs (docs) VALUES ('optimize')", [])?;
            conn.execute("INSERT INTO near (near) VALUES ('optimize')", [])?;
            checkpoint(conn)?;
            conn.execute("DELETE FROM meta WHERE key = 'purge_due'", [])?;
            checkpoint(conn)
        };
        run(&self.conn).map_err(|e| self.sql(e))?;
        self.purge_pending = false;
        self.tidied_at = self.committed_rows;
        Ok(())
    }
}

/// Whether the database at hand is marked as holding dropped text (at open).
pub(super) fn marked(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row("SELECT 1 FROM meta WHERE key = 'purge_due'", [], |_| Ok(()))
        .optional()
        .map(|o| o.is_some())
}

/// Copies the WAL into the database and truncates it to nothing. A reader holding an old
/// snapshot (the sqlite3 shell, say) makes it report busy; that is an error here, since
/// the WAL would keep what it holds.
pub(super) fn checkpoint(conn: &Connection) -> rusqlite::Result<()> {
    let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
    if busy != 0 {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            Some("the WAL could not be checkpointed: another reader holds it".into()),
        ));
    }
    Ok(())
}
