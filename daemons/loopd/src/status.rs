//! What the poll loop may know about sessions without asking the worker: a small board
//! the worker updates after each change and the loop reads for `/status` and `STATUS=`.
//! The lock is held only to copy a few numbers, never across I/O, so the poll loop never
//! waits on a turn.

use crate::session::Session;
use proto::{Label, Tokens};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// One session as last seen by the worker.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionView {
    /// Open: its current epoch and what it holds.
    Open {
        epoch: u64,
        records: usize,
        usage: Option<Tokens>,
        label: Label,
    },
    /// Never used: no head on disk yet.
    New,
    /// Its log could not be opened.
    Broken(String),
}

impl SessionView {
    pub fn of(session: &Session) -> SessionView {
        SessionView::Open {
            epoch: session.epoch(),
            records: session.records().len(),
            usage: session.last_usage(),
            label: session.label(),
        }
    }
}

#[derive(Default)]
struct Data {
    sessions: HashMap<String, SessionView>,
    /// The session whose turn is running, if any.
    busy: Option<String>,
    turns: u64,
}

#[derive(Clone, Default)]
pub struct Board {
    data: Arc<Mutex<Data>>,
}

impl Board {
    fn with<T>(&self, f: impl FnOnce(&mut Data) -> T) -> T {
        // A panic on another thread while holding the lock leaves plain numbers behind,
        // still fine to read and overwrite.
        let mut guard = self.data.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut guard)
    }

    pub fn set(&self, session: &str, view: SessionView) {
        self.with(|d| d.sessions.insert(session.to_string(), view));
    }

    pub fn get(&self, session: &str) -> Option<SessionView> {
        self.with(|d| d.sessions.get(session).cloned())
    }

    pub fn turn_started(&self, session: &str) {
        self.with(|d| d.busy = Some(session.to_string()));
    }

    pub fn turn_ended(&self) {
        self.with(|d| {
            d.busy = None;
            d.turns += 1;
        });
    }

    /// The `STATUS=` line: the default session's epoch and context use, and activity.
    pub fn status_line(&self, session: &str, n_ctx: u64) -> String {
        self.with(|d| {
            let view = match d.sessions.get(session) {
                Some(SessionView::Open { epoch, usage, .. }) => format!(
                    "epoch {epoch}, context {}",
                    context_text(usage.as_ref(), n_ctx)
                ),
                Some(SessionView::New) => "new".to_string(),
                Some(SessionView::Broken(e)) => format!("broken: {e}"),
                None => "opening".to_string(),
            };
            let activity = match &d.busy {
                Some(s) => format!("turn running in {s}"),
                None => "idle".to_string(),
            };
            format!("session {session}: {view}; {} turns; {activity}", d.turns)
        })
    }
}

/// `1234/262144 tokens (0%)`, or `unknown` before the first completion.
pub fn context_text(usage: Option<&Tokens>, n_ctx: u64) -> String {
    match usage {
        Some(u) => {
            let used = u.context_used();
            let pct = used.saturating_mul(100).checked_div(n_ctx).unwrap_or(0);
            format!("{used}/{n_ctx} tokens ({pct}%)")
        }
        None => format!("0/{n_ctx} tokens (no completion yet this epoch)"),
    }
}
