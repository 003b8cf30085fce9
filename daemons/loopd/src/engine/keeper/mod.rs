//! Keeping the main slot's prompt cache across a llama.cpp restart (docs/turn.md, "Slot
//! save and restore"): with `llama.slot_save_idle_s` above 0 and a server started with
//! `--slot-save-path`, the main slot is saved after that many idle seconds when it changed
//! since the last save, and restored before a turn when the server's slot has lost it: the
//! server restarted (its slot has run no task since), or another session's turns took it.
//!
//! The `Keeper` is a state machine with no I/O: it holds no client, makes no request and
//! opens no file. Each event (a turn coming, a turn done, an idle period, an epoch
//! ended, a forget) returns the [`SlotAction`]s it decided on; the engine performs them
//! with its client (`engine/slots.rs`) and hands each outcome back (`Keeper::slots`,
//! `Keeper::restored`, `Keeper::saved`, `Keeper::emptied`), which may decide more. So
//! every decision is tested by feeding outcomes in (`keeper/tests.rs`), with no server.
//!
//! Files are named by session and epoch ([`Owner::file`]), so a restore only ever loads a
//! prefix of the same epoch's prompt. llama.cpp has no call that deletes a file, so an
//! ended epoch's file is overwritten with an empty slot's (40 bytes): the background slot
//! is erased and saved under that name. A server without a save path is said once in the
//! log and the keeper goes quiet; it is never an error for the owner.

pub(crate) mod ledger;

use ledger::{Ledger, Saved};
use llama::slots::{SlotError, SlotInfo, SlotListError};
use proto::config::Config;
use proto::SessionId;
use std::time::Duration;

/// A restore "took" when the next completion reused at least this fraction of the
/// restored tokens (or, when the server loaded none, of the tokens the ledger says were
/// saved). The last prompt token is always evaluated again and a re-tokenised answer may
/// differ by a few tokens, so a restore that worked is close to 1; one that did not (a
/// file from another model, a file deleted or emptied, a server that dropped it) is
/// near 0.
pub(crate) const TOOK_FRACTION: f64 = 0.5;

/// Seconds in a day, for `llama.slot_keep_days`.
const DAY_S: u64 = 86_400;

/// Whether a restore took, from the first completion after it.
pub(crate) fn took(restored: u64, cache_n: u64) -> bool {
    cache_n as f64 >= TOOK_FRACTION * restored as f64
}

/// One epoch of one session: what the main slot holds, and what a slot file is named by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owner {
    pub(crate) session: SessionId,
    pub(crate) epoch: u64,
}

impl Owner {
    pub(crate) fn new(session: &SessionId, epoch: u64) -> Owner {
        Owner {
            session: session.clone(),
            epoch,
        }
    }

    /// The file this epoch's main slot is saved to. Session ids are `[a-z0-9][a-z0-9-]*`,
    /// which llama.cpp's file-name check accepts.
    pub(crate) fn file(&self) -> String {
        format!("{}-epoch-{:06}.bin", self.session, self.epoch)
    }
}

/// What the keeper asks the engine to do: a call to llama.cpp's slot endpoints (its
/// outcome handed to the keeper method named), a check of the server, or a write of the
/// ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SlotAction {
    /// `GET /slots`, before a turn of `Owner`: the list goes to [`Keeper::slots`].
    AskSlots(Owner),
    /// Load `Owner`'s file into `slot`: the outcome goes to [`Keeper::restored`].
    Restore { slot: u32, of: Owner },
    /// Save `slot` to `Owner`'s file: the outcome goes to [`Keeper::saved`].
    Save { slot: u32, of: Owner },
    /// Erase `slot`, then save it under `Owner`'s file, which overwrites that file with
    /// an empty slot's: the outcome goes to [`Keeper::emptied`].
    Empty { slot: u32, of: Owner },
    /// Erase `slot` (a forget); its outcome changes nothing the keeper knows.
    Erase { slot: u32 },
    /// The server restarted since loopd last used it: it may serve another model or
    /// chat template, so its tool support is checked again.
    CheckServer,
    /// The ledger of saved files changed: write it (`Keeper::ledger`, `Ledger::store`)
    /// before the actions after this one, so a crash never leaves it naming a file
    /// that is about to be emptied.
    StoreLedger,
}

