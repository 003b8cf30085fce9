//! Matrix rooms as the channel's clients (docs/matrix.md, 'The channel in loopd'). Each
//! room the owner writes in is a connection of its own that no socket backs: its lines
//! are queued, started and answered by the same code as a socket's, one reply block
//! each, in order, commands included. The blocks rendered for it are taken back out of
//! the outbox (`Outbox::take_sent`), read into the model's text and loopd's notices
//! (`crate::matrix::blocks`), planned into events with fixed transaction ids, written to
//! the store and handed to the send thread. A line leaves the store's waiting lines only
//! once its reply's events are in the store, so a crash before that runs it again.

use super::commands::Command;
use super::reply::whole;
use super::work::Work;
use super::{Channel, Conn, Queued};
use crate::matrix::blocks::{self, Piece, Whose};
use crate::matrix::store::{Inbound, Outgoing, Sent, Store, Why};
use crate::matrix::{Down, Line, Link, Up};
use ::matrix::outgoing::{plan, Style};
use conversation::inbox::Message;
use conversation::status::SessionView;
use plumbing::{ConnId, Outbox};
use proto::{FromMatrix, SessionId};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where the rooms' connection ids start: far above any socket's (the poll loop numbers
/// its connections from 1 up and reuses them), so the two never meet.
pub(crate) const ROOM_CONN_BASE: usize = 1 << 40;

/// Whether `id` is a room's connection.
pub(crate) fn is_room(id: ConnId) -> bool {
    id.0 >= ROOM_CONN_BASE
}

/// A room's side of its connection: the blocks it is owed, in the order its lines were
/// queued, and the reader of what was rendered for it.
struct RoomOut {
    room: String,
    reader: blocks::Reader,
    owed: VecDeque<(Whose, String, Quotes)>,
    /// When the typing notice was last sent on for the turn being answered.
    typing: Option<Instant>,
}

/// What stored text a command's answer quotes, to be weighed in a room before it leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quotes {
    Nothing,
    /// `/status`: what memory brought into the last turn, with its label.
    Memory,
}

/// How often a running turn's typing notice is sent again while its reply streams: half
/// of how long one lasts (`matrix::send::TYPING_FOR`), so a long turn's never lapses
/// while it still produces output.
pub(crate) const TYPING_REFRESH: Duration = Duration::from_secs(60);

/// The Matrix channel's state on the poll loop.
pub(crate) struct Rooms {
    link: Link,
    store: Store,
    state_dir: PathBuf,
    conns: BTreeMap<String, ConnId>,
    outs: HashMap<ConnId, RoomOut>,
    next_conn: usize,
    /// Transaction ids handed to the send thread and not yet acknowledged.
    handed: HashSet<String>,
    /// The store's waiting lines were queued again after a start.
    resumed: bool,
}

impl Rooms {
    pub(crate) fn new(link: Link, store: Store, state_dir: PathBuf) -> Rooms {
        Rooms {
            link,
            store,
            state_dir,
            conns: BTreeMap::new(),
            outs: HashMap::new(),
            next_conn: ROOM_CONN_BASE,
            handed: HashSet::new(),
            resumed: false,
        }
    }

    fn save(&mut self) -> bool {
        match self.store.save(&self.state_dir) {
            Ok(()) => true,
            Err(e) => {
                plumbing::error!("matrix: {e}");
                false
            }
        }
    }

    /// Hands every planned event not yet handed to the send thread, in order; what does
    /// not fit its queue is handed after the next acknowledgement.
    fn hand_over(&mut self) {
        let status = std::sync::Arc::clone(&self.link.status);
        for o in &self.store.outbox {
            if self.handed.contains(&o.txn) {
                continue;
            }
            // A room that is not served waits (a redaction only takes away): its events
            // are handed over when it is served again (`Up::Rooms`).
            let redaction = matches!(o.why, Why::Redact { .. });
            if !redaction && !crate::matrix::served(&status, &o.room) {
                continue;
            }
            if !self.link.send(Down::Send(o.clone())) {
                break;
            }
            self.handed.insert(o.txn.clone());
        }
    }

