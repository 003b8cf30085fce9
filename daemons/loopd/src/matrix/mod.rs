//! The Matrix channel's threads (docs/matrix.md, 'The channel in loopd'): with
//! `[matrix]` on, loopd talks to its homeserver from two threads of its own, so the poll
//! loop never waits on HTTP. `sync` takes the owner's lines (and does what a sync's
//! decision asks: invites, previews, the room notices), hands them to the poll loop and
//! saves the sync position only once the loop says they are on disk; `send` sends what the
//! loop planned, in order, each event until the homeserver acknowledged it. They talk to
//! the loop through bounded channels and its `mio::Waker`. `token` reads and watches the
//! access token; `store` is the loop's own file; `blocks` reads a room's reply blocks.

pub(crate) mod blocks;
mod device;
pub(crate) mod position;
mod send;
pub mod store;
mod sync;
mod token;

use mio::Waker;
use proto::config::Matrix as MatrixConfig;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Messages the threads may have waiting for the poll loop. A sync's lines wait for the
/// loop's answer before the next sync, and each acknowledgement is one event, so a
/// handful is ever queued; past this a thread waits (it is never the loop that waits).
pub(crate) const MAX_UP_QUEUE: usize = 256;

/// Events the poll loop may have handed the send thread that it has not taken yet. The
/// loop never blocks on a full queue: what does not fit stays in the store and is handed
/// over again after the next acknowledgement (`Link::send`).
pub(crate) const MAX_DOWN_QUEUE: usize = 1024;

/// How long the sync thread waits for the loop to say a sync's lines are on disk before
/// it gives up the round and syncs again from the same position (they come again, and
/// the store knows them). The loop answers within one turn of its own; this bounds a
/// stuck loop's effect on the thread.
pub(crate) const LINES_ACK_DEADLINE: Duration = Duration::from_secs(60);

/// An owner's line from a room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    pub(crate) room: String,
    pub(crate) event: String,
    pub(crate) body: String,
}

/// What the threads tell the poll loop.
pub(crate) enum Up {
    /// A sync's lines: the loop writes them to its store, then answers on `on_disk`.
    Lines {
        lines: Vec<Line>,
        on_disk: SyncSender<()>,
    },
    /// The homeserver acknowledged the event with transaction id `txn` as `event`.
    Sent {
        txn: String,
        room: String,
        event: String,
    },
    /// The homeserver refused the event for good (a 4xx other than a rate limit): it is
    /// dropped, with a `loopd:` line.
    Refused { txn: String },
    /// The event's room is not served now (someone else joined it): not sent, and the
    /// loop hands it over again once the room is served.
    Deferred { txn: String },
    /// A room's served state changed, or the channel came up: unasked messages may go.
    Rooms,
}

/// What the poll loop asks of the send thread.
pub(crate) enum Down {
    Send(store::Outgoing),
    /// `/forget` took the event with this transaction id back: it is not sent (unless
    /// it is already on its way, when the loop redacts it once acknowledged).
    Cancel {
        txn: String,
    },
    /// Typing notice on (for the turn's expected length) or off.
    Typing {
        room: String,
        on: bool,
    },
}

/// What `/status` says of the channel, kept by the threads.
#[derive(Debug, Clone, Default)]
pub(crate) struct Status {
    /// The channel's state in words: `starting`, `serving as @box:x`, the fault.
    pub(crate) state: String,
    /// Rooms not served because others joined them, and rooms refused as encrypted, by
    /// the last confirmed sync.
    pub(crate) stopped: BTreeSet<String>,
    pub(crate) encrypted: BTreeSet<String>,
    /// Messages from strangers ignored since start.
    pub(crate) strangers: u64,
    /// Events waiting for the homeserver (kept by the send thread).
    pub(crate) waiting: usize,
    /// A sync was confirmed since start: until then no room's members are known this
    /// run (someone may have joined while loopd was down), so no room is served.
    pub(crate) synced: bool,
}

/// The loop's end of the threads.
pub(crate) struct Link {
    pub(crate) up: Receiver<Up>,
    down: SyncSender<Down>,
    pub(crate) status: Arc<Mutex<Status>>,
    /// Bumped at a SIGHUP: a thread waiting for a new token reads the file again.
    hup: Arc<AtomicU64>,
}

