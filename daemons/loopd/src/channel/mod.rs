//! The channel socket (docs/channel.md) as a `plumbing::Service`. Each connection's lines are
//! queued and answered strictly one at a time, in order: a line is not started until
//! the one before it has its whole reply block, so a script can pair lines and blocks.
//! Messages become turns on the worker; `/status` and `/recall` run on short threads;
//! the rest are answered on the spot. Replies stream back through `wake`. This file holds
//! the connections' queues and the jobs; plumbing's calls into the channel are `service`'s.

pub(crate) mod broadcast;
pub(crate) mod commands;
mod inbox_list;
pub(crate) mod lines;
pub(crate) mod probes;
pub(crate) mod push;
pub(crate) mod reload;
pub(crate) mod reminders;
pub(crate) mod reply;
pub(crate) mod rooms;
mod service;
pub(crate) mod unasked;
mod unsaved;
pub(crate) mod work;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_rooms;
#[cfg(test)]
mod tests_unsaved;

use crate::worker::{Event, Job, JobId};
use commands::Command;
use conversation::status::Board;
use lines::Framer;
use plumbing::{ConnId, Outbox};
use proto::config::Config;
use proto::SessionId;
use reply::{failed, whole, Block, Part};
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::Instant;
use work::{Probe, Work};

/// Lines one connection may have waiting behind the one being answered. More are not
/// refused: they stay unread in the socket (backpressure) until these are answered, so
/// a script piping ten thousand lines gets ten thousand replies while loopd holds at
/// most this many lines (of up to `MAX_LINE` each) for it.
pub(crate) const MAX_PENDING_LINES: usize = 16;

/// Clients gone with lines read and not yet run (`Conn::gone`) that loopd keeps running.
/// Each holds at most `MAX_PENDING_LINES` lines, and they no longer count against the
/// connection limit; as many as loopd serves at once bounds them the same way. Past it,
/// a departing client's lines are not run, and the journal says how many.
pub(crate) const MAX_GONE: usize = 64;

enum Queued {
    /// A line, and the Matrix event it was when it came from a room.
    Line(String, Option<proto::FromMatrix>),
    /// A line refused before it is read: why, for its error block.
    Error(String),
}

/// The job a connection is waiting on, and the reply block it is streaming into.
struct InFlight {
    job: JobId,
    block: Block,
    /// For `/session NAME`: the session to switch to once the open succeeds.
    switch_to: Option<SessionId>,
    /// The job runs on the worker, so it waits behind the worker's after-turn work.
    on_worker: bool,
}

struct Conn {
    session: SessionId,
    framer: Framer,
    pending: VecDeque<Queued>,
    in_flight: Option<InFlight>,
    input_closed: bool,
    /// A line of this connection was answered or started: its first reply block is out
    /// once nothing is in flight.
    answered: bool,
    /// The inbox was looked at for this connection (after its first reply block).
    inbox_checked: bool,
    /// A Matrix room's connection: unasked messages reach it through `rooms`, not here.
    room: bool,
    /// The client went away with lines read and not yet run: those that act still run
    /// in turn (`Command::acts`), and then the connection is dropped (docs/channel.md,
    /// 'End of input and disconnects').
    gone: bool,
}

impl Conn {
    /// A line of this connection has been read and its reply block is not finished (it
    /// runs, or waits its turn). An unasked block then waits for that reply block's end:
    /// a script pairs each line with the next block, so nothing unasked comes inside a
    /// reply block or before a connection's first (docs/channel.md, 'Unasked blocks').
    fn owes_a_block(&self) -> bool {
        self.in_flight.is_some() || !self.pending.is_empty()
    }

    /// A Matrix room's connection (`rooms`): no socket, no framing; what waits in the
    /// inbox reaches the room through its own path, not after a first block.
    fn room(session: SessionId) -> Conn {
        Conn {
            session,
            framer: Framer::default(),
            pending: VecDeque::new(),
            in_flight: None,
            input_closed: false,
            answered: true,
            inbox_checked: true,
            room: true,
            gone: false,
        }
    }
}

