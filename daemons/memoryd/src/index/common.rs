//! Keeping a recall's cost bounded however common its words are (issue 10: p99 at a
//! million rows). bm25 with `ORDER BY … LIMIT` scores every row that matches, so a
//! question whose words sit in a large share of the history ("what did I say about
//! work?") costs a score per matching row: hundreds of milliseconds at a million rows,
//! while its answer is decided by little more than recency, since a word in that many
//! rows says almost nothing about which one is meant.
//!
//! Two rules, both invisible on a history where no word is in more than `COMMON_ROWS`
//! rows (the evaluation set, any young index):
//!
//! - A group (a word and its forms, or an exact token) matching more than `COMMON_ROWS`
//!   rows is *common*. When the query also has a rarer group, the any-words search is
//!   over the rarer groups only: a row holding only common words could not outrank one
//!   holding a rare word, and the re-ranking (`rank`) still counts every word the
//!   candidates hold. The all-words search keeps every group: FTS5 walks an AND by its
//!   rarest term, so a rare group bounds it.
//! - A search that may still match more than `COMMON_ROWS` rows (every group common) is
//!   made over the newest `COMMON_ROWS` rows it matches (a window of rowids, which are
//!   record times, see `rowid`), ranked by relevance within them. Relevance still comes
//!   first inside the window; past it, the choice is recency, which is what is left to
//!   choose by when every candidate holds the same common words.
//!
//! Whether a group is common is found by counting its matches up to `COMMON_ROWS + 1`
//! (a walk of its doclist, no row read, no score) and remembered (`Common`): a common
//! group stays common while rows are only added; a deletion forgets every verdict.

use super::{Index, IndexError};
use std::cell::RefCell;
use std::collections::HashSet;

/// Matching rows past which a group is common and a search is windowed. Scoring a row
/// costs FTS5 about two microseconds on this class of machine (a doclist position read
/// and a `docsize` lookup), so this bounds the scoring of one search to about ten
/// milliseconds, a recall's two searches and the re-ranking well inside 50 ms; a word in
/// fewer rows than this is rare enough for its matches to be worth ranking in full.
pub const COMMON_ROWS: u32 = 5_000;

/// Common groups remembered. A verdict costs one doclist walk of `COMMON_ROWS` entries to
/// find again, so a bound that only a stream of distinct common words fills is plenty;
/// when full the set starts over.
pub const MAX_REMEMBERED: usize = 4_096;

/// The groups known to be common, by FTS5 expression.
#[derive(Debug, Default)]
pub struct Common {
    known: RefCell<HashSet<String>>,
}

impl Common {
    /// Forgets every verdict: rows were deleted, so a common group may no longer be.
    pub fn forget(&self) {
        self.known.borrow_mut().clear();
    }

    pub(super) fn knows(&self, expr: &str) -> bool {
        self.known.borrow().contains(expr)
    }

    fn remember(&self, expr: &str) {
        let mut known = self.known.borrow_mut();
        if known.len() >= MAX_REMEMBERED {
            known.clear();
        }
        known.insert(expr.to_string());
    }
}

/// Counts at most `COMMON_ROWS + 1` matches: never reads a row or scores one.
const COUNT_UP_TO: &str =
    "SELECT count(*) FROM (SELECT rowid FROM docs WHERE docs MATCH ?1 LIMIT ?2)";

/// The rowid of the `COMMON_ROWS`-th newest match, if there are that many: the lower end
/// of the window. FTS5 walks its doclists backwards for `ORDER BY rowid DESC`.
const WINDOW_START: &str =
    "SELECT rowid FROM docs WHERE docs MATCH ?1 ORDER BY rowid DESC LIMIT 1 OFFSET ?2";

impl Index {
    /// Whether the group with FTS5 expression `expr` matches more than `COMMON_ROWS` rows.
    pub(super) fn is_common(&self, expr: &str) -> Result<bool, IndexError> {
        if self.common.knows(expr) {
            return Ok(true);
        }
        let run = || -> rusqlite::Result<i64> {
            let mut stmt = self.conn.prepare_cached(COUNT_UP_TO)?;
            stmt.query_row(rusqlite::params![expr, COMMON_ROWS + 1], |r| r.get(0))
        };
        let n = run().map_err(|e| self.sql(e))?;
        let common = n > i64::from(COMMON_ROWS);
        if common {
            self.common.remember(expr);
        }
        Ok(common)
    }

    /// The smallest rowid a search for `expr` needs to look at: the start of the window
    /// of its newest `COMMON_ROWS` matches, or `i64::MIN` when it has no more than that.
    pub(super) fn window_start(&self, expr: &str) -> Result<i64, IndexError> {
        let run = || -> rusqlite::Result<Option<i64>> {
            let mut stmt = self.conn.prepare_cached(WINDOW_START)?;
            let mut rows = stmt.query(rusqlite::params![expr, COMMON_ROWS - 1])?;
            rows.next()?.map(|r| r.get(0)).transpose()
        };
        Ok(run().map_err(|e| self.sql(e))?.unwrap_or(i64::MIN))
    }
}
