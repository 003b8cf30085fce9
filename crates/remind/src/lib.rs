//! Reminders (docs/reminders.md): the book of reminders set by the owner (`/remind`) or by
//! the model (the `remind` tool), kept in `<state_dir>/reminders.json`, replaced
//! atomically on every change so a crash leaves the old book or the new one. The poll loop
//! reads the next due time for its timer (no thread sleeps for a reminder) and takes what
//! fell due; delivering it is loopd's channel (`channel::broadcast`), through the inbox.
//!
//! The book is shared between the poll loop and the turn worker (the tool, `/allow N`)
//! behind one mutex, held only for the in-memory change and the write of a small file.
//! A change made off the poll loop wakes it, so its timer follows the new book.

pub mod clock;
pub mod command;
mod error;
pub mod when;

pub use error::{BookError, CommandError};
pub use when::WhenError;

use chrono::{DateTime, Local, Utc};
use proto::DataClass;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// The book's file under `state_dir`.
pub const FILE: &str = "reminders.json";

/// Reminders set at once, over every session. A person keeps a few dozen; the bound keeps
/// the file (rewritten whole on each change) small, and a model looping on `remind`
/// cannot fill the disk.
pub const MAX_REMINDERS: usize = 500;

/// The longest reminder text kept, in characters. A reminder is a line for a phone's
/// lock screen; a longer text is cut (and says so) rather than refused.
pub const MAX_TEXT_CHARS: usize = 1000;

/// The largest book file read at start: `MAX_REMINDERS` of `MAX_TEXT_CHARS` (four bytes a
/// character at most, escaped) fit with room to spare.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Who set a reminder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum By {
    Owner,
    Assistant,
}

/// One reminder as the file holds it. `due` and `set` are RFC 3339 UTC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reminder {
    /// The book's own number, never reused; `/remind cancel N` names it.
    pub n: u64,
    pub session: String,
    pub due: String,
    pub text: String,
    pub set: String,
    pub by: By,
    /// The label class of the text: the owner's class, or the context's for the model's.
    pub class: DataClass,
    /// Written by the model while its context was untrusted, and set by the owner's
    /// `/allow N`: the owner allowed the reminder, but its words may be a page's, so it
    /// is delivered as untrusted text is (docs/reminders.md, 'The remind tool').
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub untrusted: bool,
}

impl Reminder {
    /// When it is due; a file edited by hand to hold something else is due now.
    pub fn due_at(&self) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(&self.due)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or(DateTime::<Utc>::MIN_UTC)
    }
}

/// The book's file: a numbered store (`sessions::numbered`), as the inbox is.
const STORE: sessions::numbered::Store = sessions::numbered::Store {
    name: FILE,
    what: "reminders",
    max_bytes: MAX_FILE_BYTES,
};

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    next: u64,
    reminders: Vec<Reminder>,
}

/// The book in memory, and where it lives.
#[derive(Debug)]
pub struct Book {
    dir: PathBuf,
    file: File,
}

/// A text made fit for one line: controls and line breaks become spaces, runs of white
/// space one space, and it is cut at `MAX_TEXT_CHARS`.
pub fn one_line(text: &str) -> String {
    let flat: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect();
    let flat = flat.join(" ");
    match flat.char_indices().nth(MAX_TEXT_CHARS) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}

/// A due time as the owner reads it: `17:30 Sat 5 Dec 2026` in local time.
pub fn shown(due: DateTime<Utc>) -> String {
    due.with_timezone(&Local)
        .format("%H:%M %a %-d %b %Y")
        .to_string()
}

impl Book {
    /// Reads the book in `state_dir` (none yet is an empty book). A file that cannot be
    /// read whole is an error naming it: starting with an empty book would drop reminders.
    pub fn load(state_dir: &Path) -> Result<Book, BookError> {
        let mut file: File = STORE.load(state_dir)?;
        file.next = sessions::numbered::next_number(file.next, file.reminders.iter().map(|r| r.n));
        Ok(Book {
            dir: state_dir.to_path_buf(),
            file,
        })
    }

    fn save(&self) -> Result<(), BookError> {
        Ok(STORE.save(&self.dir, &self.file)?)
    }

    /// Sets a reminder and writes the book; returns it (with its number).
    pub fn add(
        &mut self,
        session: &str,
        due: DateTime<Utc>,
        text: &str,
        by: By,
        class: DataClass,
    ) -> Result<Reminder, BookError> {
        self.insert(session, due, text, by, class, false)
    }