    /// Plans the redaction of `event` in `room` (not yet saved), its transaction id fixed
    /// by the two.
    fn redact(&mut self, room: &str, event: &str) {
        let txn = ::matrix::outgoing::redaction_txn(room, event);
        if self.store.outbox.iter().any(|o| o.txn == txn) {
            return;
        }
        self.store.outbox.push(Outgoing {
            room: room.to_string(),
            txn,
            why: Why::Redact {
                event: event.to_string(),
            },
            content: serde_json::Value::Null,
        });
    }

    /// The channel's state in words, for `systemctl status`.
    pub(crate) fn state(&self) -> String {
        self.link.status().state
    }

    /// Whether `room` is served now, by the sync thread's last confirmed sync.
    fn served(&self, room: &str) -> bool {
        crate::matrix::served(&self.link.status, room)
    }

    /// Plans `text` as events of `style` (with `header`, for an unasked message) into the
    /// store (not yet saved): their transaction ids fixed by `key`, the block's number in
    /// it and the part, so the same plan after a crash is the same events.
    fn plan_into(&mut self, room: &str, (key, block): (&str, u64), what: Planned<'_>, why: &Why) {
        let Planned(style, header, text) = what;
        for part in plan(key, block, style, header, text) {
            if self.store.outbox.iter().any(|o| o.txn == part.txn) {
                continue;
            }
            self.store.outbox.push(Outgoing {
                room: room.to_string(),
                txn: part.txn,
                why: why.clone(),
                content: part.content,
            });
        }
    }
}

/// `/status`'s answer for a room: what memory brought into the last turn is quoted only
/// when its label is at or below `max_class`; otherwise its label and length are said
/// and the text waits at the terminal. A label that cannot be read counts as above.
fn memory_weighed(lines: Vec<String>, max_class: proto::DataClass) -> Vec<String> {
    const HEAD: &str = "last turn from memory (";
    let mut out = Vec::with_capacity(lines.len());
    let mut it = lines.into_iter().peekable();
    while let Some(line) = it.next() {
        let Some(label) = line
            .strip_prefix(HEAD)
            .and_then(|rest| rest.strip_suffix("):"))
        else {
            out.push(line);
            continue;
        };
        let class = label
            .split(',')
            .next()
            .and_then(|c| c.trim().parse::<proto::DataClass>().ok());
        if class.is_some_and(|c| c <= max_class) {
            out.push(line);
            continue;
        }
        let mut quoted = 0;
        // Its lines are indented, and marked where they look like loopd's own.
        while it
            .peek()
            .is_some_and(|l| l.starts_with("  ") || l.starts_with(proto::shown::MARK))
        {
            it.next();
            quoted += 1;
        }
        out.push(format!(
            "last turn from memory ({label}): {quoted} lines, above matrix.max_class ({max_class}): /status at the terminal shows them"
        ));
    }
    out
}

/// The number of the reminder a `/remind` confirmation (`reminder N set for …`) names.
fn reminder_set(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("reminder ")?;
    let (n, rest) = rest.split_once(' ')?;
    rest.starts_with("set for ")
        .then(|| n.parse().ok())
        .flatten()
}

/// What an event is: its style, an unasked message's header, its text.
struct Planned<'a>(Style, &'a str, &'a str);

/// The session a room is in, as the store keeps it.
fn session_of(store: &Store, room: &str, default: &str) -> String {
    store
        .rooms
        .get(room)
        .cloned()
        .unwrap_or_else(|| default.to_string())
}

impl<W: Work> Channel<W> {
    /// Attaches the Matrix channel's threads: from the next wake on, rooms are clients.
    pub(crate) fn attach_matrix(&mut self, link: Link, store: Store) {
        self.rooms = Some(Rooms::new(link, store, self.cfg.state_dir.clone()));
        // Redactions a removal asked for before a crash kept them from the store.
        for (path, lines) in crate::redactions::pending(&self.cfg.state_dir) {
            plumbing::info!(
                "matrix: redactions of a /forget cut short ({}): planning them now",
                path.display()
            );
            self.matrix_redact(&lines);
        }
    }

