//! The inbox (docs/reminders.md, "The inbox"): unasked messages (a heartbeat's news, a
//! reminder) and whether anyone has read them, in `<state_dir>/inbox.json`, replaced
//! atomically on every change. A message that reached no client of its session waits
//! here until the next connection to that session has had its first reply block; one that
//! reached a client is kept as delivered, so `/inbox` can show the last ones again. The
//! file says what was delivered, what was offered to a client (`tried`: shown again after
//! a crash, marked as a repeat) and what was handed to `notify.command`, so nothing is
//! lost and nothing repeated unmarked across restarts (docs/reminders.md, 'Delivery keeps
//! its word'). The poll loop delivers (`channel::broadcast`); the turn worker adds a
//! heartbeat's message and forgets (`crate::forget::mail`), so it is shared behind a
//! mutex ([`Shared`]); running the notify command is [`notify`].

mod fold;
pub mod notify;

use crate::testhook;
#[cfg(test)]
use fold::MAX_WAITING_MUST_ONLY;
use fold::{fold, keep_newest};
use proto::{DataClass, Label};
use serde::{Deserialize, Serialize};
use sessions::numbered::{Store, StoreError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// The inbox's file under `state_dir`.
pub const FILE: &str = "inbox.json";

/// The inbox's file: a numbered store (`sessions::numbered`), as the reminders' book is.
const STORE: Store = Store {
    name: FILE,
    what: "inbox",
    max_bytes: MAX_FILE_BYTES,
};

/// Heartbeat messages that wait at once in one session: the newest few. Older ones are
/// folded into a count the owner is shown, so no number of heartbeats (nor a page's
/// orders that steer them) can fill the inbox or push a reminder out
/// (docs/reminders.md, 'Delivery keeps its word').
pub const MAX_WAITING_HEARTBEATS: usize = 5;

/// Reminders that wait at once, over every session: the reminder book's own limit, so
/// every reminder the book can hold can wait. Past it a due reminder stays in the book
/// (and still counts there) until the inbox has room: none is ever dropped.
pub const MAX_WAITING_REMINDERS: usize = remind::MAX_REMINDERS;

/// Delivered reminders kept for `/inbox`, over every session.
pub(crate) const MAX_DELIVERED_REMINDERS: usize = 50;

/// Delivered heartbeat messages kept for `/inbox`, over every session; apart from the
/// reminders', so heartbeats never push a reminder out of `/inbox` either.
pub(crate) const MAX_DELIVERED_HEARTBEATS: usize = 10;

/// Replies held back from Matrix kept, waiting or delivered, over every session: the
/// newest; an older one is still whole in its session log.
pub(crate) const MAX_HELD: usize = 20;

/// The most of one message kept, in bytes of text. A reminder is a line; a heartbeat's
/// news is a few paragraphs. A longer reply is cut, with a line saying so; the whole of
/// it stays in the session log.
pub(crate) const MAX_MESSAGE_BYTES: usize = 8 * 1024;

/// The largest inbox file read at start: every message the bounds above allow (reminders
/// are one line of at most `remind::MAX_TEXT_CHARS`; heartbeats `MAX_MESSAGE_BYTES`),
/// escaped, fit with room to spare.
pub(crate) const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// What `/inbox` shows of a session: its last this many reminders…
pub(crate) const SHOWN_REMINDERS: usize = 10;

/// …and its last this many heartbeat messages, so a flood of heartbeats cannot hide a
/// reminder there.
pub(crate) const SHOWN_HEARTBEATS: usize = 3;

/// One piece of an unasked message, as a reply block would show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Piece {
    /// Text of the model's answer, or the reminder's text.
    Text(String),
    /// A line of its own saying what happened (a tool call, which reminder).
    Activity(String),
    /// A line of its own shown as `Activity` is, that the owner must read even when its
    /// heartbeat message is folded away: a reminder the model set, or held for `/allow`
    /// (docs/reminders.md, 'The inbox').
    Must(String),
}

/// What kind of unasked message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Heartbeat,
    Reminder,
    /// A reply to a line from a Matrix room, labelled above `matrix.max_class`: kept
    /// for the terminal instead of being sent (docs/matrix.md, 'Labels').
    Held,
}

