//! Finding what `/forget QUERY` lists: every record of every epoch log of every session
//! on the box and every carried summary that holds the query's words and quoted phrases
//! as whole words, in any case (`proto::query`, the rule Honcho's side keeps too), in
//! every field and form a record carries it (docs/forgetting.md),
//! session by session in the order they were written. A literal match, not recall's ranking: what must go is
//! every copy of the words, and a record that only resembles them is not a copy; recall
//! also answers with text, not with the log and line a removal has to rewrite.

use super::ForgetError;
use proto::head::log_file_name;
use proto::{DataClass, Label, Record};
use sessions::epochs::Listing;
use sessions::lines::{Line, LineReader};
use std::fs::OpenOptions;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// Where a found text lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// Line `line` (counted from 0) of epoch `epoch`'s log.
    Record { epoch: u64, line: u64 },
    /// The carried summary in epoch `epoch`'s head.
    Carry { epoch: u64 },
    /// Reminder `n` in `reminders.json` (`super::mail`).
    Reminder { n: u64 },
    /// Message `n` in `inbox.json` (`super::mail`).
    Inbox { n: u64 },
}

impl Place {
    /// Whether it is in a session's files (a log or a head), which a plan rewrites.
    pub fn in_session_files(&self) -> bool {
        matches!(self, Place::Record { .. } | Place::Carry { .. })
    }
}

/// One record or carry holding the query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The session whose files hold it.
    pub session: String,
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
    /// The join of the record's own label and the context label it was read under (the
    /// epoch's label up to and including it): what the `forgotten` record that replaces
    /// it carries, so no label goes down (docs/forgetting.md, 'Labels'). A carry's is its
    /// head's `carry_label`.
    pub label: Label,
    /// The record's call number, when it has one: the `forgotten` record keeps it so
    /// numbers are never reused.
    pub call: Option<u64>,
    /// The Matrix event of the owner's line whose turn the record is in, when that line
    /// came from a room: what `/forget` redacts there, with loopd's replies to it
    /// (docs/matrix.md, 'Forgetting').
    pub event: Option<String>,
    /// The call `N` whose `/allow N` wrote the record (its fetch and the page it read, or
    /// the note saying what it set), when one did: a room that `/allow N` was answered in
    /// showed what it fetched or set, so its events go too (docs/matrix.md, 'Forgetting').
    pub allowed: Option<u64>,
    /// The reminder a `note` says was set or cancelled: a room showed its command and
    /// confirmation, found by its number (docs/matrix.md, 'Forgetting'). The owner's
    /// `/remind` and `/remind cancel N` notes are written for a command, not as part of
    /// the turn before them, so they have no `event`.
    pub reminder: Option<u64>,
    /// The heartbeat turn the record is in (`heartbeat_line`): a room showed that turn's
    /// message, found by this once the inbox no longer keeps it (docs/matrix.md,
    /// 'Forgetting').
    pub heartbeat: Option<String>,
}

/// What stands for heartbeat turn `time` (its `user` record's time) of `session` among
/// the events a room was shown: the turn's message, delivered there, is kept under it,
/// so `/forget` of words the turn held finds that event however long ago it was sent.
pub fn heartbeat_line(session: &str, time: &str) -> String {
    format!("heartbeat {session} {time}")
}

/// Whether `text` holds `query`: every word and quoted phrase of it, as whole words, in
/// any case (docs/forgetting.md, 'What a query matches').
pub fn holds(text: &str, query: &str) -> bool {
    proto::query::Query::parse(query).matches(text)
}

/// The texts a record carries: everything a removal must take with it, every field the
/// owner could mean — a tool call's name, id and arguments, a result's `tool_call_id` and
/// name. A `usage` and a `forgotten` record hold only numbers.
pub(crate) fn texts(record: &Record) -> Vec<&str> {
    match record {
        Record::User { content, .. } | Record::Memory { content, .. } => vec![content.as_str()],
        Record::ToolResult {
            tool_call_id,
            name,
            content,
            ..
        } => vec![content.as_str(), tool_call_id.as_str(), name.as_str()],
        Record::ToolSummary {
            tool_call_id,
            content,
            ..
        } => vec![content.as_str(), tool_call_id.as_str()],
        Record::Assistant {
            content,
            tool_calls,
            ..
        } => content
            .iter()
            .map(String::as_str)
            .chain(
                tool_calls
                    .iter()
                    .flat_map(|c| [c.name.as_str(), c.id.as_str(), c.arguments.as_str()]),
            )
            .collect(),
        Record::Note { text, .. } => vec![text.as_str()],
        // A refused URL may be the very text a page tried to carry out.
        Record::Refused { url, reason, .. } => vec![url.as_str(), reason.as_str()],
        Record::Usage { .. } | Record::Forgotten { .. } | Record::Allowed { .. } => Vec::new(),
    }
}