/// The actions one event decided on, to be performed in order.
pub(crate) type SlotActions = Vec<SlotAction>;

/// What loopd knows of the main slot. It lives on the worker thread, as long as loopd.
/// What the configuration says (the slots, `llama.slot_save_idle_s`,
/// `llama.slot_keep_days`, the server's address) is read from the `Config` each call
/// is given, never kept here, so a reload needs no copying.
pub(crate) struct Keeper {
    /// False once the server said it has no save path (until a reload or a panicked job).
    supported: bool,
    /// Whose epoch the main slot holds, as far as loopd put it there.
    owner: Option<Owner>,
    /// The main slot changed since it was last saved or restored.
    dirty: bool,
    /// The files written, and for which epoch: only those are ever restored.
    saved: Ledger,
    /// A restore before the turn, until the next completion says whether it took.
    restored: Option<Restore>,
}

/// A restore, as the next completion judges it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Restore {
    of: Owner,
    /// The tokens the slot should hold: what the server loaded, or, when it loaded none
    /// or refused the file, what the ledger says was saved.
    tokens: u64,
    /// What the server did instead of loading them, for the warning; `None` when it
    /// loaded them.
    instead: Option<String>,
}

/// How a turn on the main slot ended, as far as the slot is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TurnEnd {
    /// The turn ran (answered or failed part way); `cache_n` is its first completion's,
    /// when one came back.
    Ran { cache_n: Option<u64> },
    /// The prompt did not fit the context: what the slot holds now is no one's.
    Full,
}

impl Keeper {
    /// A keeper that knows nothing of the slot yet, with the files `saved` names.
    pub(crate) fn new(saved: Ledger) -> Keeper {
        Keeper {
            supported: true,
            owner: None,
            dirty: false,
            saved,
            restored: None,
        }
    }

    /// A reloaded config: a new server (or new slots) starts from knowing nothing of
    /// the slot. The ledger stays: it names what was written, and a restore of a file
    /// the new server lacks is a 400, which costs only the prompt read again.
    pub(crate) fn reload(&mut self, old: &Config, new: &Config) {
        if old.llama.url != new.llama.url || old.slots != new.slots {
            self.unknown();
        } else {
            // The owner may have restarted the server with a save path.
            self.supported = true;
        }
    }

    /// What the main slot holds is unknown (a job panicked, the server changed): the
    /// next turn neither trusts it nor restores into it on the keeper's word alone.
    pub(crate) fn unknown(&mut self) {
        self.supported = true;
        self.owner = None;
        self.dirty = false;
        self.restored = None;
    }

    /// The files written, for the engine to store when asked (`SlotAction::StoreLedger`).
    pub(crate) fn ledger(&self) -> &Ledger {
        &self.saved
    }

    /// `actions` led by a `StoreLedger` when the ledger changed.
    fn storing(&mut self, actions: SlotActions) -> SlotActions {
        if !self.saved.take_changed() {
            return actions;
        }
        let mut all = vec![SlotAction::StoreLedger];
        all.extend(actions);
        all
    }

    fn on(&self, cfg: &Config) -> bool {
        idle(cfg).is_some() && self.supported
    }

    /// How long the worker may wait for a job before saving the main slot; `None` when
    /// there is nothing to save.
    pub(crate) fn idle_timeout(&self, cfg: &Config) -> Option<Duration> {
        if self.on(cfg) && self.dirty && self.owner.is_some() {
            idle(cfg)
        } else {
            None
        }
    }

