//! Bringing the index up to date with `sessions/`: which epoch logs exist (each needs its
//! head), which the index knows, and for each what is left to read. A session or log
//! that disappeared is dropped from the index; one that appeared is picked up; one whose
//! indexed part changed (rewritten in place, renamed over, cut shorter) has its rows
//! dropped and is read again from the start, so nothing is counted twice.
//!
//! Three ways in, each costing what it has to:
//! - a whole pass (`catch_up`): every session listed once, every log checked once, kept
//!   across calls (`Pass`), so a start-up slice continues where the last one stopped
//!   instead of listing everything again: the pass is linear in the number of logs;
//! - one session (`catch_up_session`), for loopd's nudge after a turn;
//! - what may have changed lately (`catch_up_recent`), before a recall: `sessions/` is
//!   listed again only when its time changed (a session created or removed), and only
//!   the sessions seen active lately (`hot`, at most `MAX_HOT`) are looked into. A log
//!   changed in a session nobody has touched for a while is found by the next whole pass.

use super::budget::{Budget, Progress};
use super::ingest::{settled_mtime, FileState, LogFile, Outcome, Signature};
use super::verified::{self, Stand};
use super::{class_of_rank, Index, IndexError};
use proto::head::log_file_name;
use proto::label::Label;
use proto::SessionId;
use rusqlite::params;
use sessions::lines::Identity;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::path::Path;
use std::time::Instant;

/// A file as the index last left it.
pub(super) struct Known {
    pub id: i64,
    pub state: FileState,
    pub broken: Option<(String, Signature)>,
}

/// A whole pass over `sessions/` under way: what is left to list and to check, and
/// which logs were found, so those the index knows and the pass did not find are dropped
/// at its end.
#[derive(Default)]
pub(super) struct Pass {
    sessions: VecDeque<String>,
    files: VecDeque<LogFile>,
    seen: HashSet<String>,
    /// `sessions/` could not be listed: the pass found nothing and drops nothing.
    keep_unseen: bool,
}

/// Why a log is looked at, which says how much of it is checked when it changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Look {
    /// A whole pass: a changed log's indexed part is checked whole.
    Pass,
    /// A recall's or a nudge's look at a session active lately: a log that grew from
    /// where the index stands, checked whole lately, has only its last indexed bytes
    /// checked (`verified`).
    Request,
    /// A forget named it, or it looks rewritten: its indexed part is checked whole even
    /// when its size and time say nothing changed.
    Verify,
}

/// What a check of one log decided.
enum Verdict {
    /// Nothing new.
    Same,
    /// Read from this state on.
    Read(FileState),
}

impl Index {
    /// Continues the whole pass over every session (or starts one), within `budget`.
    pub fn catch_up(&mut self, mut budget: Budget) -> Result<Progress, IndexError> {
        let mut started = false;
        if self.pass.is_none() {
            self.pass = Some(self.start_pass());
        }
        let progress = loop {
            if budget.exhausted(started) {
                break Progress::More;
            }
            let Some(pass) = self.pass.as_mut() else {
                break Progress::Done;
            };
            if let Some(file) = pass.files.pop_front() {
                pass.seen.insert(file.rel.clone());
                if self.check(&file, &mut budget, &mut started, Look::Pass)? == Outcome::More {
                    if let Some(pass) = self.pass.as_mut() {
                        pass.files.push_front(file);
                    }
                    break Progress::More;
                }
            } else if let Some(session) = pass.sessions.pop_front() {
                let files = self.list_session(&session);
                if let Some(pass) = self.pass.as_mut() {
                    pass.files.extend(files);
                }
            } else {
                let seen = std::mem::take(&mut pass.seen);
                let keep = pass.keep_unseen;
                self.pass = None;
                if !keep {
                    self.drop_unseen(&seen)?;
                }
                // A pass reads logs without marking their sessions (a first index of a
                // whole history): the newest become the ones a recall looks into.
                self.warm_hot()?;
                break Progress::Done;
            }
            // A listing or a check is progress too: the time limit may stop the pass
            // between any two of them, so a pass over many logs never holds the loop.
            started = true;
        };
        self.rebuild_progress(progress);
        Ok(progress)
    }

    /// Whether a whole pass is under way.
    pub fn passing(&self) -> bool {
        self.pass.is_some()
    }

    /// Catches up with one session only, within `budget`: what loopd's `Nudge` asks for
    /// after a turn.
    pub(crate) fn catch_up_session(
        &mut self,
        session: &SessionId,
        mut budget: Budget,
    ) -> Result<Progress, IndexError> {
        self.touch(session.as_str());
        let mut started = false;
        self.session_in(session.as_str(), &mut budget, &mut started)
    }

