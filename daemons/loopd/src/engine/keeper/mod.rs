//! Keeping the main slot's prompt cache across a llama.cpp restart (docs/turn.md): with
//! `llama.slot_save_idle_s` above 0 and a server started with `--slot-save-path`, the
//! main slot is saved after that many idle seconds when it changed since the last save,
//! and restored before a turn when the server's slot has lost it: the server restarted
//! (its slot has run no task since), or another session's turns took the slot.
//!
//! Files are named by session and epoch (`slot_file`), so a restore only ever loads a
//! prefix of the same epoch's prompt. llama.cpp has no call that deletes a file, so an
//! ended epoch's file is overwritten with an empty slot's (40 bytes): the background slot
//! is erased and saved under that name. A server without a save path is said once in the
//! log and the keeper goes quiet; it is never an error for the owner.

pub mod ledger;

use crate::prompt::TurnCtx;
use crate::turn::{TurnDone, TurnError};
use ledger::{Ledger, Saved};
use llama::slots::SlotError;
use proto::config::Config;
use proto::SessionId;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A restore "took" when the next completion reused at least this fraction of the
/// restored tokens. The last prompt token is always evaluated again and a re-tokenised
/// answer may differ by a few tokens, so a restore that worked is close to 1; one that
/// did not (a file from another model, a server that dropped it) is near 0.
pub const TOOK_FRACTION: f64 = 0.5;

/// The file the main slot of `session` in `epoch` is saved to. Session ids are
/// `[a-z0-9][a-z0-9-]*`, which llama.cpp's file-name check accepts.
pub fn slot_file(session: &SessionId, epoch: u64) -> String {
    format!("{session}-epoch-{epoch:06}.bin")
}

