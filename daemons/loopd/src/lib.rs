//! loopd: holds the conversation. It takes the owner's lines on the channel socket, runs
//! turns against llama.cpp on one worker thread, and writes every record to the session
//! log before anyone is told it happened.

pub(crate) mod channel;
pub(crate) mod engine;
pub(crate) mod heartbeat;
pub mod limits;
pub(crate) mod matrix;
pub(crate) mod redactions;
pub(crate) mod worker;

use conversation::{forget, inbox, prompts, status, testhook};
use plumbing::listen::{self, ListenError};
use plumbing::Server;
use proto::config::{Config, ConfigError, DEFAULT_CONFIG};
use std::fmt;
use std::sync::Arc;

#[derive(Debug)]
pub enum MainError {
    Args(String),
    Config(ConfigError),
    Listen(ListenError),
    Prompt(prompts::PromptError),
    Start(String),
    /// The reminders file cannot be read: starting with an empty book would drop them.
    Reminders(remind::BookError),
    /// The inbox file cannot be read: starting with an empty one would drop what waits.
    Inbox(sessions::numbered::StoreError),
    Serve(std::io::Error),
}

impl fmt::Display for MainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MainError::Args(m) => write!(f, "usage: loopd [--config PATH]: {m}"),
            MainError::Config(e) => write!(f, "config: {e}"),
            MainError::Listen(e) => write!(f, "listen: {e}"),
            MainError::Prompt(e) => e.fmt(f),
            MainError::Start(m) => write!(f, "start: {m}"),
            MainError::Reminders(e) => write!(f, "start: {e}"),
            MainError::Inbox(e) => write!(f, "start: {e}"),
            MainError::Serve(e) => write!(f, "poll loop: {e}"),
        }
    }
}

impl std::error::Error for MainError {}

pub fn main_with(argv: impl IntoIterator<Item = String>) -> Result<(), MainError> {
    let args = plumbing::args::parse(argv, DEFAULT_CONFIG).map_err(MainError::Args)?;
    if let Some(word) = args.rest.first() {
        return Err(MainError::Args(format!("unexpected argument {word:?}")));
    }
    let cfg = Arc::new(
        Config::load(&args.config, plumbing::bounded::read_text).map_err(MainError::Config)?,
    );
    prompts::check(&cfg).map_err(MainError::Prompt)?;
    testhook::warn_if_armed();
    sessions::leftovers::remove_all(&cfg.sessions_dir());
    let (listener, origin) = listen::listener(&cfg.channel.socket).map_err(MainError::Listen)?;
    plumbing::info!(
        "listening ({origin:?}); session {}, llama.cpp at {}, state in {}",
        cfg.session,
        cfg.llama.url,
        cfg.state_dir.display()
    );
    let mut server = Server::new(listener, limits::channel()).map_err(MainError::Serve)?;
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
    .map_err(|e| MainError::Start(format!("cannot start the turn worker: {e}")))?;
    let work = channel::work::Threads {
        worker,
        llama,
        notify,
        board: board.clone(),
    };
    let mail = channel::broadcast::Mail::new(reminders, inbox, Some(server.waker()));
    let mut service =
        channel::Channel::new(args.config, Arc::clone(&cfg), work, events_rx, board, mail)
            .map_err(MainError::Start)?;
    if cfg.matrix.on() {
        // The store first: a broken one is an error at start, never an empty start that
        // would answer lines again or lose what waits to be sent.
        let store = matrix::store::Store::load(&cfg.state_dir).map_err(MainError::Start)?;
        let link = matrix::start(&cfg.matrix, cfg.state_dir.clone(), server.waker())
            .map_err(|e| MainError::Start(format!("cannot start the matrix threads: {e}")))?;
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
    server.run(&mut service).map_err(MainError::Serve)
}