    /// Before a recall: new or removed sessions, and the sessions active lately, within
    /// `budget`. Costs a `stat` of `sessions/` and a listing per hot session, not a look
    /// at every log.
    pub(crate) fn catch_up_recent(&mut self, mut budget: Budget) -> Result<Progress, IndexError> {
        let mut started = false;
        let now = Identity::at(&self.sessions)
            .ok()
            .flatten()
            .map(|i| i.mtime_ns);
        if now.is_none() || now != self.sessions_mtime {
            // A listing that failed says nothing about which sessions are gone.
            let Some(listed) = self.list_sessions() else {
                return Ok(Progress::Done);
            };
            let known = self.known_sessions()?;
            for gone in known.iter().filter(|s| !listed.contains(*s)) {
                self.drop_session(gone)?;
            }
            for new in listed.iter().filter(|s| !known.contains(*s)) {
                self.touch(new);
            }
            self.sessions_mtime = now.map(settled_mtime).filter(|&t| t != 0);
        }
        let hot: Vec<String> = self.hot.iter().cloned().collect();
        for session in hot {
            if self.session_in(&session, &mut budget, &mut started)? == Progress::More {
                return Ok(Progress::More);
            }
        }
        Ok(Progress::Done)
    }

    /// Checks every log of one session, dropping the ones gone.
    fn session_in(
        &mut self,
        session: &str,
        budget: &mut Budget,
        started: &mut bool,
    ) -> Result<Progress, IndexError> {
        let files = self.list_session(session);
        let on_disk: HashSet<&str> = files.iter().map(|f| f.rel.as_str()).collect();
        let gone: Vec<i64> = self
            .known(Some(session))?
            .into_iter()
            .filter(|(rel, _)| !on_disk.contains(rel.as_str()))
            .map(|(_, k)| k.id)
            .collect();
        for id in gone {
            self.drop_file(id)?;
        }
        for file in &files {
            if self.check(file, budget, started, Look::Request)? == Outcome::More {
                return Ok(Progress::More);
            }
        }
        Ok(Progress::Done)
    }

    /// A new pass: `sessions/` listed once. A listing that failed (reported) makes an
    /// empty pass that drops nothing.
    fn start_pass(&mut self) -> Pass {
        match self.list_sessions() {
            Some(sessions) => Pass {
                sessions: sessions.into_iter().collect(),
                ..Pass::default()
            },
            None => Pass {
                keep_unseen: true,
                ..Pass::default()
            },
        }
    }

    /// The session directories under `sessions/`, symbolic links refused by name; `None`
    /// (reported) when it cannot be listed. A missing `sessions/` holds no session.
    fn list_sessions(&mut self) -> Option<Vec<String>> {
        match sessions::epochs::sessions_listed(&self.sessions) {
            Ok(found) => {
                for link in &found.symlinks {
                    self.refuse_link(link);
                }
                Some(found.ids.iter().map(|s| s.as_str().to_string()).collect())
            }
            Err(e) => {
                let dir = self.sessions.clone();
                self.report(&dir, e.to_string());
                None
            }
        }
    }

    fn refuse_link(&mut self, link: &Path) {
        self.report(
            link,
            format!(
                "{} is a symbolic link; not followed (a session directory or epoch log must \
                 be a real one)",
                link.display()
            ),
        );
    }

    /// The epoch logs of one session that have a head.
    fn list_session(&mut self, session: &str) -> Vec<LogFile> {
        let dir = self.sessions.join(session);
        // A session directory that cannot be listed now (removed meanwhile, say) is
        // looked at again on the next catch-up.
        let Ok(listing) = sessions::epochs::list(&dir) else {
            return Vec::new();
        };
        for link in &listing.symlinks {
            self.refuse_link(link);
        }
        listing
            .logs_with_heads()
            .map(|epoch| {
                let name = log_file_name(epoch);
                LogFile {
                    rel: format!("{session}/{name}"),
                    session: session.to_string(),
                    epoch,
                    path: dir.join(name),
                    dir: dir.clone(),
                }
            })
            .collect()
    }

