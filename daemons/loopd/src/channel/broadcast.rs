//! Messages nobody asked for (docs/channel.md, docs/reminders.md): a heartbeat's news and
//! a reminder, in one place. Each goes to every client of its session, but only between
//! reply blocks, as a block of its own. A client waiting on or streaming a reply gets it
//! right after that block ends, before its next line starts. Clients that half-closed
//! their input are left out: they are scripts waiting for the replies to the lines they
//! sent, and an extra block would break their pairing of lines and blocks.
//!
//! A message that reached no client waits in the inbox (`conversation::inbox`) and is handed to
//! `notify.command` once; the next connection to its session gets it after its first
//! reply block, with a `· ` line saying where it comes from.
//!
//! This file also holds the channel's side of the heartbeat (asking the schedule on the
//! timer and whenever the worker may have gone idle, submitting the beat) and of the
//! reminders (taking what fell due on the timer, `/remind`, `/inbox`).

use super::reply::Block;
use super::work::Work;
use super::Channel;
use crate::heartbeat::beat::{Beat, Reply};
use crate::heartbeat::hours;
use crate::worker::Job;
use chrono::{DateTime, Local, Utc};
use conversation::inbox::notify::Runner;
use conversation::inbox::{Inbox, Kind, Message, Piece};
use plumbing::{ConnId, Outbox};
use proto::{DataClass, SessionId};
use remind::{self, clock};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest the poll loop's timer waits for a reminder before looking again. Due times
/// are wall-clock times and the timer is monotonic: a suspend or a clock step moves one
/// against the other, and looking every minute bounds how late that makes a reminder.
pub const REMINDER_RECHECK: Duration = Duration::from_secs(60);

/// The reminders' book, the inbox and the notify command's runner: what unasked messages
/// need. The book is shared with the turn worker (the `remind` tool); the inbox is only
/// the poll loop's.
pub struct Mail {
    pub reminders: remind::Shared,
    pub inbox: Inbox,
    runner: Runner,
    /// When this loopd started, by the reminders' clock: a reminder due before it fell
    /// due while loopd was not running, and is delivered marked late.
    started: DateTime<Utc>,
    /// Waiting messages were offered to the notify command since start.
    offered: bool,
    /// An instant already past, the deadline of work due now. A deadline of
    /// `Instant::now()` would be later than the loop's own `now` each time it is asked,
    /// so the timer would never fire and the loop would spin.
    born: Instant,
}

impl Mail {
    pub fn new(reminders: remind::Shared, inbox: Inbox) -> Mail {
        Mail {
            reminders,
            inbox,
            runner: Runner::default(),
            started: clock::now(),
            offered: false,
            born: Instant::now(),
        }
    }
}

/// Unasked-for blocks held for one client while it is inside a reply block. Only a beat
/// that ended while the client's own line waited behind it is normally held, so this is
/// far above need; past it the oldest is dropped (and logged) rather than letting a client
/// stuck in one block pile up replies.
pub const MAX_HELD: usize = 16;

/// Blocks held for clients that were inside a reply block when they came.
#[derive(Default)]
pub struct Deferred {
    blocks: HashMap<ConnId, VecDeque<Arc<str>>>,
}

impl Deferred {
    pub fn hold(&mut self, id: ConnId, block: Arc<str>) {
        let queue = self.blocks.entry(id).or_default();
        if queue.len() >= MAX_HELD {
            queue.pop_front();
            plumbing::warn!(
                "client {}: more than {MAX_HELD} heartbeat replies held; dropped the oldest",
                id.0
            );
        }
        queue.push_back(block);
    }

    /// Sends what was held for `id`; call only when it is between reply blocks.
    pub fn release(&mut self, out: &mut Outbox, id: ConnId) {
        if let Some(queue) = self.blocks.remove(&id) {
            for block in queue {
                out.send(id, block.as_bytes());
            }
        }
    }

    pub fn forget(&mut self, id: ConnId) {
        self.blocks.remove(&id);
    }
}

/// A local time as the owner reads it.
fn local(time: &str) -> String {
    DateTime::parse_from_rfc3339(time).map_or_else(
        |_| time.to_string(),
        |t| {
            t.with_timezone(&Local)
                .format("%H:%M %a %-d %b")
                .to_string()
        },
    )
}

/// Ends the text's last line, if it is open.
fn end_line(block: &mut Block, out: &mut String) {
    if !out.is_empty() && !out.ends_with('\n') {
        block.text("\n", out);
    }
}

/// The text of a list of messages for `/inbox`: each under a `· ` line saying what and
/// when, and whether it was waiting.
fn shown(messages: &[Message]) -> String {
    let mut block = Block::new();
    let mut out = String::new();
    for m in messages {
        let state = if m.delivered.is_some() {
            ""
        } else {
            " (was waiting)"
        };
        block.lines(
            &format!("· {} at {}{state}", m.kind.word(), local(&m.time)),
            &mut out,
        );
        for piece in &m.pieces {
            match piece {
                Piece::Text(t) => block.text(t, &mut out),
                Piece::Activity(line) => {
                    end_line(&mut block, &mut out);
                    block.lines(&format!("· {line}"), &mut out);
                }
            }
        }
        // The next message's `· ` line starts a line of its own.
        end_line(&mut block, &mut out);
    }
    block.end(&mut out);
    out
}

