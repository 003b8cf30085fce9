//! Tidying the FTS5 segments after a large catch-up. A backlog of logs whose records
//! interleave in time is read one file after another, so each chunk's rows land in a new
//! segment whose rowids overlap every other segment's (rowids are record times, see
//! `rowid`); a query then has to walk and merge many overlapping doclists. Merging the
//! segments into one once the backlog is in brings recall back to what a time-ordered
//! backlog gives. It runs from the start-up timer, never from a request.

use super::{Index, IndexError};

/// Rows a catch-up must have added since the last tidy before another is worth its cost.
/// An FTS5 'optimize' rewrites the whole index (about a second per few hundred thousand
/// rows on a small machine), so it is kept for backlogs; a turn's few new rows are merged
/// well enough by FTS5's own automerge.
const TIDY_AFTER_ROWS: u64 = 50_000;

impl Index {
    /// Merges the index's segments into one when more than `TIDY_AFTER_ROWS` rows were
    /// added since the last time. Returns whether it did.
    pub fn tidy_if_due(&mut self) -> Result<bool, IndexError> {
        if self.committed_rows.saturating_sub(self.tidied_at) < TIDY_AFTER_ROWS {
            return Ok(false);
        }
        self.conn
            .execute_batch(
                "INSERT INTO docs (docs) VALUES ('optimize');
                 INSERT INTO near (near) VALUES ('optimize');",
            )
            .map_err(|e| self.sql(e))?;
        self.tidied_at = self.committed_rows;
        Ok(true)
    }
}
