//! Answering a recall (SPEC §6) in two steps, so another ranking (issue 15's vectors)
//! can be fused beside the lexical one:
//!
//! 1. `candidates`: the records holding all of the query's groups first (their AND),
//!    then, when those do not fill the candidates, the records holding any (the OR),
//!    each ranked by bm25 and filtered to the caller's `max_class`: row ids with their
//!    score and rank, nothing read but the full-text index. An all-words match so ranks
//!    above a partial one (SPEC §6), and a question of common words costs an AND, which
//!    FTS5 walks by its rarest term, instead of scoring every row holding any of them.
//! 2. `search`: the candidates' rows read, re-ranked by how much of the question each
//!    holds (`rank`), identical texts collapsed, the best `limit` returned.

use super::rank::Candidate;
use super::{class_of_rank, class_rank, rank, Index, IndexError};
use crate::query::{self, Query};
use proto::label::{DataClass, Label};
use proto::memory::{Hit, MAX_HITS};
use rusqlite::{params, OptionalExtension};

/// Candidates the lexical step hands to the re-ranking per hit asked for, and at least
/// `MIN_CANDIDATES`: enough that the answer bm25 ranked a little low (it holds all the
/// words but a common one twice less) is still in reach, and that duplicates collapsing
/// leave `limit` hits; few enough that reading them costs little beside the search.
/// Measured on the evaluation set: 3 per hit and 30 at least rank exactly as these do.
pub const CANDIDATES_PER_HIT: u32 = 2;
pub const MIN_CANDIDATES: u32 = 20;

/// bm25 ranks better matches lower; ties go to the newer record, the larger rowid (see
/// `rowid`). Only row ids and scores are selected, so the sort holds small rows.
/// `rowid >= ?` is the window of a search over common words (see `common`); FTS5 starts
/// its doclist walk there, so rows before it cost nothing.
const CANDIDATES: &str = "SELECT rowid, bm25(docs) FROM docs
    WHERE docs MATCH ?1 AND rowid >= ?4 AND class <= ?2
    ORDER BY bm25(docs), rowid DESC LIMIT ?3";

/// Without the class filter, for callers allowed everything the index may hold: the
/// filter reads each matching row's stored columns, this reads only the index.
const CANDIDATES_ALL: &str = "SELECT rowid, bm25(docs) FROM docs
    WHERE docs MATCH ?1 AND rowid >= ?3
    ORDER BY bm25(docs), rowid DESC LIMIT ?2";

const ROW: &str = "SELECT session, epoch, time, kind, role, class, untrusted, text
    FROM docs WHERE rowid = ?1";

/// A row selected as `session, epoch, time, kind, role, class, untrusted, text` (as
/// `ROW` and `byid` do) as a hit.
pub(super) fn hit_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<Hit> {
    Ok(Hit {
        session: r.get(0)?,
        epoch: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
        time: r.get(2)?,
        kind: r.get(3)?,
        role: r.get(4)?,
        label: Label::new(class_of_rank(r.get(5)?), r.get(6)?),
        text: r.get(7)?,
    })
}

impl Index {
    /// The best `limit` hits (at most `MAX_HITS`) for `query` at or below `max_class`,
    /// from what is indexed now; callers catch up first for read-your-writes.
    pub fn search(
        &self,
        query: &str,
        max_class: DataClass,
        limit: u32,
    ) -> Result<Vec<Hit>, IndexError> {
        let limit = limit.min(MAX_HITS);
        let Some(parsed) = query::parse(query) else {
            return Ok(Vec::new());
        };
        if limit == 0 {
            return Ok(Vec::new());
        }
        let wanted = (limit * CANDIDATES_PER_HIT).max(MIN_CANDIDATES);
        let found = self.candidates(&parsed, max_class, wanted, limit)?;
        let mut rows = Vec::with_capacity(found.len());
        for c in &found {
            if let Some(hit) = self.row(c.rowid)? {
                rows.push((*c, hit));
            }
        }
        let ranked = rank::rerank(&parsed, rows);
        Ok(ranked.into_iter().take(limit as usize).collect())
    }

