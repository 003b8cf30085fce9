//! The one error type of the session files: each names the file and what was done to it.

use std::fmt;
use std::io;
use std::path::PathBuf;

#[derive(Debug)]
pub enum Error {
    /// `op` on `path` failed (open, read, list, write, rename, fsync…).
    Io {
        op: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    /// A record line that is damage, not a write in progress. `line` counts from 1 at
    /// the offset the reader started from; `at` is the line's byte offset.
    BadLine {
        path: PathBuf,
        line: u64,
        at: u64,
        message: String,
    },
    /// A head file that is not a head, or not the epoch its name says.
    BadHead { path: PathBuf, message: String },
}

impl Error {
    pub(crate) fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { op, path, source }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { op, path, source } => write!(f, "{op} {}: {source}", path.display()),
            Error::BadLine {
                path,
                line,
                message,
                ..
            } => write!(f, "{} line {line}: {message}", path.display()),
            Error::BadHead { path, message } => write!(f, "{}: {message}", path.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::BadLine { .. } | Error::BadHead { .. } => None,
        }
    }
}
