//! The reporter's thread (docs/honcho.md): per session a slot with its round state and
//! backoff; each turn of its loop watches the token file, rescans the sessions when it is
//! time, runs the rounds that are due and waits for a poke, a message or the next thing
//! due. `Reporter` (lib.rs) is the handle that starts and stops it.

use crate::sync::{Ctx, Outcome, RoundFailure, SessionSync};
use crate::{HonchoStatus, StatusHandle, TOKEN_POLL};
use crate::{Msg, Options, Shared};
use plumbing::backoff::Backoff;
use proto::SessionId;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Per session: the round state, when it may next be tried, and whether it is failing.
struct Slot {
    sync: SessionSync,
    due: bool,
    next_try: Instant,
    backoff: Backoff,
    /// Set while the session's reports are held back.
    held: Option<HeldBack>,
}

/// A session whose reports are held back.
struct HeldBack {
    since: Instant,
    failure: RoundFailure,
    /// Messages waiting, as last counted.
    backlog: u64,
}

/// The wait before the next try: the backoff's, or longer when Honcho asked for longer
/// with `Retry-After` (but never past `max`, so reports resume at most that long after
/// Honcho is back, as after any outage).
pub fn retry_wait(backoff: &mut Backoff, asked: Option<Duration>, max: Duration) -> Duration {
    let wait = backoff.next_wait();
    asked.map_or(wait, |a| wait.max(a.min(max)))
}

/// The token file's size and time, to see that it changed; `None` when there is none or it
/// cannot be looked at (the request says why).
fn token_stamp(path: &Path) -> Option<(u64, std::time::SystemTime)> {
    if path.as_os_str().is_empty() {
        return None;
    }
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()?))
}

/// A session whose post was answered late is tried at once: it was waiting for that.
fn landed(slots: &mut BTreeMap<String, Slot>, name: &str) {
    if let Some(slot) = slots.get_mut(name) {
        slot.due = true;
        slot.next_try = Instant::now();
        slot.backoff.reset();
    }
}

/// Every held-back session tried at once, its backoff started over.
fn retry_all(slots: &mut BTreeMap<String, Slot>) {
    for slot in slots.values_mut().filter(|s| s.held.is_some()) {
        slot.due = true;
        slot.next_try = Instant::now();
        slot.backoff.reset();
    }
}

/// The reporter thread: each turn of the loop looks at the token file, rescans the
/// sessions when it is time, runs a round for each session that is due, then waits for a
/// poke, a message or the next thing due.
pub(crate) fn run(ctx: Ctx, opts: Options, rx: Receiver<Msg>, shared: &Shared) {
    let mut thread = Thread {
        ctx: &ctx,
        opts: &opts,
        shared,
        slots: BTreeMap::new(),
        next_rescan: Instant::now(),
        stamp: token_stamp(&ctx.cfg.honcho.token_file),
    };
    loop {
        // The queue cannot say "disconnected" while the thread's own `Ctx::wake` holds a
        // sender, so a stop whose message did not fit is seen here, at the latest after
        // the next wait.
        if ctx.stopping.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        thread.watch_token();
        thread.rescan_when_due();
        reload(&mut thread.slots, ctx.gate.take_reloads(), &opts);
        if thread.run_due().is_break() || thread.wait(&rx).is_break() {
            return;
        }
    }
}

/// What the reporter thread keeps between turns of its loop.
struct Thread<'a> {
    ctx: &'a Ctx,
    opts: &'a Options,
    shared: &'a Shared,
    slots: BTreeMap<String, Slot>,
    next_rescan: Instant,
    /// The token file's size and time when last looked at ([`token_stamp`]).
    stamp: Option<(u64, std::time::SystemTime)>,
}

