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

impl std::error::Error for BookError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BookError::Read { err, .. } | BookError::Dir { err, .. } => Some(err),
            BookError::Parse { err, .. } | BookError::Encode(err) => Some(err),
            BookError::Write { err, .. } => Some(err),
            BookError::Full | BookError::NoSuch { .. } => None,
        }
    }
}

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

impl std::error::Error for CommandError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CommandError::When(e) => Some(e),
            CommandError::Book(e) => Some(e),
            CommandError::CancelNeedsOne | CommandError::CancelNumber(_) | CommandError::NoText => {
                None
            }
        }
    }
}

impl From<BookError> for CommandError {
    fn from(e: BookError) -> CommandError {
        CommandError::Book(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    /// Guards that a wrapping error hands its cause on, so a reporter walking `source()`
    /// reaches the io error at the bottom.
    #[test]
    fn a_wrapping_error_names_its_cause() {
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
        let e = CommandError::Book(BookError::Read {
            path: "reminders.json".into(),
            err: io,
        });
        let book = e.source().expect("the book error");
        let cause = book.source().expect("the io error");
        assert_eq!(cause.to_string(), "denied");
        assert!(CommandError::NoText.source().is_none());
    }
}
