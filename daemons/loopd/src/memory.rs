//! loopd's memoryd client: one frame out, one frame back, on a fresh connection to
//! `memory.socket`, every step bounded by a timeout so a stuck memoryd can delay a turn
//! by seconds at most. It serves the `recall` tool (`recall.rs`), `/recall`, `/status`,
//! the nudge after each turn, and `/forget`. memoryd being down is never a turn failure.

use nix::sys::socket::{self, sockopt, AddressFamily, SockFlag, SockType, UnixAddr};
use nix::sys::time::{TimeVal, TimeValLike};
use proto::config::Memory;
use proto::frame::{read_frame, write_frame, FrameError};
use proto::memory::{render_hits, Hit, MemoryStatus, Request, Response};
use std::fmt;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Connect, write and read timeout for a recall. memoryd answers from its index in
/// milliseconds after catching up on new log lines; seconds mean it is stuck.
pub const RECALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Timeout for the nudge after a turn and the `/status` probe: both are courtesies, and
/// nothing waits on them for long.
pub const NUDGE_TIMEOUT: Duration = Duration::from_secs(2);

/// Hits asked for per recall. Each hit is a message or summary; eight of them is a
/// useful page of memory without flooding the model's context.
pub const RECALL_LIMIT: u32 = 8;

#[derive(Debug)]
pub enum MemoryError {
    Connect {
        path: PathBuf,
        source: nix::Error,
    },
    /// A step ran into its socket timeout; the words say which, with the timeout, rather
    /// than "Resource temporarily unavailable (os error 11)".
    Timeout {
        what: &'static str,
        after: Duration,
    },
    Frame(FrameError),
    Refused(String),
    Unexpected(&'static str),
}

impl fmt::Display for MemoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemoryError::Connect { path, source } => {
                write!(f, "connect {}: {}", path.display(), source.desc())
            }
            MemoryError::Timeout { what, after } => {
                write!(f, "memoryd did not {what} within {} s", after.as_secs_f64())
            }
            MemoryError::Frame(e) => write!(f, "{e}"),
            MemoryError::Refused(m) => write!(f, "memoryd: {m}"),
            MemoryError::Unexpected(what) => write!(f, "memoryd answered {what}"),
        }
    }
}

impl std::error::Error for MemoryError {}

/// Connects with the send timeout already set, which on a Unix socket also bounds the
/// `connect` itself (a full backlog would otherwise block it).
fn connect(path: &Path, timeout: Duration) -> Result<UnixStream, MemoryError> {
    let err = |source| MemoryError::Connect {
        path: path.to_path_buf(),
        source,
    };
    let fd = socket::socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(err)?;
    let tv = TimeVal::milliseconds(i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX));
    socket::setsockopt(&fd, sockopt::SendTimeout, &tv).map_err(err)?;
    socket::setsockopt(&fd, sockopt::ReceiveTimeout, &tv).map_err(err)?;
    let addr = UnixAddr::new(path).map_err(err)?;
    match socket::connect(fd.as_raw_fd(), &addr) {
        // A full listen backlog: the send timeout ran out while connect waited.
        Err(nix::Error::EAGAIN) => Err(MemoryError::Timeout {
            what: "accept the connection",
            after: timeout,
        }),
        Err(e) => Err(err(e)),
        Ok(()) => Ok(UnixStream::from(fd)),
    }
}

/// A frame error, with a socket timeout named as one.
fn frame_error(e: FrameError, what: &'static str, after: Duration) -> MemoryError {
    match &e {
        FrameError::Io(io)
            if matches!(
                io.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            MemoryError::Timeout { what, after }
        }
        _ => MemoryError::Frame(e),
    }
}

/// Sends one request and reads one response.
pub fn ask(socket: &Path, request: &Request, timeout: Duration) -> Result<Response, MemoryError> {
    let mut stream = connect(socket, timeout)?;
    write_frame(&mut stream, request).map_err(|e| frame_error(e, "take the request", timeout))?;
    read_frame(&mut stream).map_err(|e| frame_error(e, "answer", timeout))
}

pub fn recall(cfg: &Memory, query: &str) -> Result<Vec<Hit>, MemoryError> {
    recall_at_most(cfg, query, RECALL_LIMIT)
}

/// A recall of at most `limit` hits.
pub fn recall_at_most(cfg: &Memory, query: &str, limit: u32) -> Result<Vec<Hit>, MemoryError> {
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
pub const FORGET_TIMEOUT: Duration = Duration::from_secs(60);

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
