//! What can go wrong with the book on disk and the owner's `/remind` (a WHEN's own
//! errors are `when::WhenError`). Each renders as the lower-case sentence the owner
//! reads after `error: `.

use crate::when::WhenError;
use crate::MAX_REMINDERS;
use sessions::numbered::StoreError;
use std::fmt;

/// The book could not be read, written or changed.
#[derive(Debug)]
pub enum BookError {
    /// The book's file could not be read or written; a write failure leaves the old
    /// book standing.
    Store(StoreError),
    /// `MAX_REMINDERS` are set.
    Full,
    /// No reminder of that number in that session.
    NoSuch { n: u64, session: String },
}

impl fmt::Display for BookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BookError::Store(e) => write!(f, "{e}"),
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
            BookError::Store(e) => Some(e),
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

impl From<StoreError> for BookError {
    fn from(e: StoreError) -> BookError {
        BookError::Store(e)
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
        let e = CommandError::Book(BookError::Store(StoreError::Read {
            what: "reminders",
            path: "reminders.json".into(),
            err: io,
        }));
        let book = e.source().expect("the book error");
        let store = book.source().expect("the store error");
        let cause = store.source().expect("the io error");
        assert_eq!(cause.to_string(), "denied");
        assert!(CommandError::NoText.source().is_none());
    }
}