impl Thread<'_> {
    fn token(&self) -> &Path {
        &self.ctx.cfg.honcho.token_file
    }

    /// A token file that changed ends every backoff: the owner may have fixed it.
    fn watch_token(&mut self) {
        let now_stamp = token_stamp(self.token());
        if now_stamp == self.stamp {
            return;
        }
        self.stamp = now_stamp;
        if self.slots.values().any(|s| s.held.is_some()) {
            plumbing::notice!(
                "honcho: the token file changed; held-back reports are tried again now"
            );
            retry_all(&mut self.slots);
        }
    }

    /// Every session on disk and every one known is due at each `opts.rescan`, so turns
    /// whose poke was dropped, or made while no reporter ran, still go out.
    fn rescan_when_due(&mut self) {
        let now = Instant::now();
        if now < self.next_rescan {
            return;
        }
        for name in session_names(&self.ctx.cfg.state_dir) {
            mark_due(&mut self.slots, &name, self.opts);
        }
        for slot in self.slots.values_mut() {
            slot.due = true;
        }
        self.next_rescan = now + self.opts.rescan;
    }

    /// A round for each session that is due and whose backoff has passed; `Break` when
    /// the reporter is stopping.
    fn run_due(&mut self) -> ControlFlow<()> {
        let ctx = self.ctx;
        let names: Vec<String> = self.slots.keys().cloned().collect();
        for name in names {
            match self.slots.get(&name) {
                Some(slot) if slot.due && Instant::now() >= slot.next_try => {}
                _ => continue,
            }
            // Held still while a forget rewrites the logs; a session it moved is read
            // from disk again before its round.
            let Some((_round, reloads)) = ctx.gate.enter(&ctx.stopping) else {
                return ControlFlow::Break(());
            };
            reload(&mut self.slots, reloads, self.opts);
            let Some(slot) = self.slots.get_mut(&name) else {
                continue;
            };
            match slot.sync.run(ctx) {
                Outcome::Idle { posted } => self.went_out(&name, posted),
                Outcome::Retry(failure) => self.held_back(&name, failure),
                Outcome::Settle(wait) => slot.next_try = Instant::now() + wait,
                Outcome::Paused => {}
                Outcome::Exit => return ControlFlow::Break(()),
            }
        }
        ControlFlow::Continue(())
    }

    /// A round reported everything finished: the session's backoff ends, and a session
    /// that was held back says so once.
    fn went_out(&mut self, name: &str, posted: usize) {
        let Some(slot) = self.slots.get_mut(name) else {
            return;
        };
        slot.due = false;
        slot.backoff.reset();
        if let Some(held) = slot.held.take() {
            plumbing::notice!(
                "honcho: session {name}: reports go out again after {} s held back",
                held.since.elapsed().as_secs()
            );
        }
        let duplicates = self.ctx.duplicates.get();
        publish(&self.slots, &self.shared.status, duplicates);
        self.shared.update(|h| {
            h.posted += posted as u64;
            h.idle_rounds += 1;
            h.last_error = None;
            h.duplicates = duplicates;
        });
    }

    /// A round failed: the session waits out its backoff (or Honcho's `Retry-After`),
    /// warned about when it starts failing or fails differently, not at every retry.
    fn held_back(&mut self, name: &str, failure: RoundFailure) {
        let Some(slot) = self.slots.get_mut(name) else {
            return;
        };
        let wait = retry_wait(
            &mut slot.backoff,
            failure.retry_after,
            self.opts.max_backoff,
        );
        slot.next_try = Instant::now() + wait;
        let backlog = slot.sync.waiting(self.ctx);
        let changed = slot
            .held
            .as_ref()
            .is_none_or(|h| h.failure.kind != failure.kind);
        if changed {
            plumbing::warn!(
                "honcho: session {name}: reports held back, nothing is dropped ({} waiting); retrying with backoff, next try in {:.1} s; not logged again until this changes: {}",
                backlog.map_or("some messages".into(), |n| format!("{n} messages")),
                wait.as_secs_f32(),
                failure.message
            );
        }
        let since = slot.held.as_ref().map_or_else(Instant::now, |h| h.since);
        slot.held = Some(HeldBack {
            since,
            backlog: backlog
                .or(slot.held.as_ref().map(|h| h.backlog))
                .unwrap_or(0),
            failure: failure.clone(),
        });
        publish(&self.slots, &self.shared.status, self.ctx.duplicates.get());
        self.shared.update(|h| {
            h.failures += 1;
            h.last_error = Some(failure.message);
        });
    }

    /// Waits for a poke or a message, or until the next thing due: a session's try, the
    /// rescan, or (while reports are held back) a look at the token file. `Break` on a
    /// stop.
    fn wait(&mut self, rx: &Receiver<Msg>) -> ControlFlow<()> {
        let mut wake = self
            .slots
            .values()
            .filter(|s| s.due)
            .map(|s| s.next_try)
            .fold(self.next_rescan, Instant::min);
        if !self.token().as_os_str().is_empty() && self.slots.values().any(|s| s.held.is_some()) {
            wake = wake.min(Instant::now() + TOKEN_POLL);
        }
        let wait = wake.saturating_duration_since(Instant::now());
        match rx.recv_timeout(wait) {
            Ok(Msg::Poke(name)) => {
                mark_due(&mut self.slots, &name, self.opts);
                // Pokes that piled up during the round are taken together.
                while let Ok(m) = rx.try_recv() {
                    match m {
                        Msg::Poke(name) => mark_due(&mut self.slots, &name, self.opts),
                        Msg::Landed(name) => landed(&mut self.slots, &name),
                        Msg::RetryNow => retry_all(&mut self.slots),
                        Msg::Stop => return ControlFlow::Break(()),
                    }
                }
            }
            Ok(Msg::Landed(name)) => landed(&mut self.slots, &name),
            Ok(Msg::RetryNow) => retry_all(&mut self.slots),
            Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => return ControlFlow::Break(()),
            Err(RecvTimeoutError::Timeout) => {}
        }
        ControlFlow::Continue(())
    }
}