    /// What the Matrix threads said since the last wake, and, the first time, the lines a
    /// crash left unanswered and the events it left unsent.
    pub(super) fn matrix_wake(&mut self, out: &mut Outbox) {
        let Some(rooms) = self.rooms.as_mut() else {
            return;
        };
        if !rooms.resumed {
            rooms.resumed = true;
            let waiting: Vec<Inbound> = rooms.store.inbound.clone();
            if !waiting.is_empty() {
                plumbing::info!(
                    "matrix: {} lines taken before a restart and not answered; answering them now",
                    waiting.len()
                );
            }
            for l in waiting {
                self.room_line(out, &l.room, &l.event, &l.body);
            }
        }
        loop {
            let Some(rooms) = self.rooms.as_mut() else {
                return;
            };
            let Ok(up) = rooms.link.up.try_recv() else {
                break;
            };
            match up {
                Up::Lines { lines, on_disk } => self.lines_in(out, lines, on_disk),
                Up::Sent { txn, room, event } => self.acknowledged(&txn, &room, &event),
                Up::Refused { txn } => self.refused(&txn),
                Up::Deferred { txn } => {
                    if let Some(rooms) = self.rooms.as_mut() {
                        rooms.handed.remove(&txn);
                    }
                }
                Up::Rooms => self.rooms_offer_waiting(),
            }
        }
        self.rooms_flush(out);
    }

    /// A sync's lines: each one not taken before goes into the store, which is saved
    /// before the sync thread is told it may move its position on; then each is queued on
    /// its room's connection.
    fn lines_in(
        &mut self,
        out: &mut Outbox,
        lines: Vec<Line>,
        on_disk: std::sync::mpsc::SyncSender<()>,
    ) {
        let default = self.cfg.matrix.session.clone();
        let Some(rooms) = self.rooms.as_mut() else {
            return;
        };
        let mut new = Vec::new();
        for l in lines {
            if rooms.store.taken(&l.event) || new.iter().any(|n: &Line| n.event == l.event) {
                continue;
            }
            let session = session_of(&rooms.store, &l.room, &default);
            rooms.store.rooms.insert(l.room.clone(), session.clone());
            rooms.store.last_room.insert(session, l.room.clone());
            rooms.store.inbound.push(Inbound {
                room: l.room.clone(),
                event: l.event.clone(),
                body: l.body.clone(),
            });
            new.push(l);
        }
        // Saved even when every line was known: one a failed write left in memory only
        // must be on disk before the position moves past it.
        let saved = rooms.save();
        if !new.is_empty() {
            conversation::testhook::abort_at("matrix-lines-stored");
        }
        if !saved {
            // Not on disk: the position is not moved on, so the lines come again. They
            // are queued now all the same (the store keeps them in memory).
        } else {
            // The thread may have given up waiting; the lines come again then, taken.
            let _ = on_disk.try_send(());
        }
        for l in new {
            self.room_line(out, &l.room, &l.event, &l.body);
        }
        // The owner wrote: what waits for their session may go to this room now.
        self.rooms_offer_waiting();
    }

