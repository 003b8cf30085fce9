//! Reporting finished turns to Honcho (docs/honcho.md). When `honcho.url` is set, each finished
//! owner turn's message and final answer are posted to Honcho's v3 messages API; heartbeat
//! turns, the carry and tool traffic never are.
//!
//! **Source of truth.** The session logs on disk. The reporter reads them from a per-session
//! cursor (`<state_dir>/honcho/<session>.cursor`) on one background thread and keeps no
//! other state, so a restart of loopd, or a `kill -9`, loses nothing: the next reporter
//! picks up at the cursor. The turn engine only calls [`Reporter::poke`], which never
//! blocks; a periodic rescan with exponential backoff makes an outage heal by itself.
//!
//! **Exactly once.** Honcho assigns message ids itself (a nanoid per created message) and
//! has no idempotency key, so a re-sent batch would be stored twice, and Honcho cannot
//! delete a message. Each message carries in its metadata a stable id (`boxmaker_id` =
//! `<session>/<epoch>/<record offset>/<owner|assistant>`, see `message::message_id`),
//! `boxmaker_record` (the record by its epoch, time and side) and `boxmaker_session`.
//! A post not answered in time is not given up on: it keeps waiting for Honcho's answer
//! on its own thread (`flight`) and its session posts nothing more until it comes. When
//! loopd cannot know whether Honcho took the batch at the cursor and no answer can tell —
//! a start after a post was cut short (its marker), a connection closed without an
//! answer, a 5xx, a 2xx that is not Honcho's 201 listing the messages it created — it asks Honcho to answer a write through the same session set-up (the
//! fence) and waits out Honcho's commit window from that answer. Then it looks the
//! batch's records up among the session's newest messages and posts only those Honcho
//! lacks (`sync`). A list alone is never believed: Honcho finishes a create after its
//! client has gone, and its list takes no lock, so a list can overtake a create still
//! under way.
//!
//! **Forgetting.** `/forget` rewrites logs the reporter reads, moving the byte offsets of
//! every later line of an epoch. The worker pauses the reporter ([`Reporter::pause`])
//! while it does, and moves the stored cursor with the lines, once (`moved`); the records
//! Honcho holds are recognised by `boxmaker_record` (epoch, time, side), not by the
//! offset in their id, by which `forget` also finds what Honcho holds of a record whose
//! line an earlier forget moved. See docs/honcho.md, "After a forget rewrote a log".
//!
//! **Refusals.** Only a message Honcho refuses on its own (a 422 or 413, narrowed to that
//! one message by halving the batch) is passed over, with a warning naming it; one refused
//! as too long is cut smaller and sent again. Everything else — 401, 403, 409, 429, 5xx, no
//! answer — holds the batch and is retried with backoff (at least as long as a
//! `Retry-After` asks), so no turn is lost: see `sync`. A warning is logged when a session
//! starts failing or fails differently, and a notice when it recovers, not at every retry;
//! [`StatusHandle`] tells `/status` how many messages wait, since when and why. A token
//! file that changed while reports are held back, and a reload (SIGHUP), end the backoff:
//! the next try is at once ([`Reporter::retry_now`], [`TOKEN_POLL`]).
//!
//! **Names.** Workspace, session and peer names are checked against Honcho's rule before
//! the reporter starts (`names`); a bad one is an error naming its key, and nothing is
//! reported until it is fixed.

mod client;
mod cursor;
pub mod derived;
mod detail;
mod flight;
pub mod forget;
mod label;
mod message;
pub mod moved;
mod names;
pub mod pause;
mod peer;
mod refused;
mod scan;
mod status;
mod sync;
pub mod testhook;
mod thread;

#[cfg(test)]
mod test_standin;
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_answers;
#[cfg(test)]
mod tests_doubt;
#[cfg(test)]
mod tests_forget;
#[cfg(test)]
mod tests_marker;
#[cfg(test)]
mod tests_recovery;
#[cfg(test)]
mod tests_refusals;
#[cfg(test)]
mod tests_stall;

pub use status::{HonchoStatus, StatusHandle};
pub use sync::AfterPost;

use pause::{Gate, Paused};
use peer::PeerSetup;
use proto::config::Config;
use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use sync::Ctx;

/// The first wait after a failure. Short, so a blip costs little delay.
pub const MIN_BACKOFF: Duration = Duration::from_secs(1);

/// The longest wait between tries during an outage: reports resume at most this long after
/// Honcho is back, and a long outage costs one failed request per session this often.
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// How often every session is looked at even without a poke, so that turns finished while
/// the reporter was not running, or whose poke was dropped, still go out.
pub const RESCAN_INTERVAL: Duration = Duration::from_secs(60);

