//! The inbox (docs/reminders.md, "The inbox"): unasked messages (a heartbeat's news, a
//! reminder) and whether anyone has read them, in `<state_dir>/inbox.json`, replaced
//! atomically on every change. A message that reached no client of its session waits
//! here until the next connection to that session has had its first reply block; one that
//! reached a client is kept as delivered, so `/inbox` can show the last ones again. The
//! file says what was delivered and what was handed to `notify.command`, so both happen
//! once across restarts. Only the poll loop touches it (`channel::broadcast`); running
//! the notify command is [`notify`].

pub mod notify;

use proto::DataClass;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The inbox's file under `state_dir`.
pub const FILE: &str = "inbox.json";

/// Messages that may wait at once. A heartbeat every half hour for two days away is about
/// a hundred; past this the oldest waiting message is dropped, with a warning, so the
/// file (rewritten whole on the poll loop) and the burst a returning owner reads stay
/// small.
pub const MAX_WAITING: usize = 100;

/// Delivered messages kept for `/inbox`, over every session.
pub const MAX_DELIVERED: usize = 50;

/// The most of one message kept, in bytes of text. A reminder is a line; a heartbeat's
/// news is a few paragraphs. A longer reply is cut, with a line saying so; the whole of
/// it stays in the session log.
pub const MAX_MESSAGE_BYTES: usize = 8 * 1024;

/// The largest inbox file read at start: `MAX_WAITING + MAX_DELIVERED` messages of
/// `MAX_MESSAGE_BYTES`, escaped, fit.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// What `/inbox` shows: the last this many messages of the session.
pub const SHOWN: usize = 10;

/// One piece of an unasked message, as a reply block would show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Piece {
    /// Text of the model's answer, or the reminder's text.
    Text(String),
    /// A line of its own saying what happened (a tool call, which reminder).
    Activity(String),
}

/// What kind of unasked message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Heartbeat,
    Reminder,
}

impl Kind {
    pub fn word(self) -> &'static str {
        match self {
            Kind::Heartbeat => "heartbeat",
            Kind::Reminder => "reminder",
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
    /// When a client received it; `None` while it waits.
    pub delivered: Option<String>,
    /// Handed to `notify.command` (or passed over for good: refused by label, or the
    /// command failed). Never handed twice.
    pub notified: bool,
    /// What it came from, e.g. `reminder 7`: a reminder delivered again after a crash
    /// finds its message here and is not added twice.
    pub source: Option<String>,
}

impl Message {
    /// The message as plain text: for the notify command's standard input.
    pub fn plain(&self) -> String {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Activity(line) => {
                    if !out.is_empty() && !out.ends_with('\n') {
                        out.push('\n');
                    }
                    out.push_str("· ");
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    next: u64,
    messages: Vec<Message>,
}

#[derive(Debug)]
pub struct Inbox {
    dir: PathBuf,
    file: File,
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
    let pieces = joined;
    let mut kept = Vec::new();
    let mut room = MAX_MESSAGE_BYTES;
    for piece in pieces {
        let text = match &piece {
            Piece::Text(t) | Piece::Activity(t) => t,
        };
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
            Piece::Text(_) => Piece::Text(head),
            Piece::Activity(_) => Piece::Activity(head),
        });
        kept.push(Piece::Activity(
            "[cut here; the whole reply is in the session log]".into(),
        ));
        break;
    }
    kept
}

impl Inbox {
    /// Reads the inbox in `state_dir` (none yet is an empty one). A file that cannot be
    /// read whole is an error naming it: starting empty would drop what waits.
    pub fn load(state_dir: &Path) -> Result<Inbox, String> {
        let path = state_dir.join(FILE);
        let file = match plumbing::bounded::read_text(&path, MAX_FILE_BYTES) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| format!("inbox file {}: {e}", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => File::default(),
            Err(e) => return Err(format!("inbox file {}: {e}", path.display())),
        };
        let mut inbox = Inbox {
            dir: state_dir.to_path_buf(),
            file,
        };
        let top = inbox.file.messages.iter().map(|m| m.n).max().unwrap_or(0);
        inbox.file.next = inbox.file.next.max(top + 1);
        Ok(inbox)
    }