    /// `add` for a reminder the model wrote while its context was untrusted, which the
    /// owner's `/allow N` sets: its text is delivered as untrusted.
    pub fn add_untrusted(
        &mut self,
        session: &str,
        due: DateTime<Utc>,
        text: &str,
        class: DataClass,
    ) -> Result<Reminder, BookError> {
        self.insert(session, due, text, By::Assistant, class, true)
    }

    fn insert(
        &mut self,
        session: &str,
        due: DateTime<Utc>,
        text: &str,
        by: By,
        class: DataClass,
        untrusted: bool,
    ) -> Result<Reminder, BookError> {
        if self.file.reminders.len() >= MAX_REMINDERS {
            return Err(BookError::Full);
        }
        let reminder = Reminder {
            n: self.file.next,
            session: session.to_string(),
            due: due.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            text: one_line(text),
            set: proto::time::now_rfc3339(),
            by,
            class,
            untrusted,
        };
        self.file.next += 1;
        self.file.reminders.push(reminder.clone());
        if let Err(e) = self.save() {
            self.file.reminders.pop();
            return Err(e);
        }
        Ok(reminder)
    }

    /// Removes reminder `n` of `session`; returns it.
    pub fn cancel(&mut self, session: &str, n: u64) -> Result<Reminder, BookError> {
        let Some(at) = self
            .file
            .reminders
            .iter()
            .position(|r| r.n == n && r.session == session)
        else {
            return Err(BookError::NoSuch {
                n,
                session: session.to_string(),
            });
        };
        let gone = self.file.reminders.remove(at);
        if let Err(e) = self.save() {
            self.file.reminders.insert(at, gone);
            return Err(e);
        }
        Ok(gone)
    }

    /// The reminders of `session`, soonest first.
    pub fn of(&self, session: &str) -> Vec<Reminder> {
        let mut list: Vec<Reminder> = self
            .file
            .reminders
            .iter()
            .filter(|r| r.session == session)
            .cloned()
            .collect();
        list.sort_by_key(|r| (r.due_at(), r.n));
        list
    }

    /// Every reminder in the book, of every session (for `/forget` to search).
    pub fn all(&self) -> &[Reminder] {
        &self.file.reminders
    }

    /// When the soonest reminder is due.
    pub fn next_due(&self) -> Option<DateTime<Utc>> {
        self.file.reminders.iter().map(Reminder::due_at).min()
    }

    /// The reminders due at `now`, soonest first, still in the book: the caller hands
    /// them to the inbox, then [`Book::remove`]s them, so a crash between the two
    /// delivers again rather than never.
    pub fn due(&self, now: DateTime<Utc>) -> Vec<Reminder> {
        let mut due: Vec<Reminder> = self
            .file
            .reminders
            .iter()
            .filter(|r| r.due_at() <= now)
            .cloned()
            .collect();
        due.sort_by_key(|r| (r.due_at(), r.n));
        due
    }

    /// Removes reminders (delivered, or forgotten) and writes the book.
    pub fn remove(&mut self, numbers: &[u64]) -> Result<(), BookError> {
        let before = self.file.reminders.len();
        self.file.reminders.retain(|r| !numbers.contains(&r.n));
        if self.file.reminders.len() == before {
            return Ok(());
        }
        self.save()
    }
}

/// The book as the poll loop and the worker share it, and the poll loop's waker.
#[derive(Clone)]
pub struct Shared {
    book: Arc<Mutex<Book>>,
    wake: Option<Arc<mio::Waker>>,
}

impl Shared {
    pub fn new(book: Book, wake: Option<Arc<mio::Waker>>) -> Shared {
        Shared {
            book: Arc::new(Mutex::new(book)),
            wake,
        }
    }

    /// Runs `f` on the book. A panic elsewhere while it was held leaves a book whose file
    /// is whole (each change writes it completely), so the lock is taken anyway.
    pub fn with<T>(&self, f: impl FnOnce(&mut Book) -> T) -> T {
        let mut book = self.book.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut book)
    }

    /// Tells the poll loop the book changed, so its timer follows it.
    pub fn changed(&self) {
        if let Some(wake) = &self.wake {
            if let Err(e) = wake.wake() {
                plumbing::error!("reminders: waking the poll loop: {e}");
            }
        }
    }
}