    /// Queues an owner's line on its room's connection (made on first use).
    fn room_line(&mut self, out: &mut Outbox, room: &str, event: &str, body: &str) {
        let default = self.cfg.matrix.session.clone();
        let Some(rooms) = self.rooms.as_mut() else {
            return;
        };
        let id = match rooms.conns.get(room) {
            Some(id) => *id,
            None => {
                let id = ConnId(rooms.next_conn);
                rooms.next_conn += 1;
                rooms.conns.insert(room.to_string(), id);
                rooms.outs.insert(
                    id,
                    RoomOut {
                        room: room.to_string(),
                        reader: blocks::Reader::default(),
                        owed: VecDeque::new(),
                        typing: None,
                    },
                );
                id
            }
        };
        // `/allow N` runs the refused fetch as a turn: its answer is the model's.
        let whose = match super::commands::parse(body) {
            Some(Ok(Command::Allow(_))) => Whose::Turn,
            Some(_) => Whose::Loopd,
            None if body.trim().is_empty() => Whose::Loopd,
            None => Whose::Turn,
        };
        let quotes = match super::commands::parse(body) {
            Some(Ok(Command::Status)) => Quotes::Memory,
            _ => Quotes::Nothing,
        };
        if let Some(o) = rooms.outs.get_mut(&id) {
            o.owed.push_back((whose, event.to_string(), quotes));
        }
        if body.starts_with("/forget") {
            rooms.store.keep_forget(event);
        }
        if whose == Whose::Turn {
            rooms.link.send(Down::Typing {
                room: room.to_string(),
                on: true,
            });
            if let Some(o) = rooms.outs.get_mut(&id) {
                o.typing = Some(Instant::now());
            }
        }
        if let std::collections::hash_map::Entry::Vacant(slot) = self.conns.entry(id) {
            let name = session_of(&rooms.store, room, &default);
            let session = match SessionId::parse(&name) {
                Ok(s) => s,
                Err(e) => {
                    plumbing::error!("matrix: room {room}: session {name:?}: {e}");
                    return;
                }
            };
            slot.insert(Conn::room(session));
        }
        if let Some(conn) = self.conns.get_mut(&id) {
            conn.pending.push_back(Queued::Line(
                body.to_string(),
                Some(FromMatrix {
                    event: event.to_string(),
                }),
            ));
        }
        self.pump(out, id);
    }