    /// Before a turn of `session` in `epoch` on the main slot: ask the server whether its
    /// slot still holds anything of loopd's (`Keeper::slots` decides on the answer).
    pub(crate) fn before_turn(
        &mut self,
        cfg: &Config,
        session: &SessionId,
        epoch: u64,
    ) -> SlotActions {
        if !self.on(cfg) {
            return Vec::new();
        }
        vec![SlotAction::AskSlots(Owner::new(session, epoch))]
    }

    /// The server's slots, asked before a turn of `want`: restore its file when the slot
    /// does not hold its prompt, and have the server checked again when it looks
    /// restarted since loopd last used it (its main slot has run no task while loopd
    /// thought it held a prompt).
    pub(crate) fn slots(
        &mut self,
        cfg: &Config,
        want: Owner,
        list: Result<Vec<SlotInfo>, SlotListError>,
    ) -> SlotActions {
        let main = cfg.slots.main;
        let fresh = match list {
            Ok(list) => !list.iter().any(|s| s.id == u64::from(main) && s.used),
            // The turn will find out for itself; nothing to restore into.
            Err(_) => return Vec::new(),
        };
        let restarted = fresh && self.owner.is_some();
        let holds = self.owner.as_ref() == Some(&want);
        let written = self.saved.get(&want.session).map(|s| s.epoch) == Some(want.epoch);
        let restore = if fresh {
            // A restarted server: its slot is empty, whatever loopd last put there. Only
            // a file the ledger says was written for this epoch is asked for.
            written
        } else if holds {
            false
        } else {
            // Another session's turns, or loopd restarted: restore only what this loopd
            // saved, never a file that may be older than what the slot holds.
            self.owner.is_some() && written
        };
        let mut actions = Vec::new();
        if restore {
            actions.push(SlotAction::Restore {
                slot: main,
                of: want,
            });
        }
        if restarted {
            actions.push(SlotAction::CheckServer);
        }
        actions
    }

    /// The outcome of restoring `of`'s file, which took `took`.
    pub(crate) fn restored(
        &mut self,
        cfg: &Config,
        of: Owner,
        outcome: Result<u64, SlotError>,
        took: Duration,
    ) {
        let main = cfg.slots.main;
        let file = of.file();
        match outcome {
            // An empty slot's file (the epoch's file emptied, or replaced): nothing loaded.
            Ok(0) => self.not_loaded(of, format!("the server loaded 0 tokens from {file}")),
            Ok(n) => {
                plumbing::info!(
                    "session {}: restored slot {main} from {file}: {n} tokens in {} ms",
                    of.session,
                    took.as_millis()
                );
                self.owner = Some(of.clone());
                self.dirty = false;
                self.restored = Some(Restore {
                    of,
                    tokens: n,
                    instead: None,
                });
            }
            Err(SlotError::NoSavePath) => {
                self.server_says_no_save_path(cfg);
            }
            // llama.cpp answers 400 to a file it cannot load: not there, damaged, or
            // written by another model (docs/llama-api.md, the slot save and restore
            // section).
            Err(SlotError::Refused { status: 400, .. }) => self.not_loaded(
                of,
                format!(
                    "the server refused {file} with HTTP 400 (a file missing, damaged or written by another model)"
                ),
            ),
            Err(e) => plumbing::warn!(
                "session {}: restoring slot {main} from {file}: {e}; the turn reads its whole prompt",
                of.session
            ),
        }
    }

    /// A restore of `of`'s file loaded nothing (`instead` says what the server did): the
    /// next completion is judged against the tokens the ledger says were saved, so that a
    /// restore that lost them is told like one whose tokens were not reused.
    fn not_loaded(&mut self, of: Owner, instead: String) {
        self.restored = self
            .saved
            .get(&of.session)
            .filter(|s| s.epoch == of.epoch)
            .map(|s| Restore {
                of,
                tokens: s.tokens,
                instead: Some(instead),
            });
    }

