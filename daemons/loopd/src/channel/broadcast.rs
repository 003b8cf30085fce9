//! Messages nobody asked for (docs/channel.md, docs/reminders.md): a heartbeat's news and
//! a reminder, in one place. Each goes to every client of its session, but only between
//! reply blocks, as a block of its own. A client waiting on or streaming a reply gets it
//! right after that block ends, before its next line starts. A client that half-closed
//! its input after its lines is a client too, until loopd closes it once its replies
//! are out: it gets them as any client does (docs/channel.md, 'End of input and
//! disconnects').
//!
//! Delivery keeps its word (docs/reminders.md, 'Delivery keeps its word'): every message
//! is in the inbox (`conversation::inbox`) before its block is queued, marked `tried`, and it is
//! marked delivered only when the poll loop says everything queued for that client was
//! written to its socket (`Service::drained`). A crash in between leaves it waiting, and
//! the next connection gets it marked `(again)`. A message that reached no client waits
//! and is handed to `notify.command` (`super::push`).
//!
//! This file also holds the channel's side of the heartbeat (asking the schedule on the
//! timer and whenever the worker may have gone idle, submitting the beat); `/inbox` is
//! `super::inbox_list`'s, and what fell due in the reminders' book comes through
//! `super::reminders`.

use super::unasked::{folded_line, local};
use super::work::Work;
use super::Channel;
use crate::heartbeat::beat::{Beat, Reply};
use crate::heartbeat::hours;
use crate::worker::Job;
use chrono::{DateTime, Utc};
use conversation::inbox::notify::Runner;
use conversation::inbox::{self, Kind, Message, Piece};
use plumbing::{ConnId, Outbox};
use proto::SessionId;
use remind::{self, clock};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Instant;

/// A message whose block was queued for a client and is not yet written whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Queued {
    n: u64,
    /// It waited in the inbox and was released to a connection: its delivery is noted.
    released: bool,
}

/// The reminders' book, the inbox and the notify command's runner: what unasked messages
/// need. The book and the inbox are shared with the turn worker (the `remind` tool,
/// `/forget`).
pub(crate) struct Mail {
    pub(crate) reminders: remind::Shared,
    pub(crate) inbox: inbox::Shared,
    pub(super) runner: Runner,
    /// Inbox messages waiting their turn for the notify command, oldest first: numbers
    /// only, so a message forgotten meanwhile is not handed over.
    pub(super) turn: VecDeque<u64>,
    /// Each connection's messages queued and not yet written whole to its socket.
    queued: HashMap<ConnId, Vec<Queued>>,
    /// Messages this loopd marked `tried` when it queued or held their blocks, of which no
    /// byte is known to have reached a socket yet. Should every connection they went to
    /// close with not a byte of them written, they are unmarked (`mail_closed`): nobody
    /// saw them, and the next connection must not be told it may have. A message marked
    /// before a restart is not here: that loopd may have written it.
    pub(super) tried_here: HashSet<u64>,
    /// When this loopd started, by the reminders' clock: a reminder due before it fell
    /// due while loopd was not running, and is delivered marked late.
    pub(super) started: DateTime<Utc>,
    /// Waiting messages were offered to the notify command since start.
    pub(super) offered: bool,
    /// A write of the inbox failed while due reminders were taken: they stay in the book
    /// and are tried again from then (`reminders::INBOX_RETRY`).
    pub(super) retry_at: Option<Instant>,
    /// A write of the inbox failed and none succeeded since: when it is tried again
    /// (`unsaved`); `None` until a first try failed, so the first comes at once.
    pub(super) save_retry_at: Option<Instant>,
    /// The notify queue stopped at a message whose mark could not be written: it goes
    /// on once the inbox's file is written, by whichever write that is.
    pub(super) notify_stalled: bool,
    /// An instant already past, the deadline of work due now. A deadline of
    /// `Instant::now()` would be later than the loop's own `now` each time it is asked,
    /// so the timer would never fire and the loop would spin.
    pub(super) born: Instant,
}

impl Mail {
    /// `wake` is the poll loop's waker, which a notify command that ended rings so the
    /// next message waiting its turn is started.
    pub(crate) fn new(
        reminders: remind::Shared,
        inbox: inbox::Shared,
        wake: Option<Arc<mio::Waker>>,
    ) -> Mail {
        Mail {
            reminders,
            inbox,
            runner: Runner::new(wake),
            turn: VecDeque::new(),
            queued: HashMap::new(),
            tried_here: HashSet::new(),
            started: clock::now(),
            offered: false,
            retry_at: None,
            save_retry_at: None,
            notify_stalled: false,
            born: Instant::now(),
        }
    }

