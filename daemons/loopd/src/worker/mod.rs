//! The one worker thread: it owns the open sessions and runs every turn, one at a time in
//! arrival order, so turns of a session never overlap. Jobs come in on an mpsc channel;
//! what the client should see goes back as `Event`s on another, each followed by a poke
//! of the poll loop's `mio::Waker`. The poll loop never waits on the worker.
//!
//! A turn's reply block ends (`Event::Done`) as soon as its answer is complete; the
//! after-turn work (`Engine::after`) follows, announced as `Event::Waiting` so lines that
//! arrive meanwhile are told what they wait for. While idle the worker saves the main
//! slot when `engine::keeper` asks it to.

mod command;
mod failure;
mod forget;
mod forget_honcho;
mod forget_list;
mod forget_places;
mod open;
mod report;

use crate::engine::Engine;
use conversation::open_session::Session;
use conversation::status::{Board, SessionView};
use mio::Waker;
use open::Sessions;
use proto::config::Config;
use proto::SessionId;
use report::Waiting;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;

/// Sessions kept open in memory at once. Each holds its epoch's records; a person uses
/// a handful of sessions, and one past this closes the least recently used (it is
/// reopened from disk when next used).
pub(crate) const MAX_OPEN_SESSIONS: usize = 16;

pub(crate) type JobId = u64;

/// A job's last words: the rest of its reply, or what went wrong in words. Nothing below
/// the channel writes `error: `: the channel renders a failure, in one place
/// (`channel::reply::Part::Error`), so a script can tell failures apart by that prefix
/// and no producer can forget it or write it twice.
pub(crate) type Reply = Result<String, Failure>;

pub(crate) use command::Command;
pub(crate) use failure::Failure;

pub(crate) enum Job {
    /// What the owner asked in `session` (a line to answer, or a command that acts on a
    /// session), for the client waiting on job `id`; `from`: the Matrix event the line was.
    Asked {
        id: JobId,
        session: SessionId,
        from: Option<proto::FromMatrix>,
        command: Command,
    },
    /// A reloaded configuration, used from the next job on: the channel's own `Arc`,
    /// shared, not copied.
    Reload(Arc<Config>),
    /// Run a heartbeat turn in `session` (`crate::heartbeat`).
    Heartbeat { session: SessionId },
    /// Log `text` as a `note` in `session`: a reminder set or delivered, an inbox message
    /// delivered or not handed to the notify command (docs/reminders.md).
    Note { session: SessionId, text: String },
}

impl Job {
    /// The job a client waits on, if any: heartbeats, notes and reloads have none.
    pub(crate) fn id(&self) -> Option<JobId> {
        match self {
            Job::Asked { id, .. } => Some(*id),
            Job::Reload(_) | Job::Heartbeat { .. } | Job::Note { .. } => None,
        }
    }
}

/// What the client asking job `id` should see.
#[derive(Debug)]
pub(crate) enum Event {
    Text {
        id: JobId,
        text: String,
    },
    Activity {
        id: JobId,
        line: String,
    },
    /// A recalled hit's header for `/recall` (docs/channel.md, 'Quoted text').
    HitHeader {
        id: JobId,
        tainted: bool,
        session: String,
        time: String,
    },
    /// The job is over: the rest of its reply text (may be empty), or what went wrong.
    Done {
        id: JobId,
        reply: Reply,
    },
    /// A heartbeat ended; it belongs to no client's job.
    Heartbeat(crate::heartbeat::beat::Beat),
    /// The worker started after-turn work (`Some`, in words for a `· ` line) that the
    /// next job waits for, or finished it (`None`).
    Waiting(Option<String>),
    /// `/forget` removed text from the turns of these Matrix events (owner's lines): the
    /// events and loopd's replies to them are to be redacted (docs/matrix.md). The second
    /// field is the room event that asked for the removal, when a room did: its command
    /// and answer stay, since the answer says what was done.
    Redact(Vec<String>, Option<String>),
}

/// Sends events to the poll loop and wakes it.
#[derive(Clone)]
pub(crate) struct Notifier {
    tx: Sender<Event>,
    waker: Arc<Waker>,
}

impl Notifier {
    pub(crate) fn new(tx: Sender<Event>, waker: Arc<Waker>) -> Notifier {
        Notifier { tx, waker }
    }

    pub(crate) fn send(&self, event: Event) {
        // The receiver lives as long as the poll loop; once it is gone nobody is left to
        // tell, so a failed send is dropped.
        if self.tx.send(event).is_ok() {
            self.wake();
        }
    }

    /// Wakes the poll loop without an event (the worker went idle).
    pub(crate) fn wake(&self) {
        if let Err(e) = self.waker.wake() {
            plumbing::error!("waking the poll loop: {e}");
        }
    }

    pub(crate) fn done(&self, id: JobId, reply: Reply) {
        self.send(Event::Done { id, reply });
    }
}