/// How often the token file is looked at (its size and time) while reports are held back:
/// a fixed token is used within this long, not at the next backoff try (up to
/// `MAX_BACKOFF`). A `stat` a second costs nothing worth counting.
pub const TOKEN_POLL: Duration = Duration::from_secs(1);

/// Pokes waiting for the reporter thread. A poke only says "look at this session"; when
/// the queue is full the thread has pokes to work through already, and the rescan covers
/// any that are dropped, so a full queue never blocks a turn.
pub const MAX_PENDING_POKES: usize = 64;

/// Whether a rewrite of a session's logs is under way or was cut short by a crash, and
/// the file that says so: a forget's plan (the conversation crate's
/// `forget::plan::pending`, handed in by loopd's worker, which sits above both). Such a session is not reported until the rewrite
/// is finished: its cursor may name offsets of the logs as they were.
pub type Rewriting = fn(&Path, &str) -> Option<std::path::PathBuf>;

/// No rewrite is ever under way.
pub fn never_rewriting(_: &Path, _: &str) -> Option<std::path::PathBuf> {
    None
}

/// How a reporter paces itself, what it does after a post (tests change these), and where
/// it tells its state.
#[derive(Debug, Clone)]
pub struct Options {
    pub min_backoff: Duration,
    pub max_backoff: Duration,
    pub rescan: Duration,
    pub after_post: AfterPost,
    /// Where `/status` reads the reporter's state. The caller may keep a clone across
    /// reporter restarts (a reload of `[honcho]`); each reporter starts it afresh.
    pub status: StatusHandle,
    pub rewriting: Rewriting,
    /// See `sync::COMMIT_WINDOW`.
    pub commit_window: Duration,
    /// See `client::REQUEST_TIMEOUT`.
    pub request_timeout: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            min_backoff: MIN_BACKOFF,
            max_backoff: MAX_BACKOFF,
            rescan: RESCAN_INTERVAL,
            after_post: AfterPost::Continue,
            status: StatusHandle::default(),
            rewriting: never_rewriting,
            commit_window: sync::COMMIT_WINDOW,
            request_timeout: client::REQUEST_TIMEOUT,
        }
    }
}

impl Options {
    /// The defaults, with the crash hook (`testhook::abort_after_post`) when it is
    /// armed: the end-to-end test's way to hit the window between Honcho accepting a batch
    /// and the cursor being stored.
    pub fn from_env() -> Options {
        let mut opts = Options::default();
        if testhook::abort_after_post() {
            opts.after_post = AfterPost::Abort;
        }
        if let Some(w) = testhook::commit_window() {
            opts.commit_window = w;
        }
        opts
    }
}

/// What the reporter has done, for `/status` and for tests to wait on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Health {
    /// Messages Honcho accepted since start.
    pub posted: u64,
    /// Rounds that ended with everything finished reported.
    pub idle_rounds: u64,
    /// Rounds that failed and will be tried again.
    pub failures: u64,
    /// The last failure, cleared by the next good round.
    pub last_error: Option<String>,
    /// Records Honcho was found holding twice (each warned about once).
    pub duplicates: u64,
}

pub(crate) struct Shared {
    health: Mutex<Health>,
    changed: Condvar,
    status: StatusHandle,
}

impl Shared {
    fn update(&self, f: impl FnOnce(&mut Health)) {
        if let Ok(mut h) = self.health.lock() {
            f(&mut h);
        }
        self.changed.notify_all();
    }
}

pub(crate) enum Msg {
    Poke(String),
    /// A post of this session was answered after its round stopped waiting: the session
    /// is looked at again at once.
    Landed(String),
    /// Every session held back is tried again at once (a reload).
    RetryNow,
    Stop,
}

