//! What can go wrong with the book on disk and the owner's `/remind` (a WHEN's own
//! errors are `when::WhenError`). Each renders as the lower-case sentence the owner
//! reads after `error: `.

use crate::when::WhenError;
use crate::MAX_REMINDERS;
use std::fmt;
use std::path::PathBuf;

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
