//! The engine: the one owner of a turn's world — the configuration in force, the
//! llama.cpp client and the main slot's `Keeper` — and everything that runs a model call
//! on a session goes through it: the owner's turns, heartbeats, `/compact` and what
//! `/forget` does to the slots (`/allow N` calls no model: the worker lends it the
//! engine's `TurnCtx`).
//! Nothing else holds a client or a keeper, so there is one place that knows whose prompt
//! the main slot holds.
//!
//! A turn (`Engine::turn`) is `turn::run_turn`, and after a `SessionFull` the compaction
//! and the line once more in the new epoch, inside the reply block, since they make the
//! answer. What follows an answered turn (tool summaries, a compaction at the threshold)
//! is `Engine::after`, which the worker runs once the block's `.` is out
//! (docs/turn.md, "After the turn").

pub(crate) mod keeper;
mod slots;

use conversation::compact::finish::{finish, Finished, Progress, Quiet};
use conversation::compact::{note, CompactError, Compacted};
use conversation::open_session::Session;
use conversation::prompt::TurnCtx;
use conversation::turn::{run_turn, Asked, Sink, TurnDone, TurnError};
use keeper::ledger::Ledger;
use keeper::{Keeper, TurnEnd};
use llama::{Client, ModelServer};
use proto::config::Config;
use proto::head::Reason;
use proto::{FromMatrix, Origin};
use std::sync::Arc;
use std::time::Duration;

/// Why a whole turn was not answered: the turn's own failure, or what happened when
/// its context filled.
#[derive(Debug)]
pub(crate) enum EngineError {
    Turn(TurnError),
    /// Context full, compacted, and the line asked again in the new epoch was
    /// context-full there too.
    StillFull {
        from: u64,
        to: u64,
        message: String,
    },
    /// Context full, and the compaction that should have made room failed.
    CompactFailed {
        message: String,
        why: CompactError,
    },
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineError::Turn(e) => e.fmt(f),
            EngineError::StillFull { from, to, message } => write!(
                f,
                "context full even after compacting epoch {from} into {to} ({message}); the message was not answered"
            ),
            EngineError::CompactFailed { message, why } => write!(
                f,
                "context full ({message}) and compaction failed: {why}; the message was not answered"
            ),
        }
    }
}

impl std::error::Error for EngineError {}

impl EngineError {
    /// Whether the turn ended because the context was full and nothing could be done
    /// about it within the turn (a warning, not an error, in the log).
    pub(crate) fn is_session_full(&self) -> bool {
        matches!(self, EngineError::Turn(TurnError::SessionFull(_)))
    }
}

/// Warns, with the fix, when the served chat template cannot make tool calls: a model
/// behind such a template never reads a file or recalls, and says nothing about why.
pub(crate) fn check_tools(client: &dyn ModelServer) {
    for line in client.tool_findings() {
        plumbing::warn!("llama.cpp at {}: {line}", client.base_url());
    }
}

pub(crate) struct Engine {
    /// What every model call reads.
    world: World,
    keeper: Keeper,
}

/// The configuration in force, the model server and the reminders' book: what a model
/// call reads, lent out as a [`TurnCtx`] by [`World::ctx`], the one place it is built.
/// Kept apart from the keeper so a call can borrow both at once.
struct World {
    /// Shared with the channel, never copied: a reload replaces the whole `Arc`.
    cfg: Arc<Config>,
    /// llama.cpp; a script in the unit tests (`Engine::with_llama`).
    client: Box<dyn ModelServer>,
    /// The reminders' book, for the `remind` tool and `/allow N` of a held reminder.
    reminders: Option<remind::Shared>,
}

impl World {
    fn ctx(&self) -> TurnCtx<'_> {
        TurnCtx {
            cfg: &self.cfg,
            client: self.client.as_ref(),
            reminders: self.reminders.as_ref(),
        }
    }
}

impl Engine {
    /// The engine around the daemon's one llama.cpp client.
    pub(crate) fn new(cfg: Arc<Config>, client: Client) -> Engine {
        Engine::with_llama(cfg, Box::new(client))
    }