/// Whether a restore took, from the first completion after it.
pub fn took(restored: u64, cache_n: u64) -> bool {
    cache_n as f64 >= TOOK_FRACTION * restored as f64
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Owner {
    session: SessionId,
    epoch: u64,
}

/// What loopd knows of the main slot. It lives on the worker thread, as long as loopd.
/// What the configuration says (the slots, `llama.slot_save_idle_s`,
/// `llama.slot_keep_days`) is read from the call's `TurnCtx` each time, never kept here,
/// so a reload needs no copying.
pub struct Keeper {
    /// False once the server said it has no save path (until a reload).
    supported: bool,
    /// Whose epoch the main slot holds, as far as loopd put it there.
    owner: Option<Owner>,
    /// The main slot changed since it was last saved or restored.
    dirty: bool,
    /// The files written, and for which epoch: only those are ever restored.
    saved: Ledger,
    /// Tokens a restore brought back, until the next completion says whether it took.
    restored: Option<(Owner, u64)>,
}

impl Keeper {
    pub fn new(cfg: &Config) -> Keeper {
        Keeper {
            supported: true,
            owner: None,
            dirty: false,
            saved: Ledger::open(&cfg.state_dir),
            restored: None,
        }
    }

    /// A reloaded config: a new server (or new slots) starts from knowing nothing.
    pub fn reload(&mut self, old: &Config, new: &Config) {
        if old.llama.url != new.llama.url || old.slots != new.slots {
            *self = Keeper::new(new);
        } else {
            // The owner may have restarted the server with a save path.
            self.supported = true;
        }
    }

    fn on(&self, cfg: &Config) -> bool {
        idle(cfg).is_some() && self.supported
    }

    /// How long the worker may wait for a job before saving the main slot; `None` when
    /// there is nothing to save.
    pub fn idle_timeout(&self, cfg: &Config) -> Option<Duration> {
        if self.on(cfg) && self.dirty && self.owner.is_some() {
            idle(cfg)
        } else {
            None
        }
    }

    /// Before a turn of `session` in `epoch` on the main slot: restore its file when the
    /// slot does not hold its prompt. True when the server looks restarted since loopd
    /// last used it (its main slot has run no task while loopd thought it held a prompt).
    pub fn before_turn(&mut self, ctx: &TurnCtx<'_>, session: &SessionId, epoch: u64) -> bool {
        if !self.on(ctx.cfg) {
            return false;
        }
        let want = Owner {
            session: session.clone(),
            epoch,
        };
        let fresh = match ctx.client.slot_list() {
            Ok(list) => !list
                .iter()
                .any(|s| s.id == u64::from(ctx.cfg.slots.main) && s.used),
            // The turn will find out for itself; nothing to restore into.
            Err(_) => return false,
        };
        let restarted = fresh && self.owner.is_some();
        let holds = self.owner.as_ref() == Some(&want);
        let known = self.saved.get(session).map(|s| s.epoch);
        let restore = if fresh {
            // A restarted server: its slot is empty, whatever loopd last put there. Only
            // a file the ledger says was written for this epoch is asked for.
            known == Some(epoch)
        } else if holds {
            false
        } else {
            // Another session's turns, or loopd restarted: restore only what this loopd
            // saved, never a file that may be older than what the slot holds.
            self.owner.is_some() && known == Some(epoch)
        };
        if restore {
            self.restore(ctx, want);
        }
        restarted
    }

    fn restore(&mut self, ctx: &TurnCtx<'_>, want: Owner) {
        let file = slot_file(&want.session, want.epoch);
        let main = ctx.cfg.slots.main;
        let started = Instant::now();
        match ctx.client.slot_restore(main, &file) {
            Ok(0) => {}
            Ok(n) => {
                plumbing::info!(
                    "session {}: restored slot {main} from {file}: {n} tokens in {} ms",
                    want.session,
                    started.elapsed().as_millis()
                );
                self.owner = Some(want.clone());
                self.dirty = false;
                self.restored = Some((want, n));
            }
            Err(SlotError::NoSavePath) => self.no_save_path(ctx),
            // A file that is not there (never saved, or overwritten empty) is a 400.
            Err(SlotError::Refused { status: 400, .. }) => {}
            Err(e) => plumbing::warn!(
                "session {}: restoring slot {main} from {file}: {e}; the turn reads its whole prompt",
                want.session
            ),
        }
    }

    /// After a turn on the main slot: whose prompt it now holds, and whether a restore
    /// before it took.
    pub fn after_turn(
        &mut self,
        cfg: &Config,
        session: &SessionId,
        epoch: u64,
        outcome: &Result<TurnDone, TurnError>,
    ) {
        let first = outcome.as_ref().ok().and_then(|d| d.first);
        if let (Some((owner, n)), Some(usage)) = (self.restored.take(), first) {
            if !took(n, usage.cache_n) {
                plumbing::warn!(
                    "session {}: the restore of slot {} (epoch {}, {n} tokens) did not take: the next turn reused only {} tokens",
                    owner.session,
                    cfg.slots.main,
                    owner.epoch,
                    usage.cache_n
                );
            }
        }
        if matches!(outcome, Err(TurnError::SessionFull(_))) {
            // The prompt did not fit: what the slot holds now is no one's.
            self.owner = None;
            self.dirty = false;
        } else {
            self.main_used(session, epoch);
        }
    }

    /// The main slot was used for `session`'s `epoch` (a turn, or a summary call whose
    /// prefix is that epoch's prompt).
    pub fn main_used(&mut self, session: &SessionId, epoch: u64) {
        self.owner = Some(Owner {
            session: session.clone(),
            epoch,
        });
        self.dirty = true;
    }

    /// `session`'s `epoch` ended (compaction): its file is emptied, and the main slot,
    /// which holds that epoch's prompt and the summary request, is nobody's.
    pub fn epoch_ended(&mut self, ctx: &TurnCtx<'_>, session: &SessionId, epoch: u64) {
        if self
            .owner
            .as_ref()
            .is_some_and(|o| &o.session == session && o.epoch == epoch)
        {
            self.owner = None;
            self.dirty = false;
        }
        let written = self.saved.get(session).is_some_and(|s| s.epoch == epoch);
        self.saved.remove(session);
        if !self.on(ctx.cfg) || !written {
            return;
        }
        self.empty(ctx, session, epoch);
    }

    /// A forget changed the prompt of `session`'s `epochs`: the main slot is erased
    /// (whoever it held, it may hold the text) and so is the background slot (tool
    /// summaries ran there), and every saved file of those epochs is emptied, whether or
    /// not the ledger still names it. Returns what was done, in words.
    pub fn forgotten(&mut self, ctx: &TurnCtx<'_>, session: &SessionId, epochs: &[u64]) -> String {
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
        let mut said = Vec::new();
        for slot in [ctx.cfg.slots.main, ctx.cfg.slots.background] {
            match ctx.client.slot_erase(slot) {
                Ok(()) => said.push(format!("slot {slot} erased")),
                Err(e) => {
                    plumbing::warn!("session {session}: forget: erasing slot {slot}: {e}");
                    said.push(format!("slot {slot} not erased ({e})"));
                }
            }
        }
        if self.on(ctx.cfg) {
            for &epoch in epochs {
                self.empty(ctx, session, epoch);
            }
            said.push(format!("saved slot files of epochs {epochs:?} emptied"));
        }
        said.join("; ")
    }

    /// Overwrites `session`'s file for `epoch` with an empty slot's (llama.cpp has no
    /// call that deletes one): the background slot is erased and saved under that name.
    fn empty(&mut self, ctx: &TurnCtx<'_>, session: &SessionId, epoch: u64) {
        let file = slot_file(session, epoch);
        let background = ctx.cfg.slots.background;
        let emptied = ctx
            .client
            .slot_erase(background)
            .and_then(|()| ctx.client.slot_save(background, &file));
        match emptied {
            Ok(_) => plumbing::info!("session {session}: epoch {epoch} ended; emptied {file}"),
            Err(SlotError::NoSavePath) => self.no_save_path(ctx),
            Err(e) => plumbing::warn!("session {session}: emptying {file}: {e}"),
        }
    }

    /// The worker was idle for `llama.slot_save_idle_s`: save the main slot. What was
    /// saved, if anything.
    pub fn save(&mut self, ctx: &TurnCtx<'_>) -> Option<crate::status::SlotSave> {
        let owner = self
            .owner
            .clone()
            .filter(|_| self.on(ctx.cfg) && self.dirty)?;
        // Whatever happens, this change is dealt with: a failure is not retried every
        // idle period, the next turn makes the slot dirty again.
        self.dirty = false;
        let file = slot_file(&owner.session, owner.epoch);
        let main = ctx.cfg.slots.main;
        let started = Instant::now();
        match ctx.client.slot_save(main, &file) {
            Ok(n) => {
                plumbing::info!(
                    "session {}: saved slot {main} to {file}: {n} tokens in {} ms",
                    owner.session,
                    started.elapsed().as_millis()
                );
                self.saved.insert(
                    owner.session.clone(),
                    Saved {
                        epoch: owner.epoch,
                        tokens: n,
                        at: now_secs(),
                    },
                );
                self.empty_idle(ctx);
                let (files, tokens) = self.saved.totals();
                plumbing::info!("slot saves kept: {files} files, {tokens} tokens in all");
                Some(crate::status::SlotSave {
                    session: owner.session.to_string(),
                    epoch: owner.epoch,
                    tokens: n,
                })
            }
            Err(SlotError::NoSavePath) => {
                self.no_save_path(ctx);
                None
            }
            Err(e) => {
                plumbing::warn!("session {}: saving slot {main}: {e}", owner.session);
                None
            }
        }
    }

    fn no_save_path(&mut self, ctx: &TurnCtx<'_>) {
        self.supported = false;
        plumbing::notice!(
            "llama.cpp at {} was started without --slot-save-path: the main slot is not saved, so a restart of llama.cpp makes the next turn read its whole prompt (llama.slot_save_idle_s = {})",
            ctx.client.base_url(),
            ctx.cfg.llama.slot_save_idle_s
        );
    }
}

impl Keeper {
    /// Empties the file of every session untouched for `llama.slot_keep_days`: an
    /// abandoned session would otherwise keep its slot file (up to the whole context's
    /// KV cache) on the server's disk for ever.
    fn empty_idle(&mut self, ctx: &TurnCtx<'_>) {
        // `llama.slot_keep_days` in seconds; 0 keeps files for ever.
        let days = ctx.cfg.llama.slot_keep_days;
        if days == 0 {
            return;
        }
        let keep = days.saturating_mul(86_400);
        for (session, saved) in self.saved.idle_since(now_secs().saturating_sub(keep)) {
            plumbing::info!(
                "session {session}: its slot file was last saved over {} days ago; emptying it",
                keep / 86_400
            );
            self.saved.remove(&session);
            self.empty(ctx, &session, saved.epoch);
        }
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn idle(cfg: &Config) -> Option<Duration> {
    (cfg.llama.slot_save_idle_s > 0).then(|| Duration::from_secs(cfg.llama.slot_save_idle_s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_files_are_named_by_session_and_epoch() {
        let main = SessionId::parse("main").unwrap();
        assert_eq!(slot_file(&main, 3), "main-epoch-000003.bin");
    }

    #[test]
    fn a_restore_took_when_most_of_it_was_reused() {
        assert!(took(322, 321));
        assert!(took(322, 161));
        assert!(!took(322, 160));
        assert!(!took(322, 0));
        assert!(took(0, 0));
    }
}