pub(crate) struct Channel<W: Work> {
    config_path: PathBuf,
    /// The configuration in force, shared with the worker (never copied): a reload
    /// replaces the whole `Arc` here and hands the same one to the worker.
    cfg: Arc<Config>,
    conns: HashMap<ConnId, Conn>,
    jobs: HashMap<JobId, ConnId>,
    next_job: JobId,
    worker: W,
    events: Receiver<Event>,
    board: Board,
    heartbeat: crate::heartbeat::Schedule,
    held: broadcast::Deferred,
    /// Reminders, the inbox and the notify command (`broadcast`).
    mail: broadcast::Mail,
    /// The after-turn work the worker is doing (`Event::Waiting`), which a line that
    /// arrives now waits for and is told about as a `· ` line.
    waiting: Option<String>,
    /// The Matrix channel, when `[matrix]` is on (`rooms`).
    rooms: Option<rooms::Rooms>,
}

impl<W: Work> Channel<W> {
    /// `events` is where the worker and the probes `worker` starts send what they did.
    pub(crate) fn new(
        config_path: PathBuf,
        cfg: Arc<Config>,
        worker: W,
        events: Receiver<Event>,
        board: Board,
        mail: broadcast::Mail,
    ) -> Result<Channel<W>, proto::session_id::BadSessionId> {
        // A new connection starts in `session` (`Service::accept`): refused here, not
        // there, when it is not an id.
        SessionId::parse(&cfg.session)?;
        let heartbeat = crate::heartbeat::Schedule::new(&cfg, Instant::now());
        Ok(Channel {
            config_path,
            cfg,
            conns: HashMap::new(),
            jobs: HashMap::new(),
            next_job: 1,
            worker,
            events,
            board,
            heartbeat,
            held: broadcast::Deferred::default(),
            mail,
            waiting: None,
            rooms: None,
        })
    }

    fn enqueue(&mut self, id: ConnId, item: Queued) {
        if let Some(conn) = self.conns.get_mut(&id) {
            conn.pending.push_back(item);
        }
    }

    /// Starts the next queued line of `id` if nothing is in flight, answering lines
    /// that need no job on the spot; closes a half-closed connection once all is done.
    fn pump(&mut self, out: &mut Outbox, id: ConnId) {
        loop {
            let Some(conn) = self.conns.get_mut(&id) else {
                return;
            };
            if conn.in_flight.is_some() {
                return;
            }
            // A client that is not reading gets no new block until it does; the loop
            // calls `input` again once its output has drained.
            if !conn.gone && !out.has_room(id) {
                return;
            }
            // Between reply blocks, never before a connection's first: a block is held
            // for a connection with no reply yet only while its first line is read and
            // not answered, so it waits for that line's reply.
            let between = conn.answered;
            // After its first reply block, a connection gets what waited in the inbox for
            // its session (docs/reminders.md), a half-closed one too: it is the next
            // connection, and reads until loopd closes.
            if conn.answered && !conn.inbox_checked {
                conn.inbox_checked = true;
                let session = conn.session.clone();
                self.inbox_release(out, id, &session);
            }
            // Unasked blocks held for this client go out now.
            if between {
                self.release_held(out, id);
            }
            let Some(conn) = self.conns.get_mut(&id) else {
                return;
            };
            let Some(item) = conn.pending.pop_front() else {
                if conn.gone {
                    self.conns.remove(&id);
                    // What a command of its own queued for it can never be written now.
                    self.mail_closed(id, true);
                } else if conn.input_closed {
                    out.close(id);
                }
                return;
            };
            conn.answered = true;
            let gone = conn.gone;
            match item {
                Queued::Error(why) => out.send(id, failed(why)),
                Queued::Line(line, from) if gone => match commands::parse(&line) {
                    Ok(c) if c.acts() => {
                        let session = conn.session.clone();
                        self.command(out, id, session, from, c);
                    }
                    Ok(Command::Worker(crate::worker::Command::Forget(_))) => {
                        plumbing::warn!(
                            "session {}: a /forget from client {}, which went away, was not run; the owner can ask again",
                            conn.session,
                            id.0
                        );
                    }
                    _ => {}
                },
                Queued::Line(line, from) => self.start(out, id, line, from),
            }
        }
    }