    /// An engine on any model server: the daemon's client, or the unit tests' script.
    pub(crate) fn with_llama(cfg: Arc<Config>, client: Box<dyn ModelServer>) -> Engine {
        Engine {
            keeper: Keeper::new(Ledger::open(&cfg.state_dir)),
            world: World {
                cfg,
                client,
                reminders: None,
            },
        }
    }

    /// The engine with the reminders' book the `remind` tool writes to.
    pub(crate) fn with_reminders(mut self, reminders: remind::Shared) -> Engine {
        self.world.reminders = Some(reminders);
        self
    }

    /// The configuration in force.
    pub(crate) fn cfg(&self) -> &Arc<Config> {
        &self.world.cfg
    }

    /// What a model call needs, borrowed from the engine.
    pub(crate) fn ctx(&self) -> TurnCtx<'_> {
        self.world.ctx()
    }

    /// A reloaded configuration, in force from the next call on. A new server (or new
    /// slots) makes the keeper start from knowing nothing of the slot; a new state
    /// directory brings its own ledger of saved files.
    pub(crate) fn reload(&mut self, cfg: Arc<Config>) {
        self.world.client.reload(&cfg.llama);
        if cfg.state_dir != self.world.cfg.state_dir {
            self.keeper = Keeper::new(Ledger::open(&cfg.state_dir));
        } else {
            self.keeper.reload(&self.world.cfg, &cfg);
        }
        self.world.cfg = cfg;
    }

    /// A job panicked: what the main slot holds is unknown now, so the keeper starts
    /// from knowing nothing of it.
    pub(crate) fn slot_unknown(&mut self) {
        self.keeper.unknown();
    }

    /// How long the worker may wait for a job before the main slot's idle save is due.
    pub(crate) fn idle_timeout(&self) -> Option<Duration> {
        self.keeper.idle_timeout(&self.world.cfg)
    }

    /// The worker was idle for `llama.slot_save_idle_s`: save the main slot. What was
    /// saved, for `/status`.
    pub(crate) fn save_idle(&mut self) -> Option<conversation::status::SlotSave> {
        let actions = self.keeper.save(&self.world.cfg);
        slots::perform(&mut self.keeper, &self.world, actions).saved
    }

    /// A whole turn up to its answer: `run_turn`, and after a `SessionFull` the
    /// compaction and the line once more in the new epoch, streaming to the same `sink`.
    /// When it returns `Ok`, the caller sends the `.` and then runs `after`.
    pub(crate) fn turn(
        &mut self,
        session: &mut Session,
        text: &str,
        origin: Origin,
        from: Option<&FromMatrix>,
        sink: &mut dyn Sink,
    ) -> Result<TurnDone, EngineError> {
        // A reminder set by a run that then found the context full still counts for the
        // rerun's "no reminder was set" line (docs/reminders.md, 'Asked in words').
        let mut reminded = false;
        // Said once, at this time, however many epochs it is asked in.
        let time = proto::time::now_rfc3339();
        let asked = Asked {
            text,
            origin,
            from,
            time: &time,
        };
        let outcome = self.one_turn(session, asked, sink, &mut reminded);
        let Err(TurnError::SessionFull(message)) = outcome else {
            return outcome.map_err(EngineError::Turn);
        };
        match self.finish(session, true, &mut Quiet) {
            Finished::Compacted(done) => {
                plumbing::info!(
                    "session {}: context full; {done}; asking again in the new epoch",
                    session.id()
                );
                match self.one_turn(session, asked, sink, &mut reminded) {
                    Err(TurnError::SessionFull(m)) => {
                        note(
                            session,
                            format!(
                                "context full even after compaction; the message was not answered: {m}"
                            ),
                        );
                        Err(EngineError::StillFull {
                            from: done.from,
                            to: done.to,
                            message: m,
                        })
                    }
                    other => other.map_err(EngineError::Turn),
                }
            }
            Finished::Failed(why) => Err(EngineError::CompactFailed { message, why }),
            // `finish` always compacts after `SessionFull`; should that change, the
            // plain error still reaches the client.
            Finished::Kept => Err(EngineError::Turn(TurnError::SessionFull(message))),
        }
    }

    /// What follows a turn that was answered, after its `.`: tool summaries and, when
    /// due, compaction (each announced to `progress` first), then the memoryd nudge.
    pub(crate) fn after(&mut self, session: &mut Session, progress: &mut dyn Progress) {
        self.finish(session, false, progress);
        self.nudge(session);
    }

    /// Tells memoryd the session's log grew; a turn that failed still wrote records.
    pub(crate) fn nudge(&self, session: &Session) {
        conversation::memory::nudge(
            self.world.cfg.memory.socket.clone(),
            session.id().to_string(),
        );
    }

    /// `/compact`: a compaction of `session` now.
    pub(crate) fn compact(&mut self, session: &mut Session) -> Result<Compacted, CompactError> {
        let from = session.epoch();
        let ctx = self.world.ctx();
        let result = conversation::compact::compact_or_note(&ctx, session, Reason::Manual);
        self.compacted(session, from, result.as_ref().ok());
        result
    }

    /// A forget rewrote the logs or heads of `epochs` of `session` (`conversation::forget`):
    /// the slots that may hold the text are erased and the saved files of those epochs
    /// emptied, so the next turn reads its prompt from the rewritten files. Returns what
    /// was done to the slots, in words.
    pub(crate) fn forget(&mut self, session: &proto::SessionId, epochs: &[u64]) -> String {
        let actions = self.keeper.forgotten(&self.world.cfg, session, epochs);
        let done = slots::perform(&mut self.keeper, &self.world, actions);
        let mut said: Vec<String> = done
            .erased
            .into_iter()
            .map(|(slot, outcome)| match outcome {
                Ok(()) => format!("slot {slot} erased"),
                Err(e) => {
                    plumbing::warn!("session {session}: forget: erasing slot {slot}: {e}");
                    format!("slot {slot} not erased ({e})")
                }
            })
            .collect();
        if done.emptied {
            said.push(format!("saved slot files of epochs {epochs:?} emptied"));
        }
        said.join("; ")
    }

    /// Steps 1 and 2 after a turn (`compact::finish`), with the slot bookkeeping that
    /// follows: the summary call ran on the main slot, and an ended epoch's saved file
    /// is stale.
    fn finish(
        &mut self,
        session: &mut Session,
        full: bool,
        progress: &mut dyn Progress,
    ) -> Finished {
        let from = session.epoch();
        let ctx = self.world.ctx();
        let after = finish(&ctx, session, full, progress);
        match &after {
            Finished::Compacted(done) => self.compacted(session, from, Some(done)),
            Finished::Failed(_) => self.compacted(session, from, None),
            Finished::Kept => {}
        }
        after
    }

    /// The one place that records what a compaction attempt did to the main slot: the
    /// summary call (tried or done) ran on it with epoch `from`'s prompt, and a done one
    /// ended that epoch.
    fn compacted(&mut self, session: &Session, from: u64, done: Option<&Compacted>) {
        self.keeper.main_used(session.id(), from);
        if let Some(done) = done {
            let actions = self
                .keeper
                .epoch_ended(&self.world.cfg, session.id(), done.from);
            slots::perform(&mut self.keeper, &self.world, actions);
        }
    }

    /// `run_turn` with the main slot brought back first (`Keeper::before_turn`) and what
    /// the turn did to the slot noted after.
    fn one_turn(
        &mut self,
        session: &mut Session,
        asked: Asked<'_>,
        sink: &mut dyn Sink,
        reminded: &mut bool,
    ) -> Result<TurnDone, TurnError> {
        let actions = self
            .keeper
            .before_turn(&self.world.cfg, session.id(), session.epoch());
        slots::perform(&mut self.keeper, &self.world, actions);
        let outcome = run_turn(&self.world.ctx(), session, asked, sink, reminded);
        let end = match &outcome {
            Err(TurnError::SessionFull(_)) => TurnEnd::Full,
            Ok(done) => TurnEnd::Ran {
                cache_n: done.first.as_ref().map(|usage| usage.cache_n),
            },
            Err(_) => TurnEnd::Ran { cache_n: None },
        };
        self.keeper
            .after_turn(&self.world.cfg, session.id(), session.epoch(), end);
        outcome
    }
}

#[cfg(test)]
mod tests;
