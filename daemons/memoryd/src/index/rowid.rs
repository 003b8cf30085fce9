//! Row ids that sort by time. Recall ranks by bm25 and then by recency; with a row's id
//! being its record's time, "then by recency" is `rowid DESC`, which FTS5 hands over for
//! free, where sorting on the `time` column would read every matching row's stored
//! content and double the cost of a query with many matches.
//!
//! A row's id is its record's time in milliseconds since the Unix epoch. Records that
//! share a millisecond take the next free ids, so ids are unique and order is kept within
//! a log; between logs read out of time order, recency may be off by those few
//! milliseconds. Ids stay close together for records close in time, which keeps FTS5's
//! delta-encoded doclists small.

use proto::time::unix_millis;
use rusqlite::{Connection, OptionalExtension};
use std::collections::HashMap;

/// Milliseconds whose next free id is remembered. Only a millisecond that collided is
/// remembered, so the map stays small in normal use; past this many (16 bytes each plus
/// the map's overhead, about a MiB) it is cleared, which costs one probe of each run
/// again, not correctness.
const MAX_HINTS: usize = 65_536;

/// Where the next row id comes from, kept by the index between chunks.
#[derive(Debug, Clone, Default)]
pub(super) struct RowIds {
    /// The largest id in the table, or above it; any candidate past it is free.
    max: i64,
    /// The millisecond and id of the last row given out, so a run of records sharing
    /// a millisecond takes consecutive ids without probing.
    last: Option<(i64, i64)>,
    /// For a millisecond whose own id was taken, the id after the last one given out for
    /// it. Without it every record of a crowded millisecond (many records whose time
    /// does not parse all land on 0; logs written side by side share milliseconds) that
    /// follows a record of another time probes upward through every id taken before it,
    /// one query each: quadratic in the size of the crowd.
    hints: HashMap<i64, i64>,
}

impl RowIds {
    pub fn load(conn: &Connection) -> rusqlite::Result<RowIds> {
        let max: Option<i64> = conn
            .query_row("SELECT max(id) FROM docs_content", [], |r| r.get(0))
            .optional()?
            .flatten();
        Ok(RowIds {
            max: max.unwrap_or(0),
            last: None,
            hints: HashMap::new(),
        })
    }

    /// A free id for a record written at `time`.
    pub fn next(&mut self, conn: &Connection, time: &str) -> rusqlite::Result<i64> {
        // A time that does not read sorts as the oldest.
        let ms = unix_millis(time).unwrap_or(0).max(0);
        let mut id = match self.last {
            Some((last_ms, last_id)) if last_ms == ms => last_id + 1,
            _ => ms,
        };
        if id <= self.max {
            if let Some(&hint) = self.hints.get(&ms) {
                id = id.max(hint);
            }
            let start = id;
            let mut taken = conn.prepare_cached("SELECT 1 FROM docs_content WHERE id = ?1")?;
            // Every id past `max` is free, so probing never goes beyond it.
            while id <= self.max && taken.exists([id])? {
                id += 1;
            }
            if id != start || self.hints.contains_key(&ms) {
                if self.hints.len() >= MAX_HINTS {
                    self.hints.clear();
                }
                self.hints.insert(ms, id + 1);
            }
        }
        self.max = self.max.max(id);
        self.last = Some((ms, id));
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::time::format_unix_millis;

    #[test]
    fn ids_follow_time_and_never_collide() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE VIRTUAL TABLE docs USING fts5(text)")
            .unwrap();
        let mut ids = RowIds::load(&conn).unwrap();
        let t = "2026-11-30T06:00:00.000Z";
        let a = ids.next(&conn, t).unwrap();
        conn.execute("INSERT INTO docs (rowid, text) VALUES (?1, 'a')", [a])
            .unwrap();
        let b = ids.next(&conn, t).unwrap();
        assert_eq!(b, a + 1);
        conn.execute("INSERT INTO docs (rowid, text) VALUES (?1, 'b')", [b])
            .unwrap();
        // A fresh allocator (as after a restart) probes past the ids already taken.
        let mut again = RowIds::load(&conn).unwrap();
        assert_eq!(again.next(&conn, t).unwrap(), b + 1);
        assert!(ids.next(&conn, "2026-11-30T06:00:00.001Z").unwrap() > b);
        assert!(ids.next(&conn, "2026-11-29T06:00:00.000Z").unwrap() < a);
    }

    /// Regression: records sharing one time that does not parse, interleaved with
    /// records of good times, made each one probe past every id taken before it.
    #[test]
    fn thousands_of_records_sharing_a_bad_time_get_unique_ids_without_probing_each() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE docs_content (id INTEGER PRIMARY KEY)")
            .unwrap();
        let mut ids = RowIds::load(&conn).unwrap();
        let mut seen = std::collections::HashSet::new();
        let mut bad = Vec::new();
        let mut insert = |ids: &mut RowIds, time: &str| {
            let id = ids.next(&conn, time).unwrap();
            conn.execute("INSERT INTO docs_content (id) VALUES (?1)", [id])
                .unwrap();
            assert!(seen.insert(id), "id {id} given out twice");
            id
        };
        for i in 0..5_000 {
            bad.push(insert(&mut ids, "not a time"));
            insert(&mut ids, &format_unix_millis(1_796_013_296_000 + i));
        }
        // After a restart the crowd is probed past once, then remembered.
        let mut again = RowIds::load(&conn).unwrap();
        for i in 0..5_000 {
            bad.push(insert(&mut again, "not a time"));
            insert(&mut again, &format_unix_millis(1_796_013_300_000 + i));
        }
        // Records with a bad time still sort as the oldest, in the order they came.
        assert!(bad.windows(2).all(|w| w[0] < w[1]));
        assert!(bad.iter().all(|&id| id < 1_796_013_296_000));
    }
}