    /// Whether message `n`'s block is queued for some client now.
    fn in_flight(&self, n: u64, held: &Deferred) -> bool {
        self.queued.values().flatten().any(|q| q.n == n) || held.holds(n)
    }
}

/// Unasked-for blocks held for one client while it is inside a reply block. Only a beat
/// that ended while the client's own line waited behind it is normally held, so this is
/// far above need; past it the oldest is let go (it stays waiting in the inbox, so the
/// next connection gets it) rather than letting a client stuck in one block pile up
/// replies.
pub(crate) const MAX_HELD: usize = 16;

/// Blocks held for clients that were inside a reply block when they came, each with its
/// inbox message's number.
#[derive(Default)]
pub(crate) struct Deferred {
    blocks: HashMap<ConnId, VecDeque<(u64, Arc<str>)>>,
}

impl Deferred {
    /// Holds `block` for `id`; returns the number of the message let go to make room,
    /// which then waits in the inbox as one that reached nobody.
    pub(crate) fn hold(&mut self, id: ConnId, n: u64, block: Arc<str>) -> Option<u64> {
        let queue = self.blocks.entry(id).or_default();
        let mut let_go = None;
        if queue.len() >= MAX_HELD {
            let_go = queue.pop_front().map(|(n, _)| n);
            plumbing::warn!(
                "client {}: more than {MAX_HELD} unasked blocks held; the oldest waits in the inbox",
                id.0
            );
        }
        queue.push_back((n, block));
        let_go
    }

    fn holds(&self, n: u64) -> bool {
        self.blocks.values().flatten().any(|(m, _)| *m == n)
    }