    /// Looks at one log and reads what is new in it, within `budget`; `look` says how
    /// much of a changed log is checked. With `Look::Verify`, the indexed prefix's CRC is
    /// checked even when size and time say nothing changed (a `Forget` names a log that
    /// was just rewritten).
    pub(super) fn check(
        &mut self,
        file: &LogFile,
        budget: &mut Budget,
        started: &mut bool,
        look: Look,
    ) -> Result<Outcome, IndexError> {
        let verify = look == Look::Verify;
        let id = match Identity::at(&file.path) {
            Ok(Some(id)) => id,
            // Gone since the listing: the next look at its session drops it.
            Ok(None) => return Ok(Outcome::Skipped),
            Err(e) => {
                self.report(&file.path, e.to_string());
                return Ok(Outcome::Skipped);
            }
        };
        let sig = Signature {
            size: id.size,
            mtime_ns: id.mtime_ns,
        };
        let known = self.known_file(&file.rel)?;
        let verdict = match known {
            Some(mut k) => match k.broken.take() {
                Some((message, was)) if was == sig && !verify => {
                    self.report(&file.path, message);
                    return Ok(Outcome::Skipped);
                }
                Some(_) => match self.head_label(file) {
                    Some(label) => Verdict::Read(fresh(Some(k.id), label)),
                    None => return Ok(Outcome::Skipped),
                },
                None => self.compare(file, k, id, look)?,
            },
            None => match self.head_label(file) {
                Some(label) => Verdict::Read(fresh(None, label)),
                None => return Ok(Outcome::Skipped),
            },
        };
        match verdict {
            Verdict::Same => Ok(Outcome::CaughtUp),
            Verdict::Read(state) => {
                let rows = state.rows;
                // When the whole part before where reading starts was last checked: now
                // for a log read from its start, as remembered otherwise.
                let whole_at = match state.id {
                    _ if state.offset == 0 => Some(Instant::now()),
                    Some(id) => self.verified.whole_at(id, stand(&state)),
                    None => None,
                };
                let outcome = self.ingest(file, state, sig, budget, started)?;
                let now = self.known_file(&file.rel)?;
                if now.as_ref().map_or(0, |k| k.state.rows) != rows {
                    self.touch(&file.session);
                }
                if let (Some(k), Some(at)) = (now, whole_at) {
                    if k.broken.is_none() {
                        self.verified.note(k.id, &file.path, stand(&k.state), at);
                    }
                }
                Ok(outcome)
            }
        }
    }

    /// What a known, readable log's identity says: unchanged, grown (read on), or
    /// rewritten (rows dropped, read from the start).
    fn compare(
        &mut self,
        file: &LogFile,
        k: Known,
        now: Identity,
        look: Look,
    ) -> Result<Verdict, IndexError> {
        let verify = look == Look::Verify;
        let st = &k.state;
        let replaced = (st.dev, st.ino) != (now.dev, now.ino);
        let shorter = now.size < st.offset;
        let untouched = now.size == st.offset && st.mtime_ns != 0 && now.mtime_ns == st.mtime_ns;
        let why = if replaced {
            Some("was replaced by another file")
        } else if shorter {
            Some("shrank below what was indexed")
        } else if untouched && !verify {
            return Ok(Verdict::Same);
        } else if st.offset > 0 && !self.indexed_part_same(file, k.id, stand(st), look) {
            Some("changed in the part already indexed")
        } else {
            None
        };
        let Some(why) = why else {
            if now.size == st.offset {
                // A time still too young to trust is stored as unknown, as it already is.
                if settled_mtime(now.mtime_ns) != st.mtime_ns {
                    self.settle(k.id, now.mtime_ns)?;
                }
                return Ok(Verdict::Same);
            }
            return Ok(Verdict::Read(k.state));
        };
        // Never the log's text: only its name and what changed.
        plumbing::notice!(
            "{} {why}; its {} rows are dropped and it is read again",
            file.path.display(),
            st.rows
        );
        self.drop_file(k.id)?;
        Ok(match self.head_label(file) {
            Some(label) => Verdict::Read(fresh(None, label)),
            None => Verdict::Same,
        })
    }

    /// Whether the part of the log before where the index stands (`at`) is as indexed.
    /// A request's look at a log remembered standing there and checked whole lately
    /// checks only its last bytes (`verified`); otherwise the whole part is read, and a
    /// log found the same is remembered as checked whole now.
    fn indexed_part_same(&mut self, file: &LogFile, id: i64, at: Stand, look: Look) -> bool {
        if look == Look::Request {
            if let Some(tail) = self.verified.tail_to_check(id, at) {
                return verified::tail_same(&file.path, at.offset, tail);
            }
        }
        let checked = Instant::now();
        let same = self.prefix_same(file, at.offset, at.crc);
        if same {
            self.verified.note(id, &file.path, at, checked);
        }
        same
    }

    /// Whether the first `len` bytes of the log still have CRC-32 `crc`.
    fn prefix_same(&mut self, file: &LogFile, len: u64, crc: u32) -> bool {
        match sessions::lines::prefix_crc(&file.path, len) {
            Ok(Some(now)) => now == crc,
            Ok(None) => false,
            Err(e) => {
                self.report(&file.path, e.to_string());
                false
            }
        }
    }

    /// Stores a log's time once its prefix was found unchanged, so the next look is a
    /// `stat` again rather than a CRC.
    fn settle(&mut self, id: i64, mtime_ns: i64) -> Result<(), IndexError> {
        self.conn
            .execute(
                "UPDATE files SET mtime = ?2 WHERE id = ?1",
                params![id, settled_mtime(mtime_ns)],
            )
            .map(drop)
            .map_err(|e| self.sql(e))
    }

