//! Bringing the index up to date with `sessions/`: which epoch logs exist (each needs its
//! head), which the index knows, and for each what is left to read. A session or log
//! that disappeared is dropped from the index; one that appeared is picked up.

use super::budget::{Budget, Progress};
use super::ingest::{FileState, LogFile, Outcome, Signature};
use super::{class_of_rank, Index, IndexError};
use proto::head::log_file_name;
use proto::label::Label;
use proto::SessionId;
use rusqlite::params;
use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::MetadataExt;

/// A file as the index last left it.
struct Known {
    id: i64,
    state: FileState,
    broken: Option<(String, Signature)>,
}

impl Index {
    /// Catches up with every session, within `budget`.
    pub fn catch_up(&mut self, budget: Budget) -> Result<Progress, IndexError> {
        let progress = self.catch_up_in(None, budget)?;
        self.rebuild_progress(progress);
        Ok(progress)
    }

    /// Catches up with one session only, within `budget`: what loopd's `Nudge` asks for
    /// after a turn.
    pub fn catch_up_session(
        &mut self,
        session: &SessionId,
        budget: Budget,
    ) -> Result<Progress, IndexError> {
        self.catch_up_in(Some(session.as_str()), budget)
    }

    fn catch_up_in(
        &mut self,
        only: Option<&str>,
        mut budget: Budget,
    ) -> Result<Progress, IndexError> {
        let mut started = false;
        let on_disk = self.scan(only);
        let mut known = self.known(only)?;
        let gone: Vec<i64> = known
            .iter()
            .filter(|(rel, _)| !on_disk.contains_key(*rel))
            .map(|(_, k)| k.id)
            .collect();
        for id in gone {
            self.drop_file(id)?;
        }
        for (rel, file) in &on_disk {
            let meta = match std::fs::metadata(&file.path) {
                Ok(m) => m,
                Err(e) => {
                    self.report(&file.path, format!("{}: {e}", file.path.display()));
                    continue;
                }
            };
            let sig = Signature {
                size: meta.len(),
                mtime_ns: meta
                    .mtime()
                    .saturating_mul(1_000_000_000)
                    .saturating_add(meta.mtime_nsec()),
            };
            let state = match known.remove(rel) {
                Some(k) => match k.broken {
                    Some((message, was)) if was == sig => {
                        self.report(&file.path, message);
                        continue;
                    }
                    Some(_) => match self.head_label(file) {
                        Some(label) => fresh(Some(k.id), label),
                        None => continue,
                    },
                    None if sig.size == k.state.offset => continue,
                    None if sig.size < k.state.offset => {
                        plumbing::warn!(
                            "{} shrank below what was indexed; indexing it again",
                            file.path.display()
                        );
                        self.drop_file(k.id)?;
                        match self.head_label(file) {
                            Some(label) => fresh(None, label),
                            None => continue,
                        }
                    }
                    None => k.state,
                },
                None => match self.head_label(file) {
                    Some(label) => fresh(None, label),
                    None => continue,
                },
            };
            if self.ingest(file, state, sig, &mut budget, &mut started)? == Outcome::More {
                return Ok(Progress::More);
            }
        }
        Ok(Progress::Done)
    }

    /// The epoch logs under `sessions/` (or one session of it) that have a head.
    fn scan(&mut self, only: Option<&str>) -> BTreeMap<String, LogFile> {
        let mut found = BTreeMap::new();
        let sessions: Vec<String> = match only {
            Some(s) => vec![s.to_string()],
            None => match sessions::epochs::sessions(&self.sessions) {
                Ok(ids) => ids.iter().map(|id| id.as_str().to_string()).collect(),
                Err(e) => {
                    let dir = self.sessions.clone();
                    self.report(&dir, e.to_string());
                    return found;
                }
            },
        };
        for session in sessions {
            let dir = self.sessions.join(&session);
            // A session directory that cannot be listed now (removed meanwhile, say) is
            // looked at again on the next catch-up.
            let Ok(listing) = sessions::epochs::list(&dir) else {
                continue;
            };
            for epoch in listing.logs_with_heads() {
                let name = log_file_name(epoch);
                let rel = format!("{session}/{name}");
                found.insert(
                    rel.clone(),
                    LogFile {
                        rel,
                        session: session.clone(),
                        epoch,
                        path: dir.join(name),
                        dir: dir.clone(),
                    },
                );
            }
        }
        found
    }

    /// The files the index knows, keyed like `scan`'s result.
    fn known(&self, only: Option<&str>) -> Result<HashMap<String, Known>, IndexError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT path, id, offset, line, class, untrusted, rows,
                        broken, broken_size, broken_mtime
                 FROM files WHERE ?1 IS NULL OR session = ?1",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params![only], |r| {
                let id: i64 = r.get(1)?;
                let broken: Option<String> = r.get(7)?;
                let sig = Signature {
                    size: u64::try_from(r.get::<_, Option<i64>>(8)?.unwrap_or(0)).unwrap_or(0),
                    mtime_ns: r.get::<_, Option<i64>>(9)?.unwrap_or(0),
                };
                let known = Known {
                    id,
                    state: FileState {
                        id: Some(id),
                        offset: u64::try_from(r.get::<_, i64>(2)?).unwrap_or(0),
                        line: u64::try_from(r.get::<_, i64>(3)?).unwrap_or(0),
                        label: Label::new(class_of_rank(r.get(4)?), r.get(5)?),
                        rows: u64::try_from(r.get::<_, i64>(6)?).unwrap_or(0),
                    },
                    broken: broken.map(|m| (m, sig)),
                };
                Ok((r.get::<_, String>(0)?, known))
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// Removes a file and its rows from the index, in one transaction.
    fn drop_file(&mut self, id: i64) -> Result<(), IndexError> {
        let run = |conn: &mut rusqlite::Connection| -> rusqlite::Result<()> {
            let tx = conn.transaction()?;
            tx.execute("DELETE FROM docs WHERE file = ?1", [id])?;
            tx.execute("DELETE FROM files WHERE id = ?1", [id])?;
            tx.commit()
        };
        // Rows went: a group once common may not be now.
        self.common.forget();
        run(&mut self.conn).map_err(|e| self.sql(e))
    }

    /// The rolling label a log starts with: its head's `carry_label`. A head that cannot
    /// be read is reported and its log waits until it can.
    fn head_label(&mut self, file: &LogFile) -> Option<Label> {
        match sessions::head::read(&file.dir, file.epoch) {
            Ok(h) => Some(h.carry_label),
            Err(e) => {
                self.report(&file.path, e.to_string());
                None
            }
        }
    }
}

fn fresh(id: Option<i64>, label: Label) -> FileState {
    FileState {
        id,
        offset: 0,
        line: 0,
        label,
        rows: 0,
    }
}