    /// Answers or starts one line (`from`: the Matrix event it was).
    fn start(
        &mut self,
        out: &mut Outbox,
        id: ConnId,
        line: String,
        from: Option<proto::FromMatrix>,
    ) {
        let Some(conn) = self.conns.get(&id) else {
            return;
        };
        let session = conn.session.clone();
        match commands::parse(&line) {
            Err(why) => out.send(id, failed(why)),
            Ok(command) => self.command(out, id, session, from, command),
        }
    }

    /// Answers or starts one well-formed command of a connection in `session` (`from`: the
    /// Matrix event its line was).
    fn command(
        &mut self,
        out: &mut Outbox,
        id: ConnId,
        session: SessionId,
        from: Option<proto::FromMatrix>,
        command: Command,
    ) {
        match command {
            Command::Help => out.send(id, whole(commands::HELP)),
            Command::Quit if self.quit_in_room(out, id) => {}
            Command::Quit => {
                out.send(id, whole("bye"));
                if let Some(conn) = self.conns.get_mut(&id) {
                    conn.pending.clear();
                    // Leaving: what waits in the inbox stays for the next connection.
                    conn.inbox_checked = true;
                }
                out.close(id);
            }
            Command::Session => out.send(id, whole(&format!("session {session}"))),
            Command::Worker(command) => {
                let switch_to = command.switches_to();
                let job = match command.says_what_it_waits_for() {
                    true => self.begin_on_worker(out, id, switch_to),
                    false => self.begin(id, switch_to),
                };
                self.submit(
                    out,
                    Job::Asked {
                        id: job,
                        session,
                        from,
                        command,
                    },
                );
            }
            Command::Recall(query) => {
                let job = self.begin(id, None);
                let max_class = self.recall_class(id);
                self.worker
                    .probe(job, Probe::Recall { query, max_class }, &self.cfg);
            }
            Command::Status => {
                let job = self.begin(id, None);
                let mail = self.mail_status(&session);
                self.worker
                    .probe(job, Probe::Status { session, mail }, &self.cfg);
            }
            Command::Remind(arg) => {
                let reply = self.remind_command(id, &session, &arg);
                out.send(id, reply);
            }
            Command::Inbox => {
                let reply = match rooms::is_room(id) {
                    true => self.room_inbox_command(&session),
                    false => self.inbox_command(id, &session),
                };
                out.send(id, reply);
            }
            #[cfg(feature = "testhooks")]
            Command::TestClock(seconds) => {
                let offset = remind::clock::advance(seconds);
                out.send(
                    id,
                    whole(&format!(
                        "test hook: the reminders' clock is {offset} s ahead"
                    )),
                );
                self.reminders_due(out);
            }
        }
    }

    /// Hands `job` to the worker; if the worker has stopped, its reply block ends at once
    /// with that failure.
    fn submit(&mut self, out: &mut Outbox, job: Job) {
        let id = job.id();
        if !self.worker.submit(job) {
            if let Some(id) = id {
                self.worker_stopped(out, id);
            }
        }
    }

    /// Marks `id` as waiting on a new job and returns the job's id.
    fn begin(&mut self, id: ConnId, switch_to: Option<SessionId>) -> JobId {
        let job = self.next_job;
        self.next_job += 1;
        self.jobs.insert(job, id);
        if let Some(conn) = self.conns.get_mut(&id) {
            // A room's block remembers its lines' kinds, which the room reads it by.
            let block = match rooms::is_room(id) {
                true => Block::with_kinds(),
                false => Block::new(),
            };
            conn.in_flight = Some(InFlight {
                job,
                block,
                switch_to,
                on_worker: false,
            });
        }
        job
    }

