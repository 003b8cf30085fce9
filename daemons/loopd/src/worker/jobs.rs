//! The worker's jobs besides a turn that change a session: `/compact` and `/allow N`.

use super::report::EventSink;
use super::{JobId, State};
use crate::status::SessionView;
use proto::SessionId;

impl State {
    /// `/compact` for `session_id`, which must exist: a new session has nothing to carry.
    pub(super) fn compact(&mut self, id: JobId, session_id: &SessionId) {
        let why = match self.open(session_id) {
            SessionView::Open { .. } => None,
            SessionView::New => Some("it is new; there is nothing to compact".to_string()),
            SessionView::Broken(e) => Some(e),
        };
        if let Some(why) = why {
            return self
                .notify
                .done(id, format!("error: session {session_id}: {why}"), false);
        }
        let State {
            engine,
            board,
            notify,
            sessions,
            ..
        } = self;
        let (reply, ok) = match sessions.get_or_create(engine.cfg(), session_id) {
            Ok(session) => {
                let result = engine.compact(session);
                board.set(session_id.as_str(), SessionView::of(session));
                match result {
                    Ok(done) => (format!("compacted: {done}"), true),
                    Err(e) => (format!("error: compaction failed: {e}"), false),
                }
            }
            Err(e) => (format!("error: session {session_id}: {e}"), false),
        };
        notify.done(id, reply, ok);
    }

    /// `/allow N` in `session_id`, which must exist: a new session refused nothing.
    pub(super) fn allow(&mut self, id: JobId, session_id: &SessionId, call: u64) {
        if !matches!(self.open(session_id), SessionView::Open { .. }) {
            let why = format!("error: /allow {call}: session {session_id} has refused nothing");
            return self.notify.done(id, why, false);
        }
        let State {
            engine,
            board,
            notify,
            sessions,
            ..
        } = self;
        let mut sink = EventSink { id, notify };
        let (reply, ok) = match sessions.get_or_create(engine.cfg(), session_id) {
            Ok(session) => {
                let result = engine.allow(session, call, &mut sink);
                board.set(session_id.as_str(), SessionView::of(session));
                result.unwrap_or_else(|e| (format!("error: session {session_id}: {e}"), false))
            }
            Err(e) => (format!("error: session {session_id}: {e}"), false),
        };
        notify.done(id, reply, ok);
    }
}