pub(crate) struct Worker {
    jobs: Sender<Job>,
    /// Jobs submitted and not yet finished. Only the poll loop submits, so when it reads
    /// zero nothing is queued or running, and nothing can be until it submits again.
    pending: Arc<AtomicUsize>,
}

impl Worker {
    pub(crate) fn spawn(
        cfg: Arc<Config>,
        llama: llama::Client,
        board: Board,
        notify: Notifier,
        mail: conversation::forget::mail::Mail,
    ) -> std::io::Result<Worker> {
        let (jobs, rx) = std::sync::mpsc::channel();
        let pending = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&pending);
        std::thread::Builder::new()
            .name("turns".into())
            .spawn(move || run(cfg, llama, board, notify, mail, rx, &count))?;
        Ok(Worker { jobs, pending })
    }

    /// Queues a job; false when the worker thread is gone.
    pub(crate) fn submit(&self, job: Job) -> bool {
        self.pending.fetch_add(1, Ordering::SeqCst);
        let sent = self.jobs.send(job).is_ok();
        if !sent {
            self.pending.fetch_sub(1, Ordering::SeqCst);
        }
        sent
    }

    /// True when no job is queued or running.
    pub(crate) fn idle(&self) -> bool {
        self.pending.load(Ordering::SeqCst) == 0
    }
}

struct State {
    /// The configuration, the llama.cpp client and the main slot: every model call.
    engine: Engine,
    board: Board,
    notify: Notifier,
    sessions: Sessions,
    /// Reports finished owner turns to Honcho, when `honcho.url` is set.
    honcho: Option<honcho::Reporter>,
    /// Each session's last `/forget` list, which `/forget N…` picks from.
    forgets: forget::Lists,
    /// The reminders and the inbox, which `/forget` reaches too.
    mail: conversation::forget::mail::Mail,
}

fn run(
    cfg: Arc<Config>,
    llama: llama::Client,
    board: Board,
    notify: Notifier,
    mail: conversation::forget::mail::Mail,
    jobs: Receiver<Job>,
    pending: &AtomicUsize,
) {
    let honcho = honcho::Reporter::start(&cfg, conversation::forget::plan::pending);
    if honcho.is_some() {
        plumbing::info!("honcho: reporting finished turns to {}", cfg.honcho.url);
    }
    board.set_honcho(honcho.as_ref().map(honcho::Reporter::status));
    let mut state = State {
        engine: Engine::new(cfg, llama).with_reminders(mail.reminders.clone()),
        mail,
        board,
        notify,
        sessions: Sessions::default(),
        honcho,
        forgets: forget::Lists::default(),
    };
    check_slots(&state.engine);
    crate::engine::check_tools(state.engine.ctx().client);
    state.finish_forgets();
    if let Ok(default) = SessionId::parse(&state.engine.cfg().session) {
        state.open(&default);
    }
    while let Some(job) = state.next_job(&jobs) {
        let id = job.id();
        let beat = matches!(job, Job::Heartbeat { .. });
        // A bug in one job must not take every later turn with it: report it, forget
        // the in-memory sessions (they are reopened from disk), and go on.
        if catch_unwind(AssertUnwindSafe(|| state.handle(job))).is_err() {
            state.panicked(id, beat);
        }
        // The last job done: a heartbeat waiting for the worker may start now.
        if pending.fetch_sub(1, Ordering::SeqCst) == 1 {
            state.notify.wake();
        }
    }
}

/// Checks the server against what loopd needs (docs/turn.md, docs/config.md): each slot's context is
/// `expect.n_ctx`, slots `slots.main` and `slots.background` exist, and there are no
/// more than two. More slots split the same memory into smaller contexts, or, with
/// llama.cpp's default of four slots over one unified KV cache, let background work and
/// other clients evict the conversation. Each finding is a warning with its fix; a
/// server that is down is only a warning too: it may come up later, and turns retry.
fn check_slots(engine: &Engine) {
    let ctx = engine.ctx();
    let (client, cfg) = (ctx.client, ctx.cfg);
    match client.slot_list() {
        Ok(list) => {
            let slots: Vec<(u64, u64)> = list.iter().map(|s| (s.id, s.n_ctx)).collect();
            for line in llama::check::findings(&slots, cfg) {
                plumbing::warn!("llama.cpp at {}: {line}", client.base_url());
            }
            plumbing::info!("llama.cpp at {}: {} slots", client.base_url(), slots.len());
        }
        Err(e) => plumbing::warn!(
            "llama.cpp at {} is not answering at start ({e}); starting anyway",
            client.base_url()
        ),
    }
}

