//! Forgetting (docs/forgetting.md): the one exception to append-only logs. This module
//! owns finding what the owner asked to forget (`find`), the plan that names what a
//! removal changes (`plan`, written before the first change so a crash can be finished),
//! and the removal on disk itself (`apply`): each epoch log holding a chosen record
//! rewritten atomically with the record replaced by a labelled `forgotten` record (docs/forgetting.md, 'Labels'), and each carried summary
//! holding the text redacted in its head. The slots, memoryd and Honcho (its reporter's
//! cursor, moved by `Plan::rewrite`, and what its API allows) are told by the engine and
//! the worker once the files are done.
//!
//! Nothing here logs the text being forgotten: log lines name sessions, epochs, kinds
//! and character counts only.

pub mod apply;
pub mod find;
pub mod mail;
pub mod plan;

#[cfg(test)]
mod tests;

use std::fmt;

/// What a `/forget` line asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ask {
    /// List what holds this text.
    List(String),
    /// Show the next page of the last list.
    More,
    /// Remove these entries (numbered from 1) of the last list.
    Remove(Vec<usize>),
    /// Remove every entry of the last list.
    All,
}

impl Ask {
    /// `/forget`'s argument: `all`, `more`, numbers, or else a query. A query in double
    /// quotes is always a query, so a PIN or a card number (`/forget "4471"`) or the word
    /// `all` can be listed; the quotes are not part of it.
    pub fn parse(arg: &str) -> Ask {
        if let Some(quoted) = arg
            .strip_prefix('"')
            .and_then(|rest| rest.strip_suffix('"'))
        {
            return Ask::List(quoted.to_string());
        }
        match arg {
            "all" => return Ask::All,
            "more" => return Ask::More,
            _ => {}
        }
        let numbers: Option<Vec<usize>> = arg
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|w| !w.is_empty())
            .map(|w| w.parse().ok().filter(|&n| n > 0))
            .collect();
        match numbers {
            Some(n) if !n.is_empty() => Ask::Remove(n),
            _ => Ask::List(arg.to_string()),
        }
    }
}

/// Why a forget could not be done. Each names the file.
#[derive(Debug)]
pub enum ForgetError {
    Files(sessions::Error),
    /// A record the plan names is not where the plan says (the log changed under it).
    Moved {
        path: std::path::PathBuf,
        line: u64,
    },
    /// The plan file could not be read back as a plan.
    BadPlan {
        path: std::path::PathBuf,
        message: String,
    },
}

impl From<sessions::Error> for ForgetError {
    fn from(e: sessions::Error) -> ForgetError {
        ForgetError::Files(e)
    }
}

impl fmt::Display for ForgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ForgetError::Files(e) => e.fmt(f),
            ForgetError::Moved { path, line } => write!(
                f,
                "{} line {}: the record to forget is no longer there",
                path.display(),
                line + 1
            ),
            ForgetError::BadPlan { path, message } => {
                write!(f, "forget plan {}: {message}", path.display())
            }
        }
    }
}

impl std::error::Error for ForgetError {}

/// An I/O failure of `op` on `path`, as the session files' error names it.
fn io(op: &'static str, path: &std::path::Path) -> impl FnOnce(std::io::Error) -> ForgetError {
    let path = path.to_path_buf();
    move |source| ForgetError::Files(sessions::Error::Io { op, path, source })
}
