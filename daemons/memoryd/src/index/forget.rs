//! Forgetting: loopd has rewritten some epoch logs without the records the owner asked to
//! forget (each replaced by a labelled `forgotten` record), and names them. Each named log is looked at now,
//! its indexed prefix checked by CRC whatever its size and time say; a changed log has
//! all its rows (and, by the triggers of `embed::table`, their vectors) dropped and is
//! read again, so every record still in it comes back once and the forgotten ones do
//! not. Then the index is purged (`purge`): segments merged, freed pages zeroed, WAL
//! emptied. A crash anywhere is finished by the next start: the rewritten log is noticed
//! again by its inode or CRC, and the purge mark is still set. A rewritten log that
//! loopd could not name (memoryd was down) is read again before any recall answers from
//! it (`reread_rewritten`).

use super::budget::Budget;
use super::catchup::Look;
use super::ingest::{LogFile, Outcome};
use super::{Index, IndexError};
use proto::head::log_file_name;
use proto::SessionId;

/// The log of `epoch` in session `id`, as the catch-up names it.
fn log_file(sessions: &std::path::Path, id: &SessionId, epoch: u64) -> LogFile {
    let dir = sessions.join(id.as_str());
    let name = log_file_name(epoch);
    LogFile {
        rel: format!("{}/{name}", id.as_str()),
        session: id.as_str().to_string(),
        epoch,
        path: dir.join(&name),
        dir,
    }
}

impl Index {
    /// Before a recall is answered from the logs `(session, epoch)` its hits came from:
    /// each that was rewritten (another file now, or shorter than what was indexed: what
    /// a forget does) or removed since it was indexed is read again now, or its rows
    /// dropped, so no recall answers from a log known to be rewritten — also right after
    /// a start, before the whole pass reaches it (docs/forgetting.md). Returns
    /// whether any was; then the hits must be found again. One `stat` per log otherwise.
    pub fn reread_rewritten(&mut self, logs: &[(String, u64)]) -> Result<bool, IndexError> {
        let mut changed = false;
        for (session, epoch) in logs {
            let Ok(id) = SessionId::parse(session) else {
                continue;
            };
            let file = log_file(&self.sessions, &id, *epoch);
            let Some(known) = self.known_file(&file.rel)? else {
                continue;
            };
            let rewritten = match sessions::lines::Identity::at(&file.path) {
                Ok(Some(now)) => {
                    (known.state.dev, known.state.ino) != (now.dev, now.ino)
                        || now.size < known.state.offset
                }
                Ok(None) => {
                    self.drop_file(known.id)?;
                    changed = true;
                    continue;
                }
                // Unreadable: the catch-up reports it; its rows are not trusted meanwhile.
                Err(_) => true,
            };
            if rewritten {
                let mut budget = Budget::UNLIMITED;
                let mut started = false;
                self.check(&file, &mut budget, &mut started, Look::Verify)?;
                changed = true;
            }
        }
        Ok(changed)
    }

    /// Re-reads the logs `(session, epoch)` now and purges; returns how many rows went.
    /// A session name that is not a session id is an error naming it; a log that is gone
    /// has its rows dropped.
    pub fn forget(&mut self, logs: &[(String, u64)]) -> Result<u64, ForgetError> {
        let mut dropped = 0u64;
        for (session, epoch) in logs {
            let id = SessionId::parse(session).map_err(|e| ForgetError::Name(e.to_string()))?;
            let file = log_file(&self.sessions, &id, *epoch);
            let before = self.known_file(&file.rel)?.map_or(0, |k| k.state.rows);
            let mut budget = Budget::UNLIMITED;
            let mut started = false;
            let outcome = self.check(&file, &mut budget, &mut started, Look::Verify)?;
            if outcome == Outcome::Skipped && !file.path.exists() {
                if let Some(k) = self.known_file(&file.rel)? {
                    self.drop_file(k.id)?;
                }
            }
            let after = self.known_file(&file.rel)?.map_or(0, |k| k.state.rows);
            dropped += before.saturating_sub(after);
        }
        self.purge_if_due()?;
        Ok(dropped)
    }
}

/// Why a `Forget` could not be done.
#[derive(Debug)]
pub enum ForgetError {
    /// A log named by a session that is not a session id.
    Name(String),
    Index(IndexError),
}

impl From<IndexError> for ForgetError {
    fn from(e: IndexError) -> ForgetError {
        ForgetError::Index(e)
    }
}

impl std::fmt::Display for ForgetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ForgetError::Name(e) => write!(f, "forget: {e}"),
            ForgetError::Index(e) => write!(f, "forget: {e}"),
        }
    }
}

impl std::error::Error for ForgetError {}

impl ForgetError {
    /// The error for a log line: never a database message that could quote text (see
    /// `IndexError::for_log`).
    pub fn for_log(&self) -> String {
        match self {
            ForgetError::Name(_) => self.to_string(),
            ForgetError::Index(e) => format!("forget: {}", e.for_log()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Budget;
    use crate::fixture::{user, World};
    use proto::label::DataClass;

    fn line(text: &str) -> String {
        user(text).to_line()
    }

    fn index_files(state: &std::path::Path) -> Vec<u8> {
        let mut all = Vec::new();
        for name in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"] {
            all.extend(std::fs::read(state.join("memory").join(name)).unwrap_or_default());
        }
        all
    }

    fn holds(bytes: &[u8], word: &str) -> bool {
        bytes.windows(word.len()).any(|w| w == word.as_bytes())
    }

    #[test]
    fn a_forget_drops_the_rewritten_records_rows_and_leaves_no_byte_of_them_on_disk() {
        let w = World::new();
        let dir = &w.dir;
        let log = w.log("main", 0);
        let mut text: String = (0..100)
            .map(|i| line(&format!("garden line {i}")))
            .collect();
        text.push_str(&line("the vault word is plumquartz"));
        w.append("main", 0, &text);
        let mut ix = w.index();
        ix.catch_up(Budget::UNLIMITED).unwrap();
        assert_eq!(
            ix.search("plumquartz", DataClass::Private, 5)
                .unwrap()
                .len(),
            1
        );
        crate::fixture::rewrite_without(&log, "plumquartz");
        assert_eq!(ix.forget(&[("main".into(), 0)]).unwrap(), 1);
        assert!(ix
            .search("plumquartz", DataClass::Private, 5)
            .unwrap()
            .is_empty());
        assert_eq!(
            ix.search("garden", DataClass::Private, 50).unwrap().len(),
            50
        );
        assert_eq!(ix.status().unwrap().rows, 100);
        assert!(!ix.purge_due());
        assert!(!holds(&index_files(dir.path()), "plumquartz"));
        // Nothing left to do the second time.
        assert_eq!(ix.forget(&[("main".into(), 0)]).unwrap(), 0);
        assert!(ix.forget(&[("../x".into(), 0)]).is_err());
    }
}