    /// Lets go of what was held for `id` (it is gone): the messages' numbers.
    pub(crate) fn forget(&mut self, id: ConnId) -> Vec<u64> {
        self.blocks
            .remove(&id)
            .map(|q| q.into_iter().map(|(n, _)| n).collect())
            .unwrap_or_default()
    }
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
            label,
            turn,
        } = beat
        else {
            return;
        };
        let targets = self.targets(&session);
        let (message, saved) = self.mail.inbox.with(|i| {
            i.add(
                session.as_str(),
                Kind::Heartbeat,
                reply.pieces.clone(),
                label,
                self.some_between_blocks(&targets),
                turn.as_deref().map(conversation::inbox::heartbeat_source),
            )
        });
        if let Err(e) = saved {
            plumbing::error!(
                "inbox: {e}; heartbeat message {} is kept in memory only, and the file is written again every {} s until it can be: a crash before then loses it",
                message.n,
                super::reminders::INBOX_RETRY.as_secs()
            );
        }
        if message.tried {
            self.mail.tried_here.insert(message.n);
        }
        plumbing::info!(
            "session {session}: heartbeat reply for {} connected clients",
            targets.len()
        );
        self.offer(out, &targets, &message);
    }

    /// The clients of `session` an unasked message goes to.
    pub(super) fn targets(&self, session: &SessionId) -> Vec<ConnId> {
        self.conns
            .iter()
            .filter(|(_, c)| &c.session == session && !c.room && !c.gone)
            .map(|(&id, _)| id)
            .collect()
    }

    /// Whether some of `targets` is between reply blocks, so a message is queued for it
    /// now (marked `tried` when added) rather than held until its block ends.
    pub(super) fn some_between_blocks(&self, targets: &[ConnId]) -> bool {
        targets
            .iter()
            .any(|id| self.conns.get(id).is_some_and(|c| !c.owes_a_block()))
    }

    /// Queues `message` (already in the inbox) for `targets`, each now or, inside a reply
    /// block, once it ends; with no target, it waits and goes to the notify command.
    pub(super) fn offer(&mut self, out: &mut Outbox, targets: &[ConnId], message: &Message) {
        // The session's Matrix room gets it too, and marks it delivered when the
        // homeserver acknowledged it (docs/matrix.md, 'Unasked messages').
        self.room_offer(message);
        if targets.is_empty() {
            plumbing::info!(
                "session {}: {} for nobody connected; it waits in the inbox as message {}",
                message.session,
                message.kind.word(),
                message.n
            );
            self.hand_over(message.n);
            return;
        }
        let block: Arc<str> = super::unasked::render(&Reply {
            pieces: message.pieces.clone(),
        })
        .into();
        for &id in targets {
            let busy = self.conns.get(&id).is_some_and(|c| c.owes_a_block());
            if busy {
                // Held blocks share the one copy; each client's own output buffer gets its
                // copy only when the block is sent.
                if let Some(n) = self.held.hold(id, message.n, Arc::clone(&block)) {
                    self.hand_over(n);
                }
            } else {
                self.send_queued(out, id, message.n, false, block.as_bytes());
            }
        }
    }

    /// Queues a message's block for `id`; it is marked delivered once written whole.
    fn send_queued(&mut self, out: &mut Outbox, id: ConnId, n: u64, released: bool, b: &[u8]) {
        out.send(id, b);
        self.mail
            .queued
            .entry(id)
            .or_default()
            .push(Queued { n, released });
    }

    /// Sends what was held for `id`; call only when it is between reply blocks. A held
    /// message forgotten meanwhile is not sent.
    pub(super) fn release_held(&mut self, out: &mut Outbox, id: ConnId) {
        let Some(queue) = self.held.blocks.remove(&id) else {
            return;
        };
        for (n, block) in queue {
            let Some(was_tried) = self.mail.inbox.with(|i| i.get(n).map(|m| m.tried)) else {
                continue;
            };
            // In the inbox as tried before its block is queued, as when it came.
            if let Err(e) = self.mail.inbox.with(|i| i.tried(n)) {
                plumbing::error!("inbox: {e}");
            }
            if !was_tried {
                self.mail.tried_here.insert(n);
            }
            self.send_queued(out, id, n, false, block.as_bytes());
        }
    }

    /// Everything queued for `id` was written to its socket: what it held is delivered.
    pub(super) fn mail_drained(&mut self, id: ConnId) {
        let Some(queued) = self.mail.queued.remove(&id) else {
            return;
        };
        let numbers: Vec<u64> = queued.iter().map(|q| q.n).collect();
        if let Err(e) = self.mail.inbox.with(|i| i.delivered(&numbers)) {
            plumbing::error!("inbox: {e}");
        }
        // Written: marked for good (and the set stays as small as what is on its way).
        for n in &numbers {
            self.mail.tried_here.remove(n);
        }
        let released: Vec<String> = queued
            .iter()
            .filter(|q| q.released)
            .map(|q| q.n.to_string())
            .collect();
        if released.is_empty() {
            return;
        }
        let Some(session) = self.conns.get(&id).map(|c| c.session.clone()) else {
            return;
        };
        plumbing::info!(
            "session {session}: {} inbox messages delivered to client {}",
            released.len(),
            id.0
        );
        self.note(
            session.as_str(),
            format!(
                "inbox messages {} delivered to a client that connected",
                released.join(", ")
            ),
        );
    }

    /// Connection `id` is gone: what was queued for it and not written whole still
    /// waits, and goes to the notify command if it has not; so does what was held for it
    /// until its reply block ended. One still on its way to another client is left to
    /// that client (handed over in turn if that one goes too). A queued block keeps its
    /// message marked `tried`, so it comes again marked as a repeat, unless `unwritten`
    /// says not a byte queued for `id` since its output last drained was written; a
    /// message this loopd marked whose every block went unwritten so, or was only held,
    /// reached nobody and is unmarked: the next connection gets it as new
    /// (`Mail::tried_here`).
    pub(super) fn mail_closed(&mut self, id: ConnId, unwritten: bool) {
        let held = self.held.forget(id);
        let queued = self.mail.queued.remove(&id).unwrap_or_default();
        if !unwritten {
            // Some of these may have been read: they stay marked for good.
            for q in &queued {
                self.mail.tried_here.remove(&q.n);
            }
        }
        // A held block was never queued for this connection's socket.
        let unsent: Vec<u64> = held
            .into_iter()
            .chain(queued.iter().filter(|_| unwritten).map(|q| q.n))
            .collect();
        for n in queued.iter().map(|q| q.n).chain(unsent.iter().copied()) {
            if self.mail.in_flight(n, &self.held) {
                continue;
            }
            if unsent.contains(&n) && self.mail.tried_here.remove(&n) {
                if let Err(e) = self.mail.inbox.with(|i| i.untried(n)) {
                    plumbing::error!("inbox: {e}");
                }
            }
            self.hand_over(n);
        }
    }

    /// Logs `text` as a `note` in `session`, through the worker that owns the logs.
    pub(super) fn note(&mut self, session: &str, text: String) {
        let Ok(session) = SessionId::parse(session) else {
            plumbing::warn!("a note for session {session:?}, which is not a session name; dropped");
            return;
        };
        if !self.worker.submit(Job::Note { session, text }) {
            plumbing::error!("the turn worker has stopped; a note was not logged; restart loopd");
        }
    }

    /// After the first reply block of connection `id`: what waited in the inbox for its
    /// session, each as an unasked block of its own, one shown before marked `(again)`,
    /// after a line counting the heartbeat messages folded away.
    pub(super) fn inbox_release(&mut self, out: &mut Outbox, id: ConnId, session: &SessionId) {
        let (waiting, folded) = self
            .mail
            .inbox
            .with(|i| (i.waiting(session.as_str()), i.folded(session.as_str())));
        let waiting: Vec<Message> = waiting
            .into_iter()
            .filter(|m| !self.mail.in_flight(m.n, &self.held))
            .collect();
        if waiting.is_empty() && folded == 0 {
            return;
        }
        let numbers: Vec<u64> = waiting.iter().map(|m| m.n).collect();
        self.mail
            .tried_here
            .extend(waiting.iter().filter(|m| !m.tried).map(|m| m.n));
        let (folded, saved) = self
            .mail
            .inbox
            .with(|i| i.release(session.as_str(), &numbers));
        if let Err(e) = saved {
            plumbing::error!("inbox: {e}");
        }
        if folded > 0 {
            let pieces = vec![Piece::Activity(folded_line(folded))];
            out.send(id, super::unasked::render(&Reply { pieces }));
        }
        for m in &waiting {
            let again = if m.tried { " (again)" } else { "" };
            let untrusted = if m.untrusted {
                super::unasked::UNTRUSTED
            } else {
                ""
            };
            let mut pieces = vec![Piece::Activity(format!(
                "while you were away: {} at {}{again}{untrusted}",
                m.kind.word(),
                local(&m.time)
            ))];
            pieces.extend(m.pieces.iter().cloned());
            let block = super::unasked::render(&Reply { pieces });
            self.send_queued(out, id, m.n, true, block.as_bytes());
        }
    }

    /// `/inbox` for connection `id`: the last messages of the session again; any that
    /// waited are delivered once this reply is written.
    pub(super) fn inbox_command(&mut self, id: ConnId, session: &SessionId) -> String {
        let (last, folded) = match self.inbox_listing(session) {
            Ok(listing) => listing,
            Err(empty) => return empty,
        };
        // Blocks already queued (or held) for a client are on their way, not waiting:
        // lines sent together can ask before the poll loop has written them.
        let on_its_way: Vec<u64> = last
            .iter()
            .filter(|m| m.delivered.is_none() && self.mail.in_flight(m.n, &self.held))
            .map(|m| m.n)
            .collect();
        for m in last.iter().filter(|m| m.delivered.is_none()) {
            // The reply shows it whole: marked tried as a block of its own would be.
            if !m.tried {
                if let Err(e) = self.mail.inbox.with(|i| i.tried(m.n)) {
                    plumbing::error!("inbox: {e}");
                }
                self.mail.tried_here.insert(m.n);
            }
            self.mail.queued.entry(id).or_default().push(Queued {
                n: m.n,
                released: false,
            });
        }
        super::inbox_list::shown(
            &last,
            folded,
            super::inbox_list::Listed::Socket(&|n| on_its_way.contains(&n)),
        )
    }

    /// What `/status` says of the inbox and the reminders of `session`.
    pub(super) fn mail_status(&self, session: &SessionId) -> String {
        // What is queued (or held) for a client is on its way, not waiting.
        let (waiting, folded) = self.mail.inbox.with(|i| {
            (
                i.waiting(session.as_str())
                    .iter()
                    .filter(|m| !self.mail.in_flight(m.n, &self.held))
                    .count(),
                i.folded(session.as_str()),
            )
        });
        let set = self.mail.reminders.with(|b| b.of(session.as_str()).len());
        let folded = if folded > 0 {
            format!(", and {folded} older heartbeat messages folded into a count")
        } else {
            String::new()
        };
        format!(
            "inbox: {waiting} messages waiting{folded} (/inbox shows the last ones)\nreminders: {set} set (/remind lists them)\n{}",
            self.matrix_status(session)
        )
    }
}