    /// The blocks rendered for rooms since the last call, planned into events: the store
    /// saved with them before any is handed to the send thread, and each answered line
    /// leaving the waiting lines in the same write.
    pub(super) fn rooms_flush(&mut self, out: &mut Outbox) {
        let max_class = self.cfg.matrix.max_class;
        let taken = out.take_sent(is_room);
        let Some(rooms) = self.rooms.as_mut() else {
            return;
        };
        let mut changed = false;
        for (id, bytes) in taken {
            let Some(o) = rooms.outs.get_mut(&id) else {
                continue;
            };
            let room = o.room.clone();
            let done = o.reader.feed(&bytes);
            // A turn still streaming keeps its typing notice on.
            let streaming =
                done.is_empty() && o.owed.front().is_some_and(|(w, ..)| *w == Whose::Turn);
            if streaming && o.typing.is_some_and(|t| t.elapsed() >= TYPING_REFRESH) {
                o.typing = Some(Instant::now());
                rooms.link.send(Down::Typing {
                    room: room.clone(),
                    on: true,
                });
            }
            let mut owed = Vec::new();
            for lines in done {
                let (whose, event, quotes) =
                    o.owed
                        .pop_front()
                        .unwrap_or((Whose::Loopd, String::new(), Quotes::Nothing));
                let lines = match quotes {
                    Quotes::Memory => memory_weighed(lines, max_class),
                    Quotes::Nothing => lines,
                };
                owed.push((whose, event, lines));
            }
            let session = self.conns.get(&id).map(|c| c.session.clone());
            for (whose, event, lines) in owed {
                changed = true;
                if whose == Whose::Turn {
                    rooms.link.send(Down::Typing {
                        room: room.clone(),
                        on: false,
                    });
                }
                let label = session
                    .as_ref()
                    .and_then(|s| match self.board.get(s.as_str()) {
                        Some(SessionView::Open { label, .. }) => Some(label),
                        _ => None,
                    });
                let key = format!("reply\n{room}\n{event}");
                let why = Why::Reply {
                    event: event.clone(),
                };
                let held = whose == Whose::Turn && label.is_some_and(|l| l.class > max_class);
                if held {
                    // Kept for the terminal: `/inbox` there shows it, and the next
                    // connection to the session gets it (docs/matrix.md, 'Labels').
                    let pieces = lines
                        .iter()
                        .map(|l| match l.strip_prefix("· ") {
                            Some(own) => conversation::inbox::Piece::Activity(own.to_string()),
                            None => conversation::inbox::Piece::Text(format!("{l}\n")),
                        })
                        .collect();
                    if let (Some(s), Some(l)) = (&session, label) {
                        let (m, saved) = self.mail.inbox.with(|i| {
                            i.add(
                                s.as_str(),
                                conversation::inbox::Kind::Held,
                                pieces,
                                l,
                                false,
                                None,
                            )
                        });
                        if let Err(e) = saved {
                            plumbing::error!("inbox: {e}");
                        }
                        rooms.store.keep_held(m.n);
                    }
                    let words = format!(
                        "loopd: this reply is labelled {}, above matrix.max_class ({}): it is not sent here. It waits at the terminal: /inbox there shows it.",
                        label.map(|l| l.class.to_string()).unwrap_or_default(),
                        max_class
                    );
                    rooms.plan_into(&room, (&key, 0), Planned(Style::Notice, "", &words), &why);
                } else {
                    for (i, piece) in blocks::pieces(whose, &lines).into_iter().enumerate() {
                        let (style, text) = match piece {
                            Piece::Text(t) => (Style::Text, t),
                            Piece::Notice(t) => (Style::Notice, t),
                        };
                        rooms.plan_into(&room, (&key, i as u64), Planned(style, "", &text), &why);
                    }
                }
                // `/remind WHEN TEXT` set reminder N: its command and confirmation are
                // found by `remind N` when a removal takes the reminder.
                if let Some(n) = (whose == Whose::Loopd && !event.is_empty())
                    .then(|| lines.first().and_then(|l| reminder_set(l)))
                    .flatten()
                {
                    rooms.store.keep_sent(Sent {
                        room: room.clone(),
                        event: event.clone(),
                        line: format!("remind {n}"),
                    });
                }
                if !event.is_empty() {
                    rooms.store.keep_sent(Sent {
                        room: room.clone(),
                        event: event.clone(),
                        line: event.clone(),
                    });
                    rooms.store.answer(&event);
                }
            }
        }
        // `/session NAME` in a room switches it once its block ends.
        for (room, id) in &rooms.conns {
            if let Some(conn) = self.conns.get(id) {
                let now = conn.session.to_string();
                if rooms.store.rooms.get(room) != Some(&now) {
                    rooms.store.rooms.insert(room.clone(), now.clone());
                    // The session it left no longer sends its unasked messages here.
                    rooms.store.last_room.retain(|_, r| r != room);
                    rooms.store.last_room.insert(now, room.clone());
                    changed = true;
                }
            }
        }
        if changed {
            rooms.save();
            conversation::testhook::abort_at("matrix-reply-planned");
        }
        rooms.hand_over();
    }

