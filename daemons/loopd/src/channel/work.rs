//! Where the channel sends the work it does not do on the poll loop: turns and the other
//! worker jobs, and the short probes behind `/status` and `/recall`. The channel only
//! decides *what* to ask and answers from the `Event`s that come back; [`Work`] is the
//! seam that lets its rules (one reply block per line, in order; backpressure; `/quit`;
//! the waiting `· ` lines) be unit-tested with no thread, socket or HTTP server
//! (`channel/tests.rs` records the jobs instead of running them).

use super::probes;
use crate::worker::{Job, JobId, Notifier, Worker};
use conversation::status::Board;
use proto::config::Config;
use proto::{DataClass, SessionId};

/// A probe the channel runs off the poll loop, answered with `Event::Done` for its job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Probe {
    /// `max_class`: the highest class of text the answer may quote. A room's answer goes
    /// to the homeserver, so it asks for nothing above `matrix.max_class`
    /// (docs/matrix.md, 'Labels').
    Recall { query: String, max_class: DataClass },
    /// `mail`: the inbox and reminder lines, which only the poll loop can count.
    Status { session: SessionId, mail: String },
}

/// What runs the channel's jobs. Every call returns at once.
pub(crate) trait Work {
    /// Queues `job` on the turn worker; false when the worker has stopped.
    fn submit(&mut self, job: Job) -> bool;
    /// True when no worker job is queued or running (the heartbeat waits for that).
    fn idle(&self) -> bool;
    /// Starts `probe` for job `id` under `cfg`.
    fn probe(&mut self, id: JobId, probe: Probe, cfg: &Config);
}

/// The daemon's: the turn worker thread, and a short thread per probe.
pub(crate) struct Threads {
    pub(crate) worker: Worker,
    /// The daemon's llama.cpp client, shared with the engine: `/status` asks through it.
    pub(crate) llama: llama::Client,
    pub(crate) notify: Notifier,
    pub(crate) board: Board,
}

impl Work for Threads {
    fn submit(&mut self, job: Job) -> bool {
        self.worker.submit(job)
    }

    fn idle(&self) -> bool {
        self.worker.idle()
    }

    fn probe(&mut self, id: JobId, probe: Probe, cfg: &Config) {
        match probe {
            Probe::Recall { query, max_class } => {
                probes::spawn_recall(id, cfg, query, max_class, self.notify.clone())
            }
            Probe::Status { session, mail } => probes::spawn_status(
                id,
                cfg,
                self.llama.clone(),
                session,
                mail,
                self.board.clone(),
                self.notify.clone(),
            ),
        }
    }
}
