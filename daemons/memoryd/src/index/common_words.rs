//! Keeping a recall's cost bounded however common its words are (p99 at a
//! million rows). FTS5's `bm25()` costs twice per word: it counts every row holding the
//! word (its document frequency, a walk of the word's whole doclist with a callback per
//! row, once per query), and it scores every row that matches. For a word in most of a
//! million rows either is tens of milliseconds, while a word in that many rows says
//! almost nothing about which record is meant.
//!
//! A group (a word and its forms, or an exact token) matching more than `COMMON_ROWS`
//! rows is *common*. Nothing changes for a query without one (any young index, the
//! evaluation set). Otherwise (`recall::Search`):
//!
//! - all-words search, some groups rare: scored by bm25 over the rare groups only, among
//!   the rows holding every group (`ScoredWithin`). The rare groups bound it; the common
//!   ones are in every such row anyway.
//! - any-words search, some groups rare: over the rare groups only. A row holding only
//!   common words could not outrank one holding a rare word; the re-ranking (`rank`)
//!   still counts every word the candidates hold. Several rare groups are ranked over
//!   the newest `COMMON_ROWS` rows they match (`Index::window_start`), so no search
//!   scores more than that many rows. With two common groups or more, the newest rows
//!   holding all of them join the candidates unscored: the record that answers may hold
//!   the question's common words and not its rare one.
//! - every group common: the newest matches, unscored (`Newest`), re-ranked by how many
//!   of the words they hold and whether as the phrase asked, then recency: what is left
//!   to tell records apart by when all of them hold the same common words.
//!
//! Whether a group is common is found by counting its matches up to `COMMON_ROWS + 1`
//! (a walk of at most that much of its doclist, no row read, no score) and remembered
//! (`Common`): a common group stays common while rows are only added; a deletion forgets
//! every verdict.

use super::{Index, IndexError};
use std::cell::RefCell;
use std::collections::HashSet;

/// Matching rows past which a group is common. Scoring a row costs FTS5 about two
/// microseconds on this class of machine (a doclist position read and a `docsize`
/// lookup), and counting one a fraction of that, so this bounds one search to about ten
/// milliseconds, a recall's two searches and the re-ranking well inside 50 ms; a word in
/// fewer rows than this is rare enough for its matches to be worth ranking in full.
pub const COMMON_ROWS: u32 = 5_000;

/// Common groups remembered. A verdict costs one doclist walk of `COMMON_ROWS` entries to
/// find again, so a bound that only a stream of distinct common words fills is plenty;
/// when full the set starts over.
pub(crate) const MAX_REMEMBERED: usize = 4_096;

/// The groups known to be common, by FTS5 expression.
#[derive(Debug, Default)]
pub(crate) struct Common {
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
    /// Whether the group with FTS5 expression `expr` matches more than `COMMON_ROWS` rows
    /// (the search reads it from `frequency`).
    #[cfg(test)]
    pub(super) fn is_common(&self, expr: &str) -> Result<bool, IndexError> {
        Ok(self.frequency(expr)? > self.common_rows)
    }

    /// How many rows the group with FTS5 expression `expr` matches, counted up to
    /// `COMMON_ROWS + 1`: a common group's count is that bound. The same walk that
    /// decides whether a group is common, so knowing how rare each word of a question
    /// is (`rank::Rarity`) costs a recall nothing more.
    pub(super) fn frequency(&self, expr: &str) -> Result<u32, IndexError> {
        let bound = self.common_rows.saturating_add(1);
        if self.common.knows(expr) {
            return Ok(bound);
        }
        let run = || -> rusqlite::Result<i64> {
            let mut stmt = self.conn.prepare_cached(COUNT_UP_TO)?;
            stmt.query_row(rusqlite::params![expr, bound], |r| r.get(0))
        };
        let n = u32::try_from(run().map_err(|e| self.sql(e))?.max(0)).unwrap_or(bound);
        if n > self.common_rows {
            self.common.remember(expr);
        }
        Ok(n.min(bound))
    }

    /// The smallest rowid a search for `expr` needs to look at: the start of the window
    /// of its newest `COMMON_ROWS` matches, or `i64::MIN` when it has no more than that.
    pub(super) fn window_start(&self, expr: &str) -> Result<i64, IndexError> {
        let run = || -> rusqlite::Result<Option<i64>> {
            let mut stmt = self.conn.prepare_cached(WINDOW_START)?;
            let mut rows = stmt.query(rusqlite::params![expr, self.common_rows - 1])?;
            rows.next()?.map(|r| r.get(0)).transpose()
        };
        Ok(run().map_err(|e| self.sql(e))?.unwrap_or(i64::MIN))
    }
}
