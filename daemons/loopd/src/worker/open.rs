//! The sessions loopd holds open in memory (`Sessions`): which, since when last used, and
//! the labels that sessions let go of still owed their logs.
//!
//! A session read again from a log edited on disk keeps the label the model read under
//! and owes its log a `forgotten` record saying so until it is written
//! (docs/sessions.md, 'A log changed under loopd'). Letting such a session leave memory
//! (the least recently used past `MAX_OPEN_SESSIONS`, a `/forget` that rewrote its log, a
//! job that panicked) would lose that label with it, so it is kept here and taken on
//! again when the session is next opened.

use super::MAX_OPEN_SESSIONS;
use conversation::open_session::{Frozen, Session, SessionError};
use conversation::prompts::{self, Prompt, PromptError};
use conversation::status::SessionView;
use proto::config::Config;
use proto::{Label, SessionId};
use std::collections::HashMap;
use std::time::Instant;

/// The sessions open in memory, each with when it was last used.
#[derive(Default)]
pub(super) struct Sessions {
    pub(super) open: HashMap<SessionId, (Session, u64)>,
    tick: u64,
    /// Labels owed to the logs of sessions no longer in memory: at most one entry a
    /// session, and only while a full disk keeps the record from being written.
    owed: HashMap<SessionId, Label>,
}

impl Sessions {
    /// An existing session, opened into memory if it is not there yet (never created).
    pub(super) fn open_existing(&mut self, cfg: &Config, id: &SessionId) -> SessionView {
        match self.following_disk(id) {
            Ok(Some(session)) => return SessionView::of(session, cfg.channel.owner_class),
            Ok(None) => {}
            Err(e) => {
                plumbing::error!("session {id}: {e}");
                return SessionView::Broken(e.to_string());
            }
        }
        let started = Instant::now();
        match Session::open(&cfg.sessions_dir(), id) {
            Ok(Some(session)) => {
                plumbing::info!(
                    "session {id}: opened epoch {}, {} records in {} ms",
                    session.epoch(),
                    session.records().len(),
                    started.elapsed().as_millis()
                );
                let view = SessionView::of(&session, cfg.channel.owner_class);
                self.keep(session);
                view
            }
            Ok(None) => SessionView::New,
            Err(e) => {
                plumbing::error!("session {id}: {e}");
                SessionView::Broken(e.to_string())
            }
        }
    }

    /// The session when it is open in memory, read from disk again first when its log
    /// changed there (`Session::follow_disk`), so each job starts from the file at the
    /// log's path (docs/sessions.md, 'A log changed under loopd'). One that cannot be read
    /// again leaves memory: the error is the job's, and the next job opens it afresh
    /// (unless it still owes its log the label the model read under, `owes_floor`). One
    /// whose files are gone is a session not open, as after a restart.
    pub(super) fn following_disk(
        &mut self,
        id: &SessionId,
    ) -> Result<Option<&mut Session>, SessionError> {
        let Some((session, _)) = self.open.get_mut(id) else {
            return Ok(None);
        };
        match session.follow_disk() {
            Ok(()) => {}
            Err(e @ SessionError::Gone { .. }) => {
                plumbing::warn!("session {id}: {e}; it is opened as a restart would open it");
                self.let_go(id);
                return Ok(None);
            }
            // Read again, but the record keeping the label the model read under could
            // not be written: the session stays open, and its next append writes the
            // record first.
            Err(e) if session.owes_floor() => return Err(e),
            Err(e) => {
                self.let_go(id);
                return Err(e);
            }
        }
        Ok(self.open.get_mut(id).map(|(session, _)| session))
    }