impl Kind {
    pub fn word(self) -> &'static str {
        match self {
            Kind::Heartbeat => "heartbeat",
            Kind::Reminder => "reminder",
            Kind::Held => "reply held back from Matrix",
        }
    }
}

/// One message as the file holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Message {
    pub n: u64,
    pub session: String,
    pub kind: Kind,
    /// When it came, RFC 3339 UTC.
    pub time: String,
    pub pieces: Vec<Piece>,
    pub class: DataClass,
    /// Written while the context was untrusted (a heartbeat after a page): its text may
    /// be a page's words, so it is never handed to the notify command.
    #[serde(default)]
    pub untrusted: bool,
    /// When a client received it (its whole block written to the socket); `None` while
    /// it waits.
    pub delivered: Option<String>,
    /// Handed to `notify.command` (the command was started with it), or passed over for
    /// good (refused by label or taint). Never handed twice.
    pub notified: bool,
    /// Its block was queued for a client before it was marked delivered: after a crash
    /// it may have reached the owner already, so it is shown again marked `(again)`.
    #[serde(default)]
    pub tried: bool,
    /// A notify command was about to be started with it before it was marked `notified`:
    /// after a crash it may have been handed over already, so it is handed over again
    /// marked `(again)`.
    #[serde(default)]
    pub notify_tried: bool,
    /// Planned into the session's Matrix room before it was marked delivered: planned
    /// again after a crash, the room may have it already, so it comes marked `(again)`
    /// there. The room's own first copy is never marked, whatever a socket client got.
    #[serde(default)]
    pub room_tried: bool,
    /// What it came from, e.g. `reminder 7`: a reminder delivered again after a crash
    /// finds its message here and is not added twice.
    pub source: Option<String>,
}

/// The `source` of reminder `n`'s message.
pub fn reminder_source(n: u64) -> String {
    format!("reminder {n}")
}

/// The `source` of the message of the heartbeat turn whose `user` record has `time`.
pub fn heartbeat_source(time: &str) -> String {
    format!("heartbeat {time}")
}

impl Message {
    /// The reminder this message delivers, when it delivers one (`reminder_source`).
    pub fn reminder(&self) -> Option<u64> {
        self.source
            .as_deref()?
            .strip_prefix("reminder ")?
            .parse()
            .ok()
    }

    /// The time of the heartbeat turn this message came from (`heartbeat_source`), when
    /// it came from one.
    pub fn heartbeat_turn(&self) -> Option<&str> {
        self.source.as_deref()?.strip_prefix("heartbeat ")
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    next: u64,
    messages: Vec<Message>,
    /// Each session's count of waiting heartbeat messages folded away, shown (and reset)
    /// when its waiting messages are next delivered.
    #[serde(default)]
    folded: BTreeMap<String, u64>,
}

#[derive(Debug)]
pub struct Inbox {
    dir: PathBuf,
    file: File,
    /// The last write of the file failed: what it holds now is in memory only until a
    /// write succeeds (`unsaved`, `save_again`).
    unsaved: bool,
}

/// `pieces` with each run of text as one piece (a streamed answer comes a token at a
/// time), cut to `MAX_MESSAGE_BYTES` of text, with a line saying so when cut.
fn bounded(pieces: Vec<Piece>) -> Vec<Piece> {
    let mut joined: Vec<Piece> = Vec::new();
    for piece in pieces {
        match (joined.last_mut(), piece) {
            (Some(Piece::Text(run)), Piece::Text(more)) => run.push_str(&more),
            (_, piece) => joined.push(piece),
        }
    }
    let mut kept = Vec::new();
    let mut room = MAX_MESSAGE_BYTES;
    let mut must_room = MAX_MUST_BYTES;
    let mut cut_done = false;
    for piece in joined {
        // Reminder lines are kept past the cut of the text, on a budget of their own: a
        // long answer before them must not take them away (docs/reminders.md, 'The
        // inbox').
        let (text, must) = match &piece {
            Piece::Must(t) => (t, true),
            Piece::Text(t) | Piece::Activity(t) => (t, false),
        };
        if must {
            if text.len() <= must_room {
                must_room -= text.len();
                kept.push(piece);
            } else if must_room > 0 {
                must_room = 0;
                kept.push(Piece::Must(MORE_MUST.into()));
            }
            continue;
        }
        if cut_done {
            continue;
        }
        if text.len() <= room {
            room -= text.len();
            kept.push(piece);
            continue;
        }
        let mut cut = room;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let head = text[..cut].to_string();
        kept.push(match piece {
            Piece::Activity(_) => Piece::Activity(head),
            Piece::Text(_) | Piece::Must(_) => Piece::Text(head),
        });
        kept.push(Piece::Activity(
            "[cut here; the whole reply is in the session log]".into(),
        ));
        cut_done = true;
    }
    kept
}

/// The most of one message's reminder lines kept, in bytes: a line each is a hundred
/// bytes or so, so dozens of reminders set in one beat; past it one line says so.
pub(crate) const MAX_MUST_BYTES: usize = 4 * 1024;

/// The line standing for reminder lines past `MAX_MUST_BYTES`.
const MORE_MUST: &str = "more reminders were set or held; /remind and the session log have them";

impl Inbox {
    /// Reads the inbox in `state_dir` (none yet is an empty one). A file that cannot be
    /// read whole is an error naming it: starting empty would drop what waits.
    pub fn load(state_dir: &Path) -> Result<Inbox, StoreError> {
        let mut file: File = STORE.load(state_dir)?;
        file.next = sessions::numbered::next_number(file.next, file.messages.iter().map(|m| m.n));
        Ok(Inbox {
            dir: state_dir.to_path_buf(),
            file,
            unsaved: false,
        })
    }