/// The strings inside a tool call's `arguments` as the tool reads them: every key and
/// string value of the JSON, its escapes (`\"`, `\\`, `\u00eb`) decoded. The model may
/// write a text escaped; the owner types it plain. Arguments that are not JSON give none
/// (their raw text is searched anyway).
fn decoded_arguments(record: &Record) -> Vec<String> {
    let Record::Assistant { tool_calls, .. } = record else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for call in tool_calls {
        if let Ok(value) = serde_json::from_str::<serde_json::Value>(&call.arguments) {
            strings_of(&value, &mut out, 0);
        }
    }
    out
}

/// How deep `strings_of` follows nested arguments: a model's tool arguments are a flat
/// object or nearly; serde_json itself refuses nesting past 128.
const MAX_ARGUMENT_DEPTH: usize = 128;

fn strings_of(value: &serde_json::Value, out: &mut Vec<String>, depth: usize) {
    if depth > MAX_ARGUMENT_DEPTH {
        return;
    }
    match value {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(items) => {
            for v in items {
                strings_of(v, out, depth + 1);
            }
        }
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                out.push(k.clone());
                strings_of(v, out, depth + 1);
            }
        }
        serde_json::Value::Null | serde_json::Value::Bool(_) | serde_json::Value::Number(_) => {}
    }
}

/// Whether `record` holds `query` in any field, raw or decoded.
pub(crate) fn record_holds(record: &Record, query: &str) -> bool {
    record_matches(record, &proto::query::Query::parse(query))
}

/// `record_holds` with the query parsed once, for a search of many records.
fn record_matches(record: &Record, query: &proto::query::Query) -> bool {
    texts(record).iter().any(|t| query.matches(t))
        || decoded_arguments(record).iter().any(|t| query.matches(t))
}

/// Everything on the box under `sessions_dir` that holds `query`: every session, by name,
/// each in the order written, and the sessions that could not be read. The owner's words
/// are labelled `owner_class`.
pub fn find_all(
    sessions_dir: &Path,
    query: &str,
    owner_class: DataClass,
) -> Result<Searched, ForgetError> {
    let listed = sessions::epochs::sessions_listed(sessions_dir)?;
    // A session directory that is a symbolic link is searched like any other, so its
    // listing refuses it and it is named as not searched: loopd and memoryd refuse to
    // follow it too, and saying nothing of it would claim every session was searched
    // while its files still hold the text.
    let mut names: Vec<String> = listed
        .ids
        .iter()
        .map(|id| id.as_str().to_string())
        .chain(
            listed
                .symlinks
                .iter()
                .filter_map(|p| p.file_name()?.to_str().map(String::from)),
        )
        .collect();
    names.sort();
    let mut searched = Searched::default();
    for name in names {
        // One damaged session (a head that is not JSON, a log that is a FIFO or a
        // symlink, a directory that is a symlink) must not keep the owner from forgetting
        // in every other: it is passed over and named, and the owner decides about its
        // files.
        let dir = sessions_dir.join(&name);
        let found = sessions::epochs::list(&dir)
            .map_err(ForgetError::from)
            .and_then(|listing| {
                let found = find_listed(&dir, &listing, query, owner_class)?;
                Ok((found, not_searched(&dir, &listing, query)))
            });
        match found {
            Ok((found, files)) => {
                searched.found.extend(found);
                searched
                    .not_searched
                    .extend(files.into_iter().map(|(path, why)| NotSearched {
                        session: name.clone(),
                        path,
                        why,
                    }));
            }
            Err(error) => searched.unread.push(Unread {
                session: name,
                error,
            }),
        }
    }
    Ok(searched)
}

/// What `find_all` found, the sessions it could not search, and the files of the
/// sessions it searched that it did not.
#[derive(Debug, Default)]
pub struct Searched {
    pub found: Vec<Found>,
    pub unread: Vec<Unread>,
    pub not_searched: Vec<NotSearched>,
}

