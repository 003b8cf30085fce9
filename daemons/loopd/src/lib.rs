//! loopd: holds the conversation. It takes the owner's lines on the channel socket, runs
//! turns against llama.cpp on one worker thread, and writes every record to the session
//! log before anyone is told it happened.

pub(crate) mod allow;
pub(crate) mod channel;
pub(crate) mod compact;
pub(crate) mod engine;
pub(crate) mod forget;
pub(crate) mod heartbeat;
pub(crate) mod inbox;
pub(crate) mod memory;
pub(crate) mod open_session;
pub(crate) mod prompt;
pub(crate) mod prompts;
pub(crate) mod recall;
pub(crate) mod status;
pub(crate) mod testhook;
pub(crate) mod turn;
pub(crate) mod worker;

#[cfg(test)]
mod tests_honcho;

use plumbing::listen::{self, ListenError};
use plumbing::{Limits, Server};
use proto::config::{Config, ConfigError, DEFAULT_CONFIG};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Clients on the channel at once. One owner with a few terminals and scripts needs a
/// handful; 64 leaves room for bursts of scripted `socat` calls. When all are taken, the
/// connection quiet longest (`EVICT_QUIET`) gives its slot to the newcomer, so idle or
/// trickling connections cannot keep the owner out; when none is quiet the newcomer
/// reads one `error:` line saying so.
pub const MAX_CLIENTS: usize = 64;

/// The longest line a client may send (docs/channel.md). Longer lines get `error:` and are
/// discarded; the input buffer never holds more than this plus one read.
pub const MAX_LINE: usize = 64 * 1024;

/// What the poll loop may hold of one client's unconsumed input: a whole line, the `\r`
/// of a `\r\n` still waiting for its `\n`, and one byte to tell "too long" apart.
pub const MAX_INPUT: usize = MAX_LINE + 2;

/// Reply text queued for a client past which its next line is not started and its socket
/// not read until it reads (backpressure). A `/help` or a streamed answer is far less; a
/// script that pipes thousands of lines and reads as it goes never waits on this.
pub const MAX_OUTPUT: usize = 1024 * 1024;

/// Reply text queued for a client past which it is disconnected. Only the block in flight
/// can grow past `MAX_OUTPUT` (the model's text streams as it comes; the worker does not
/// wait for a reader), so this bounds one long answer to a client that stopped reading;
/// its turn still completes and is logged.
pub const HARD_OUTPUT: usize = 8 * 1024 * 1024;

/// How long a line may take to arrive whole, counted from its first byte. socat and
/// terminals send a line in one write when Enter is pressed, and scripts write faster;
/// a line still unfinished after this is a stuck or hostile peer holding a slot.
pub const LINE_DEADLINE: Duration = Duration::from_secs(30);

/// How long a connection may sit with nothing in or out and nothing in flight before it
/// is closed with an `error:` line. An hour keeps a terminal left open over lunch (and
/// the heartbeat replies it receives), and still returns slots that scripts leaked.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(3600);

/// How long replies may wait unread before the client is closed. A person who paused
/// their terminal has ten minutes; a client that stopped reading for good is let go.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(600);

/// How long a connection must have been quiet (nothing in or out, nothing in flight)
/// before a newcomer may take its slot when all `MAX_CLIENTS` are taken. A second is
/// far longer than the gap between a script's writes, so only an idle or trickling
/// connection is ever evicted, never one mid-exchange.
pub const EVICT_QUIET: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub enum MainError {
    Args(String),
    Config(ConfigError),
    Listen(ListenError),
    Prompt(prompts::PromptError),
    Start(String),
    /// The reminders file cannot be read: starting with an empty book would drop them.
    Reminders(remind::BookError),
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
    let limits = Limits {
        max_clients: MAX_CLIENTS,
        max_input: MAX_INPUT,
        max_output: MAX_OUTPUT,
        hard_output: HARD_OUTPUT,
        message_deadline: testhook::line_deadline().unwrap_or(LINE_DEADLINE),
        idle_timeout: IDLE_TIMEOUT,
        stall_timeout: STALL_TIMEOUT,
        evict_quiet: EVICT_QUIET,
    };
    let mut server = Server::new(listener, limits).map_err(MainError::Serve)?;
    let board = status::Board::default();
    let (events_tx, events_rx) = std::sync::mpsc::channel();
    let notify = worker::Notifier::new(events_tx, server.waker());
    let book = remind::Book::load(&cfg.state_dir).map_err(MainError::Reminders)?;
    let reminders = remind::Shared::new(book, Some(server.waker()));
    let inbox = inbox::Shared::new(inbox::Inbox::load(&cfg.state_dir).map_err(MainError::Start)?);
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
    let mut service = channel::Channel::new(args.config, cfg, work, events_rx, board, mail)
        .map_err(MainError::Start)?;
    server.run(&mut service).map_err(MainError::Serve)
}
