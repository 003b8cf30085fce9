//! The frame server (docs/memoryd.md): decodes requests from each connection's bytes, answers
//! `Recall`, `Nudge` and `Status` from the index, and closes a connection that sends a
//! frame it cannot trust. The start-up catch-up runs here too, a chunk per turn of the
//! poll loop, so a large backlog never keeps the loop (and its watchdog) waiting; a
//! request catches up within a budget of its own before it is answered, for the same
//! reason.

use crate::embed::vectors::Vectors;
use crate::index::{Budget, Index, IndexError, Progress};
use fit::encode_fitting;
use plumbing::{ConnId, Farewell, Outbox, Peer, Service};
use proto::config::{Config, ConfigError};
use proto::frame::{self, FrameError};
use proto::memory::{MemoryStatus, Request, Response};
use proto::SessionId;
use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Chunks of log (see `index::ingest`) read per turn of the poll loop while catching up
/// at start: one keeps each turn short.
const START_SLICE_CHUNKS: usize = 1;

/// Chunks of log (a MiB each) a `Recall` or `Nudge` may index before it is answered.
/// A turn's new lines are one chunk per log loopd wrote to, far below this, so recall
/// still sees everything written before it; a backlog (a deleted index over a large
/// `sessions/`) is answered from what is indexed so far, and the start-up timer goes on
/// with the rest in slices. Without a bound one request could index the whole backlog in
/// one turn of the poll loop, and no watchdog ping would go out until it finished.
/// Tests lower it with `BOXMAKER_MEMORYD_TEST_REQUEST_CHUNKS` (see `hooks`).
pub const REQUEST_CATCH_UP_CHUNKS: usize = 16;

/// How long a request may spend catching up before it is answered, whatever the chunk
/// count: on a slow disk sixteen chunks could take seconds, and the watchdog (30 s)
/// must hear from the loop while requests keep coming. One second keeps a request's
/// answer prompt and leaves the loop ample room between pings.
pub const REQUEST_CATCH_UP_TIME: Duration = Duration::from_secs(1);

/// How long one slice of a whole pass may run on the poll loop: a request that arrives
/// meanwhile waits at most this (plus the one chunk of log a slice always reads whole,
/// a MiB of lines (`index::ingest`), or a single line up to
/// `sessions::MAX_RECORD_LINE`).
pub const SLICE_TIME: Duration = Duration::from_millis(20);

/// How often a whole pass looks at every log again. A recall looks only into the
/// sessions active lately (`index::MAX_HOT`) and loopd nudges each session it writes to,
/// so this only finds changes nobody announced (a log edited by hand, a session copied
/// in); a pass costs a `stat` per log, spread over slices of `SLICE_TIME`.
pub const RESCAN_EVERY: Duration = Duration::from_secs(600);

/// How often one recall re-reads rewritten logs behind its hits and asks again: each
/// round reads only logs found rewritten, and a log is rewritten by a forget (once), so
/// a second round is already rare; a log rewritten on every look is a fault, answered
/// with an error rather than a loop.
pub const MAX_RECALL_REREADS: usize = 4;

/// How long after a failed purge the next is tried.
pub const PURGE_RETRY: Duration = Duration::from_secs(60);

pub struct FrameService {
    config_path: PathBuf,
    cfg: Config,
    index: Index,
    served: u64,
    /// Chunks a request may catch up before it is answered (`REQUEST_CATCH_UP_CHUNKS`).
    request_chunks: usize,
    /// Since when the start-up catch-up has had more to read. A fixed instant in the
    /// past, so the poll loop sees the timer as due and does not wait.
    pending: Option<Instant>,
    /// What the index held after its last catch-up, for the status line.
    last: MemoryStatus,
    /// When the next whole pass starts (`RESCAN_EVERY`).
    rescan_at: Instant,
    /// No purge is tried before this: set after a failed one, so a broken database is
    /// not retried every turn of the loop.
    purge_after: Instant,
    /// Recall by meaning (`embed`); `None` when `memory.embed_model` is empty or missing.
    vectors: Option<Vectors>,
}

impl FrameService {
    pub fn new(config_path: PathBuf, cfg: Config, index: Index) -> FrameService {
        let vectors = open_vectors(&cfg);
        FrameService {
            config_path,
            cfg,
            index,
            served: 0,
            request_chunks: REQUEST_CATCH_UP_CHUNKS,
            pending: Some(Instant::now()),
            last: MemoryStatus::default(),
            rescan_at: Instant::now() + RESCAN_EVERY,
            purge_after: Instant::now(),
            vectors,
        }
    }

