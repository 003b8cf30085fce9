//! A record's neighbourhood in ranking (docs/memoryd.md, 'Neighbouring turns'): the turns
//! just before and after a candidate in the same log lend it part of their relevance, so
//! "Yes! It was amazing" is found by the question asked just before it, and the partner's
//! question and its answer are found together.
//!
//! This module owns finding a row's neighbours (`Index::neighbours`: the rows next to it
//! in its own epoch log, never across a log, so never across a session or an epoch) and
//! reading the rows reached only that way (`Index::neighbour_row`, with the caller's
//! class bound). The weighing is `rank::rerank`'s.
//!
//! The lending is done when a recall is answered, over the lexical candidates only. The
//! neighbours' words are also a field of every row (`near_field`), which finds the rows
//! whose neighbours hold the question's words beyond the best candidates; the two
//! measured together beat either alone (docs/memoryd.md, 'The neighbours' field').

use super::hit_of;
use super::{class_rank, Index, IndexError};
use proto::label::DataClass;
use proto::memory::Hit;
use rusqlite::OptionalExtension;

/// Turns on each side of a record that lend it relevance: the answer to a question is
/// nearly always the next turn or the one after (a short reply in between); further
/// away, the talk has usually moved on. Measured on LoCoMo (`scripts/bench recall`).
pub(crate) const NEAR_TURNS: u32 = 2;

/// Candidates, best first, whose neighbours are looked up: each costs two index range
/// reads and up to `2 × NEAR_TURNS` row reads, so this bounds a recall's extra work
/// (some 200 small reads) whatever the index holds. Past the first few dozen candidates
/// a neighbour's lent relevance could not lift a row into the hits anyway.
pub(crate) const NEAR_SOURCES: usize = 40;

/// Bytes of text a recall reads of rows reached only as neighbours (not candidates
/// themselves): chat turns are a few hundred bytes, so the `NEAR_SOURCES × 2 ×
/// NEAR_TURNS` of them (160) fit many times over; in a history of pasted documents each
/// is a row of up to `MAX_ROW_BYTES`, and reading and scoring 160 of them was most of a
/// recall (docs/measurements/memoryd.md, 'Long records'). Past it, a neighbour is not
/// read: it is not a hit, and it still takes what the rows read lend.
pub(crate) const REACHED_BYTES: usize = 256 * 1024;

/// A neighbour's id and class (`class` is the content table's `c6`), read together so
/// late interaction's class bound (`around`) costs no read of its own.
const BEFORE: &str = "SELECT id, c6 FROM docs_content WHERE c8 = ?1 AND id < ?2 \
    ORDER BY id DESC LIMIT ?3";
const AFTER: &str = "SELECT id, c6 FROM docs_content WHERE c8 = ?1 AND id > ?2 \
    ORDER BY id LIMIT ?3";
/// A row's log and class, from FTS5's content table (`file` is `c8`, `class` `c6`).
const OF_ROW: &str = "SELECT c8, c6 FROM docs_content WHERE id = ?1";
const ROW: &str = "SELECT session, epoch, time, kind, role, class, untrusted, text, file
    FROM docs WHERE rowid = ?1 AND class <= ?2";

impl Index {
    /// The row ids of up to `NEAR_TURNS` rows before and after `rowid` in log `file`,
    /// nearest first on each side (before, then after).
    pub(super) fn neighbours(&self, file: i64, rowid: i64) -> Result<Vec<i64>, IndexError> {
        Ok(self
            .neighbours_with_class(file, rowid)?
            .into_iter()
            .map(|(id, _)| id)
            .collect())
    }

    /// `neighbours` with each one's class rank.
    fn neighbours_with_class(&self, file: i64, rowid: i64) -> Result<Vec<(i64, i64)>, IndexError> {
        let run = || -> rusqlite::Result<Vec<(i64, i64)>> {
            let mut out = Vec::with_capacity(2 * NEAR_TURNS as usize);
            for sql in [BEFORE, AFTER] {
                let mut stmt = self.conn.prepare_cached(sql)?;
                let ids = stmt.query_map(rusqlite::params![file, rowid, NEAR_TURNS], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
                })?;
                for id in ids {
                    out.push(id?);
                }
            }
            Ok(out)
        };
        run().map_err(|e| self.sql(e))
    }

    /// A row as a hit with its log, when it exists at or below `max_class`.
    pub(super) fn neighbour_row(
        &self,
        rowid: i64,
        max_class: DataClass,
    ) -> Result<Option<(Hit, i64)>, IndexError> {
        let run = || -> rusqlite::Result<Option<(Hit, i64)>> {
            let mut stmt = self.conn.prepare_cached(ROW)?;
            stmt.query_row(rusqlite::params![rowid, class_rank(max_class)], |r| {
                Ok((hit_of(r)?, r.get::<_, i64>(8)?))
            })
            .optional()
        };
        run().map_err(|e| self.sql(e))
    }

    /// The rows next to `rowid` in its own log (`neighbours`) that a caller cleared for
    /// `max_class` may be matched through: none above that class or above the row's own,
    /// as the neighbours' field (`near_field`) keeps a row from being found through words
    /// it may not show. The row just before `rowid` is marked: late interaction weighs
    /// the turn a reply answers above the others (docs/memoryd.md, 'Late interaction').
    pub fn around(&self, rowid: i64, max_class: DataClass) -> Result<Vec<Around>, IndexError> {
        let run = || -> rusqlite::Result<Option<(i64, i64)>> {
            let mut stmt = self.conn.prepare_cached(OF_ROW)?;
            stmt.query_row([rowid], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
        };
        let Some((file, class)) = run().map_err(|e| self.sql(e))? else {
            return Ok(Vec::new());
        };
        let bound = class.min(class_rank(max_class));
        let rows = self.neighbours_with_class(file, rowid)?;
        // Nearest first on each side, the side before first: the first row, when it is
        // before, is the one just before.
        let just_before = rows.first().map(|&(id, _)| id).filter(|&id| id < rowid);
        Ok(rows
            .into_iter()
            .filter(|&(_, c)| c <= bound)
            .map(|(id, _)| Around {
                id,
                just_before: Some(id) == just_before,
            })
            .collect())
    }
}

/// A neighbour a caller may be matched through (`Index::around`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Around {
    pub id: i64,
    /// The row just before in the log: the turn a reply answers.
    pub just_before: bool,
}
