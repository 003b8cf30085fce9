//! Finding what `/forget QUERY` lists: every record of every epoch log of a session and
//! every carried summary that holds the query literally, compared case-insensitively,
//! in the order they were written. A literal match, not recall's ranking: what must go is
//! every copy of the words, and a record that only resembles them is not a copy; recall
//! also answers with text, not with the log and line a removal has to rewrite.

use super::ForgetError;
use proto::head::log_file_name;
use proto::Record;
use sessions::lines::open_regular;
use std::io::Read;
use std::path::Path;

/// Where a found text lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// Line `line` (counted from 0) of epoch `epoch`'s log.
    Record { epoch: u64, line: u64 },
    /// The carried summary in epoch `epoch`'s head.
    Carry { epoch: u64 },
}

/// One record or carry holding the query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub place: Place,
    /// The record's `type`, or `carry`.
    pub kind: &'static str,
    pub time: String,
    /// The whole text, as the owner reads it in the list.
    pub text: String,
    /// For a record: where its line starts in the log as found, and its length with its
    /// newline (0 and 0 for a carry). Honcho names a reported record by that offset, and
    /// the Honcho reporter's cursor moves by the change of that length.
    pub offset: u64,
    pub len: u64,
}

/// Whether `text` holds `query`, ignoring case.
pub fn holds(text: &str, query: &str) -> bool {
    !query.is_empty() && text.to_lowercase().contains(&query.to_lowercase())
}

/// The texts a record carries: everything a removal must take with it. A `usage` holds
/// only numbers.
pub fn texts(record: &Record) -> Vec<&str> {
    match record {
        Record::User { content, .. }
        | Record::Memory { content, .. }
        | Record::ToolResult { content, .. }
        | Record::ToolSummary { content, .. } => vec![content.as_str()],
        Record::Assistant {
            content,
            tool_calls,
            ..
        } => content
            .iter()
            .map(String::as_str)
            .chain(tool_calls.iter().map(|c| c.arguments.as_str()))
            .collect(),
        Record::Note { text, .. } => vec![text.as_str()],
        Record::Usage { .. } => Vec::new(),
    }
}

/// The whole lines of an epoch log, each with its newline; a last line without one (a
/// torn tail) is left out, as every reader of the logs leaves it.
pub fn whole_lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .split_inclusive(|b| *b == b'\n')
        .filter(|l| l.ends_with(b"\n"))
}

/// Reads a log whole (non-blocking, regular files only); a missing log is empty.
pub fn read_log(path: &Path) -> Result<Vec<u8>, ForgetError> {
    let mut file = match open_regular(std::fs::OpenOptions::new().read(true), path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(super::io("open", path)(e)),
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(super::io("read", path))?;
    Ok(bytes)
}

/// Everything in the session directory `dir` that holds `query`.
pub fn find(dir: &Path, query: &str) -> Result<Vec<Found>, ForgetError> {
    let mut found = Vec::new();
    let listing = sessions::epochs::list(dir)?;
    for &epoch in &listing.heads {
        let head = sessions::head::read(dir, epoch)?;
        if let Some(carry) = head.carry.as_deref().filter(|c| holds(c, query)) {
            found.push(Found {
                place: Place::Carry { epoch },
                kind: "carry",
                time: head.started.clone(),
                text: carry.to_string(),
                offset: 0,
                len: 0,
            });
        }
        let bytes = read_log(&dir.join(log_file_name(epoch)))?;
        let mut offset = 0u64;
        for (line, raw) in (0u64..).zip(whole_lines(&bytes)) {
            let at = offset;
            offset += raw.len() as u64;
            // A line that is not a record holds nothing the model or memoryd ever read.
            let Ok(record) = std::str::from_utf8(raw)
                .map_err(|_| ())
                .and_then(|s| Record::from_line(s.trim_end_matches('\n')).map_err(|_| ()))
            else {
                continue;
            };
            let texts = texts(&record);
            if texts.iter().any(|t| holds(t, query)) {
                found.push(Found {
                    place: Place::Record { epoch, line },
                    kind: record.kind(),
                    time: record.time().to_string(),
                    text: texts.join("\n"),
                    offset: at,
                    len: raw.len() as u64,
                });
            }
        }
    }
    Ok(found)
}