impl<W: Work> Channel<W> {
    /// Starts a beat if one is due and the worker is idle.
    pub(super) fn heartbeat_poll(&mut self, now: Instant) {
        let idle = self.worker.idle();
        let Some(session) = self
            .heartbeat
            .poll(&self.cfg, now, idle, hours::local_minutes)
        else {
            return;
        };
        if !self.worker.submit(Job::Heartbeat { session }) {
            plumbing::error!("heartbeat: the turn worker has stopped; restart loopd");
            self.heartbeat.ended(&self.cfg, now);
        }
    }

    /// A beat ended on the worker: deliver it if it has something to say.
    pub(super) fn heartbeat_ended(&mut self, out: &mut Outbox, beat: Beat) {
        self.heartbeat.ended(&self.cfg, Instant::now());
        let Beat::Deliver {
            session,
            reply,
            class,
        } = beat
        else {
            return;
        };
        let sent = self.unasked(out, &session, Kind::Heartbeat, &reply.pieces, class, None);
        plumbing::info!("session {session}: heartbeat reply for {sent} connected clients");
    }

    /// An unasked message for `session`, rendered once into the block every client of the
    /// session gets; with no client there, it waits in the inbox and is handed to the
    /// notify command. Returns how many clients it reached.
    fn unasked(
        &mut self,
        out: &mut Outbox,
        session: &SessionId,
        kind: Kind,
        pieces: &[Piece],
        class: DataClass,
        source: Option<String>,
    ) -> usize {
        let block: Arc<str> = super::unasked::render(&Reply {
            pieces: pieces.to_vec(),
        })
        .into();
        let mut sent = 0;
        for (&id, conn) in &self.conns {
            if &conn.session != session || conn.input_closed {
                continue;
            }
            if conn.in_flight.is_some() {
                // Held blocks share the one copy; each client's own output buffer gets its
                // copy only when the block is sent.
                self.held.hold(id, Arc::clone(&block));
            } else {
                out.send(id, block.as_bytes());
            }
            sent += 1;
        }
        let (message, saved) = self.mail.inbox.add(
            session.as_str(),
            kind,
            pieces.to_vec(),
            class,
            sent > 0,
            source,
        );
        if let Err(e) = saved {
            plumbing::error!("inbox: {e}");
        }
        if sent == 0 {
            plumbing::info!(
                "session {session}: {} for nobody connected; it waits in the inbox as message {}",
                kind.word(),
                message.n
            );
            self.hand_over(message);
        }
        sent
    }

    /// Hands a message nobody received to `notify.command`, once: it is marked handed
    /// before the command runs, so neither a failure nor a restart runs it twice.
    fn hand_over(&mut self, message: Message) {
        let notify = &self.cfg.notify;
        if notify.command.is_empty() {
            return;
        }
        if let Err(e) = self.mail.inbox.notified(message.n) {
            plumbing::error!(
                "inbox: {e}; message {} is not handed to notify.command",
                message.n
            );
            return;
        }
        let what = format!(
            "inbox message {} ({}) of session {}",
            message.n,
            message.kind.word(),
            message.session
        );
        if message.class > notify.max_class {
            plumbing::info!(
                "notify: {what} is {} (notify.max_class is {}); not handed over",
                message.class,
                notify.max_class
            );
            self.note(
                &message.session,
                format!(
                    "inbox message {} ({}) was not handed to notify.command: it is {} and notify.max_class is {}",
                    message.n,
                    message.kind.word(),
                    message.class,
                    notify.max_class
                ),
            );
            return;
        }
        let timeout = Duration::from_secs(notify.timeout_s);
        self.mail
            .runner
            .run(&notify.command, timeout, what, message.plain());
    }

    /// Logs `text` as a `note` in `session`, through the worker that owns the logs.
    fn note(&mut self, session: &str, text: String) {
        let Ok(session) = SessionId::parse(session) else {
            plumbing::warn!("a note for session {session:?}, which is not a session name; dropped");
            return;
        };
        if !self.worker.submit(Job::Note { session, text }) {
            plumbing::error!("the turn worker has stopped; a note was not logged; restart loopd");
        }
    }

    /// When the poll loop should next look at the reminders.
    pub(super) fn reminders_deadline(&self) -> Option<Instant> {
        if !self.mail.offered {
            return Some(self.mail.born);
        }
        let next = self.mail.reminders.with(|b| b.next_due())?;
        let now = clock::now();
        if next <= now {
            return Some(self.mail.born);
        }
        Some(Instant::now() + clock::until(now, next).min(REMINDER_RECHECK))
    }

