//! Answering a recall: the query's phrases matched in FTS5, ranked by bm25 and then by
//! recency (rowids follow record time, see `rowid`), filtered to the caller's
//! `max_class`.

use super::{class_of_rank, class_rank, Index, IndexError};
use crate::query::fts_query;
use proto::label::{DataClass, Label};
use proto::memory::{Hit, MAX_HITS};
use rusqlite::params;

/// FTS5's `bm25()` is smaller for better matches; ties go to the newer record, which is
/// the larger rowid (see `rowid`), so the sort never reads a row's stored content and
/// only the hits that survive `LIMIT` are read whole.
const SEARCH: &str = "SELECT session, epoch, time, kind, role, class, untrusted, text
    FROM docs WHERE docs MATCH ?1 AND class <= ?2
    ORDER BY bm25(docs), rowid DESC LIMIT ?3";

/// Without the class filter, for callers allowed everything the index may hold.
const SEARCH_ALL: &str = "SELECT session, epoch, time, kind, role, class, untrusted, text
    FROM docs WHERE docs MATCH ?1
    ORDER BY bm25(docs), rowid DESC LIMIT ?2";

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
        let Some(expr) = fts_query(query) else {
            return Ok(Vec::new());
        };
        if limit == 0 {
            return Ok(Vec::new());
        }
        let read = |r: &rusqlite::Row<'_>| {
            Ok(Hit {
                session: r.get(0)?,
                epoch: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                time: r.get(2)?,
                kind: r.get(3)?,
                role: r.get(4)?,
                label: Label::new(class_of_rank(r.get(5)?), r.get(6)?),
                text: r.get(7)?,
            })
        };
        let run = || -> rusqlite::Result<Vec<Hit>> {
            // Everything in the index is at or below its own class, so a caller cleared
            // for that much needs no per-row filter.
            if max_class >= self.max_class {
                let mut stmt = self.conn.prepare_cached(SEARCH_ALL)?;
                let hits = stmt.query_map(params![expr, limit], read)?;
                hits.collect()
            } else {
                let mut stmt = self.conn.prepare_cached(SEARCH)?;
                let hits = stmt.query_map(params![expr, class_rank(max_class), limit], read)?;
                hits.collect()
            }
        };
        run().map_err(|e| self.sql(e))
    }
}