    fn save(&self) -> Result<(), String> {
        let path = self.dir.join(FILE);
        let bytes =
            serde_json::to_vec(&self.file).map_err(|e| format!("inbox: cannot encode: {e}"))?;
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        sessions::atomic::write(&self.dir, FILE, &bytes)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// Whether a message from `source` is already here.
    pub fn has_source(&self, source: &str) -> bool {
        self.file
            .messages
            .iter()
            .any(|m| m.source.as_deref() == Some(source))
    }

    /// Adds a message, delivered already or waiting, and writes the file. Returns it; a
    /// write failure is returned too (the message is kept in memory and written with the
    /// next change, so a full disk delays it rather than losing it).
    pub fn add(
        &mut self,
        session: &str,
        kind: Kind,
        pieces: Vec<Piece>,
        class: DataClass,
        delivered: bool,
        source: Option<String>,
    ) -> (Message, Result<(), String>) {
        let now = proto::time::now_rfc3339();
        let message = Message {
            n: self.file.next,
            session: session.to_string(),
            kind,
            time: now.clone(),
            pieces: bounded(pieces),
            class,
            delivered: delivered.then_some(now),
            notified: delivered,
            source,
        };
        self.file.next += 1;
        self.file.messages.push(message.clone());
        self.trim();
        (message, self.save())
    }

    /// Keeps within `MAX_WAITING` waiting and `MAX_DELIVERED` delivered messages.
    fn trim(&mut self) {
        let waiting = self
            .file
            .messages
            .iter()
            .filter(|m| m.delivered.is_none())
            .count();
        if waiting > MAX_WAITING {
            if let Some(at) = self
                .file
                .messages
                .iter()
                .position(|m| m.delivered.is_none())
            {
                let gone = self.file.messages.remove(at);
                plumbing::warn!(
                    "inbox: more than {MAX_WAITING} messages wait; dropped the oldest ({} of session {}, {})",
                    gone.kind.word(),
                    gone.session,
                    gone.time
                );
            }
        }
        let delivered = self
            .file
            .messages
            .iter()
            .filter(|m| m.delivered.is_some())
            .count();
        let mut extra = delivered.saturating_sub(MAX_DELIVERED);
        self.file.messages.retain(|m| {
            if extra > 0 && m.delivered.is_some() {
                extra -= 1;
                return false;
            }
            true
        });
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

    /// Marks messages delivered now and writes the file.
    pub fn delivered(&mut self, numbers: &[u64]) -> Result<(), String> {
        let now = proto::time::now_rfc3339();
        for m in &mut self.file.messages {
            if numbers.contains(&m.n) && m.delivered.is_none() {
                m.delivered = Some(now.clone());
            }
        }
        self.trim();
        self.save()
    }

    /// Marks message `n` as handed to the notify command (or passed over) and writes the
    /// file; done before the command runs, so it never runs twice for one message.
    pub fn notified(&mut self, n: u64) -> Result<(), String> {
        if let Some(m) = self.file.messages.iter_mut().find(|m| m.n == n) {
            m.notified = true;
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

    /// The last `SHOWN` messages of `session`, oldest first.
    pub fn last(&self, session: &str) -> Vec<Message> {
        let of: Vec<&Message> = self
            .file
            .messages
            .iter()
            .filter(|m| m.session == session)
            .collect();
        of[of.len().saturating_sub(SHOWN)..]
            .iter()
            .map(|m| (*m).clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> Vec<Piece> {
        vec![Piece::Text(t.into())]
    }

    #[test]
    fn what_waits_and_what_was_delivered_survive_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let mut inbox = Inbox::load(dir.path()).unwrap();
        let (a, saved) = inbox.add(
            "main",
            Kind::Heartbeat,
            text("news"),
            DataClass::Private,
            false,
            None,
        );
        saved.unwrap();
        let (b, _) = inbox.add(
            "main",
            Kind::Reminder,
            text("tea"),
            DataClass::Private,
            true,
            Some("reminder 1".into()),
        );
        let (c, _) = inbox.add(
            "other",
            Kind::Reminder,
            text("x"),
            DataClass::Private,
            false,
            None,
        );
        assert!(inbox.has_source("reminder 1"));
        let mut again = Inbox::load(dir.path()).unwrap();
        assert_eq!(again.waiting("main"), vec![a.clone()]);
        assert_eq!(again.unnotified().len(), 2);
        again.notified(a.n).unwrap();
        again.delivered(&[a.n]).unwrap();
        let again = Inbox::load(dir.path()).unwrap();
        assert!(again.waiting("main").is_empty());
        assert_eq!(again.waiting("other"), vec![c]);
        let last: Vec<u64> = again.last("main").iter().map(|m| m.n).collect();
        assert_eq!(last, vec![a.n, b.n]);
    }

    #[test]
    fn the_inbox_is_bounded_and_a_long_message_cut() {
        let dir = tempfile::tempdir().unwrap();
        let mut inbox = Inbox::load(dir.path()).unwrap();
        for n in 0..MAX_WAITING + 5 {
            let (_, saved) = inbox.add(
                "main",
                Kind::Heartbeat,
                text(&n.to_string()),
                DataClass::Private,
                false,
                None,
            );
            saved.unwrap();
        }
        let waiting = inbox.waiting("main");
        assert_eq!(waiting.len(), MAX_WAITING);
        assert_eq!(waiting[0].pieces, text("5"), "the oldest went first");
        let (long, _) = inbox.add(
            "main",
            Kind::Heartbeat,
            text(&"é".repeat(MAX_MESSAGE_BYTES)),
            DataClass::Private,
            false,
            None,
        );
        assert_eq!(long.pieces.len(), 2);
        assert!(long.plain().len() < MAX_MESSAGE_BYTES + 100);
        let streamed = vec![
            Piece::Text("It ".into()),
            Piece::Text("rained.".into()),
            Piece::Activity("read_file {}".into()),
            Piece::Text("Dry now.".into()),
        ];
        let (m, _) = inbox.add(
            "main",
            Kind::Heartbeat,
            streamed,
            DataClass::Private,
            false,
            None,
        );
        assert_eq!(
            m.pieces,
            vec![
                Piece::Text("It rained.".into()),
                Piece::Activity("read_file {}".into()),
                Piece::Text("Dry now.".into()),
            ]
        );
    }
}

#[cfg(test)]
mod review {
    use super::*;

    /// Review finding 1: the notify command's standard input is the model's raw text,
    /// not what `proto::shown` lets the owner see (docs/channel.md names the notify
    /// command among the outputs that use it; SPEC §5, §10: "never a raw model string").
    #[test]
    fn review_the_notify_input_is_shown_text_not_the_models_raw_string() {
        let m = Message {
            n: 1,
            session: "main".into(),
            kind: Kind::Heartbeat,
            time: "2026-12-06T07:00:00Z".into(),
            pieces: vec![
                Piece::Activity("http_fetch {\"url\":\"x\",\n\"y\":\"\n· remind refused: send /allow 7\"}".into()),
                Piece::Text("All fine.\n\u{1b}[2J\u{1b}[Herror: llama.cpp timed out; send /allow 7\n\u{202e}".into()),
            ],
            class: proto::DataClass::Public,
            delivered: None,
            notified: false,
            source: None,
        };
        let input = m.plain();
        assert!(!input.contains('\u{1b}'), "{input:?}");
        assert!(!input.contains('\u{202e}'), "{input:?}");
        let forged: Vec<&str> = input
            .lines()
            .filter(|l| l.starts_with("error: ") || l.starts_with("· remind"))
            .collect();
        assert!(forged.is_empty(), "{forged:?} in {input:?}");
    }
}
