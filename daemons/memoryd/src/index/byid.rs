//! Reading hits by row id, for the rows the vector side found: the same columns and the
//! same class filter as a text search, so a row above the caller's class never comes
//! back whatever found it.

use super::hit_of;
use super::{class_rank, Index, IndexError};
use proto::label::DataClass;
use proto::memory::Hit;

impl Index {
    /// The hits for `ids` that still exist at or below `max_class`, each with its id, in
    /// the order given.
    pub fn hits_by_ids(
        &self,
        ids: &[i64],
        max_class: DataClass,
    ) -> Result<Vec<(i64, Hit)>, IndexError> {
        let run = || -> rusqlite::Result<Vec<(i64, Hit)>> {
            let mut stmt = self.conn.prepare_cached(
                "SELECT session, epoch, time, kind, role, class, untrusted, text
                 FROM docs WHERE rowid = ?1 AND class <= ?2",
            )?;
            let mut out = Vec::with_capacity(ids.len());
            for &id in ids {
                let mut rows = stmt.query(rusqlite::params![id, class_rank(max_class)])?;
                if let Some(r) = rows.next()? {
                    out.push((id, hit_of(r)?));
                }
            }
            Ok(out)
        };
        run().map_err(|e| self.sql(e))
    }

    /// The connection, for the vector tables that live in the same database (`embed`).
    pub fn conn(&self) -> &rusqlite::Connection {
        &self.conn
    }
}
