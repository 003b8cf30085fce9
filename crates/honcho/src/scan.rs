//! Finding finished turns in a session's logs, from a cursor on. The logs are the source of
//! truth: this module only reads them, the way memoryd does, and never writes.
//!
//! A turn is a `user` record and the records after it up to the next `user`. It is finished
//! once an `assistant` record without tool calls follows its `user` record; that record's
//! content is the turn's final text. A turn whose `user` record is followed by another
//! `user` record, or by the end of a closed epoch, without such an answer never finished (a
//! failed turn, or one that ran out of context and was run again in the next epoch) and is
//! passed over. An epoch is closed once a later epoch has a head: loopd writes that head
//! only after the epoch's last record.

use super::cursor::Cursor;
use proto::head::log_file_name;
use proto::{Origin, Record};
use sessions::lines::{Line, LineReader};
use std::fmt;
use std::path::{Path, PathBuf};

/// One side of a turn: a record's text, its time and where its line starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    pub offset: u64,
    pub time: String,
    pub text: String,
}

/// A finished turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    pub epoch: u64,
    pub origin: Origin,
    /// The `user` record; its offset is where the turn starts.
    pub user: Said,
    /// The final `assistant` record.
    pub answer: Said,
    /// The byte offset just past the final answer's line.
    pub end: u64,
}

/// What one scan found: finished turns in log order, and where the cursor may rest once
/// all of them are reported (past trailing records that belong to no unfinished turn).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    pub turns: Vec<Turn>,
    pub rest: Cursor,
}

#[derive(Debug)]
pub enum ScanError {
    /// Listing the session directory or reading a log failed, or a log has a bad line.
    Files(sessions::Error),
    PastEnd {
        path: PathBuf,
        offset: u64,
        len: u64,
    },
    EpochGone {
        dir: PathBuf,
        epoch: u64,
    },
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScanError::Files(sessions::Error::BadLine {
                path, at, message, ..
            }) => write!(
                f,
                "log {} has a bad line at byte {at}: {message}",
                path.display()
            ),
            ScanError::Files(e) => e.fmt(f),
            ScanError::PastEnd { path, offset, len } => write!(
                f,
                "report cursor offset {offset} is past the end of log {} ({len} bytes); \
                 remove the cursor file to report the session from its start",
                path.display()
            ),
            ScanError::EpochGone { dir, epoch } => write!(
                f,
                "report cursor names epoch {epoch}, which session directory {} does not reach; \
                 remove the cursor file to report the session from its start",
                dir.display()
            ),
        }
    }
}

impl std::error::Error for ScanError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ScanError::Files(e) => Some(e),
            ScanError::PastEnd { .. } | ScanError::EpochGone { .. } => None,
        }
    }
}

impl From<sessions::Error> for ScanError {
    fn from(e: sessions::Error) -> ScanError {
        ScanError::Files(e)
    }
}

/// Finished turns from `from` on, at most `max_turns` of them (at least one is always
/// allowed), crossing into later epochs as earlier ones turn out closed.
pub fn scan(dir: &Path, from: Cursor, max_turns: usize) -> Result<Scan, ScanError> {
    let max_turns = max_turns.max(1);
    // The epochs are listed before any log is read, so an epoch seen here as closed has
    // all its records on disk by the time its log is read.
    let epochs = sessions::epochs::list(dir)?.heads;
    let mut turns = Vec::new();
    let Some(&first) = epochs.range(from.epoch..).next() else {
        // A cursor beyond every epoch means the logs were replaced under it. Nothing is
        // guessed: the owner is told, and decides whether to report them again.
        if from != Cursor::default() {
            return Err(ScanError::EpochGone {
                dir: dir.to_path_buf(),
                epoch: from.epoch,
            });
        }
        return Ok(Scan { turns, rest: from });
    };
    let mut epoch = first;
    let mut offset = if first == from.epoch { from.offset } else { 0 };
    loop {
        let path = dir.join(log_file_name(epoch));
        let (safe, full) = scan_log(&path, epoch, offset, max_turns, &mut turns)?;
        let next = epochs.range(epoch + 1..).next().copied();
        match next {
            Some(later) if !full => {
                epoch = later;
                offset = 0;
            }
            _ => {
                let mut rest = Cursor {
                    epoch,
                    offset: safe,
                    done: 0,
                };
                if (rest.epoch, rest.offset) == (from.epoch, from.offset) {
                    rest.done = from.done;
                }
                return Ok(Scan { turns, rest });
            }
        }
    }
}