    fn save(&mut self) -> Result<(), StoreError> {
        if let Err(e) = STORE.save(&self.dir, &self.file) {
            self.unsaved = true;
            return Err(e);
        }
        self.unsaved = false;
        testhook::abort_at("inbox-write");
        Ok(())
    }

    /// Whether the inbox holds more than its file: a write failed (a full disk) and none
    /// has succeeded since, so a crash now would lose what changed.
    pub fn unsaved(&self) -> bool {
        self.unsaved
    }

    /// Writes the file again after a failed write (`unsaved`); nothing when it is
    /// written already.
    pub fn save_again(&mut self) -> Result<(), StoreError> {
        if !self.unsaved {
            return Ok(());
        }
        self.save()
    }

    /// Whether a message from `source` is already here.
    pub fn has_source(&self, source: &str) -> bool {
        self.file
            .messages
            .iter()
            .any(|m| m.source.as_deref() == Some(source))
    }

    /// Adds a waiting message and writes the file. `tried`: its block is about to be
    /// queued for a client, so after a crash before the client had it whole it is shown
    /// again marked as a repeat. Returns it; a write failure is returned too (the message
    /// is kept in memory and written with the next change, so a full disk delays it
    /// rather than losing it).
    pub fn add(
        &mut self,
        session: &str,
        kind: Kind,
        pieces: Vec<Piece>,
        label: Label,
        tried: bool,
        source: Option<String>,
    ) -> (Message, Result<(), StoreError>) {
        let message = self.push(session, kind, pieces, label, tried, source);
        self.trim();
        (message, self.save())
    }

    /// `add`, all or nothing: when the file cannot be written, the inbox is left as it
    /// was and the error returned. For a message whose only other copy is about to go (a
    /// reminder leaving the book): it must be on disk here before it leaves there, or a
    /// restart loses it (docs/reminders.md, 'The inbox').
    pub fn add_saved(
        &mut self,
        session: &str,
        kind: Kind,
        pieces: Vec<Piece>,
        label: Label,
        tried: bool,
        source: Option<String>,
    ) -> Result<Message, StoreError> {
        let before = (self.file.clone(), self.unsaved);
        let (message, saved) = self.add(session, kind, pieces, label, tried, source);
        match saved {
            Ok(()) => Ok(message),
            Err(e) => {
                (self.file, self.unsaved) = before;
                Err(e)
            }
        }
    }

    fn push(
        &mut self,
        session: &str,
        kind: Kind,
        pieces: Vec<Piece>,
        label: Label,
        tried: bool,
        source: Option<String>,
    ) -> Message {
        let message = Message {
            n: self.file.next,
            session: session.to_string(),
            kind,
            time: proto::time::now_rfc3339(),
            pieces: bounded(pieces),
            class: label.class,
            untrusted: label.untrusted,
            delivered: None,
            notified: false,
            tried,
            notify_tried: false,
            room_tried: false,
            source,
        };
        self.file.next += 1;
        self.file.messages.push(message.clone());
        message
    }

