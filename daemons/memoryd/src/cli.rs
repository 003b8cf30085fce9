//! `memoryd recall [--config PATH] QUERY…`: the same recall loopd makes, from a shell. It
//! goes through memoryd's socket like any client; the daemon alone owns the index.

use plumbing::dial::DialError;
use proto::config::Config;
use proto::frame::{read_frame, write_frame, FrameError};
use proto::memory::{render_hits_for_person, Request, Response};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Hits shown on the command line: a screenful, the best first.
pub const CLI_LIMIT: u32 = 10;

/// How long to wait for memoryd, at each step: connecting, sending, reading. A recall first catches up with the logs, which after a
/// long outage can take a while; past this the daemon is stuck, not busy.
pub const CLI_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug)]
pub enum CliError {
    /// Connecting, sending or reading the answer failed or ran out of time.
    Exchange {
        socket: PathBuf,
        source: DialError<FrameError>,
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
            CliError::Exchange {
                socket,
                source: DialError::Connect { source, .. },
            } => write!(
                f,
                "cannot reach memoryd at {}: {} (is it running?)",
                socket.display(),
                std::io::Error::from(*source)
            ),
            CliError::Exchange {
                socket,
                source:
                    DialError::Timeout {
                        error: None, after, ..
                    },
            } => write!(
                f,
                "cannot reach memoryd at {}: it took no connection within {} s (is it stuck?)",
                socket.display(),
                after.as_secs_f64()
            ),
            CliError::Exchange {
                socket,
                source: DialError::Timeout { step, after, .. },
            } => write!(
                f,
                "memoryd at {} did not {step} within {} s (is it stuck?)",
                socket.display(),
                after.as_secs_f64()
            ),
            CliError::Exchange {
                socket,
                source: DialError::Failed { error: source, .. },
            } => write!(f, "talking to memoryd at {}: {source}", socket.display()),
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
    let socket = &cfg.memory.socket;
    let request = Request::Recall {
        query: words.join(" "),
        max_class: cfg.memory.max_class,
        limit: CLI_LIMIT,
    };
    let response = plumbing::dial::exchange(
        socket,
        CLI_TIMEOUT,
        |s| write_frame(s, &request),
        read_frame,
        FrameError::io,
    )
    .map_err(|source| CliError::Exchange {
        socket: socket.clone(),
        source,
    })?;
    match response {
        Response::Hits(hits) => Ok(render_hits_for_person(&hits)),
        Response::Error { message } => Err(CliError::Refused { message }),
        Response::Status(_) | Response::Forgot { .. } => Err(CliError::Unexpected),
    }
}