    /// `begin` for a job the worker runs: while the worker is busy after a turn, the
    /// block starts with a `· ` line saying what it waits for (docs/turn.md).
    fn begin_on_worker(
        &mut self,
        out: &mut Outbox,
        id: ConnId,
        switch_to: Option<SessionId>,
    ) -> JobId {
        let job = self.begin(id, switch_to);
        if let Some(flight) = self.conns.get_mut(&id).and_then(|c| c.in_flight.as_mut()) {
            flight.on_worker = true;
            if let Some(what) = &self.waiting {
                let mut text = String::new();
                flight.block.put(Part::Activity(what), &mut text);
                out.send(id, text);
            }
        }
        job
    }

    /// The worker started (or ended) after-turn work: every line waiting on it is told.
    /// The worker runs one thing at a time, so each worker job in flight now is waiting.
    fn waiting_changed(&mut self, out: &mut Outbox, what: Option<String>) {
        if let Some(what) = &what {
            for (conn_id, conn) in &mut self.conns {
                if let Some(flight) = conn.in_flight.as_mut().filter(|f| f.on_worker) {
                    let mut text = String::new();
                    flight.block.put(Part::Activity(what), &mut text);
                    out.send(*conn_id, text);
                }
            }
        }
        self.waiting = what;
    }

    /// Ends `job` as failed because the worker has stopped taking jobs.
    fn worker_stopped(&mut self, out: &mut Outbox, job: JobId) {
        self.on_event(
            out,
            Event::Done {
                id: job,
                reply: Err(crate::worker::Failure::WorkerStopped),
            },
        );
    }

    fn on_event(&mut self, out: &mut Outbox, event: Event) {
        let job = match &event {
            Event::Text { id, .. }
            | Event::Activity { id, .. }
            | Event::HitHeader { id, .. }
            | Event::Done { id, .. } => *id,
            Event::Heartbeat(_) | Event::Waiting(_) | Event::Redact(..) => return,
        };
        let Some(&conn_id) = self.jobs.get(&job) else {
            return;
        };
        if matches!(event, Event::Done { .. }) {
            self.jobs.remove(&job);
        }
        // The client may be gone: its turn still ran and is logged, only the reply
        // has nowhere to go.
        let Some(conn) = self.conns.get_mut(&conn_id) else {
            return;
        };
        let Some(flight) = conn.in_flight.as_mut().filter(|f| f.job == job) else {
            return;
        };
        let mut text = String::new();
        let mut switch = None;
        let mut kinds = None;
        match event {
            Event::Text { text: t, .. } => flight.block.put(Part::Text(&t), &mut text),
            Event::Activity { line, .. } => flight.block.put(Part::Activity(&line), &mut text),
            Event::HitHeader {
                tainted,
                session,
                time,
                ..
            } => flight.block.put(
                Part::HitHeader {
                    tainted,
                    session: &session,
                    time: &time,
                },
                &mut text,
            ),
            Event::Done { reply, .. } => {
                if let Some(flight) = conn.in_flight.take() {
                    let mut block = flight.block;
                    match &reply {
                        Ok(rest) => block.put(Part::Said(rest), &mut text),
                        Err(why) => block.put(Part::Error(&why.to_string()), &mut text),
                    }
                    kinds = block.end(&mut text);
                    if let (Ok(_), Some(target)) = (reply, flight.switch_to) {
                        switch = Some(target);
                    }
                }
            }
            Event::Heartbeat(_) | Event::Waiting(_) | Event::Redact(..) => {}
        }
        if let Some(kinds) = kinds {
            self.room_block_kinds(conn_id, kinds);
        }
        if let Some(target) = switch {
            // A room's blocks rendered before the switch are weighed by the label of
            // the session they were written in, not the one switched to.
            if rooms::is_room(conn_id) {
                self.rooms_flush(out);
            }
            if let Some(conn) = self.conns.get_mut(&conn_id) {
                // A socket client that switches is now a connection to that session:
                // what waits in its inbox follows this block (docs/reminders.md).
                if conn.session != target && !conn.room && !conn.gone {
                    conn.inbox_checked = false;
                }
                conn.session = target;
            }
        }
        out.send(conn_id, text);
        self.pump(out, conn_id);
    }
}