    /// The homeserver acknowledged an event: it leaves the store; an inbox message it
    /// carried is delivered, and an event holding a line's text is kept for `/forget`.
    fn acknowledged(&mut self, txn: &str, room: &str, event: &str) {
        let Some(rooms) = self.rooms.as_mut() else {
            return;
        };
        conversation::testhook::abort_at("matrix-acknowledged");
        rooms.handed.remove(txn);
        if let Some(at) = rooms.store.cancelled.iter().position(|t| t == txn) {
            // Taken back by `/forget` while it was on its way: redacted at once.
            rooms.store.cancelled.remove(at);
            rooms.redact(room, event);
            rooms.save();
            rooms.hand_over();
            return;
        }
        let Some(at) = rooms.store.outbox.iter().position(|o| o.txn == txn) else {
            return;
        };
        let o = rooms.store.outbox.remove(at);
        let mut delivered = None;
        match &o.why {
            Why::Reply { event: line } if rooms.store.redacted.contains(line) => {
                rooms.redact(room, event);
            }
            Why::Reply { event: line } => rooms.store.keep_sent(Sent {
                room: room.to_string(),
                event: event.to_string(),
                line: line.clone(),
            }),
            Why::Inbox { n } => {
                rooms.store.keep_sent(Sent {
                    room: room.to_string(),
                    event: event.to_string(),
                    line: format!("inbox {n}"),
                });
                let last = !rooms
                    .store
                    .outbox
                    .iter()
                    .any(|x| matches!(x.why, Why::Inbox { n: m } if m == *n));
                if last {
                    delivered = Some(*n);
                }
            }
            Why::Notice | Why::Redact { .. } => {}
        }
        rooms.save();
        let room_conn = rooms.conns.get(room).copied();
        let idle = !rooms.store.outbox.iter().any(|x| x.room == room);
        rooms.hand_over();
        if let Some(n) = delivered {
            let session = self
                .mail
                .inbox
                .with(|i| i.get(n).map(|m| m.session.clone()));
            if let Err(e) = self.mail.inbox.with(|i| i.delivered(&[n])) {
                plumbing::error!("inbox: {e}");
            }
            if let Some(session) = session {
                plumbing::info!(
                    "session {session}: inbox message {n} delivered to Matrix room {room}"
                );
                self.note(
                    &session,
                    format!("inbox message {n} delivered to a Matrix room"),
                );
            }
        }
        // `/inbox` in a room: what it showed is delivered once its reply is acknowledged.
        if let (Some(id), true) = (room_conn, idle) {
            self.mail_drained(id);
        }
    }

    /// The homeserver refused an event for good: it leaves the store (the thread said so
    /// in the journal); an inbox message it carried still waits.
    fn refused(&mut self, txn: &str) {
        let Some(rooms) = self.rooms.as_mut() else {
            return;
        };
        rooms.handed.remove(txn);
        let room = rooms
            .store
            .outbox
            .iter()
            .find(|o| o.txn == txn)
            .map(|o| o.room.clone());
        rooms.store.outbox.retain(|o| o.txn != txn);
        // A room that refuses loopd's events (it left, or may not write there) gets no
        // more unasked messages until an owner writes there again.
        if let Some(room) = room {
            rooms.store.last_room.retain(|_, r| *r != room);
        }
        rooms.save();
        rooms.hand_over();
    }

    /// Offers what waits in the inbox to each session's room, when it is served.
    fn rooms_offer_waiting(&mut self) {
        let Some(rooms) = self.rooms.as_ref() else {
            return;
        };
        let sessions: Vec<String> = rooms.store.last_room.keys().cloned().collect();
        for session in sessions {
            let waiting = self.mail.inbox.with(|i| i.waiting(&session));
            for m in waiting {
                self.room_offer(&m);
            }
        }
        if let Some(rooms) = self.rooms.as_mut() {
            rooms.hand_over();
        }
    }

    /// Plans an unasked message for the served room an owner last wrote in for its
    /// session (docs/matrix.md, 'Unasked messages'); above `matrix.max_class`, a notice
    /// that it waits at the terminal instead. Returns whether a room will get it.
    pub(super) fn room_offer(&mut self, m: &Message) -> bool {
        let max_class = self.cfg.matrix.max_class;
        let Some(rooms) = self.rooms.as_mut() else {
            return false;
        };
        let Some(room) = rooms.store.last_room.get(&m.session).cloned() else {
            return false;
        };
        if !rooms.served(&room) {
            return false;
        }
        let why = Why::Inbox { n: m.n };
        if rooms.store.outbox.iter().any(|o| o.why == why) {
            return true;
        }
        if m.class > max_class {
            if rooms.store.held.contains(&m.n) {
                return false;
            }
            let words = format!(
                "loopd: a {} from {} waits at the terminal: it is labelled {}, above matrix.max_class ({}). /inbox there shows it.",
                m.kind.word(),
                super::broadcast::local(&m.time),
                m.class,
                max_class
            );
            let key = format!("held\n{}", m.n);
            rooms.plan_into(
                &room,
                (&key, 0),
                Planned(Style::Notice, "", &words),
                &Why::Notice,
            );
            rooms.store.keep_held(m.n);
            rooms.save();
            rooms.hand_over();
            return false;
        }
        let again = if m.tried { " (again)" } else { "" };
        let header = format!(
            "loopd: {} at {}{again}",
            m.kind.word(),
            super::broadcast::local(&m.time)
        );
        // A reminder's message: the `/remind` that set it is found by `inbox N` too.
        if let Some(k) = m
            .source
            .as_deref()
            .and_then(|s| s.strip_prefix("reminder "))
        {
            let set: Vec<Sent> = rooms
                .store
                .sent
                .iter()
                .filter(|s| s.line == format!("remind {k}"))
                .map(|s| Sent {
                    line: format!("inbox {}", m.n),
                    ..s.clone()
                })
                .collect();
            for s in set {
                rooms.store.keep_sent(s);
            }
        }
        let text = super::unasked::screen_text(&m.pieces);
        let key = format!("inbox\n{}", m.session);
        let planned = Planned(Style::Unasked, &header, text.trim_end());
        rooms.plan_into(&room, (&key, m.n), planned, &why);
        rooms.save();
        rooms.hand_over();
        true
    }