    /// Changes how many chunks a request may catch up before it is answered (tests only).
    #[cfg(any(test, feature = "testhooks"))]
    pub fn set_request_chunks(&mut self, chunks: usize) {
        self.request_chunks = chunks;
    }

    /// Answers one request, catching up within a request's budget first.
    pub fn answer(&mut self, request: Request) -> Response {
        self.served += 1;
        let answer = match request {
            Request::Recall {
                query,
                max_class,
                limit,
            } => self
                .catch_up_for_recall()
                .and_then(|()| self.recall_fresh(&query, max_class, limit)),
            Request::Nudge { session } => match SessionId::parse(&session) {
                Ok(id) => {
                    let budget = self.request_budget();
                    match self.index.catch_up_session(&id, budget) {
                        Ok(progress) => {
                            self.continue_later(progress);
                            self.refresh().map(Response::Status)
                        }
                        Err(e) => Err(Failure::from(e.to_string())),
                    }
                }
                Err(e) => Err(Failure::from(e.to_string())),
            },
            Request::Status => self.refresh().map(Response::Status),
            Request::Forget { logs } => {
                let logs: Vec<(String, u64)> =
                    logs.into_iter().map(|l| (l.session, l.epoch)).collect();
                match self.index.forget(&logs) {
                    Ok(rows) => {
                        plumbing::notice!(
                            "forgot: {rows} rows dropped from {} logs read again; index purged",
                            logs.len()
                        );
                        self.refresh().map(|_| Response::Forgot { rows })
                    }
                    Err(e) => Err(Failure {
                        message: e.to_string(),
                        logged: e.for_log(),
                    }),
                }
            }
        };
        answer.unwrap_or_else(|f| {
            plumbing::error!("{}", f.logged);
            Response::Error { message: f.message }
        })
    }

    /// Read-your-writes: what loopd wrote before the recall (in the sessions active
    /// lately, and any session created or removed) is indexed first, up to a request's
    /// budget; past it the recall is answered from what is indexed so far and the timer
    /// goes on with a whole pass.
    fn catch_up_for_recall(&mut self) -> Result<(), Failure> {
        let budget = self.request_budget();
        let progress = self
            .index
            .catch_up_recent(budget)
            .map_err(|e| Failure::from(e.to_string()))?;
        self.continue_later(progress);
        self.refresh().map(|_| ())
    }

    /// The hits of a recall, none from a log rewritten since it was indexed: the logs
    /// the hits came from are checked, and when one was rewritten (a forget while
    /// memoryd was down, found before the start-up pass reached it) it is read again
    /// and the recall asked again (docs/forgetting.md).
    fn recall_fresh(
        &mut self,
        query: &str,
        max_class: proto::label::DataClass,
        limit: u32,
    ) -> Result<Response, Failure> {
        for _ in 0..MAX_RECALL_REREADS {
            self.let_go_of_dropped();
            let hits =
                crate::hybrid::recall(&self.index, self.vectors.as_ref(), query, max_class, limit)
                    .map_err(|e| Failure::quiet(&e))?;
            let mut logs: Vec<(String, u64)> =
                hits.iter().map(|h| (h.session.clone(), h.epoch)).collect();
            logs.sort();
            logs.dedup();
            let changed = self
                .index
                .reread_rewritten(&logs)
                .map_err(|e| Failure::from(e.to_string()))?;
            if !changed {
                return Ok(Response::Hits(hits));
            }
            // The purge of what was dropped follows once no pass is under way.
            self.continue_later(Progress::More);
        }
        Err(Failure::from(
            "the logs behind this recall keep changing while they are read; ask again".to_string(),
        ))
    }

    /// Before a recall: the codes of every row dropped so far (by this request's own
    /// catch-up, or a forget just answered) leave the store in memory, so a row read
    /// again since under a dropped row's id is not found through the dropped row's code
    /// (docs/memoryd.md, 'Vectors and the model'). As many looks as the rows dropped
    /// since the last tick need, each `dropped::TAKE` ids, and every look takes ids off
    /// the list. A failure is logged and the recall goes on: a dropped row itself is
    /// never a hit (its text is gone), only a row reusing its id could be mis-ranked.
    fn let_go_of_dropped(&mut self) {
        let Some(v) = self.vectors.as_mut() else {
            return;
        };
        loop {
            match v.let_go_of_dropped(self.index.conn()) {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => {
                    plumbing::warn!("vectors: reading the rows dropped: {e}");
                    return;
                }
            }
        }
    }

    fn request_budget(&self) -> Budget {
        Budget {
            chunks: Some(self.request_chunks),
            until: Some(Instant::now() + REQUEST_CATCH_UP_TIME),
        }
    }

