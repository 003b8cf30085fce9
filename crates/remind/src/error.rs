//! What can go wrong with reminders, typed: reading a WHEN, the book on disk, and the
//! owner's `/remind`. Each renders as the lower-case sentence the owner reads after
//! `error: `; the words are made here and nowhere below.

use crate::when::{FORMS, MAX_AHEAD_DAYS};
use crate::MAX_REMINDERS;
use chrono::NaiveDate;
use std::fmt;
use std::path::PathBuf;

/// A WHEN that could not be read (docs/reminders.md, 'When'): each names the word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WhenError {
    /// Nothing after `/remind` or in the tool's `when`.
    Missing,
    /// `today`, `tomorrow` or a date with no time after it.
    NeedsTime(String),
    /// `in` with nothing after it.
    NeedsSpan,
    /// `in 2` with no unit.
    NeedsUnit(String),
    /// `in 2 fortnights`.
    Unit(String),
    /// `in 2x`.
    Span(String),
    /// Not `H:MM` or `HH:MM`.
    Time(String),
    /// Not `YYYY-MM-DD`.
    Date(String),
    /// A local time a clock change skips.
    Skipped { word: String, day: NaiveDate },
    /// Past the calendar's end.
    OutOfRange,
    /// Already past, as the owner's clock shows it.
    Past(String),
    /// More than `MAX_AHEAD_DAYS` ahead.
    TooFar,
    /// A span of more than `MAX_AHEAD_DAYS`.
    SpanTooFar(String),
    /// More digits than a number holds.
    TooLarge(String),
    /// Words after the WHEN where only a WHEN may stand (the tool's `when`).
    Trailing(String),
}

impl fmt::Display for WhenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WhenError::Missing => write!(f, "no time given; {FORMS}"),
            WhenError::NeedsTime(w) => write!(f, "{w:?} needs a time after it; {FORMS}"),
            WhenError::NeedsSpan => {
                write!(f, "\"in\" needs a span after it, like 2h or 30m; {FORMS}")
            }
            WhenError::NeedsUnit(w) => write!(f, "{w:?} needs a unit (m, h, d); {FORMS}"),
            WhenError::Unit(w) => {
                write!(
                    f,
                    "could not read {w:?} as a unit of time (m, h, d); {FORMS}"
                )
            }
            WhenError::Span(w) => write!(
                f,
                "could not read {w:?} as a span of time (like 2h, 30m, 1h30m); {FORMS}"
            ),
            WhenError::Time(w) => write!(f, "could not read {w:?} as a time (HH:MM); {FORMS}"),
            WhenError::Date(w) => {
                write!(f, "could not read {w:?} as a date (YYYY-MM-DD); {FORMS}")
            }
            WhenError::Skipped { word, day } => write!(
                f,
                "{word:?} on {day} does not exist in local time (a clock change skips it)"
            ),
            WhenError::OutOfRange => write!(f, "the date is out of range"),
            WhenError::Past(shown) => write!(f, "{shown} is in the past"),
            WhenError::TooFar => {
                write!(f, "that is more than {MAX_AHEAD_DAYS} days ahead; {FORMS}")
            }
            WhenError::SpanTooFar(w) => write!(f, "{w:?} is more than {MAX_AHEAD_DAYS} days ahead"),
            WhenError::TooLarge(w) => write!(f, "{w:?} is too large a number; {FORMS}"),
            WhenError::Trailing(rest) => write!(f, "could not read {rest:?}; {FORMS}"),
        }
    }
}

impl std::error::Error for WhenError {}

/// The book could not be read, written or changed.
#[derive(Debug)]
pub enum BookError {
    /// The file is there but cannot be read whole.
    Read {
        path: PathBuf,
        err: std::io::Error,
    },
    /// The file is not a book.
    Parse {
        path: PathBuf,
        err: serde_json::Error,
    },
    Encode(serde_json::Error),
    /// The state directory cannot be made.
    Dir {
        path: PathBuf,
        err: std::io::Error,
    },
    /// The atomic replace failed; the old book stands.
    Write {
        path: PathBuf,
        err: sessions::Error,
    },
    /// `MAX_REMINDERS` are set.
    Full,
    /// No reminder of that number in that session.
    NoSuch {
        n: u64,
        session: String,
    },
}

impl fmt::Display for BookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BookError::Read { path, err } => write!(f, "reminders file {}: {err}", path.display()),
            BookError::Parse { path, err } => {
                write!(f, "reminders file {}: {err}", path.display())
            }
            BookError::Encode(err) => write!(f, "reminders: cannot encode the book: {err}"),
            BookError::Dir { path, err } => write!(f, "cannot write {}: {err}", path.display()),
            BookError::Write { path, err } => write!(f, "cannot write {}: {err}", path.display()),
            BookError::Full => write!(
                f,
                "{MAX_REMINDERS} reminders are already set; cancel one first (/remind cancel N)"
            ),
            BookError::NoSuch { n, session } => {
                write!(
                    f,
                    "no reminder {n} in session {session}; /remind lists them"
                )
            }
        }
    }
}

impl std::error::Error for BookError {}

/// The owner's `/remind` could not be done.
#[derive(Debug)]
pub enum CommandError {
    /// `/remind cancel` with no number or several.
    CancelNeedsOne,
    /// `/remind cancel x`.
    CancelNumber(String),
    When(WhenError),
    /// A WHEN and nothing to be reminded of.
    NoText,
    Book(BookError),
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandError::CancelNeedsOne => write!(
                f,
                "/remind cancel needs the number of one reminder (/remind lists them)"
            ),
            CommandError::CancelNumber(n) => {
                write!(
                    f,
                    "/remind cancel needs the number of a reminder, got {n:?}"
                )
            }
            CommandError::When(e) => write!(f, "/remind: {e}"),
            CommandError::NoText => {
                write!(f, "/remind needs a text after the time: /remind WHEN TEXT")
            }
            CommandError::Book(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CommandError {}

impl From<BookError> for CommandError {
    fn from(e: BookError) -> CommandError {
        CommandError::Book(e)
    }
}
