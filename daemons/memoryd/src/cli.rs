//! `memoryd recall [--config PATH] QUERY…`: the same recall loopd makes, from a shell. It
//! goes through memoryd's socket like any client; the daemon alone owns the index.

use proto::config::Config;
use proto::frame::{read_frame, write_frame, FrameError};
use proto::memory::{render_hits, Request, Response};
use std::fmt;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

/// Hits shown on the command line: a screenful, the best first.
pub const CLI_LIMIT: u32 = 10;

/// How long to wait for memoryd. A recall first catches up with the logs, which after a
/// long outage can take a while; past this the daemon is stuck, not busy.
pub const CLI_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug)]
pub enum CliError {
    Unreachable {
        socket: PathBuf,
        source: std::io::Error,
    },
    Exchange {
        socket: PathBuf,
        source: FrameError,
    },
    Refused {
        message: String,
    },
    Unexpected,
    Print(std::io::Error),
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Unreachable { socket, source } => write!(
                f,
                "cannot reach memoryd at {}: {source} (is it running?)",
                socket.display()
            ),
            CliError::Exchange { socket, source } => {
                write!(f, "talking to memoryd at {}: {source}", socket.display())
            }
            CliError::Refused { message } => write!(f, "memoryd refused the recall: {message}"),
            CliError::Unexpected => f.write_str("memoryd answered a recall with something else"),
            CliError::Print(e) => write!(f, "writing the hits to stdout: {e}"),
        }
    }
}

impl std::error::Error for CliError {}

/// Asks memoryd for `words` joined by spaces, at the config's `max_class`, and returns
/// the hits rendered as loopd shows them (empty when nothing matched).
pub fn recall(cfg: &Config, words: &[String]) -> Result<String, CliError> {
    let socket = cfg.memory.socket.clone();
    let mut stream = UnixStream::connect(&socket).map_err(|source| CliError::Unreachable {
        socket: socket.clone(),
        source,
    })?;
    let exchange = |source| CliError::Exchange {
        socket: socket.clone(),
        source,
    };
    stream
        .set_read_timeout(Some(CLI_TIMEOUT))
        .and_then(|()| stream.set_write_timeout(Some(CLI_TIMEOUT)))
        .map_err(|e| exchange(FrameError::Io(e)))?;
    let request = Request::Recall {
        query: words.join(" "),
        max_class: cfg.memory.max_class,
        limit: CLI_LIMIT,
    };
    write_frame(&mut stream, &request).map_err(exchange)?;
    match read_frame(&mut stream).map_err(exchange)? {
        Response::Hits(hits) => Ok(render_hits(&hits)),
        Response::Error { message } => Err(CliError::Refused { message }),
        Response::Status(_) | Response::Forgot { .. } => Err(CliError::Unexpected),
    }
}