    /// Folds each session's waiting heartbeat messages past the newest
    /// `MAX_WAITING_HEARTBEATS` into its count, and keeps the last delivered reminders and
    /// heartbeat messages. Waiting reminders are never touched here.
    fn trim(&mut self) {
        let sessions: Vec<String> = self
            .file
            .messages
            .iter()
            .filter(|m| m.kind == Kind::Heartbeat && m.delivered.is_none())
            .map(|m| m.session.clone())
            .collect();
        let mut seen: Vec<&String> = Vec::new();
        for session in &sessions {
            if seen.contains(&session) {
                continue;
            }
            seen.push(session);
            let folded = fold(&mut self.file.messages, session);
            if folded > 0 {
                *self.file.folded.entry(session.clone()).or_default() += folded as u64;
                plumbing::info!(
                    "inbox: session {session}: {folded} older heartbeat messages folded into a count; the newest {MAX_WAITING_HEARTBEATS} wait, and the reminder lines of those folded"
                );
            }
        }
        keep_newest(&mut self.file.messages, MAX_DELIVERED_REMINDERS, |m| {
            m.kind == Kind::Reminder && m.delivered.is_some()
        });
        keep_newest(&mut self.file.messages, MAX_DELIVERED_HEARTBEATS, |m| {
            m.kind == Kind::Heartbeat && m.delivered.is_some()
        });
        keep_newest(&mut self.file.messages, MAX_HELD, |m| m.kind == Kind::Held);
    }

    /// The messages waiting for `session`, oldest first.
    pub fn waiting(&self, session: &str) -> Vec<Message> {
        self.file
            .messages
            .iter()
            .filter(|m| m.session == session && m.delivered.is_none())
            .cloned()
            .collect()
    }

    /// Reminders waiting, over every session.
    pub fn waiting_reminders(&self) -> usize {
        self.file
            .messages
            .iter()
            .filter(|m| m.kind == Kind::Reminder && m.delivered.is_none())
            .count()
    }

    /// How many heartbeat messages of `session` were folded away since its waiting
    /// messages were last delivered.
    pub fn folded(&self, session: &str) -> u64 {
        self.file.folded.get(session).copied().unwrap_or(0)
    }

    /// Messages `numbers` are about to be queued for a client of `session`: marked
    /// `tried`, the session's folded count taken (and returned), the file written.
    pub fn release(&mut self, session: &str, numbers: &[u64]) -> (u64, Result<(), StoreError>) {
        for m in &mut self.file.messages {
            if numbers.contains(&m.n) {
                m.tried = true;
            }
        }
        let folded = self.file.folded.remove(session).unwrap_or(0);
        (folded, self.save())
    }

    /// Message `n`'s block is about to be queued for a client, having waited for that
    /// client to finish a reply block: marked `tried` (shown again marked as a repeat after
    /// a crash), the file written when that changed it.
    pub fn tried(&mut self, n: u64) -> Result<(), StoreError> {
        self.mark(n, |m| &mut m.tried)
    }

    /// Message `n`'s block, marked `tried` when it was queued, reached no client: not a
    /// byte of it was written before the connection closed. Unmarked, so the next
    /// connection is not told it may have seen it; the file written when that changed it.
    pub fn untried(&mut self, n: u64) -> Result<(), StoreError> {
        match self.file.messages.iter_mut().find(|m| m.n == n) {
            Some(m) if m.tried && m.delivered.is_none() => {
                m.tried = false;
                self.save()
            }
            _ => Ok(()),
        }
    }

    /// Marks message `n` planned into its session's room and writes the file (a no-op
    /// when it was).
    pub fn room_tried(&mut self, n: u64) -> Result<(), StoreError> {
        self.mark(n, |m| &mut m.room_tried)
    }

    /// Sets the mark `flag` picks on message `n`, writing the file only when that changed
    /// it.
    fn mark(&mut self, n: u64, flag: fn(&mut Message) -> &mut bool) -> Result<(), StoreError> {
        match self.file.messages.iter_mut().find(|m| m.n == n).map(flag) {
            Some(set) if !*set => {
                *set = true;
                self.save()
            }
            _ => Ok(()),
        }
    }