impl Link {
    /// Hands `d` to the send thread without waiting; false when its queue is full or it
    /// has stopped (what it was is still in the store and is handed over again).
    pub(crate) fn send(&self, d: Down) -> bool {
        match self.down.try_send(d) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => false,
            Err(TrySendError::Disconnected(_)) => {
                plumbing::error!("matrix: the send thread has stopped; restart loopd");
                false
            }
        }
    }

    /// A SIGHUP: a refused token is read again now.
    pub(crate) fn hangup(&self) {
        self.hup.fetch_add(1, Ordering::SeqCst);
    }

    pub(crate) fn status(&self) -> Status {
        match self.status.lock() {
            Ok(s) => s.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }
}

/// Whether `room` is served, by the sync thread's last confirmed sync (docs/matrix.md,
/// 'Rooms and sessions'): nothing but a redaction is sent to a room that is not, nor to
/// any room before the first sync since start has confirmed its members.
pub(crate) fn served(status: &Mutex<Status>, room: &str) -> bool {
    let check = |s: &Status| s.synced && !s.stopped.contains(room) && !s.encrypted.contains(room);
    match status.lock() {
        Ok(s) => check(&s),
        Err(p) => check(&p.into_inner()),
    }
}

/// A link with no threads behind it, for the channel's tests: what the threads would
/// send goes in on the returned sender, what the loop hands them comes out on the
/// receiver.
#[cfg(test)]
pub(crate) fn test_link() -> (Link, SyncSender<Up>, Receiver<Down>) {
    let (up_tx, up) = sync_channel(MAX_UP_QUEUE);
    let (down, down_rx) = sync_channel(MAX_DOWN_QUEUE);
    let link = Link {
        up,
        down,
        status: Arc::new(Mutex::new(Status {
            synced: true,
            ..Status::default()
        })),
        hup: Arc::new(AtomicU64::new(0)),
    };
    (link, up_tx, down_rx)
}

/// Sets the shared status through a poisoned lock too (a panicking thread is reported
/// on its own; the status must still be readable).
pub(crate) fn set_status(status: &Mutex<Status>, f: impl FnOnce(&mut Status)) {
    match status.lock() {
        Ok(mut s) => f(&mut s),
        Err(p) => f(&mut p.into_inner()),
    }
}

/// What both threads need to reach the homeserver.
#[derive(Clone)]
pub(crate) struct Reach {
    pub(crate) cfg: MatrixConfig,
    pub(crate) state_dir: PathBuf,
    pub(crate) status: Arc<Mutex<Status>>,
    pub(crate) hup: Arc<AtomicU64>,
    up: SyncSender<Up>,
    waker: Arc<Waker>,
}

impl Reach {
    /// Tells the poll loop; false once it is gone.
    pub(crate) fn tell(&self, up: Up) -> bool {
        if self.up.send(up).is_err() {
            return false;
        }
        if let Err(e) = self.waker.wake() {
            plumbing::error!("matrix: waking the poll loop: {e}");
        }
        true
    }
}

/// Starts the channel's threads.
pub(crate) fn start(
    cfg: &MatrixConfig,
    state_dir: PathBuf,
    waker: Arc<Waker>,
) -> std::io::Result<Link> {
    let (up_tx, up) = sync_channel(MAX_UP_QUEUE);
    let (down, down_rx) = sync_channel(MAX_DOWN_QUEUE);
    let status = Arc::new(Mutex::new(Status {
        state: "starting".into(),
        ..Status::default()
    }));
    let hup = Arc::new(AtomicU64::new(0));
    let reach = Reach {
        cfg: cfg.clone(),
        state_dir,
        status: Arc::clone(&status),
        hup: Arc::clone(&hup),
        up: up_tx,
        waker,
    };
    let r = reach.clone();
    std::thread::Builder::new()
        .name("matrix-sync".into())
        .spawn(move || sync::run(r))?;
    std::thread::Builder::new()
        .name("matrix-send".into())
        .spawn(move || send::run(reach, down_rx))?;
    Ok(Link {
        up,
        down,
        status,
        hup,
    })
}
