//! memoryd: reads loopd's session logs, keeps an SQLite FTS5 index of them, and answers
//! recall queries in frames on its own socket (SPEC §6, §7).
//!
//! `index` owns the database and everything about what is in it; `embed` the sentence
//! vectors beside it (model, worker thread, store, backfill); `hybrid` fuses the two
//! rankings for a recall; `service` is the frame server on plumbing's poll loop; `cli` is
//! `memoryd recall`; `query` makes free text safe for FTS5; `hooks` holds the test-only environment switches. Small files (heads,
//! the config) are read through `plumbing::bounded`, so they can neither block the loop
//! nor take unbounded memory.

pub mod cli;
pub mod embed;
pub mod hooks;
pub mod hybrid;
pub mod index;
pub mod query;
pub mod service;

use index::{Index, IndexError};
use plumbing::listen::{self, ListenError};
use plumbing::{Limits, Server};
use proto::config::{Config, ConfigError, DEFAULT_CONFIG};
use std::fmt;
use std::io::Write;
use std::time::Duration;

/// Clients served at once. loopd holds one connection per recall; the CLI one more. The
/// rest of this headroom is for bursts; past it a client is refused, not queued forever.
pub const MAX_CLIENTS: usize = 256;

/// A whole frame plus its header is the most a client may have half-sent.
pub const MAX_INPUT: usize = proto::frame::MAX_FRAME as usize + proto::frame::HEADER;

/// Responses queued for one client that is not reading: four of the largest frames.
pub const MAX_OUTPUT: usize = 4 * MAX_INPUT;

/// How long half a frame may wait for the rest. A local peer sends a frame in one write;
/// ten seconds of silence in the middle means it is stuck or hostile. Tests shorten it
/// with `BOXMAKER_MEMORYD_PARTIAL_TIMEOUT_MS` (see `hooks`).
pub const PARTIAL_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection may sit idle. loopd connects per request, so an idle client is
/// a leak on its side, and closing it returns the slot.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Debug)]
pub enum MainError {
    Args(String),
    Config(ConfigError),
    Index(IndexError),
    Listen(ListenError),
    Serve(std::io::Error),
    Recall(cli::CliError),
}

impl fmt::Display for MainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MainError::Args(m) => write!(f, "usage: memoryd [--config PATH] [recall QUERY…]: {m}"),
            MainError::Config(e) => write!(f, "config: {e}"),
            MainError::Index(e) => write!(f, "opening the index: {e}"),
            MainError::Listen(e) => write!(f, "listen: {e}"),
            MainError::Serve(e) => write!(f, "poll loop: {e}"),
            MainError::Recall(e) => write!(f, "recall: {e}"),
        }
    }
}

impl std::error::Error for MainError {}

pub fn load_config(path: &std::path::Path) -> Result<Config, ConfigError> {
    Config::load(path, plumbing::bounded::read_text)
}

pub fn main_with(argv: impl IntoIterator<Item = String>) -> Result<(), MainError> {
    let args = plumbing::args::parse(argv, DEFAULT_CONFIG).map_err(MainError::Args)?;
    match args.rest.split_first() {
        None => {
            let cfg = load_config(&args.config).map_err(MainError::Config)?;
            serve(args.config, cfg)
        }
        Some((cmd, words)) if cmd == "recall" => {
            if words.is_empty() {
                return Err(MainError::Args("recall needs a query".into()));
            }
            let cfg = load_config(&args.config).map_err(MainError::Config)?;
            let text = cli::recall(&cfg, words).map_err(MainError::Recall)?;
            // A reader that went away (`| head`) has all it wanted; that is not an error.
            match std::io::stdout().lock().write_all(text.as_bytes()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    Err(MainError::Recall(cli::CliError::Print(e)))
                }
                _ => Ok(()),
            }
        }
        Some((word, _)) => Err(MainError::Args(format!("unknown command {word:?}"))),
    }
}

fn serve(config_path: std::path::PathBuf, cfg: Config) -> Result<(), MainError> {
    let mut index = Index::open(&cfg.state_dir, cfg.memory.max_class).map_err(MainError::Index)?;
    index.set_kill_after_rows(hooks::kill_after_rows());
    let (listener, origin) = listen::listener(&cfg.memory.socket).map_err(MainError::Listen)?;
    plumbing::info!(
        "listening ({origin:?}); index {}",
        index.db_path().display()
    );
    let limits = Limits {
        max_clients: MAX_CLIENTS,
        max_input: MAX_INPUT,
        max_output: MAX_OUTPUT,
        partial_timeout: hooks::partial_timeout().unwrap_or(PARTIAL_TIMEOUT),
        idle_timeout: Some(IDLE_TIMEOUT),
    };
    let mut server = Server::new(listener, limits).map_err(MainError::Serve)?;
    let mut service = service::FrameService::new(config_path, cfg, index);
    if let Some(chunks) = hooks::request_chunks() {
        service.set_request_chunks(chunks);
    }
    server.run(&mut service).map_err(MainError::Serve)
}
