//! The frame server (SPEC §7): decodes requests from each connection's bytes, answers
//! `Recall`, `Nudge` and `Status` from the index, and closes a connection that sends a
//! frame it cannot trust. The start-up catch-up runs here too, a chunk per turn of the
//! poll loop, so a large backlog never keeps the loop (and its watchdog) waiting.

use crate::index::{Index, Progress};
use plumbing::{ConnId, Outbox, Peer, Service};
use proto::config::Config;
use proto::frame::{self, FrameError};
use proto::memory::{MemoryStatus, Request, Response};
use proto::SessionId;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

/// Chunks of log (see `index::ingest`) read per turn of the poll loop while catching up
/// at start: one keeps each turn short; recalls in the meantime catch up fully anyway.
const START_SLICE_CHUNKS: usize = 1;

pub struct FrameService {
    config_path: PathBuf,
    cfg: Config,
    index: Index,
    served: u64,
    /// Since when the start-up catch-up has had more to read. A fixed instant in the
    /// past, so the poll loop sees the timer as due and does not wait.
    pending: Option<Instant>,
    /// What the index held after its last catch-up, for the status line.
    last: MemoryStatus,
    /// Bytes of an unfinished frame held per connection, to name a half frame at close.
    partial: HashMap<ConnId, usize>,
}

impl FrameService {
    pub fn new(config_path: PathBuf, cfg: Config, index: Index) -> FrameService {
        FrameService {
            config_path,
            cfg,
            index,
            served: 0,
            pending: Some(Instant::now()),
            last: MemoryStatus::default(),
            partial: HashMap::new(),
        }
    }

    fn answer(&mut self, request: Request) -> Response {
        self.served += 1;
        let answer = match request {
            Request::Recall {
                query,
                max_class,
                limit,
            } => self.catch_up_all().and_then(|()| {
                self.index
                    .search(&query, max_class, limit)
                    .map(Response::Hits)
                    .map_err(|e| e.to_string())
            }),
            Request::Nudge { session } => match SessionId::parse(&session) {
                Ok(id) => self
                    .index
                    .catch_up_session(&id)
                    .map_err(|e| e.to_string())
                    .and_then(|()| self.refresh())
                    .map(Response::Status),
                Err(e) => Err(e.to_string()),
            },
            Request::Status => self.refresh().map(Response::Status),
        };
        answer.unwrap_or_else(|message| {
            plumbing::error!("{message}");
            Response::Error { message }
        })
    }

    /// Read-your-writes: everything loopd wrote before the recall is indexed first.
    fn catch_up_all(&mut self) -> Result<(), String> {
        self.index.catch_up(None).map_err(|e| e.to_string())?;
        self.pending = None;
        self.refresh().map(|_| ())
    }

    fn refresh(&mut self) -> Result<MemoryStatus, String> {
        let status = self.index.status().map_err(|e| e.to_string())?;
        self.last = status.clone();
        Ok(status)
    }
}

impl Service for FrameService {
    fn accept(&mut self, _out: &mut Outbox, _id: ConnId, _peer: Peer) {}

    fn input(&mut self, out: &mut Outbox, id: ConnId, input: &mut Vec<u8>) {
        loop {
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
        if input.is_empty() {
            self.partial.remove(&id);
        } else {
            self.partial.insert(id, input.len());
        }
    }

    fn input_closed(&mut self, out: &mut Outbox, id: ConnId) {
        if let Some(held) = self.partial.remove(&id) {
            plumbing::warn!(
                "client {}: closed in the middle of a frame ({held} bytes)",
                id.0
            );
        }
        out.close(id);
    }

    fn closed(&mut self, id: ConnId) {
        self.partial.remove(&id);
    }

    fn deadline(&self) -> Option<Instant> {
        self.pending
    }

    fn timer(&mut self, _out: &mut Outbox, _now: Instant) {
        match self.index.catch_up(Some(START_SLICE_CHUNKS)) {
            Ok(Progress::More) => {}
            Ok(Progress::Done) => {
                self.pending = None;
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

    fn reload(&mut self) -> Result<(), String> {
        let cfg = crate::load_config(&self.config_path).map_err(|e| e.to_string())?;
        if cfg.state_dir != self.cfg.state_dir || cfg.memory.max_class != self.cfg.memory.max_class
        {
            self.index =
                Index::open(&cfg.state_dir, cfg.memory.max_class).map_err(|e| e.to_string())?;
            self.pending = Some(Instant::now());
        }
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
        format!(
            "{catching_up}{} rows from {} logs indexed; {} requests answered",
            self.last.rows, self.last.logs, self.served
        )
    }
}

/// Encodes a response, dropping the lowest-ranked hits until it fits in one frame.
fn encode_fitting(mut response: Response) -> Option<Vec<u8>> {
    loop {
        match frame::encode(&response) {
            Ok(bytes) => return Some(bytes),
            Err(FrameError::TooLarge(_)) => {
                let dropped = match &mut response {
                    Response::Hits(hits) => hits.pop().is_some(),
                    Response::Status(_) | Response::Error { .. } => false,
                };
                if !dropped {
                    plumbing::error!("a response does not fit in a frame");
                    return None;
                }
            }
            Err(e) => {
                plumbing::error!("encode response: {e}");
                return None;
            }
        }
    }
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