/// The handle the turn engine holds. Dropping it asks the thread to stop.
pub struct Reporter {
    tx: SyncSender<Msg>,
    stopping: Arc<AtomicBool>,
    gate: Arc<Gate>,
    /// Read by `status` and by the tests.
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Reporter {
    /// Starts the reporter thread, or returns `None` when `honcho.url` is empty (or the
    /// thread cannot be started, which is logged). A session `rewriting` names is not
    /// reported until it no longer does. The reporter keeps `cfg` (the same `Arc`) and
    /// reads it as it goes; it copies none of it.
    pub fn start(cfg: &Arc<Config>, rewriting: Rewriting) -> Option<Reporter> {
        Reporter::start_with(
            Arc::clone(cfg),
            Options {
                rewriting,
                ..Options::from_env()
            },
        )
    }

    pub fn start_with(cfg: Arc<Config>, opts: Options) -> Option<Reporter> {
        if cfg.honcho.url.is_empty() {
            return None;
        }
        if let Err(e) = names::check(&cfg.honcho) {
            plumbing::error!("honcho: {e}; turns are not reported until it is fixed");
            opts.status.set(HonchoStatus {
                last_error: Some(e.to_string()),
                ..HonchoStatus::default()
            });
            return None;
        }
        let stopping = Arc::new(AtomicBool::new(false));
        let gate = Arc::new(Gate::default());
        let (tx, rx) = mpsc::sync_channel(MAX_PENDING_POKES);
        let ctx = Ctx {
            client: client::Client::with_timeout(&cfg.honcho, opts.request_timeout),
            cfg,
            after_post: opts.after_post,
            rewriting: opts.rewriting,
            stopping: Arc::clone(&stopping),
            gate: Arc::clone(&gate),
            max_chars: Cell::new(message::MAX_MESSAGE_CHARS),
            peer_setup: Cell::new(PeerSetup::Pending),
            commit_window: opts.commit_window,
            duplicates: Cell::new(0),
            request_timeout: opts.request_timeout,
            wake: tx.clone(),
        };
        opts.status.set(HonchoStatus::default());
        let shared = Arc::new(Shared {
            health: Mutex::new(Health::default()),
            changed: Condvar::new(),
            status: opts.status.clone(),
        });
        let thread_shared = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("honcho".into())
            .spawn(move || thread::run(ctx, opts, rx, &thread_shared));
        match spawned {
            Ok(thread) => Some(Reporter {
                tx,
                stopping,
                gate,
                shared,
                thread: Some(thread),
            }),
            Err(e) => {
                plumbing::error!(
                    "honcho: cannot start the reporter thread: {e}; turns are not reported"
                );
                None
            }
        }
    }

    /// The reporter's state for `/status`.
    pub fn status(&self) -> StatusHandle {
        self.shared.status.clone()
    }

    /// Holds the reporter still until the answer is dropped: the round under way ends at
    /// its next request boundary (so this waits at most one request, bounded by the
    /// client's timeouts) and none starts meanwhile. For a rewrite of the logs it reads
    /// (`/forget`): see `pause` and `moved`.
    pub fn pause(&self) -> Paused {
        Paused::new(Arc::clone(&self.gate))
    }

    /// Ends every backoff: sessions held back are tried again at once. For a reload
    /// (SIGHUP) that left `[honcho]` as it was: the owner may have fixed what failed (a
    /// token file, Honcho itself). Never blocks; a full queue has a round coming anyway.
    pub fn retry_now(&self) {
        let _ = self.tx.try_send(Msg::RetryNow);
    }

    /// Tells the reporter that `session` may have a newly finished turn. Never blocks.
    pub fn poke(&self, session: &str) {
        match self.tx.try_send(Msg::Poke(session.to_string())) {
            Ok(()) | Err(TrySendError::Full(_)) => {}
            Err(TrySendError::Disconnected(_)) => {
                plumbing::warn!(
                    "honcho: the reporter thread has ended; session {session} is not reported"
                )
            }
        }
    }

    #[cfg(any(test, feature = "test-support"))]
    pub fn health(&self) -> Health {
        self.shared
            .health
            .lock()
            .map(|h| h.clone())
            .unwrap_or_default()
    }

    /// Waits until `done(health)` holds or `limit` passes, and returns the health then.
    #[cfg(any(test, feature = "test-support"))]
    pub fn wait_for(&self, limit: Duration, done: impl Fn(&Health) -> bool) -> Health {
        let deadline = std::time::Instant::now() + limit;
        let Ok(mut h) = self.shared.health.lock() else {
            return Health::default();
        };
        while !done(&h) {
            let now = std::time::Instant::now();
            if now >= deadline {
                break;
            }
            h = match self.shared.changed.wait_timeout(h, deadline - now) {
                Ok((g, _)) => g,
                Err(_) => return Health::default(),
            };
        }
        h.clone()
    }

    /// Stops the thread and waits for it: at most the request in flight, which ends
    /// within `client::REQUEST_TIMEOUT`, since the thread looks at the stop flag between batches.
    pub fn stop(mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // A full queue still holds the Stop's place: the thread reads the queue in order.
        let _ = self.tx.send(Msg::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        let _ = self.tx.try_send(Msg::Stop);
    }
}

pub use thread::retry_wait;

/// Whether a post of `session` to Honcho may be under way or cut short (its marker is
/// there): Honcho may still store what it holds. For a forget's reply.
pub fn post_under_way(state_dir: &Path, session: &str) -> bool {
    flight::was_posting(state_dir, session)
}