impl State {
    /// The next job, saving the main slot meanwhile when the keeper's idle period passes
    /// first; `None` once the channel is gone.
    fn next_job(&mut self, jobs: &Receiver<Job>) -> Option<Job> {
        loop {
            let Some(idle) = self.engine.idle_timeout() else {
                return jobs.recv().ok();
            };
            match jobs.recv_timeout(idle) {
                Ok(job) => return Some(job),
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(save) = self.engine.save_idle() {
                        self.board.slot_saved(save);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// Job `id` (a heartbeat when `beat`) panicked: whatever it held in memory is let go
    /// and whoever waited on it is told.
    fn panicked(&mut self, id: Option<JobId>, beat: bool) {
        plumbing::error!("a job panicked; reopening sessions from disk");
        self.sessions.let_go_all();
        // What the slot holds is unknown now.
        self.engine.slot_unknown();
        // It may have panicked inside after-turn work: lines wait for nothing now.
        self.notify.send(Event::Waiting(None));
        if let Some(id) = id {
            self.notify.done(id, Err(Failure::Internal));
        }
        if beat {
            self.notify
                .send(Event::Heartbeat(crate::heartbeat::beat::Beat::Quiet));
        }
    }

    fn handle(&mut self, job: Job) {
        match job {
            Job::Asked {
                id,
                session,
                from,
                command,
            } => self.apply(id, &session, from, command),
            Job::Reload(cfg) => {
                self.reload_honcho(&cfg);
                // Open sessions hold nothing of the configuration: their label reads the
                // owner's class from it when asked.
                self.engine.reload(cfg);
            }
            Job::Heartbeat { session } => self.heartbeat(&session),
            Job::Note { session, text } => self.note(&session, text),
        }
    }

    /// A changed `[honcho]` (or owner's class, which labels what it reports) restarts the
    /// reporter: the old one is stopped first (at most one request's timeout), so two
    /// never work on the same cursors at once.
    fn reload_honcho(&mut self, cfg: &Arc<Config>) {
        let now = self.engine.cfg();
        if cfg.honcho == now.honcho && cfg.channel.owner_class == now.channel.owner_class {
            // The owner may have fixed what held reports back (a token file, Honcho).
            if let Some(r) = &self.honcho {
                r.retry_now();
            }
            return;
        }
        if let Some(old) = self.honcho.take() {
            old.stop();
        }
        self.honcho = honcho::Reporter::start(cfg, conversation::forget::plan::pending);
        self.board
            .set_honcho(self.honcho.as_ref().map(honcho::Reporter::status));
        match &self.honcho {
            Some(_) => plumbing::info!("honcho: reporting finished turns to {}", cfg.honcho.url),
            None => plumbing::info!("honcho: reporting is off"),
        }
    }

    /// Runs a heartbeat turn and hands what it came to back to the poll loop, then the
    /// after-turn work.
    fn heartbeat(&mut self, session_id: &SessionId) {
        let State {
            engine,
            board,
            notify,
            sessions,
            ..
        } = self;
        match sessions.get_or_create(engine.cfg(), session_id) {
            Ok(session) => {
                board.turn_started(session_id.as_str());
                let (beat, answered) = crate::heartbeat::beat::run(engine, session);
                board.set(
                    session_id.as_str(),
                    SessionView::of(session, engine.cfg().channel.owner_class),
                );
                // The beat goes out before the after-turn work, like a reply's `.`.
                notify.send(Event::Heartbeat(beat));
                after(engine, session, answered, notify, board);
                board.set(
                    session_id.as_str(),
                    SessionView::of(session, engine.cfg().channel.owner_class),
                );
                board.turn_ended();
            }
            Err(e) => {
                plumbing::error!("session {session_id}: heartbeat: {e}");
                board.set(session_id.as_str(), SessionView::Broken(e.to_string()));
                notify.send(Event::Heartbeat(crate::heartbeat::beat::Beat::Quiet));
            }
        }
    }

    /// Appends a `note` to `session` (created if new: a reminder may be its first event).
    fn note(&mut self, session_id: &SessionId, text: String) {
        let State {
            engine,
            board,
            sessions,
            ..
        } = self;
        let appended = sessions
            .get_or_create(engine.cfg(), session_id)
            .and_then(|session| {
                session.append(proto::Record::Note {
                    time: proto::time::now_rfc3339(),
                    text,
                })?;
                board.set(
                    session_id.as_str(),
                    SessionView::of(session, engine.cfg().channel.owner_class),
                );
                Ok(())
            });
        if let Err(e) = appended {
            plumbing::error!("session {session_id}: cannot log a note: {e}");
        }
    }

    /// Opens an existing session into memory (never creating one) and reports it.
    fn open(&mut self, id: &SessionId) -> SessionView {
        let view = self.sessions.open_existing(self.engine.cfg(), id);
        self.board.set(id.as_str(), view.clone());
        view
    }
}

/// The after-turn work of an answered turn (`Engine::after`), each step announced to the
/// poll loop as `Event::Waiting`; a turn that was not answered only nudges memoryd.
fn after(
    engine: &mut Engine,
    session: &mut Session,
    answered: bool,
    notify: &Notifier,
    board: &Board,
) {
    if !answered {
        engine.nudge(session);
        return;
    }
    let mut progress = Waiting {
        notify,
        board,
        said: false,
    };
    engine.after(session, &mut progress);
    if progress.said {
        board.after_turn_ended();
        notify.send(Event::Waiting(None));
    }
}
