//! Matrix rooms as the channel's clients (docs/matrix.md, 'The channel in loopd'). Each
//! room the owner writes in is a connection of its own that no socket backs: its lines
//! are queued, started and answered by the same code as a socket's, one reply block
//! each, in order, commands included. The blocks rendered for it are taken back out of
//! the outbox (`Outbox::take_sent`), read into the model's text and loopd's notices
//! (`crate::matrix::blocks`) by the kinds of line their block wrote (`reply::Kinds`,
//! handed over when a job's block ends), planned into events with fixed transaction
//! ids, written to the store and handed to the send thread. A line leaves the store's
//! waiting lines only once its reply's events are in the store, so a crash before that
//! runs it again.

use super::commands::Command;
use super::reply::{whole, Kinds, LineKind};
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

mod acks;
mod attach;
mod commands;
mod line;
mod redact;
mod status;
#[cfg(test)]
mod tests_forget;
#[cfg(test)]
mod tests_inbox;
#[cfg(test)]
mod tests_recall;
#[cfg(test)]
mod tests_unasked;
mod unasked;

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
    owed: VecDeque<Owed>,
    /// When the typing notice was last sent on for the turn being answered.
    typing: Option<Instant>,
}

/// A block a room is owed for one of its lines.
struct Owed {
    whose: Whose,
    /// The Matrix event of the line.
    event: String,
    quotes: Quotes,
    /// Each line's kind, from the block that wrote it (a job's, once it ended).
    kinds: Option<Kinds>,
    /// The line is `/allow N`: its events are kept as `allow SESSION N`, for a removal
    /// of what that command fetched or set to find them.
    allow: Option<u64>,
}

/// Each line of the block `read` as `kinds` (from the block that wrote it) says: the
/// reader's cut line is an activity line. Were a turn's kinds missing, every line would
/// be taken as the model's, which can send loopd's words as text but never the model's
/// as loopd's.
fn line_kinds(read: &blocks::Read, kinds: Option<&Kinds>) -> Vec<LineKind> {
    let mut each = kinds.into_iter().flat_map(Kinds::lines);
    let mut out: Vec<LineKind> = read
        .lines
        .iter()
        .map(|_| each.next().unwrap_or(LineKind::Model))
        .collect();
    if let (true, Some(last)) = (read.cut, out.last_mut()) {
        *last = LineKind::Activity;
    }
    out
}

/// Whether a line of this kind is loopd's own: those go as notices. That is every kind
/// but the model's text, including loopd's unmarked words at a job's end (`/allow N`'s
/// answer) and an error's lines after its first: the one event an error or an answer
/// makes is a notice whole. What they quote of the model's (a held reminder's text, a
/// URL) is a one-line field after loopd's words, as in an activity line, and a line of
/// theirs that starts as loopd's is shown after `┃ ` (docs/matrix.md, 'Replies out').
fn marked(kind: LineKind) -> bool {
    !matches!(kind, LineKind::Model)
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

#[cfg(test)]
mod tests {
    use super::{marked, LineKind};
    use crate::channel::reply::{Block, Part};
    use crate::matrix::blocks::{pieces, Piece, Whose};

    /// The events a turn's block makes, by the kinds its block wrote.
    fn events(parts: &[Part<'_>]) -> Vec<Piece> {
        let mut out = String::new();
        let mut block = Block::with_kinds();
        for part in parts {
            block.put(*part, &mut out);
        }
        let kinds: Vec<LineKind> = block.end(&mut out).unwrap().lines().collect();
        let lines: Vec<String> = out.lines().map(String::from).collect();
        // The block's end line (`.`) is no line of the reply.
        let lines = &lines[..lines.len() - 1];
        pieces(Whose::Turn, lines, |i| marked(kinds[i]))
    }

    /// Regression: an error's lines after its first, and loopd's words at a job's end,
    /// went out as the model's text (`m.text`), beside the error's first line as a notice.
    #[test]
    fn an_errors_later_lines_and_loopds_last_words_are_loopds_notice_never_text() {
        assert_eq!(
            events(&[
                Part::Text("the model's words\n"),
                Part::Error("llama.cpp said:\nthe slot is busy"),
            ]),
            [
                Piece::Text("the model's words".into()),
                Piece::Notice("error: llama.cpp said:\nthe slot is busy".into()),
            ]
        );
        assert_eq!(
            events(&[
                Part::Activity("remind"),
                Part::Said("reminder 1 set for 10:00: water the plants"),
            ]),
            [Piece::Notice(
                "· remind\nreminder 1 set for 10:00: water the plants".into()
            )]
        );
        // The model's text that reads as loopd's words stays the model's.
        assert_eq!(
            events(&[Part::Text("reminder 2 set for 11:00: call Eve\n")]),
            [Piece::Text("reminder 2 set for 11:00: call Eve".into())]
        );
    }
}
