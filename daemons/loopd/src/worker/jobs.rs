//! The worker's jobs besides a turn that change a session: `/compact` and `/allow N`.

use super::report::EventSink;
use super::{Failure, JobId, Reply, State};
use crate::engine::Engine;
use conversation::allow::AllowError;
use conversation::open_session::Session;
use conversation::status::SessionView;
use proto::SessionId;

impl State {
    /// `/compact` for `session_id`, which must exist: a new session has nothing to carry.
    pub(super) fn compact(&mut self, id: JobId, session_id: &SessionId) {
        let why = match self.open(session_id) {
            SessionView::Open { .. } => None,
            SessionView::New => Some("it is new; there is nothing to compact".to_string()),
            SessionView::Broken(why) => Some(why),
        };
        if let Some(why) = why {
            let session = session_id.clone();
            return self
                .notify
                .done(id, Err(Failure::Unusable { session, why }));
        }
        self.on_open_session(id, session_id, |engine, session, _| {
            match engine.compact(session) {
                Ok(done) => Ok(format!("compacted: {done}")),
                Err(e) => Err(Failure::Compaction(e)),
            }
        });
    }

    /// `/allow N` in `session_id`, which must exist: a new session refused nothing.
    pub(super) fn allow(&mut self, id: JobId, session_id: &SessionId, call: u64) {
        if !matches!(self.open(session_id), SessionView::Open { .. }) {
            let why = format!("session {session_id} has refused nothing");
            return self.notify.done(id, Err(Failure::Allow { call, why }));
        }
        self.on_open_session(id, session_id, |engine, session, sink| {
            match engine.allow(session, call, sink) {
                Ok(reply) => Ok(reply),
                Err(AllowError::Denied(why)) => Err(Failure::Allow { call, why }),
                Err(AllowError::Reminders(e)) => Err(Failure::Allow {
                    call,
                    why: e.to_string(),
                }),
                Err(AllowError::Session(error)) => Err(Failure::Session {
                    session: session_id.clone(),
                    error,
                }),
            }
        });
    }

    /// Runs `job` on `session_id` (known to exist), with the job's activity sink, then
    /// updates the status board and sends `id`'s reply: the one shape of every job that
    /// changes a session besides a turn.
    fn on_open_session(
        &mut self,
        id: JobId,
        session_id: &SessionId,
        job: impl FnOnce(&mut Engine, &mut Session, &mut EventSink<'_>) -> Reply,
    ) {
        let State {
            engine,
            board,
            notify,
            sessions,
            ..
        } = self;
        let mut sink = EventSink { id, notify };
        let reply = match sessions.get_or_create(engine.cfg(), session_id) {
            Ok(session) => {
                let reply = job(engine, session, &mut sink);
                board.set(
                    session_id.as_str(),
                    SessionView::of(session, engine.cfg().channel.owner_class),
                );
                reply
            }
            Err(error) => Err(Failure::Session {
                session: session_id.clone(),
                error,
            }),
        };
        notify.done(id, reply);
    }
}