/// A file in a searched session's directory that is no epoch's head or log, or a log
/// with no head: none is searched (loopd never replays it and memoryd never indexes it,
/// and a removal rewrites only epochs' files), so its words are neither listed nor
/// removed, and the owner is told which file to look at (docs/forgetting.md, 'Files not
/// searched').
#[derive(Debug)]
pub struct NotSearched {
    pub session: String,
    pub path: PathBuf,
    pub why: String,
}

/// The most bytes of a file that is no epoch's read to tell whether it holds the words:
/// a large log's size, as such a file mostly is one (set aside, or a log without a head).
/// Memory goes by the line searched, not by this; this bounds the time one such file
/// holds the worker, as nothing bounds how many there are. A larger file is named
/// without being read through.
pub(super) const MAX_UNSEARCHED_READ: u64 = 64 * 1024 * 1024;

/// The longest line of such a file searched: the search holds some fifty times the text
/// it is given (each character's forms), so one line of 64 MiB, the read's bound, would
/// take gigabytes, and one of this size some 200 MiB. loopd's records are nearly all far
/// shorter, and a fetched page, the longest usual one, is 2 MiB at most by default
/// (`tools.http_fetch.max_bytes`); a file holding a longer line is named without being
/// read through, so the owner is told to look at it.
const MAX_TOLD_LINE: usize = 4 * 1024 * 1024;

// A line read is never longer than the whole read, so within a record line's bound:
// searching it costs at most what searching an epoch log's longest record does. A larger
// read bound would need a line bound of its own.
const _: () = assert!(MAX_UNSEARCHED_READ <= sessions::MAX_RECORD_LINE);

/// The files of a session's `listing` that `find_listed` does not search as records,
/// with why: those that hold the query's words (`tell`), and those that cannot be read
/// to tell (a link, a FIFO, a file too large, not text or unreadable). A file without
/// the words is not named: it is not a copy. Nor is one gone since the listing: there is
/// nothing of it left to forget.
pub(super) fn not_searched(dir: &Path, listing: &Listing, query: &str) -> Vec<(PathBuf, String)> {
    let headless = listing
        .logs
        .iter()
        .filter(|epoch| !listing.heads.contains(epoch))
        .map(|&epoch| (dir.join(log_file_name(epoch)), Kind::Headless));
    let links = listing.symlinks.iter().map(|p| (p.clone(), Kind::Link));
    let others = listing.others.iter().map(|p| {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let kind = if sessions::leftovers::is_set_aside(name) {
            Kind::SetAside
        } else if name.ends_with(".tmp") {
            Kind::Temporary
        } else {
            Kind::NoEpochs
        };
        (p.clone(), kind)
    });
    headless
        .chain(links)
        .chain(others)
        .filter_map(|(path, kind)| {
            let untold = match tell(&path, query) {
                Told::Gone | Told::Without => return None,
                Told::Holds => None,
                // A link is refused as not a regular file; its kind already says so.
                Told::Untold(Untold::NotRegular) if kind == Kind::Link => None,
                Told::Untold(untold) => Some(untold),
            };
            Some((path, why(kind, untold)))
        })
        .collect()
}

/// What reading a file that is no epoch's told of the query's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Told {
    /// A line of it holds them.
    Holds,
    /// No line of it does.
    Without,
    /// It is no longer there.
    Gone,
    /// It could not be read to tell, and why.
    Untold(Untold),
}

/// Why a file that is no epoch's could not be read to tell whether it holds the words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Untold {
    /// Opening or reading it failed.
    Unreadable,
    /// A symbolic link, a FIFO, a directory: never opened to read.
    NotRegular,
    /// Over `MAX_UNSEARCHED_READ`.
    TooLarge,
    /// Not UTF-8 text: compressed, or in another encoding, its words are in no form the
    /// rule reads.
    NotText,
    /// A line over `MAX_TOLD_LINE`.
    LongLine,
}