/// Tells `/status` what the held-back sessions add up to.
fn publish(slots: &BTreeMap<String, Slot>, status: &StatusHandle, duplicates: u64) {
    let held = || slots.values().filter_map(|s| s.held.as_ref());
    status.set(HonchoStatus {
        duplicates,
        backlog: held().map(|h| h.backlog).sum(),
        last_error: held()
            .max_by_key(|h| h.since)
            .map(|h| h.failure.message.clone()),
        retrying_since: held().map(|h| h.since).min(),
    });
}

/// Sessions whose logs a forget rewrote: what the thread held of them is dropped and
/// they are tried at once (a backoff they were in was waiting for that forget).
fn reload(slots: &mut BTreeMap<String, Slot>, names: BTreeSet<String>, opts: &Options) {
    for name in names {
        mark_due(slots, &name, opts);
        if let Some(slot) = slots.get_mut(&name) {
            slot.sync.reload();
            slot.next_try = Instant::now();
            slot.backoff.reset();
        }
    }
}

/// Marks a session for a round, keeping any backoff it is in.
fn mark_due(slots: &mut BTreeMap<String, Slot>, name: &str, opts: &Options) {
    if SessionId::parse(name).is_err() {
        plumbing::warn!("honcho: ignoring a poke for {name:?}, which is not a session id");
        return;
    }
    slots
        .entry(name.to_string())
        .or_insert_with(|| Slot {
            sync: SessionSync::new(name),
            due: true,
            next_try: Instant::now(),
            backoff: Backoff::new(opts.min_backoff, opts.max_backoff),
            held: None,
        })
        .due = true;
}

/// The sessions under `<state_dir>/sessions`. One that cannot be listed now is looked at
/// again at the next rescan.
fn session_names(state_dir: &Path) -> Vec<String> {
    match sessions::epochs::sessions(&state_dir.join("sessions")) {
        Ok(ids) => ids.iter().map(|id| id.as_str().to_string()).collect(),
        Err(e) => {
            plumbing::warn!("honcho: {e}; trying again at the next rescan");
            Vec::new()
        }
    }
}