    /// The lexical step: up to `n` rows at or below `max_class` holding all of the
    /// query's groups, best first by bm25, then newest; then, only when fewer than
    /// `enough` (the hits asked for) hold them all, the rows holding any. All-words
    /// matches rank above partial ones, so with `enough` of them the partial ones could
    /// not reach the answer, and the OR, which scores every row holding any common word,
    /// is not run. Common words are left out of the OR when rarer ones are asked for,
    /// and a search of common words only is made over its newest matches (`common`).
    pub fn candidates(
        &self,
        query: &Query,
        max_class: DataClass,
        n: u32,
        enough: u32,
    ) -> Result<Vec<Candidate>, IndexError> {
        let mut common = Vec::with_capacity(query.groups().len());
        for i in 0..query.groups().len() {
            let expr = query.group_expression(i).unwrap_or_default();
            common.push(self.is_common(&expr)?);
        }
        let all_common = common.iter().all(|&c| c);
        let mut found: Vec<(i64, f64, bool)> = Vec::new();
        let all = query.all_expression();
        if let Some(all) = &all {
            // A rare group bounds the AND by its own matches; only an AND of common
            // groups may match more than the window.
            let from = if all_common {
                self.window_start(all)?
            } else {
                i64::MIN
            };
            found.extend(
                self.matching(all, max_class, n, from)?
                    .into_iter()
                    .map(|(r, s)| (r, s, true)),
            );
        }
        if all.is_none() || found.len() < enough.min(n) as usize {
            let any = if all_common {
                query.expression()
            } else {
                query
                    .expression_of(|i| !common[i])
                    .unwrap_or_else(|| query.expression())
            };
            // One rare group matches no more than the window holds; several may.
            let rare = common.iter().filter(|&&c| !c).count();
            let from = if rare == 1 {
                i64::MIN
            } else {
                self.window_start(&any)?
            };
            for (rowid, bm25) in self.matching(&any, max_class, n, from)? {
                if found.len() >= n as usize {
                    break;
                }
                if !found.iter().any(|f| f.0 == rowid) {
                    found.push((rowid, bm25, false));
                }
            }
        }
        Ok(found
            .into_iter()
            .enumerate()
            .map(|(rank, (rowid, bm25, all))| Candidate {
                rowid,
                all,
                bm25,
                rank,
            })
            .collect())
    }

    /// Up to `n` (rowid, bm25) matching `expr` at or below `max_class` with a rowid of
    /// at least `from`, best first.
    fn matching(
        &self,
        expr: &str,
        max_class: DataClass,
        n: u32,
        from: i64,
    ) -> Result<Vec<(i64, f64)>, IndexError> {
        let read = |r: &rusqlite::Row<'_>| Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?));
        let run = || -> rusqlite::Result<Vec<(i64, f64)>> {
            // Everything in the index is at or below its own class, so a caller cleared
            // for that much needs no per-row filter.
            if max_class >= self.max_class {
                let mut stmt = self.conn.prepare_cached(CANDIDATES_ALL)?;
                let rows = stmt.query_map(params![expr, n, from], read)?;
                rows.collect()
            } else {
                let mut stmt = self.conn.prepare_cached(CANDIDATES)?;
                let rows = stmt.query_map(params![expr, class_rank(max_class), n, from], read)?;
                rows.collect()
            }
        };
        run().map_err(|e| self.sql(e))
    }

    /// A candidate's row as a hit; `None` if it went away since the search.
    fn row(&self, rowid: i64) -> Result<Option<Hit>, IndexError> {
        let run = || -> rusqlite::Result<Option<Hit>> {
            let mut stmt = self.conn.prepare_cached(ROW)?;
            stmt.query_row([rowid], hit_of).optional()
        };
        run().map_err(|e| self.sql(e))
    }
}