    /// A request that stopped at its budget leaves the rest to the timer, a slice a turn.
    fn continue_later(&mut self, progress: Progress) {
        if progress == Progress::More && self.pending.is_none() {
            self.pending = Some(Instant::now());
        }
    }

    /// Whether the start-up (or left-over) catch-up still has work to do.
    #[cfg(test)]
    pub fn catching_up(&self) -> bool {
        self.pending.is_some()
    }

    fn refresh(&mut self) -> Result<MemoryStatus, Failure> {
        let mut status = self
            .index
            .status()
            .map_err(|e| Failure::from(e.to_string()))?;
        if let Some(v) = self.vectors.as_mut() {
            // A catch-up just ran and may have queued rows for the backfill. Neither the
            // wake nor the counts look at more than a row of the database, so every
            // request may ask (docs/memoryd.md, 'What a request may wait for'). A failed
            // read of the counts is logged there and answered with the last ones read:
            // the vector side never fails a request (a Forget's rows are gone by now).
            v.wake();
            (status.vectors, status.vectors_pending) = v.counts(self.index.conn());
        }
        self.last = status.clone();
        Ok(status)
    }
}

/// Why a SIGHUP left the old configuration in place: the file did not load, or the index
/// it names did not open. Shown as the error below it, after the poll loop's own words.
#[derive(Debug)]
pub enum ReloadError {
    Config(ConfigError),
    Index(IndexError),
}

impl fmt::Display for ReloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReloadError::Config(e) => e.fmt(f),
            ReloadError::Index(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ReloadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReloadError::Config(e) => Some(e),
            ReloadError::Index(e) => Some(e),
        }
    }
}

impl Service for FrameService {
    fn accept(&mut self, _out: &mut Outbox, _id: ConnId, _peer: Peer) {}

    fn input(&mut self, out: &mut Outbox, id: ConnId, input: &mut Vec<u8>) {
        // One request at a time while the client has room for its answer: the rest stay
        // buffered (and the socket unread) until it reads, so a client that writes
        // thousands of requests and reads nothing costs two frames, not thousands.
        while out.has_room(id) {
            let payload = match frame::take_payload(input) {
                Ok(Some(p)) => p,
                Ok(None) => break,
                Err(e) => return refuse(out, id, input, &e),
            };
            let response = match frame::decode::<Request>(&payload) {
                Ok(request) => self.answer(request),
                Err(e) => return refuse(out, id, input, &e),
            };
            if let Some(bytes) = encode_fitting(response) {
                out.send(id, bytes);
            }
        }
    }

    fn input_closed(&mut self, out: &mut Outbox, id: ConnId, rest: &mut Vec<u8>) {
        if !rest.is_empty() {
            plumbing::warn!(
                "client {}: closed in the middle of a frame ({} bytes)",
                id.0,
                rest.len()
            );
            rest.clear();
        }
        out.close(id);
    }

    fn farewell(&self, why: &Farewell) -> Vec<u8> {
        let message = why.words("frame");
        frame::encode(&Response::Error { message }).unwrap_or_default()
    }

    fn closed(&mut self, _id: ConnId, _left: plumbing::Left) {}

    fn deadline(&self) -> Option<Instant> {
        let vectors = self.vectors.as_ref().and_then(Vectors::deadline);
        // Dropped rows are purged once no pass is under way; otherwise the next pass.
        let own = match self.pending {
            Some(t) => t,
            None if self.index.purge_due() => self.purge_after.min(self.rescan_at),
            None => self.rescan_at,
        };
        Some(vectors.map_or(own, |v| v.min(own)))
    }

    fn timer(&mut self, _out: &mut Outbox, now: Instant) {
        if let Some(v) = self.vectors.as_mut() {
            if v.deadline().is_some_and(|t| t <= now) {
                v.tick(self.index.conn());
            }
        }
        if self.pending.is_none() && self.index.purge_due() && self.purge_after <= now {
            self.purge();
        }
        if self.pending.is_none() && self.rescan_at <= now {
            self.pending = Some(now);
        }
        if self.pending.is_some_and(|t| t <= now) {
            self.catch_up_slice();
        }
    }

    type ReloadError = ReloadError;