/// Whether the file at `path` holds `query`'s words, read one line at a time as the
/// epoch logs are: a line that is a record is searched as their records are
/// (`record_holds`, which decodes a tool call's arguments, escaped a second time inside
/// the line), any other line as text (`holds`). Memory is one line's, whatever the
/// file's size.
pub(super) fn tell(path: &Path, query: &str) -> Told {
    let query = proto::query::Query::parse(query);
    // Opened once, with the rule every session file is opened by
    // (`sessions::lines::open_regular`), and only then read: what was listed may since
    // have been swapped for a link, which is never followed (to /dev/zero, say), or for
    // a FIFO, which is never waited on.
    let opened = plumbing::bounded::open_regular(
        OpenOptions::new().read(true),
        path,
        plumbing::bounded::Links::Refuse,
    );
    let file = match opened {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Told::Gone,
        // `open_regular`'s refusal of a link or of what is not a regular file.
        Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
            return Told::Untold(Untold::NotRegular)
        }
        Err(_) => return Told::Untold(Untold::Unreadable),
    };
    match file.metadata() {
        Ok(meta) if meta.len() > MAX_UNSEARCHED_READ => return Told::Untold(Untold::TooLarge),
        Ok(_) => {}
        Err(_) => return Told::Untold(Untold::Unreadable),
    }
    // The size is checked again on what is read, since the file may grow after the fstat.
    let mut reader = BufReader::new(file.take(MAX_UNSEARCHED_READ + 1));
    let mut line = Vec::new();
    let mut read: u64 = 0;
    loop {
        line.clear();
        // A line is read no further than the longest searched, so a long one costs its
        // bound in memory, not its length.
        let limit = MAX_TOLD_LINE as u64 + 2;
        match (&mut reader).take(limit).read_until(b'\n', &mut line) {
            Ok(0) => return Told::Without,
            Ok(n) => read += n as u64,
            Err(_) => return Told::Untold(Untold::Unreadable),
        }
        if read > MAX_UNSEARCHED_READ {
            return Told::Untold(Untold::TooLarge);
        }
        let bytes = line.strip_suffix(b"\n").unwrap_or(&line);
        if bytes.len() > MAX_TOLD_LINE {
            return Told::Untold(Untold::LongLine);
        }
        // A NUL is UTF-8, but no text loopd writes holds one, and a UTF-16 file holds
        // one beside every ASCII letter, splitting its words apart.
        let Some(text) = std::str::from_utf8(bytes)
            .ok()
            .filter(|t| !t.contains('\0'))
        else {
            return Told::Untold(Untold::NotText);
        };
        let holds_it = match sessions::lines::record_in(text) {
            Some(record) => record_matches(&record, &query),
            None => query.matches(text),
        };
        if holds_it {
            return Told::Holds;
        }
    }
}

/// What a named file is, which its reason names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Headless,
    Link,
    SetAside,
    Temporary,
    NoEpochs,
}

impl Kind {
    /// What the file is, as the owner is told.
    fn what(self) -> &'static str {
        match self {
            Kind::Headless => "a log with no head beside it, so no epoch's",
            Kind::Link => "a symbolic link, never followed",
            Kind::SetAside => "set aside by loopd when a new epoch found it in the way",
            Kind::Temporary => "a temporary file left by a write that did not finish",
            Kind::NoEpochs => "no epoch's head or log",
        }
    }
}

impl Untold {
    /// Why the file was not read to tell, as the owner is told.
    fn why_not(self) -> String {
        const MIB: u64 = 1024 * 1024;
        match self {
            Untold::Unreadable => {
                "it could not be read to tell whether it holds the words".to_string()
            }
            Untold::NotRegular => {
                "a link or not a regular file, never read to tell whether it holds the words"
                    .to_string()
            }
            Untold::TooLarge => format!(
                "over {} MiB, more than is read to tell whether it holds the words",
                MAX_UNSEARCHED_READ / MIB
            ),
            Untold::LongLine => format!(
                "a line over {} MiB, longer than is read to tell whether it holds the words",
                MAX_TOLD_LINE as u64 / MIB
            ),
            Untold::NotText => "not UTF-8 text (compressed, or in another encoding), so it cannot be read to tell whether it holds the words".to_string(),
        }
    }
}

/// What a named file is, and, when it could not be read to tell whether it holds the
/// words, why not: what loopd's reply and journal say of it.
fn why(kind: Kind, untold: Option<Untold>) -> String {
    match untold {
        None => kind.what().to_string(),
        Some(untold) => format!("{}; {}", kind.what(), untold.why_not()),
    }
}

/// A session whose files could not be read to the end, and why.
#[derive(Debug)]
pub struct Unread {
    pub session: String,
    pub error: ForgetError,
}

