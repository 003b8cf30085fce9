//! loopd: holds the conversation. It takes the owner's lines on the channel socket, runs
//! turns against llama.cpp on one worker thread, and writes every record to the session
//! log before anyone is told it happened.

pub(crate) mod channel;
pub(crate) mod engine;
pub(crate) mod heartbeat;
pub mod limits;
pub mod matrix;
pub(crate) mod redactions;
pub mod state_lock;
pub(crate) mod worker;

use conversation::{forget, inbox, prompts, status, testhook};
use plumbing::args::ArgsError;
use plumbing::daemon::{self, DaemonError};
use proto::config::{Config, ConfigError, DEFAULT_CONFIG};
use proto::session_id::BadSessionId;
use std::fmt;
use std::sync::Arc;

/// Why loopd did not start, or why its poll loop ended: one line in the journal, and a
/// failed exit.
#[derive(Debug)]
pub enum MainError {
    Args(ArgsError),
    /// loopd takes no words after its options.
    Unexpected(String),
    /// `--help`, and the usage could not be printed.
    Help(std::io::Error),
    Config(ConfigError),
    /// The state directory is another loopd's, or cannot be locked: two writers would
    /// lose each other's records (docs/systemd.md, 'One loopd per state directory').
    StateDir(state_lock::LockError),
    /// The listening socket or the poll loop.
    Daemon(DaemonError),
    Prompt(prompts::PromptError),
    /// The configured session is not a session id.
    Session(BadSessionId),
    /// The turn worker's thread could not be started.
    Worker(std::io::Error),
    /// The Matrix store cannot be read: starting empty would answer lines again or lose
    /// what waits to be sent.
    MatrixStore(matrix::store::StoreError),
    /// The Matrix channel's threads could not be started.
    MatrixThreads(std::io::Error),
    /// The reminders file cannot be read: starting with an empty book would drop them.
    Reminders(remind::BookError),
    /// The inbox file cannot be read: starting with an empty one would drop what waits.
    Inbox(sessions::numbered::StoreError),
}

/// loopd's command line: printed for `--help`, and at the start of a usage error.
pub const USAGE: &str = "usage: loopd [--config PATH]";

impl fmt::Display for MainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MainError::Args(e) => write!(f, "{USAGE}: {e}"),
            MainError::Unexpected(word) => write!(f, "{USAGE}: unexpected argument {word:?}"),
            MainError::Help(e) => write!(f, "cannot print the usage: {e}"),
            MainError::Config(e) => write!(f, "config: {e}"),
            MainError::StateDir(e) => write!(f, "start: {e}"),
            MainError::Daemon(e) => e.fmt(f),
            MainError::Prompt(e) => e.fmt(f),
            MainError::Session(e) => write!(f, "start: {e}"),
            MainError::Worker(e) => write!(f, "start: cannot start the turn worker: {e}"),
            MainError::MatrixStore(e) => write!(f, "start: {e}"),
            MainError::MatrixThreads(e) => write!(f, "start: cannot start the matrix threads: {e}"),
            MainError::Reminders(e) => write!(f, "start: {e}"),
            MainError::Inbox(e) => write!(f, "start: {e}"),
        }
    }
}

impl std::error::Error for MainError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MainError::Args(e) => Some(e),
            MainError::Unexpected(_) => None,
            MainError::Help(e) => Some(e),
            MainError::Config(e) => Some(e),
            MainError::StateDir(e) => Some(e),
            MainError::Daemon(e) => Some(e),
            MainError::Prompt(e) => Some(e),
            MainError::Session(e) => Some(e),
            MainError::Worker(e) | MainError::MatrixThreads(e) => Some(e),
            MainError::MatrixStore(e) => Some(e),
            MainError::Reminders(e) => Some(e),
            MainError::Inbox(e) => Some(e),
        }
    }
}

pub fn main_with(argv: impl IntoIterator<Item = String>) -> Result<(), MainError> {
    let args = plumbing::args::parse(argv, DEFAULT_CONFIG).map_err(MainError::Args)?;
    if args.help {
        return plumbing::args::print_usage(USAGE).map_err(MainError::Help);
    }
    if let Some(word) = args.rest.first() {
        return Err(MainError::Unexpected(word.clone()));
    }
    let cfg = Arc::new(
        Config::load(&args.config, plumbing::bounded::read_text).map_err(MainError::Config)?,
    );
    prompts::check(&cfg).map_err(MainError::Prompt)?;
    testhook::warn_if_armed();
    // Before anything in the state directory or the socket is touched: a second loopd
    // must not remove the first one's files in flight, nor take its socket.
    let state_lock = state_lock::take(&cfg.state_dir).map_err(MainError::StateDir)?;
    sessions::leftovers::remove_all(&cfg.sessions_dir());
    let what = format!(
        "session {}, llama.cpp at {}, state in {}",
        cfg.session,
        cfg.llama.url,
        cfg.state_dir.display()
    );
    let mut server =
        daemon::listen(&cfg.channel.socket, limits::channel(), &what).map_err(MainError::Daemon)?;
    let board = status::Board::default();
    let (events_tx, events_rx) = std::sync::mpsc::channel();
    let notify = worker::Notifier::new(events_tx, server.waker());
    let book = remind::Book::load(&cfg.state_dir).map_err(MainError::Reminders)?;
    let reminders = remind::Shared::new(book, Some(server.waker()));
    let inbox = inbox::Shared::new(inbox::Inbox::load(&cfg.state_dir).map_err(MainError::Inbox)?);
    // The daemon's one llama.cpp client: the engine's for every model call, and
    // `/status`'s for `/health` (the llama crate's `lib.rs` says what a clone shares).
    let llama = llama::Client::new(&cfg.llama);
    let worker = worker::Worker::spawn(
        Arc::clone(&cfg),
        llama.clone(),
        board.clone(),
        notify.clone(),
        forget::mail::Mail {
            reminders: reminders.clone(),
            inbox: inbox.clone(),
        },
    )
    .map_err(MainError::Worker)?;
    let work = channel::work::Threads {
        worker,
        llama,
        notify,
        board: board.clone(),
    };
    let mail = channel::broadcast::Mail::new(reminders, inbox, Some(server.waker()));
    let mut service =
        channel::Channel::new(args.config, Arc::clone(&cfg), work, events_rx, board, mail)
            .map_err(MainError::Session)?;
    if cfg.matrix.on() {
        // The store first: a broken one is an error at start, never an empty start that
        // would answer lines again or lose what waits to be sent.
        let store = matrix::store::Store::load(&cfg.state_dir).map_err(MainError::MatrixStore)?;
        let link = matrix::start(&cfg.matrix, cfg.state_dir.clone(), server.waker())
            .map_err(MainError::MatrixThreads)?;
        plumbing::info!(
            "matrix: {} as {}, owners {}",
            cfg.matrix.homeserver,
            cfg.matrix.user_id,
            cfg.matrix.owners.join(", ")
        );
        service.attach_matrix(link, store);
        // The first wake answers what a crash left waiting, whatever the homeserver says.
        if let Err(e) = server.waker().wake() {
            plumbing::error!("matrix: waking the poll loop: {e}");
        }
    }
    let served = daemon::serve(&mut server, &mut service).map_err(MainError::Daemon);
    state_lock.keep_until_exit();
    served
}