    /// Holds `session` in memory, letting the least recently used go past
    /// `MAX_OPEN_SESSIONS`; a label its copy that left memory still owed its log is
    /// taken on (`owed`).
    pub(super) fn keep(&mut self, mut session: Session) {
        if self.open.len() >= MAX_OPEN_SESSIONS {
            let oldest = self
                .open
                .iter()
                .min_by_key(|(_, (_, tick))| *tick)
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                self.let_go(&oldest);
            }
        }
        if let Some(label) = self.owed.remove(session.id()) {
            session.owe(label);
        }
        self.tick += 1;
        self.open.insert(session.id().clone(), (session, self.tick));
    }

    /// Lets session `id` leave memory (reopened from disk when next used), keeping the
    /// label it still owes its log, if any: it is the only place that label is.
    pub(super) fn let_go(&mut self, id: &SessionId) {
        if let Some((session, _)) = self.open.remove(id) {
            if let Some(label) = session.owed() {
                let kept = self.owed.get(id).map_or(label, |l| l.join(label));
                self.owed.insert(id.clone(), kept);
            }
        }
    }

    /// Lets every session leave memory, as `let_go` does.
    pub(super) fn let_go_all(&mut self) {
        let ids: Vec<SessionId> = self.open.keys().cloned().collect();
        for id in ids {
            self.let_go(&id);
        }
    }

    /// The session, opened or created (freezing system.md and the tool schemas).
    pub(super) fn get_or_create(
        &mut self,
        cfg: &Config,
        id: &SessionId,
    ) -> Result<&mut Session, SessionError> {
        if self.following_disk(id)?.is_none() {
            let session = Session::open_or_create(&cfg.sessions_dir(), id, || {
                let system = prompts::read(cfg, Prompt::System).map_err(
                    |PromptError { path, source }| SessionError::Prompt { path, source },
                )?;
                Ok(Frozen {
                    system,
                    tools: tools::schemas(),
                })
            })?;
            self.keep(session);
        }
        self.tick += 1;
        let tick = self.tick;
        match self.open.get_mut(id) {
            Some((session, used)) => {
                *used = tick;
                Ok(session)
            }
            // `keep` just inserted it; this arm is unreachable in practice.
            None => Err(SessionError::Create {
                path: cfg.sessions_dir().join(id.as_str()),
                source: std::io::Error::other("session vanished from memory"),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::DataClass;

    fn session(dir: &std::path::Path, name: &str) -> Session {
        let id = SessionId::parse(name).unwrap();
        Session::open_or_create(dir, &id, || {
            Ok(Frozen {
                system: "system".into(),
                tools: serde_json::json!([]),
            })
        })
        .unwrap()
    }

    fn reopened(dir: &std::path::Path, name: &str) -> Session {
        Session::open(dir, &SessionId::parse(name).unwrap())
            .unwrap()
            .unwrap()
    }

    /// Regression: a session owing its log the label the model read under (its record's
    /// write failed) lost that label when it left memory (evicted past the limit, a
    /// `/forget` that rewrote its log, a panicked job): reopened from the file, it went on
    /// under the file's lower label.
    #[test]
    fn a_label_owed_to_a_log_outlives_the_session_leaving_memory() {
        let dir = tempfile::tempdir().unwrap();
        let secret = Label::new(DataClass::Secret, false);
        let mut sessions = Sessions::default();
        let mut owing = session(dir.path(), "main");
        owing.owe(secret);
        assert!(owing.owes_floor());
        sessions.keep(owing);
        // Evicted by the sessions opened after it.
        for i in 0..MAX_OPEN_SESSIONS {
            sessions.keep(session(dir.path(), &format!("other-{i}")));
        }
        let main = SessionId::parse("main").unwrap();
        assert!(!sessions.open.contains_key(&main));
        sessions.keep(reopened(dir.path(), "main"));
        let (back, _) = sessions.open.get_mut(&main).unwrap();
        assert_eq!(back.label(DataClass::Public).class, DataClass::Secret);
        assert!(back.owes_floor());
        // Paid at the next write, then nothing is owed.
        back.follow_disk().unwrap();
        assert!(!back.owes_floor());
        sessions.let_go_all();
        assert!(sessions.owed.is_empty());
        sessions.keep(reopened(dir.path(), "main"));
        let (back, _) = sessions.open.get_mut(&main).unwrap();
        assert_eq!(back.label(DataClass::Public).class, DataClass::Secret);
    }

    /// A session that owes nothing leaves nothing behind.
    #[test]
    fn a_session_owing_nothing_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let mut sessions = Sessions::default();
        sessions.keep(session(dir.path(), "main"));
        sessions.let_go_all();
        assert!(sessions.open.is_empty() && sessions.owed.is_empty());
    }
}
