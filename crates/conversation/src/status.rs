//! What the poll loop may know about sessions without asking the worker: a small board
//! the worker updates after each change and the loop reads for `/status` and `STATUS=`.
//! The lock is held only to copy a few numbers, never across I/O, so the poll loop never
//! waits on a turn.

use crate::open_session::Session;
use proto::{Label, Origin, Record, Tokens};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// One session as last seen by the worker.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionView {
    /// Open: its current epoch and what it holds.
    Open {
        epoch: u64,
        records: usize,
        usage: Option<Tokens>,
        label: Label,
        /// The `memory` record of the epoch's last owner turn, with its label; `None`
        /// when that turn brought nothing from memory (docs/turn.md).
        memory: Option<(Label, String)>,
    },
    /// Never used: no head on disk yet.
    New,
    /// Its log could not be opened.
    Broken(String),
}

impl SessionView {
    /// `session` as `/status` shows it, the owner's words labelled `owner_class`.
    pub fn of(session: &Session, owner_class: proto::DataClass) -> SessionView {
        SessionView::Open {
            epoch: session.epoch(),
            records: session.records().len(),
            usage: session.last_usage(),
            label: session.label(owner_class),
            memory: last_memory(session.records()),
        }
    }
}

/// The `memory` record that follows the last owner `user` record of `records`, if any.
fn last_memory(records: &[Record]) -> Option<(Label, String)> {
    let last_owner = records.iter().rposition(|r| {
        matches!(
            r,
            Record::User {
                origin: Origin::Owner,
                ..
            }
        )
    })?;
    let Record::Memory {
        content,
        class,
        untrusted,
        ..
    } = records.get(last_owner + 1)?
    else {
        return None;
    };
    Some((Label::new(*class, *untrusted), content.clone()))
}

#[derive(Default)]
struct Data {
    sessions: HashMap<String, SessionView>,
    /// The session whose turn is running, if any.
    busy: Option<String>,
    turns: u64,
    /// The work after a turn's `.` that is running now (tool summaries, a threshold
    /// compaction), as the `· ` activity line words it.
    after_turn: Option<String>,
    /// The newest main-slot save: when, and what it held.
    last_slot_save: Option<(Instant, SlotSave)>,
    /// Records waiting to be reported to Honcho; `None` when Honcho is not configured.
    honcho_backlog: Option<u64>,
    /// The Honcho reporter's own account, read when `/status` asks.
    honcho: Option<honcho::StatusHandle>,
}

/// One save of the main slot to llama.cpp's slot file.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotSave {
    pub session: String,
    pub epoch: u64,
    /// Tokens the saved slot held (llama.cpp's `n_saved`).
    pub tokens: u64,
}

/// What `/status` shows of loopd's own background work.
#[derive(Debug, Clone, PartialEq)]
pub struct BackgroundView {
    pub after_turn: Option<String>,
    /// The last save and its age in seconds.
    pub(crate) last_slot_save: Option<(SlotSave, u64)>,
    pub(crate) honcho_backlog: Option<u64>,
    /// The Honcho reporter's line (docs/honcho.md, "What Honcho's answers do").
    pub(crate) honcho_line: Option<String>,
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

    /// After a turn's `.`: the worker started the follow-up work `what` (the words of
    /// its `· ` activity line, e.g. "summarising 1 tool result of session main").
    pub fn after_turn_started(&self, what: &str) {
        self.with(|d| d.after_turn = Some(what.to_string()));
    }

    /// The follow-up work after a turn is over (done or failed).
    pub fn after_turn_ended(&self) {
        self.with(|d| d.after_turn = None);
    }

    /// The main slot was saved to its file.
    pub fn slot_saved(&self, save: SlotSave) {
        self.with(|d| d.last_slot_save = Some((Instant::now(), save)));
    }

    /// Records not yet reported to Honcho (call after each report attempt).
    #[cfg(test)]
    pub(crate) fn set_honcho_backlog(&self, records: u64) {
        self.with(|d| d.honcho_backlog = Some(records));
    }

    /// The running Honcho reporter's status, read afresh by every `/status`; `None`
    /// when reporting is off.
    pub fn set_honcho(&self, handle: Option<honcho::StatusHandle>) {
        self.with(|d| {
            d.honcho_backlog = None;
            d.honcho = handle;
        });
    }

    pub fn background(&self) -> BackgroundView {
        self.with(|d| BackgroundView {
            after_turn: d.after_turn.clone(),
            last_slot_save: d
                .last_slot_save
                .as_ref()
                .map(|(at, save)| (save.clone(), at.elapsed().as_secs())),
            honcho_backlog: d
                .honcho
                .as_ref()
                .map(|h| h.get().backlog)
                .or(d.honcho_backlog),
            honcho_line: d.honcho.as_ref().map(|h| h.get().line(Instant::now())),
        })
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
            let activity = match (&d.busy, &d.after_turn) {
                (Some(s), _) => format!("turn running in {s}"),
                (None, Some(what)) => what.clone(),
                (None, None) => "idle".to_string(),
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

impl BackgroundView {
    /// The `/status` lines for loopd's own background work, each ending in a newline.
    pub fn lines(&self) -> String {
        let mut out = String::new();
        match &self.after_turn {
            Some(what) => out.push_str(&format!("after the last turn: {what}\n")),
            None => out.push_str("after the last turn: nothing running\n"),
        }
        match &self.last_slot_save {
            Some((save, age_s)) => out.push_str(&format!(
                "last slot save: {age_s} s ago, session {} epoch {} ({} tokens)\n",
                save.session, save.epoch, save.tokens
            )),
            None => out.push_str("last slot save: none since loopd started\n"),
        }
        if let Some(line) = &self.honcho_line {
            out.push_str(line);
            out.push('\n');
        } else if let Some(n) = self.honcho_backlog {
            out.push_str(&format!("honcho: {n} records waiting to be reported\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_after_turn_work_the_last_slot_save_and_the_honcho_backlog() {
        let board = Board::default();
        let quiet = board.background().lines();
        assert_eq!(
            quiet,
            "after the last turn: nothing running\nlast slot save: none since loopd started\n"
        );
        board.after_turn_started("compacting session main: epoch 3 → 4");
        board.slot_saved(SlotSave {
            session: "main".into(),
            epoch: 3,
            tokens: 1234,
        });
        board.set_honcho_backlog(7);
        let busy = board.background().lines();
        assert!(busy.contains("after the last turn: compacting session main: epoch 3 → 4\n"));
        assert!(
            busy.contains("session main epoch 3 (1234 tokens)\n"),
            "{busy}"
        );
        assert!(busy.contains("honcho: 7 records waiting to be reported\n"));
        assert!(board
            .status_line("main", 8192)
            .ends_with("; compacting session main: epoch 3 → 4"));
        board.after_turn_ended();
        assert!(board.status_line("main", 8192).ends_with("; idle"));
    }
}