/// What follows `refused call N: ` in the `note` of a `remind` call held for the owner's
/// `/allow N` (docs/reminders.md, "The remind tool"): then the due time (RFC 3339), `: `
/// and the reminder's text (one line). The note is for the owner to read; `/allow N` reads
/// the reminder from the `refused` record and the model's call, and this wording only in a
/// log written before held reminders had a `refused` record (docs/labels.md, 'Refusals and
/// `/allow N`').
pub fn held_note_prefix(call: u64) -> String {
    format!("/allow {call} sets a reminder for ")
}

/// The reminder a line of loopd's names, when it says one was set or cancelled: a
/// `note` (`set_note`, the cancelling note) or a confirmation (`reminder N set for …`,
/// `reminder N cancelled: …`). `/forget` finds the events that showed that reminder in a
/// Matrix room by its number.
pub fn noted(text: &str) -> Option<u64> {
    let rest = text.strip_prefix("reminder ")?;
    let (n, rest) = rest.split_once(' ')?;
    (rest.starts_with("set ") || rest.starts_with("cancelled"))
        .then(|| n.parse().ok())
        .flatten()
}

/// Whether a `note` is the owner's own `/remind WHEN TEXT` or `/remind cancel N`: written
/// for a command, between turns, never as part of the turn before it (the model's
/// `remind` call writes `set by the assistant`, inside its turn).
pub fn noted_for_the_owner(text: &str) -> bool {
    noted(text).is_some()
        && (text.contains(" set by the owner for ") || text.contains(" cancelled by the owner: "))
}

/// The `note` logged in the reminder's session when it is set.
pub fn set_note(r: &Reminder) -> String {
    let who = match r.by {
        By::Owner => "the owner",
        By::Assistant => "the assistant",
    };
    format!(
        "reminder {} set by {who} for {} ({}): {}",
        r.n,
        shown(r.due_at()),
        r.due,
        r.text
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notes_of_a_reminder_name_its_number() {
        assert_eq!(
            noted("reminder 12 set by the owner for 17:30 (x): tea"),
            Some(12)
        );
        assert_eq!(noted("reminder 3 set for 17:30 Mon: tea"), Some(3));
        assert_eq!(noted("reminder 4 cancelled by the owner: tea"), Some(4));
        assert_eq!(noted("reminder 5 delivered: to 1 connected clients"), None);
        assert_eq!(noted("reminder 6 cancelled: tea"), Some(6));
        assert_eq!(noted("reminders are nice"), None);
        assert!(noted_for_the_owner(
            "reminder 12 set by the owner for 17:30 (x): tea"
        ));
        assert!(noted_for_the_owner(
            "reminder 4 cancelled by the owner: tea"
        ));
        assert!(!noted_for_the_owner(
            "reminder 2 set by the assistant for 17:30 (x): tea"
        ));
    }

    #[test]
    fn a_book_survives_a_reload_and_numbers_are_never_reused() {
        let dir = tempfile::tempdir().unwrap();
        let mut book = Book::load(dir.path()).unwrap();
        let now = clock::now();
        let a = book
            .add(
                "main",
                now + chrono::Duration::hours(1),
                "tea",
                By::Owner,
                DataClass::Private,
            )
            .unwrap();
        let b = book
            .add(
                "main",
                now + chrono::Duration::minutes(5),
                "line\none",
                By::Assistant,
                DataClass::Public,
            )
            .unwrap();
        assert_eq!(b.text, "line one");
        book.cancel("main", a.n).unwrap();
        assert!(book.cancel("other", b.n).is_err());
        let again = Book::load(dir.path()).unwrap();
        assert_eq!(again.of("main"), vec![b.clone()]);
        let mut again = again;
        let c = again
            .add(
                "main",
                now + chrono::Duration::hours(2),
                "x",
                By::Owner,
                DataClass::Private,
            )
            .unwrap();
        assert!(c.n > b.n);
        assert!(again.due(now).is_empty());
        let due = again.due(now + chrono::Duration::minutes(6));
        assert_eq!(due, vec![b.clone()]);
        again.remove(&[b.n]).unwrap();
        assert_eq!(Book::load(dir.path()).unwrap().of("main"), vec![c]);
    }

    #[test]
    fn a_damaged_book_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE), "{\"next\": 1, \"reminders\": [").unwrap();
        let e = Book::load(dir.path()).unwrap_err();
        assert!(e.to_string().contains("reminders.json"), "{e}");
    }
}
