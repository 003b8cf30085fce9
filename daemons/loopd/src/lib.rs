//! loopd: holds the conversation. It takes the owner's lines on the channel socket, runs
//! turns against llama.cpp on one worker thread, and writes every record to the session
//! log before anyone is told it happened.

pub mod channel;
pub mod compact;
pub mod honcho;
pub mod tools;

use plumbing::listen::{self, ListenError};
use plumbing::{Limits, Server};
use proto::config::{Config, ConfigError, DEFAULT_CONFIG};
use std::fmt;
use std::time::Duration;

/// Clients on the channel at once. One owner with a few terminals and scripts needs a
/// handful; 64 leaves room for bursts of scripted `socat` calls.
pub const MAX_CLIENTS: usize = 64;

/// The longest line a client may send (SPEC §5). Longer lines get `error:` and are
/// discarded; the input buffer never holds more than this plus one read.
pub const MAX_LINE: usize = 64 * 1024;

/// Reply text queued for a client that is not reading. A long streamed answer is far less
/// than this; past it the client is disconnected (its turn still completes and is logged).
pub const MAX_OUTPUT: usize = 8 * 1024 * 1024;

/// How long half a line may sit with nothing more coming. A person typing into socat sends
/// whole lines, so a partial line only waits on a stuck script.
pub const PARTIAL_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Debug)]
pub enum MainError {
    Args(String),
    Config(ConfigError),
    Listen(ListenError),
    Serve(std::io::Error),
}

impl fmt::Display for MainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MainError::Args(m) => write!(f, "usage: loopd [--config PATH]: {m}"),
            MainError::Config(e) => write!(f, "config: {e}"),
            MainError::Listen(e) => write!(f, "listen: {e}"),
            MainError::Serve(e) => write!(f, "poll loop: {e}"),
        }
    }
}

impl std::error::Error for MainError {}

pub fn load_config(path: &std::path::Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    Config::parse(&text, path)
}

pub fn main_with(argv: impl IntoIterator<Item = String>) -> Result<(), MainError> {
    let args = plumbing::args::parse(argv, DEFAULT_CONFIG).map_err(MainError::Args)?;
    if let Some(word) = args.rest.first() {
        return Err(MainError::Args(format!("unexpected argument {word:?}")));
    }
    let cfg = load_config(&args.config).map_err(MainError::Config)?;
    let (listener, origin) = listen::listener(&cfg.channel.socket).map_err(MainError::Listen)?;
    plumbing::info!("listening ({origin:?})");
    let limits = Limits {
        max_clients: MAX_CLIENTS,
        max_input: MAX_LINE + 1,
        max_output: MAX_OUTPUT,
        partial_timeout: PARTIAL_TIMEOUT,
        idle_timeout: None,
    };
    let mut server = Server::new(listener, limits).map_err(MainError::Serve)?;
    let mut service = channel::Channel::new(args.config, cfg);
    server.run(&mut service).map_err(MainError::Serve)
}