/// Everything in the session directory `dir` that holds `query`.
pub fn find(dir: &Path, query: &str, owner_class: DataClass) -> Result<Vec<Found>, ForgetError> {
    find_listed(dir, &sessions::epochs::list(dir)?, query, owner_class)
}

/// `find`, given the directory's listing.
fn find_listed(
    dir: &Path,
    listing: &Listing,
    query: &str,
    owner_class: DataClass,
) -> Result<Vec<Found>, ForgetError> {
    let session = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut found = Vec::new();
    for &epoch in &listing.heads {
        let head = sessions::head::read(dir, epoch)?;
        if let Some(carry) = head.carry.as_deref().filter(|c| holds(c, query)) {
            found.push(Found {
                session: session.clone(),
                place: Place::Carry { epoch },
                kind: "carry",
                time: head.started.clone(),
                text: carry.to_string(),
                offset: 0,
                len: 0,
                label: head.carry_label,
                call: None,
                event: None,
                allowed: None,
                reminder: None,
                heartbeat: None,
            });
        }
        // Read as every reader of the logs reads them (`sessions::lines`): one bounded
        // line at a time, never a torn tail.
        let Some(mut reader) = LineReader::open(&dir.join(log_file_name(epoch)), 0, 0)? else {
            continue;
        };
        // The epoch's context label as each record was read under it, by the one rule
        // loopd and memoryd keep it by.
        let mut rolling = head.carry_label;
        // The Matrix event of the turn being read, or the heartbeat turn it is: set at
        // each user record.
        let mut turn_event: Option<String> = None;
        let mut heartbeat: Option<String> = None;
        // The call of an `allowed` record just read: the note right after it is that
        // `/allow N`'s, saying what it fetched or set.
        let mut just_allowed: Option<u64> = None;
        loop {
            let line = reader.lines();
            let (at, len, record) = match reader.next_line() {
                Ok(Line::Record { at, len, record }) => (at, len, record),
                Ok(Line::Torn { .. } | Line::End) => break,
                // A line that is not a record holds nothing the model or memoryd ever
                // read; the reader has passed it.
                Err(sessions::Error::BadLine { .. }) => continue,
                Err(e) => return Err(e.into()),
            };
            rolling = proto::record::context_label_after(rolling, &record, owner_class);
            if let Record::User {
                matrix,
                origin,
                time,
                ..
            } = &record
            {
                turn_event = matrix.as_ref().map(|m| m.event.clone());
                heartbeat = (*origin == proto::record::Origin::Heartbeat)
                    .then(|| heartbeat_line(&session, time));
            }
            // A record forgotten before may have been the turn's own line, so the turn of
            // what follows is not known: taking the turn before's would redact its
            // events. Nothing of the turn the forgotten record was in is left in a room:
            // a removal redacts every event of a turn it takes anything from.
            if let Record::Forgotten { .. } = &record {
                turn_event = None;
                heartbeat = None;
            }
            let allowed = match &record {
                Record::Assistant { tool_calls, .. } => tool_calls
                    .iter()
                    .find_map(|c| crate::turn::tools_run::allowed_call(&c.id)),
                Record::ToolResult { tool_call_id, .. } => {
                    crate::turn::tools_run::allowed_call(tool_call_id)
                }
                Record::Note { .. } => just_allowed,
                _ => None,
            };
            just_allowed = match &record {
                Record::Allowed { call, .. } => Some(*call),
                _ => None,
            };
            if record_holds(&record, query) {
                found.push(Found {
                    session: session.clone(),
                    place: Place::Record { epoch, line },
                    kind: record.kind(),
                    time: record.time().to_string(),
                    text: texts(&record).join("\n"),
                    offset: at,
                    len,
                    label: rolling,
                    // An answer's `call-N` ids count too: the `forgotten` record keeps the
                    // number, so it is never handed out again.
                    call: crate::open_session::numbered(&record),
                    event: match &record {
                        Record::Note { text, .. } if remind::noted_for_the_owner(text) => None,
                        _ => turn_event.clone(),
                    },
                    allowed,
                    reminder: match &record {
                        Record::Note { text, .. } => remind::noted(text),
                        _ => None,
                    },
                    heartbeat: match &record {
                        Record::Note { text, .. } if remind::noted_for_the_owner(text) => None,
                        _ => heartbeat.clone(),
                    },
                });
            }
        }
    }
    Ok(found)
}