    /// What `/status` says of the Matrix channel.
    pub(super) fn matrix_status(&self, session: &SessionId) -> String {
        let Some(rooms) = self.rooms.as_ref() else {
            return String::new();
        };
        let s = rooms.link.status();
        let mut out = format!("matrix: {}\n", s.state);
        // Every room loopd writes in, and every room it does not serve, whether or not
        // a line was ever taken from it.
        let mut all: std::collections::BTreeSet<&String> = rooms.store.rooms.keys().collect();
        all.extend(s.stopped.iter());
        all.extend(s.encrypted.iter());
        for room in all {
            let sess = rooms
                .store
                .rooms
                .get(room)
                .map_or(self.cfg.matrix.session.as_str(), String::as_str);
            let why = if s.encrypted.contains(room) {
                "not served: it is encrypted"
            } else if s.stopped.contains(room) {
                "not served: no owner is in it, or someone besides the owners joined or was invited"
            } else {
                "served"
            };
            out.push_str(&format!("matrix room {room}: session {sess}, {why}\n"));
        }
        if !rooms.store.last_room.contains_key(session.as_str()) {
            out.push_str(&format!(
                "matrix: no room for session {session} yet (write in one to get its unasked messages there)\n"
            ));
        }
        if s.waiting > 0 || !rooms.store.outbox.is_empty() {
            out.push_str(&format!(
                "matrix: {} events waiting for the homeserver\n",
                rooms.store.outbox.len()
            ));
        }
        if s.strangers > 0 {
            out.push_str(&format!(
                "matrix: {} messages from others ignored since start\n",
                s.strangers
            ));
        }
        out
    }