    /// Drops the files the index knows that a finished pass did not find.
    fn drop_unseen(&mut self, seen: &HashSet<String>) -> Result<(), IndexError> {
        let gone: Vec<i64> = self
            .known(None)?
            .into_iter()
            .filter(|(rel, _)| !seen.contains(rel))
            .map(|(_, k)| k.id)
            .collect();
        for id in gone {
            self.drop_file(id)?;
        }
        Ok(())
    }

    /// Drops every file of a session that is no longer on disk.
    fn drop_session(&mut self, session: &str) -> Result<(), IndexError> {
        let ids: Vec<i64> = self
            .known(Some(session))?
            .into_values()
            .map(|k| k.id)
            .collect();
        for id in ids {
            self.drop_file(id)?;
        }
        self.hot.retain(|s| s != session);
        Ok(())
    }

    /// The sessions the index holds files of.
    fn known_sessions(&self) -> Result<HashSet<String>, IndexError> {
        let run = || -> rusqlite::Result<HashSet<String>> {
            let mut stmt = self
                .conn
                .prepare_cached("SELECT DISTINCT session FROM files")?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            rows.collect()
        };
        run().map_err(|e| self.sql(e))
    }

    /// The file at `rel` as the index knows it.
    pub(super) fn known_file(&self, rel: &str) -> Result<Option<Known>, IndexError> {
        Ok(self.known_where(KnownBy::Path(rel))?.into_values().next())
    }

    /// The files the index knows (of one session, or all), keyed by `<session>/<log>`.
    fn known(&self, only: Option<&str>) -> Result<BTreeMap<String, Known>, IndexError> {
        self.known_where(match only {
            Some(s) => KnownBy::Session(s),
            None => KnownBy::All,
        })
    }

    fn known_where(&self, by: KnownBy<'_>) -> Result<BTreeMap<String, Known>, IndexError> {
        const COLUMNS: &str = "SELECT path, id, offset, line, class, untrusted, rows,
                broken, broken_size, broken_mtime, dev, ino, mtime, crc FROM files";
        let (sql, arg) = match by {
            KnownBy::All => (format!("{COLUMNS} WHERE ?1 IS NULL"), None),
            KnownBy::Session(s) => (format!("{COLUMNS} WHERE session = ?1"), Some(s)),
            KnownBy::Path(p) => (format!("{COLUMNS} WHERE path = ?1"), Some(p)),
        };
        let mut stmt = self.conn.prepare_cached(&sql).map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params![arg], |r| {
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
                        // Stored as SQLite's signed integers; compared bit for bit.
                        dev: r.get::<_, i64>(10)? as u64,
                        ino: r.get::<_, i64>(11)? as u64,
                        mtime_ns: r.get(12)?,
                        crc: u32::try_from(r.get::<_, i64>(13)?).unwrap_or(0),
                    },
                    broken: broken.map(|m| (m, sig)),
                };
                Ok((r.get::<_, String>(0)?, known))
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// Removes a file and its rows from the index, in one transaction that also marks
    /// the index as holding deleted text until it is purged (see `purge`).
    pub(super) fn drop_file(&mut self, id: i64) -> Result<(), IndexError> {
        let run = |conn: &mut rusqlite::Connection| -> rusqlite::Result<()> {
            let tx = conn.transaction()?;
            let rows: i64 = tx
                .query_row("SELECT rows FROM files WHERE id = ?1", [id], |r| r.get(0))
                .unwrap_or(0);
            super::near_field::drop_file(&tx, id)?;
            tx.execute("DELETE FROM docs WHERE file = ?1", [id])?;
            tx.execute("DELETE FROM files WHERE id = ?1", [id])?;
            if rows > 0 {
                super::purge::mark_due(&tx)?;
            }
            tx.commit()
        };
        // Rows went: a group once common may not be now, and their words are not kept.
        self.common.forget();
        self.kept.forget();
        self.verified.forget();
        run(&mut self.conn).map_err(|e| self.sql(e))?;
        self.purge_pending = true;
        Ok(())
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

enum KnownBy<'a> {
    All,
    Session(&'a str),
    Path(&'a str),
}

/// Where the index stands in a log as `state` says.
fn stand(state: &FileState) -> Stand {
    Stand {
        dev: state.dev,
        ino: state.ino,
        offset: state.offset,
        crc: state.crc,
    }
}

fn fresh(id: Option<i64>, label: Label) -> FileState {
    FileState {
        id,
        offset: 0,
        line: 0,
        label,
        rows: 0,
        crc: 0,
        dev: 0,
        ino: 0,
        mtime_ns: 0,
    }
}
