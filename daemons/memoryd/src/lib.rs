//! memoryd: reads loopd's session logs, keeps an SQLite FTS5 index of them, and answers
//! recall queries in frames on its own socket (docs/memoryd.md).
//!
//! `index` owns the database and everything about what is in it; `embed` the sentence
//! vectors beside it (model, worker thread, store, backfill); `hybrid` fuses the two
//! rankings for a recall; `service` is the frame server on plumbing's poll loop; `cli` is
//! `memoryd recall`; `query` makes free text safe for FTS5; `hooks` holds the test-only environment switches. Small files (heads,
//! the config) are read through `plumbing::bounded`, so they can neither block the loop
//! nor take unbounded memory.

pub(crate) mod cli;
pub mod embed;
#[cfg(test)]
mod fixture;
pub(crate) mod hooks;
pub mod hybrid;
pub mod index;
pub mod query;
pub(crate) mod service;

use index::{Index, IndexError};
use plumbing::args::ArgsError;
use plumbing::daemon::{self, DaemonError};
use plumbing::Limits;
use proto::config::{Config, ConfigError, DEFAULT_CONFIG};
use std::fmt;
use std::io::Write;
use std::time::Duration;

/// Clients served at once. loopd holds one connection per recall, nudge or status probe;
/// the CLI one more. The rest of this headroom is for bursts; past it the connection
/// quiet longest gives up its slot (`EVICT_QUIET`), and when none is quiet the newcomer
/// gets an `Error` frame and is closed, not queued forever.
pub const MAX_CLIENTS: usize = 256;

/// A whole frame plus its header is the most a client may have half-sent.
pub const MAX_INPUT: usize = proto::frame::MAX_FRAME as usize + proto::frame::HEADER;

/// Answers queued for one client past which its next request is not answered (nor its
/// socket read) until it reads: one largest frame. The answer computed just before the
/// queue reached this is at most one more frame, so a client that never reads holds at
/// most two frames of answers, however many requests it wrote.
pub const MAX_OUTPUT: usize = MAX_INPUT;

/// Never reached by memoryd's own answers (see `MAX_OUTPUT`); the loop's last resort.
pub const HARD_OUTPUT: usize = MAX_OUTPUT + MAX_INPUT;

/// How long a frame may take to arrive whole, counted from its first byte. A local peer
/// sends a frame in one write; ten seconds means it is stuck or trickling on purpose,
/// and must not keep half a MiB and a slot. Tests shorten it with
/// `BOXMAKER_MEMORYD_PARTIAL_TIMEOUT_MS` (see `hooks`).
pub const FRAME_DEADLINE: Duration = Duration::from_secs(10);

/// How long a connection may sit with nothing in or out. loopd connects per request, so
/// an idle client is a leak on its side, and closing it returns the slot.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How long answers may wait unread. loopd reads within its own 5 s timeout; a client
/// that has read nothing for longer has gone or is holding memory on purpose.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection must have been quiet before a newcomer may take its slot when
/// all are taken. loopd's requests arrive in one write and are answered at once, so a
/// second of quiet means the peer is idle or trickling, never mid-request.
pub const EVICT_QUIET: Duration = Duration::from_secs(1);

/// Why memoryd did not start or `memoryd recall` did not answer, or why the poll loop
/// ended: one line in the journal (or on stderr), and a failed exit.
#[derive(Debug)]
pub enum MainError {
    Args(ArgsError),
    /// `memoryd recall` without a query.
    NoQuery,
    /// `--help`, and the usage could not be printed.
    Help(std::io::Error),
    /// A first word that is not a command memoryd knows.
    UnknownCommand(String),
    Config(ConfigError),
    Index(IndexError),
    /// The listening socket or the poll loop.
    Daemon(DaemonError),
    Recall(cli::CliError),
}

/// memoryd's command line: printed for `--help`, and at the start of a usage error.
pub const USAGE: &str = "usage: memoryd [--config PATH] [recall QUERY…]";

impl fmt::Display for MainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MainError::Args(e) => write!(f, "{USAGE}: {e}"),
            MainError::NoQuery => write!(f, "{USAGE}: recall needs a query"),
            MainError::Help(e) => write!(f, "cannot print the usage: {e}"),
            MainError::UnknownCommand(word) => write!(f, "{USAGE}: unknown command {word:?}"),
            MainError::Config(e) => write!(f, "config: {e}"),
            MainError::Index(e) => write!(f, "opening the index: {e}"),
            MainError::Daemon(e) => e.fmt(f),
            MainError::Recall(e) => write!(f, "recall: {e}"),
        }
    }
}

impl std::error::Error for MainError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MainError::Args(e) => Some(e),
            MainError::NoQuery | MainError::UnknownCommand(_) => None,
            MainError::Help(e) => Some(e),
            MainError::Config(e) => Some(e),
            MainError::Index(e) => Some(e),
            MainError::Daemon(e) => Some(e),
            MainError::Recall(e) => Some(e),
        }
    }
}

pub fn main_with(argv: impl IntoIterator<Item = String>) -> Result<(), MainError> {
    let args = plumbing::args::parse(argv, DEFAULT_CONFIG).map_err(MainError::Args)?;
    if args.help {
        return plumbing::args::print_usage(USAGE).map_err(MainError::Help);
    }
    match args.rest.split_first() {
        None => {
            let cfg = Config::load(&args.config, plumbing::bounded::read_text)
                .map_err(MainError::Config)?;
            serve(args.config, cfg)
        }
        Some((cmd, words)) if cmd == "recall" => {
            if words.is_empty() {
                return Err(MainError::NoQuery);
            }
            let cfg = Config::load(&args.config, plumbing::bounded::read_text)
                .map_err(MainError::Config)?;
            let text = cli::recall(&cfg, words).map_err(MainError::Recall)?;
            // A reader that went away (`| head`) has all it wanted; that is not an error.
            match std::io::stdout().lock().write_all(text.as_bytes()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    Err(MainError::Recall(cli::CliError::Print(e)))
                }
                _ => Ok(()),
            }
        }
        Some((word, _)) => Err(MainError::UnknownCommand(word.clone())),
    }
}

fn serve(config_path: std::path::PathBuf, cfg: Config) -> Result<(), MainError> {
    let index = Index::open(&cfg.state_dir, cfg.memory.max_class)
        .map_err(MainError::Index)?
        .with_owner_class(cfg.channel.owner_class);
    let limits = Limits {
        max_clients: MAX_CLIENTS,
        max_input: MAX_INPUT,
        max_output: MAX_OUTPUT,
        hard_output: HARD_OUTPUT,
        message_deadline: hooks::partial_timeout().unwrap_or(FRAME_DEADLINE),
        idle_timeout: IDLE_TIMEOUT,
        stall_timeout: STALL_TIMEOUT,
        evict_quiet: EVICT_QUIET,
    };
    let what = format!("index {}", index.db_path().display());
    let mut server =
        daemon::listen(&cfg.memory.socket, limits, &what).map_err(MainError::Daemon)?;
    // Changed only by the test hook below.
    #[cfg_attr(not(feature = "testhooks"), allow(unused_mut))]
    let mut service = service::FrameService::new(config_path, cfg, index);
    #[cfg(feature = "testhooks")]
    if let Some(chunks) = hooks::request_chunks() {
        service.set_request_chunks(chunks);
    }
    daemon::serve(&mut server, &mut service).map_err(MainError::Daemon)
}