    /// After a turn of `session`'s `epoch` on the main slot: whose prompt it now holds.
    /// Returns whether a restore before the turn took, when there was one and a
    /// completion to tell by; one that did not is a warning in the log.
    pub(crate) fn after_turn(
        &mut self,
        cfg: &Config,
        session: &SessionId,
        epoch: u64,
        end: TurnEnd,
    ) -> Option<bool> {
        let verdict = match (self.restored.take(), end) {
            (
                Some(Restore {
                    of,
                    tokens,
                    instead,
                }),
                TurnEnd::Ran {
                    cache_n: Some(cache_n),
                },
            ) => {
                let took = took(tokens, cache_n);
                if !took {
                    let instead = instead.map(|i| format!("{i}; ")).unwrap_or_default();
                    plumbing::warn!(
                        "session {}: the restore of slot {} (epoch {}, {tokens} tokens) did not take: {instead}the next turn reused only {cache_n} tokens",
                        of.session,
                        cfg.slots.main,
                        of.epoch,
                    );
                }
                Some(took)
            }
            _ => None,
        };
        match end {
            TurnEnd::Full => {
                self.owner = None;
                self.dirty = false;
            }
            TurnEnd::Ran { .. } => self.main_used(session, epoch),
        }
        verdict
    }

    /// The main slot was used for `session`'s `epoch` (a turn, or a summary call whose
    /// prefix is that epoch's prompt).
    pub(crate) fn main_used(&mut self, session: &SessionId, epoch: u64) {
        self.owner = Some(Owner::new(session, epoch));
        self.dirty = true;
    }

    /// `session`'s `epoch` ended (compaction): its file is emptied, and the main slot,
    /// which holds that epoch's prompt and the summary request, is nobody's.
    pub(crate) fn epoch_ended(
        &mut self,
        cfg: &Config,
        session: &SessionId,
        epoch: u64,
    ) -> SlotActions {
        let ended = Owner::new(session, epoch);
        if self.owner.as_ref() == Some(&ended) {
            self.owner = None;
            self.dirty = false;
        }
        let written = self.saved.get(session).is_some_and(|s| s.epoch == epoch);
        self.saved.remove(session);
        if !self.on(cfg) || !written {
            return self.storing(Vec::new());
        }
        self.storing(vec![SlotAction::Empty {
            slot: cfg.slots.background,
            of: ended,
        }])
    }

    /// A forget changed the prompt of `session`'s `epochs`: the main slot is erased
    /// (whoever it held, it may hold the text) and so is the background slot (tool
    /// summaries ran there), and every saved file of those epochs is emptied, whether or
    /// not the ledger still names it.
    pub(crate) fn forgotten(
        &mut self,
        cfg: &Config,
        session: &SessionId,
        epochs: &[u64],
    ) -> SlotActions {
        self.owner = None;
        self.dirty = false;
        self.restored = None;
        if self
            .saved
            .get(session)
            .is_some_and(|s| epochs.contains(&s.epoch))
        {
            self.saved.remove(session);
        }
        let mut actions = vec![
            SlotAction::Erase {
                slot: cfg.slots.main,
            },
            SlotAction::Erase {
                slot: cfg.slots.background,
            },
        ];
        if self.on(cfg) {
            actions.extend(epochs.iter().map(|&epoch| SlotAction::Empty {
                slot: cfg.slots.background,
                of: Owner::new(session, epoch),
            }));
        }
        self.storing(actions)
    }

    /// The outcome of emptying `of`'s file.
    pub(crate) fn emptied(&mut self, cfg: &Config, of: Owner, outcome: Result<(), SlotError>) {
        let file = of.file();
        match outcome {
            Ok(()) => plumbing::info!(
                "session {}: epoch {} ended; emptied {file}",
                of.session,
                of.epoch
            ),
            Err(SlotError::NoSavePath) => {
                self.server_says_no_save_path(cfg);
            }
            Err(e) => plumbing::warn!("session {}: emptying {file}: {e}", of.session),
        }
    }

