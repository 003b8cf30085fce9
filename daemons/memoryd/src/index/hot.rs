//! The sessions active lately (`hot`): the ones a recall looks into before it is
//! answered besides a changed `sessions/` (read-your-writes, docs/memoryd.md 'Catch-up
//! and read-your-writes'), kept most recent first.

use super::{Index, IndexError};

/// Sessions a recall looks into besides a changed `sessions/`: the ones nudged, created
/// or grown most lately. loopd serves a handful of sessions at once; 32 covers them with
/// room, and keeps a recall's look at the disk to a few dozen directory listings however
/// long the history is.
pub(crate) const MAX_HOT: usize = 32;

impl Index {
    /// The sessions whose logs changed last, as the index last saw them, become the ones
    /// active lately, behind only those already marked: a recall must see what is
    /// written before it in any session loopd is using (read-your-writes), and a session
    /// the index already knew is otherwise marked only when loopd nudges it or it grows
    /// under a recall's look, which after a restart, or for a log that gave no rows when
    /// first read, would be never.
    pub(super) fn warm_hot(&mut self) -> Result<(), IndexError> {
        let run = || -> rusqlite::Result<Vec<String>> {
            // A time stored as 0 is one too recent to trust yet (`settled_mtime`): newest.
            let mut stmt = self.conn.prepare_cached(
                "SELECT session FROM files GROUP BY session \
                 ORDER BY MAX(mtime = 0) DESC, MAX(mtime) DESC LIMIT ?1",
            )?;
            let rows = stmt.query_map([MAX_HOT as i64], |r| r.get::<_, String>(0))?;
            rows.collect()
        };
        let newest = run().map_err(|e| self.sql(e))?;
        let lately: Vec<String> = self.hot.iter().cloned().collect();
        for session in newest.iter().rev().chain(lately.iter().rev()) {
            self.touch(session);
        }
        Ok(())
    }

    /// Marks `session` as active lately (see `MAX_HOT`).
    pub(super) fn touch(&mut self, session: &str) {
        if let Some(at) = self.hot.iter().position(|s| s == session) {
            self.hot.remove(at);
        }
        self.hot.push_front(session.to_string());
        self.hot.truncate(MAX_HOT);
    }
}