    /// Marks messages delivered now and writes the file.
    pub fn delivered(&mut self, numbers: &[u64]) -> Result<(), StoreError> {
        let now = proto::time::now_rfc3339();
        let mut changed = false;
        for m in &mut self.file.messages {
            if numbers.contains(&m.n) && m.delivered.is_none() {
                m.delivered = Some(now.clone());
                changed = true;
            }
        }
        if !changed {
            return Ok(());
        }
        self.trim();
        self.save()
    }

    /// Marks message `n` as handed to the notify command (or passed over) and writes the
    /// file; done as the command is started with it, so it never runs twice for one
    /// message and a message still queued for it is not marked.
    pub fn notified(&mut self, n: u64) -> Result<(), StoreError> {
        if let Some(m) = self.file.messages.iter_mut().find(|m| m.n == n) {
            m.notified = true;
        }
        self.save()
    }

    /// Message `n` is about to be handed to the notify command: marked so, and the file
    /// written, before the command starts.
    pub fn notify_tried(&mut self, n: u64) -> Result<(), StoreError> {
        if let Some(m) = self.file.messages.iter_mut().find(|m| m.n == n) {
            m.notify_tried = true;
        }
        self.save()
    }

    /// The notify command could not be started with message `n`: it was not handed over,
    /// so its next try is no repeat.
    pub fn notify_untried(&mut self, n: u64) -> Result<(), StoreError> {
        if let Some(m) = self.file.messages.iter_mut().find(|m| m.n == n) {
            m.notify_tried = false;
        }
        self.save()
    }

    /// Waiting messages not yet handed to the notify command, oldest first.
    pub fn unnotified(&self) -> Vec<Message> {
        self.file
            .messages
            .iter()
            .filter(|m| m.delivered.is_none() && !m.notified)
            .cloned()
            .collect()
    }

    /// Message `n`, if it is still here (not forgotten, not trimmed).
    pub fn get(&self, n: u64) -> Option<&Message> {
        self.file.messages.iter().find(|m| m.n == n)
    }

    /// What `/inbox` shows of `session`: its last `SHOWN_REMINDERS` reminders and last
    /// `SHOWN_HEARTBEATS` heartbeat messages, oldest first.
    pub fn last(&self, session: &str) -> Vec<Message> {
        let of = |kind: Kind, shown: usize| {
            let all: Vec<&Message> = self
                .file
                .messages
                .iter()
                .filter(|m| m.session == session && m.kind == kind)
                .collect();
            all[all.len().saturating_sub(shown)..].to_vec()
        };
        let mut last = of(Kind::Reminder, SHOWN_REMINDERS);
        last.extend(of(Kind::Heartbeat, SHOWN_HEARTBEATS));
        last.extend(of(Kind::Held, SHOWN_HEARTBEATS));
        last.sort_by_key(|m| m.n);
        last.into_iter().cloned().collect()
    }

    /// Every message, for `/forget` to search.
    pub fn all(&self) -> &[Message] {
        &self.file.messages
    }

    /// Removes messages `numbers` (forgotten) and writes the file; returns how many went.
    pub fn remove(&mut self, numbers: &[u64]) -> Result<usize, StoreError> {
        let before = self.file.messages.len();
        self.file.messages.retain(|m| !numbers.contains(&m.n));
        let gone = before - self.file.messages.len();
        if gone > 0 {
            self.save()?;
        }
        Ok(gone)
    }
}

/// The inbox as the poll loop and the turn worker share it.
#[derive(Clone)]
pub struct Shared(Arc<Mutex<Inbox>>);

impl Shared {
    pub fn new(inbox: Inbox) -> Shared {
        Shared(Arc::new(Mutex::new(inbox)))
    }

    /// Runs `f` on the inbox. A panic elsewhere while it was held leaves an inbox whose
    /// file is whole (each change writes it completely), so the lock is taken anyway.
    pub fn with<T>(&self, f: impl FnOnce(&mut Inbox) -> T) -> T {
        let mut inbox = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut inbox)
    }
}

#[cfg(test)]
mod tests;
