//! The worker's jobs besides a turn that change a session: `/compact` and `/allow N`.

use super::report::EventSink;
use super::{JobId, State};
use crate::status::SessionView;
use crate::turn::TurnCtx;
use proto::SessionId;

impl State {
    /// `/compact` for `session_id`, which must exist: a new session has nothing to carry.
    pub(super) fn compact(&mut self, id: JobId, session_id: &SessionId) {
        let notify = self.notify.clone();
        let why = match self.open(session_id) {
            SessionView::Open { .. } => None,
            SessionView::New => Some("it is new; there is nothing to compact".to_string()),
            SessionView::Broken(e) => Some(e),
        };
        if let Some(why) = why {
            return notify.done(id, format!("error: session {session_id}: {why}"), false);
        }
        let (cfg, client, board) = (self.cfg.clone(), self.client.clone(), self.board.clone());
        let ctx = TurnCtx {
            cfg: &cfg,
            client: &client,
        };
        let (reply, ok, ended) = match self.session(session_id) {
            Ok(session) => {
                let from = session.epoch();
                let (reply, ok) = crate::compact::manual(&ctx, session);
                board.set(session_id.as_str(), SessionView::of(session));
                (reply, ok, (session.epoch() != from).then_some(from))
            }
            Err(e) => (format!("error: session {session_id}: {e}"), false, None),
        };
        notify.done(id, reply, ok);
        if let Some(from) = ended {
            // The summary call ran on the main slot, and the epoch's file is stale.
            self.keeper.main_used(session_id, from);
            self.keeper.epoch_ended(&ctx, session_id, from);
        }
    }
}

impl State {
    /// `/allow N` in `session_id`, which must exist: a new session refused nothing.
    pub(super) fn allow(&mut self, id: JobId, session_id: &SessionId, call: u64) {
        let notify = self.notify.clone();
        if !matches!(self.open(session_id), SessionView::Open { .. }) {
            let why = format!("error: /allow {call}: session {session_id} has refused nothing");
            return notify.done(id, why, false);
        }
        let (cfg, board) = (self.cfg.clone(), self.board.clone());
        let mut sink = EventSink {
            id,
            notify: &notify,
        };
        let (reply, ok) = match self.session(session_id) {
            Ok(session) => {
                let result = crate::allow::run(&cfg, session, call, &mut sink);
                board.set(session_id.as_str(), SessionView::of(session));
                result.unwrap_or_else(|e| (format!("error: session {session_id}: {e}"), false))
            }
            Err(e) => (format!("error: session {session_id}: {e}"), false),
        };
        notify.done(id, reply, ok);
    }
}
