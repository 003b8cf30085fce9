//! loopd's memoryd client: one frame out, one frame back, on a fresh connection to
//! `memory.socket`, every step bounded by a timeout so a stuck memoryd can delay a turn
//! by seconds at most. It serves the `recall` tool (`recall.rs`), `/recall`, `/status`,
//! the nudge after each turn, and `/forget`. memoryd being down is never a turn failure.

use plumbing::dial::DialError;
use proto::config::Memory;
use proto::frame::{read_frame, write_frame, FrameError};
use proto::memory::{render_hits, Hit, MemoryStatus, Request, Response};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Connect, write and read timeout for a recall. memoryd answers from its index in
/// milliseconds after catching up on new log lines; seconds mean it is stuck.
pub(crate) const RECALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Timeout for the nudge after a turn and the `/status` probe: both are courtesies, and
/// nothing waits on them for long.
pub(crate) const NUDGE_TIMEOUT: Duration = Duration::from_secs(2);

/// Hits asked for per recall. Each hit is a message or summary; eight of them is a
/// useful page of memory without flooding the model's context.
pub(crate) const RECALL_LIMIT: u32 = 8;

#[derive(Debug)]
pub enum MemoryError {
    /// Connecting, sending or reading the answer failed or ran out of time.
    Exchange(DialError<FrameError>),
    Refused(String),
    Unexpected(&'static str),
}

impl fmt::Display for MemoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // A timeout in words, with the step and its timeout, rather than "Resource
            // temporarily unavailable (os error 11)".
            MemoryError::Exchange(DialError::Timeout { step, after, .. }) => {
                write!(f, "memoryd did not {step} within {} s", after.as_secs_f64())
            }
            MemoryError::Exchange(e) => write!(f, "{e}"),
            MemoryError::Refused(m) => write!(f, "memoryd: {m}"),
            MemoryError::Unexpected(what) => write!(f, "memoryd answered {what}"),
        }
    }
}

impl std::error::Error for MemoryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MemoryError::Exchange(e) => Some(e),
            MemoryError::Refused(_) | MemoryError::Unexpected(_) => None,
        }
    }
}

/// Sends one request and reads one response.
pub fn ask(socket: &Path, request: &Request, timeout: Duration) -> Result<Response, MemoryError> {
    plumbing::dial::exchange(
        socket,
        timeout,
        |s| write_frame(s, request),
        read_frame,
        FrameError::io,
    )
    .map_err(MemoryError::Exchange)
}

pub fn recall(cfg: &Memory, query: &str) -> Result<Vec<Hit>, MemoryError> {
    recall_at_most(cfg, query, RECALL_LIMIT)
}

/// A recall of at most `limit` hits.
pub(crate) fn recall_at_most(
    cfg: &Memory,
    query: &str,
    limit: u32,
) -> Result<Vec<Hit>, MemoryError> {
    let request = Request::Recall {
        query: query.to_string(),
        max_class: cfg.max_class,
        limit,
    };
    match ask(&cfg.socket, &request, RECALL_TIMEOUT)? {
        Response::Hits(hits) => Ok(hits),
        Response::Error { message } => Err(MemoryError::Refused(message)),
        Response::Status(_) | Response::Forgot { .. } => {
            Err(MemoryError::Unexpected("not hits to a recall"))
        }
    }
}

pub fn status(socket: &Path) -> Result<MemoryStatus, MemoryError> {
    match ask(socket, &Request::Status, NUDGE_TIMEOUT)? {
        Response::Status(s) => Ok(s),
        Response::Error { message } => Err(MemoryError::Refused(message)),
        Response::Hits(_) | Response::Forgot { .. } => {
            Err(MemoryError::Unexpected("not a status to a status request"))
        }
    }
}

/// Timeout for a `Forget`: memoryd re-reads the rewritten logs, deletes rows and vectors,
/// merges its full-text segments and checkpoints its WAL before it answers, which on a
/// large index takes seconds, not milliseconds.
pub(crate) const FORGET_TIMEOUT: Duration = Duration::from_secs(60);

/// Tells memoryd that `logs` were rewritten by a forget; the rows it removed.
pub fn forget(socket: &Path, logs: Vec<proto::memory::LogRef>) -> Result<u64, MemoryError> {
    match ask(socket, &Request::Forget { logs }, FORGET_TIMEOUT)? {
        Response::Forgot { rows } => Ok(rows),
        Response::Error { message } => Err(MemoryError::Refused(message)),
        Response::Hits(_) | Response::Status(_) => {
            Err(MemoryError::Unexpected("not forgot to a forget"))
        }
    }
}

/// Tells memoryd a session's log grew, on its own thread so the worker does not wait.
/// Failures are only logged at info: memoryd catches up before every recall anyway.
pub fn nudge(socket: PathBuf, session: String) {
    let spawned = std::thread::Builder::new()
        .name("nudge".into())
        .spawn(move || {
            let request = Request::Nudge {
                session: session.clone(),
            };
            if let Err(e) = ask(&socket, &request, NUDGE_TIMEOUT) {
                plumbing::info!("nudge memoryd for session {session}: {e}");
            }
        });
    if let Err(e) = spawned {
        plumbing::info!("nudge memoryd: cannot start a thread: {e}");
    }
}

/// Hits as the text a person or the model reads.
pub fn render(hits: &[Hit]) -> String {
    if hits.is_empty() {
        "no memories match".into()
    } else {
        render_hits(hits)
    }
}