/// Reads one epoch's log from `offset`, appending finished turns to `turns` until it holds
/// `max_turns`. Returns the offset the cursor may rest at and whether the limit was hit.
fn scan_log(
    path: &Path,
    epoch: u64,
    offset: u64,
    max_turns: usize,
    turns: &mut Vec<Turn>,
) -> Result<(u64, bool), ScanError> {
    // The head is written before the epoch's first record, so a head without a log is
    // an epoch with no records yet.
    let Some(mut reader) = LineReader::open(path, offset, 0)? else {
        if offset > 0 {
            return Err(ScanError::PastEnd {
                path: path.to_path_buf(),
                offset,
                len: 0,
            });
        }
        return Ok((offset, false));
    };
    let len = std::fs::metadata(path)
        .map_err(|source| sessions::Error::Io {
            op: "read",
            path: path.to_path_buf(),
            source,
        })?
        .len();
    if offset > len {
        return Err(ScanError::PastEnd {
            path: path.to_path_buf(),
            offset,
            len,
        });
    }
    let mut safe = offset;
    let mut pending: Option<(Origin, Said)> = None;
    // The pending turn's last answer that asked for tools: what it is reported with if
    // it ends without one that does not (its rounds ran out).
    let mut asked_tools: Option<Said> = None;
    // A torn tail is still being written (or was torn by a crash and will be cut by
    // loopd): it is not read, and neither is anything after it.
    while let Line::Record {
        at: start, record, ..
    } = reader.next_line()?
    {
        let pos = reader.pos();
        match record {
            Record::User {
                time,
                content,
                origin,
                ..
            } => {
                // The turn before ended without an answer free of tool calls (its
                // rounds ran out): finished all the same, so the owner's message is
                // reported with its last answer's text. A turn with no answer at all
                // failed, and is not reported.
                if let (Some((origin, user)), Some(answer)) = (pending.take(), asked_tools.take()) {
                    turns.push(Turn {
                        epoch,
                        origin,
                        user,
                        answer,
                        end: start,
                    });
                    if turns.len() >= max_turns {
                        return Ok((start, true));
                    }
                }
                let said = Said {
                    offset: start,
                    time,
                    text: content,
                };
                pending = Some((origin, said));
                asked_tools = None;
                safe = start;
            }
            Record::Assistant {
                time,
                content,
                tool_calls,
                cut,
            } => {
                // A round that asked for tools: the turn goes on, unless the answer was
                // cut (its calls are never run, so it is the turn's last).
                if !tool_calls.is_empty() && !cut {
                    if pending.is_some() {
                        asked_tools = Some(Said {
                            offset: start,
                            time,
                            text: content.unwrap_or_default(),
                        });
                    }
                } else if let Some((origin, user)) = pending.take() {
                    asked_tools = None;
                    // An answer without text still ends the turn; it is reported as empty
                    // so the owner's message is not lost with it.
                    turns.push(Turn {
                        epoch,
                        origin,
                        user,
                        answer: Said {
                            offset: start,
                            time,
                            text: content.unwrap_or_default(),
                        },
                        end: pos,
                    });
                    safe = pos;
                    if turns.len() >= max_turns {
                        return Ok((safe, true));
                    }
                }
            }
            Record::ToolResult { .. }
            | Record::ToolSummary { .. }
            | Record::Usage { .. }
            | Record::Memory { .. }
            | Record::Note { .. }
            | Record::Forgotten { .. }
            | Record::Refused { .. }
            | Record::Allowed { .. } => {}
        }
        if pending.is_none() {
            safe = pos;
        }
    }
    Ok((safe, false))
}