    fn reload(&mut self) -> Result<(), ReloadError> {
        let mut cfg = Config::load(&self.config_path, plumbing::bounded::read_text)
            .map_err(ReloadError::Config)?;
        if cfg.state_dir != self.cfg.state_dir {
            // loopd keeps the state directory it started with until its next start, so
            // memoryd does too: an index of another directory's logs would answer recall
            // from sessions `/forget` does not search (docs/config.md, 'Top-level keys').
            plumbing::warn!(
                "state_dir: a changed state directory ({}) takes effect at memoryd's next start; {} stays in use",
                cfg.state_dir.display(),
                self.cfg.state_dir.display()
            );
            cfg.state_dir = self.cfg.state_dir.clone();
        }
        let reopen = cfg.memory.max_class != self.cfg.memory.max_class;
        if reopen {
            self.index = Index::open(&cfg.state_dir, cfg.memory.max_class)
                .map_err(ReloadError::Index)?
                .with_owner_class(cfg.channel.owner_class);
            self.pending = Some(Instant::now());
        }
        if reopen || cfg.memory.embed_model != self.cfg.memory.embed_model {
            // Dropping the old side ends its worker thread once it finishes its batch.
            self.vectors = open_vectors(&cfg);
            if self.vectors.is_none() {
                // Nothing holds codes in memory now: stop noting the rows dropped.
                if let Err(e) = crate::embed::dropped::unwatch(self.index.conn()) {
                    plumbing::warn!("vectors: {e}");
                }
            }
        }
        self.index.set_owner_class(cfg.channel.owner_class);
        if cfg.memory.socket != self.cfg.memory.socket {
            plumbing::notice!("memory.socket changed; the new path is used after a restart");
        }
        self.cfg = cfg;
        Ok(())
    }

    fn status(&self) -> String {
        let catching_up = if self.pending.is_some() {
            "catching up; "
        } else {
            ""
        };
        let vectors = match &self.vectors {
            Some(v) => {
                let (done, left) = v.progress();
                if left > 0 {
                    format!("; {done} vectors, {left} to embed")
                } else {
                    format!("; {done} vectors")
                }
            }
            None => String::new(),
        };
        format!(
            "{catching_up}{} rows from {} logs indexed{vectors}; {} requests answered",
            self.last.rows, self.last.logs, self.served
        )
    }
}

impl FrameService {
    /// One slice of the start-up (or left-over) catch-up.
    fn catch_up_slice(&mut self) {
        let budget = Budget {
            chunks: Some(START_SLICE_CHUNKS),
            until: Some(Instant::now() + SLICE_TIME),
        };
        match self.index.catch_up(budget) {
            Ok(Progress::More) => {}
            Ok(Progress::Done) => {
                self.pending = None;
                self.rescan_at = Instant::now() + RESCAN_EVERY;
                self.purge();
                // A large backlog leaves many overlapping segments; merging them once
                // here, after the last slice, keeps recall as fast as after a backlog
                // read in time order. A failure only costs speed, so it is logged.
                if let Err(e) = self.index.tidy_if_due() {
                    plumbing::warn!("merging the index after catching up: {e}");
                }
                if self.refresh().is_ok() {
                    plumbing::info!(
                        "caught up: {} rows from {} logs",
                        self.last.rows,
                        self.last.logs
                    );
                }
            }
            Err(e) => {
                // Retrying every turn would spin on a broken database; the next recall
                // or nudge tries again and reports to its caller.
                self.pending = None;
                plumbing::error!("catching up at start: {e}");
            }
        }
    }
}

impl FrameService {
    /// Purges dropped rows from the disk (see `index::purge`); a failure is logged and
    /// tried again at the next catch-up that drops rows or the next start.
    fn purge(&mut self) {
        if let Err(e) = self.index.purge_if_due() {
            plumbing::error!("purging dropped rows from the index: {e}; trying again in a minute");
            self.purge_after = Instant::now() + PURGE_RETRY;
        }
    }
}

/// Why a request failed: the message for the client, and the line for the log, which
/// never quotes a query or a record (see `IndexError::for_log`).
struct Failure {
    message: String,
    logged: String,
}

impl Failure {
    /// A failure of a request carrying text (a recall, a forget): the log line names only
    /// where it failed.
    fn quiet(e: &crate::index::IndexError) -> Failure {
        Failure {
            message: e.to_string(),
            logged: e.for_log(),
        }
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure {
            logged: message.clone(),
            message,
        }
    }
}

/// The vector side for `memory.embed_model`, or none when it is empty.
fn open_vectors(cfg: &Config) -> Option<Vectors> {
    let dir = &cfg.memory.embed_model;
    if dir.as_os_str().is_empty() {
        return None;
    }
    Vectors::open(dir)
}

/// A stream that sent a bad frame cannot be resynchronised: say why, then close it.
fn refuse(out: &mut Outbox, id: ConnId, input: &mut Vec<u8>, e: &FrameError) {
    plumbing::warn!("client {}: {e}; closing", id.0);
    input.clear();
    if let Ok(bytes) = frame::encode(&Response::Error {
        message: e.to_string(),
    }) {
        out.send(id, bytes);
    }
    out.close(id);
}

mod fit;

#[cfg(test)]
mod tests;