    /// Delivers every reminder that fell due, through the inbox, then takes them out of
    /// the book; and, once after start, offers what waits in the inbox to the notify
    /// command (a message that came while it was unset, or before a crash).
    pub(super) fn reminders_due(&mut self, out: &mut Outbox) {
        if !self.mail.offered {
            self.mail.offered = true;
            for message in self.mail.inbox.unnotified() {
                self.hand_over(message);
            }
        }
        let due = self.mail.reminders.with(|b| b.due(clock::now()));
        if due.is_empty() {
            return;
        }
        let mut done = Vec::new();
        for r in due {
            done.push(r.n);
            let source = format!("reminder {}", r.n);
            // Delivered before a crash took it out of the book: never twice.
            if self.mail.inbox.has_source(&source) {
                continue;
            }
            let Ok(session) = SessionId::parse(&r.session) else {
                plumbing::warn!(
                    "reminder {}: {:?} is not a session name; dropped",
                    r.n,
                    r.session
                );
                continue;
            };
            let late = r.due_at() < self.mail.started;
            let header = if late {
                format!(
                    "reminder {} (late: due {}, while loopd was not running)",
                    r.n,
                    remind::shown(r.due_at())
                )
            } else {
                format!("reminder {}, due {}", r.n, remind::shown(r.due_at()))
            };
            let pieces = [Piece::Activity(header), Piece::Text(r.text.clone())];
            let sent = self.unasked(
                out,
                &session,
                Kind::Reminder,
                &pieces,
                r.class,
                Some(source),
            );
            let late = if late { " late" } else { "" };
            let whom = if sent == 0 {
                "nobody was connected; it waits in the inbox".to_string()
            } else {
                format!("to {sent} connected clients")
            };
            self.note(
                session.as_str(),
                format!("reminder {} delivered{late}: {whom}: {}", r.n, r.text),
            );
        }
        if let Err(e) = self.mail.reminders.with(|b| b.remove(&done)) {
            // The inbox knows they were delivered; they are not delivered again.
            plumbing::error!("reminders: {e}");
        }
    }

    /// After the first reply block of connection `id`: what waited in the inbox for its
    /// session, each as an unasked block of its own.
    pub(super) fn inbox_release(&mut self, out: &mut Outbox, id: ConnId, session: &SessionId) {
        let waiting = self.mail.inbox.waiting(session.as_str());
        if waiting.is_empty() {
            return;
        }
        let mut numbers = Vec::new();
        for m in &waiting {
            let mut pieces = vec![Piece::Activity(format!(
                "while you were away: {} at {}",
                m.kind.word(),
                local(&m.time)
            ))];
            pieces.extend(m.pieces.iter().cloned());
            out.send(id, super::unasked::render(&Reply { pieces }));
            numbers.push(m.n);
        }
        if let Err(e) = self.mail.inbox.delivered(&numbers) {
            plumbing::error!("inbox: {e}");
        }
        plumbing::info!(
            "session {session}: {} inbox messages delivered to client {}",
            numbers.len(),
            id.0
        );
        self.note(
            session.as_str(),
            format!(
                "inbox messages {} delivered to a client that connected",
                numbers
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }

    /// `/inbox`: the last messages of the session again; any that waited are delivered.
    pub(super) fn inbox_command(&mut self, session: &SessionId) -> String {
        let last = self.mail.inbox.last(session.as_str());
        if last.is_empty() {
            return super::reply::whole(&format!("the inbox of session {session} is empty"));
        }
        let waiting: Vec<u64> = last
            .iter()
            .filter(|m| m.delivered.is_none())
            .map(|m| m.n)
            .collect();
        if !waiting.is_empty() {
            if let Err(e) = self.mail.inbox.delivered(&waiting) {
                plumbing::error!("inbox: {e}");
            }
        }
        shown(&last)
    }

    /// `/remind …` in `session`: the reply block.
    pub(super) fn remind_command(&mut self, session: &SessionId, arg: &str) -> String {
        let owner = self.cfg.channel.owner_class;
        let said = self
            .mail
            .reminders
            .with(|b| remind::command::run(b, session.as_str(), arg, clock::now(), owner));
        match said {
            Err(e) => super::reply::whole(&super::reply::error_line(e)),
            Ok(said) => {
                if let Some(note) = said.note {
                    self.note(session.as_str(), note);
                }
                super::reply::whole(&said.reply)
            }
        }
    }

    /// What `/status` says of the inbox and the reminders of `session`.
    pub(super) fn mail_status(&self, session: &SessionId) -> String {
        let waiting = self.mail.inbox.waiting(session.as_str()).len();
        let set = self.mail.reminders.with(|b| b.of(session.as_str()).len());
        format!(
            "inbox: {waiting} messages waiting (/inbox shows the last ones)\nreminders: {set} set (/remind lists them)\n"
        )
    }
}