    /// `/forget` removed text from the turns of these owner's events: each, and every
    /// event loopd sent in answer, is redacted, its transaction id fixed by the room and
    /// the event (docs/matrix.md, 'Forgetting').
    pub(super) fn matrix_redact(&mut self, lines: &[String]) {
        let Some(rooms) = self.rooms.as_mut() else {
            return;
        };
        // The `/forget` commands that listed the text, and their lists, hold it too.
        // The removal being answered now in a room (its line is the one a room's
        // connection is waiting on) stays: its answer says what was done. A removal made
        // at the terminal keeps none, so a room's `/forget "QUERY"` goes too.
        let mut lines = lines.to_vec();
        let current = rooms
            .outs
            .iter()
            .filter(|(id, _)| self.conns.get(id).is_some_and(|c| c.in_flight.is_some()))
            .filter_map(|(_, o)| o.owed.front().map(|(_, event, _)| event.clone()))
            .find(|event| rooms.store.forgets.contains(event));
        lines.extend(
            rooms
                .store
                .forgets
                .drain(..)
                .filter(|f| Some(f) != current.as_ref()),
        );
        rooms.store.forgets.extend(current);
        // A reminder or an inbox message stands for the room events that showed it, and
        // an owner's `/remind` event for its confirmation too.
        let shown_by: Vec<String> = rooms
            .store
            .sent
            .iter()
            .filter(|s| {
                (s.line.starts_with("remind ") || s.line.starts_with("inbox "))
                    && lines.contains(&s.line)
            })
            .map(|s| s.event.clone())
            .collect();
        for e in shown_by {
            if !lines.contains(&e) {
                lines.push(e);
            }
        }
        let targets: Vec<Sent> = rooms
            .store
            .sent
            .iter()
            .filter(|s| lines.contains(&s.line))
            .cloned()
            .collect();
        for t in &targets {
            rooms.redact(&t.room, &t.event);
        }
        // What was planned for these lines (or the inbox messages `inbox N` names) and
        // not yet acknowledged is never sent: it leaves the store in this write, and the
        // send thread drops it; one already on its way is redacted when acknowledged.
        let gone: Vec<(String, bool)> = rooms
            .store
            .outbox
            .iter()
            .filter(|o| match &o.why {
                Why::Reply { event } => lines.contains(event),
                Why::Inbox { n } => lines.contains(&format!("inbox {n}")),
                Why::Notice | Why::Redact { .. } => false,
            })
            .map(|o| (o.txn.clone(), rooms.handed.contains(&o.txn)))
            .collect();
        for (txn, handed) in &gone {
            rooms.store.outbox.retain(|o| o.txn != *txn);
            if *handed {
                rooms.handed.remove(txn);
                rooms.link.send(Down::Cancel { txn: txn.clone() });
                rooms.store.cancelled.push_back(txn.clone());
                while rooms.store.cancelled.len() > crate::matrix::store::MAX_SENT_KEPT {
                    rooms.store.cancelled.pop_front();
                }
            }
        }
        // Once planned, they are no longer these lines' events to find; a reply still
        // on its way is redacted when acknowledged.
        rooms.store.sent.retain(|s| !lines.contains(&s.line));
        rooms.store.keep_redacted(&lines);
        let saved = rooms.save();
        if saved {
            crate::matrix::store::pending_settled(&rooms.state_dir, &rooms.store.redacted);
        }
        plumbing::info!(
            "matrix: {} events to redact after a /forget, {} not sent",
            targets.len(),
            gone.len()
        );
        rooms.hand_over();
    }

    /// A SIGHUP: a refused token is read again at once.
    pub(super) fn matrix_hangup(&self) {
        if let Some(rooms) = &self.rooms {
            rooms.link.hangup();
        }
    }

    /// In a room, a command whose answer quotes stored text of any label (`/recall`,
    /// `/inbox`, a `/forget` list) is answered at the terminal only, unless
    /// `matrix.max_class` is the top class: loopd does not weigh each quoted text's label
    /// against it there (docs/matrix.md, 'Labels'). Returns whether it answered so.
    pub(super) fn kept_from_room(&self, out: &mut Outbox, id: ConnId, command: &Command) -> bool {
        use conversation::forget::Ask;
        if !is_room(id) || self.cfg.matrix.max_class == proto::DataClass::Secret {
            return false;
        }
        let quotes = matches!(
            command,
            Command::Recall(_) | Command::Inbox | Command::Forget(Ask::List(_) | Ask::More)
        );
        if quotes {
            out.send(
                id,
                whole(&format!(
                    "this answer quotes stored text, which may be labelled above matrix.max_class ({}): ask at the terminal. /forget N… and /forget all work here on a list shown there.",
                    self.cfg.matrix.max_class
                )),
            );
        }
        quotes
    }

    /// `/quit` in a room closes nothing: the room stays served.
    pub(super) fn quit_in_room(&self, out: &mut Outbox, id: ConnId) -> bool {
        if !is_room(id) {
            return false;
        }
        out.send(
            id,
            whole("/quit closes a terminal's connection; this room stays served (leave the room to stop)"),
        );
        true
    }
}