    /// The worker was idle for `llama.slot_save_idle_s`: save the main slot, when it
    /// changed since it was last saved or restored.
    pub(crate) fn save(&mut self, cfg: &Config) -> SlotActions {
        let Some(owner) = self.owner.clone().filter(|_| self.on(cfg) && self.dirty) else {
            return Vec::new();
        };
        // Whatever happens, this change is dealt with: a failure is not retried every
        // idle period, the next turn makes the slot dirty again.
        self.dirty = false;
        vec![SlotAction::Save {
            slot: cfg.slots.main,
            of: owner,
        }]
    }

    /// The outcome of saving the main slot to `of`'s file, which took `took`, at `now`
    /// (seconds since the Unix epoch). A save is when files idle for
    /// `llama.slot_keep_days` are emptied.
    pub(crate) fn saved(
        &mut self,
        cfg: &Config,
        of: Owner,
        outcome: Result<u64, SlotError>,
        took: Duration,
        now: u64,
    ) -> SlotActions {
        let n = match outcome {
            Ok(n) => n,
            Err(SlotError::NoSavePath) => {
                self.server_says_no_save_path(cfg);
                return Vec::new();
            }
            Err(e) => {
                plumbing::warn!(
                    "session {}: saving slot {}: {e}",
                    of.session,
                    cfg.slots.main
                );
                return Vec::new();
            }
        };
        plumbing::info!(
            "session {}: saved slot {} to {}: {n} tokens in {} ms",
            of.session,
            cfg.slots.main,
            of.file(),
            took.as_millis()
        );
        self.saved.insert(
            of.session.clone(),
            Saved {
                epoch: of.epoch,
                tokens: n,
                at: now,
            },
        );
        let actions = self.expire(cfg, now);
        let (files, tokens) = self.saved.totals();
        plumbing::info!("slot saves kept: {files} files, {tokens} tokens in all");
        self.storing(actions)
    }

    /// The server answered that it was started without `--slot-save-path`: said once in
    /// the log, then nothing is saved, restored or emptied until a reload. True when it
    /// was said now.
    pub(crate) fn server_says_no_save_path(&mut self, cfg: &Config) -> bool {
        if !self.supported {
            return false;
        }
        self.supported = false;
        plumbing::notice!(
            "llama.cpp at {} was started without --slot-save-path: the main slot is not saved, so a restart of llama.cpp makes the next turn read its whole prompt (llama.slot_save_idle_s = {})",
            cfg.llama.url.trim_end_matches('/'),
            cfg.llama.slot_save_idle_s
        );
        true
    }

    /// Empties the file of every session untouched for `llama.slot_keep_days`: an
    /// abandoned session would otherwise keep its slot file (up to the whole context's
    /// KV cache) on the server's disk for ever. 0 keeps files for ever.
    fn expire(&mut self, cfg: &Config, now: u64) -> SlotActions {
        let days = cfg.llama.slot_keep_days;
        if days == 0 {
            return Vec::new();
        }
        let keep = days.saturating_mul(DAY_S);
        let mut actions = Vec::new();
        for (session, saved) in self.saved.idle_since(now.saturating_sub(keep)) {
            plumbing::info!(
                "session {session}: its slot file was last saved over {days} days ago; emptying it"
            );
            self.saved.remove(&session);
            actions.push(SlotAction::Empty {
                slot: cfg.slots.background,
                of: Owner {
                    session,
                    epoch: saved.epoch,
                },
            });
        }
        actions
    }
}

fn idle(cfg: &Config) -> Option<Duration> {
    (cfg.llama.slot_save_idle_s > 0).then(|| Duration::from_secs(cfg.llama.slot_save_idle_s))
}

#[cfg(test)]
mod tests;
