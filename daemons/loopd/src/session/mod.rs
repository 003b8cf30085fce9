//! A session on disk (SPEC §3): `<state_dir>/sessions/<id>/`, one head file and one log
//! per epoch. `Session` is the current epoch held in memory — its head, its records, the
//! context label they add up to — plus the append that puts a record on disk before
//! anyone is told it happened.

pub mod head;
pub mod leftovers;
pub mod store;

use proto::head::{log_file_name, Head};
use proto::{Label, Record, SessionId};
use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use store::LogFile;
use store::MAX_RECORD_LINE;

/// Why a session could not be opened, created or appended to. Each names the file.
#[derive(Debug)]
pub enum SessionError {
    Io {
        op: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    BadLine {
        path: PathBuf,
        line: usize,
        message: String,
    },
    BadHead {
        path: PathBuf,
        message: String,
    },
    /// A prompt a new epoch freezes is missing or unreadable.
    Prompt {
        path: PathBuf,
        source: io::Error,
    },
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::Io { op, path, source } => {
                write!(f, "{op} {}: {source}", path.display())
            }
            SessionError::BadLine {
                path,
                line,
                message,
            } => write!(f, "{} line {line}: {message}", path.display()),
            SessionError::BadHead { path, message } => write!(f, "{}: {message}", path.display()),
            SessionError::Prompt { path, source } => {
                write!(f, "prompt {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for SessionError {}

/// What a new epoch freezes: the system prompt text and the tool schemas.
pub struct Frozen {
    pub system: String,
    pub tools: serde_json::Value,
}

/// The `usage` numbers of one completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub slot: u32,
    pub cache_n: u64,
    pub prompt_n: u64,
    pub predicted_n: u64,
}

impl Usage {
    /// Tokens the slot holds after the completion: the prompt and what was generated.
    pub fn context_used(&self) -> u64 {
        self.cache_n
            .saturating_add(self.prompt_n)
            .saturating_add(self.predicted_n)
    }
}

pub struct Session {
    id: SessionId,
    dir: PathBuf,
    head: Head,
    log: LogFile,
    records: Vec<Record>,
    /// The join of the head's carry label and every record label in the epoch.
    label: Label,
    /// The next tool call number: one more than any `call` in the session's logs.
    next_call: u64,
}

impl Session {
    pub fn dir_of(sessions_dir: &Path, id: &SessionId) -> PathBuf {
        sessions_dir.join(id.as_str())
    }

    /// Opens the session's current epoch, or `None` when the session has no head yet.
    pub fn open(sessions_dir: &Path, id: &SessionId) -> Result<Option<Session>, SessionError> {
        let dir = Session::dir_of(sessions_dir, id);
        let Some(epoch) = head::current_epoch(&dir)? else {
            return Ok(None);
        };
        let head = head::read_head(&dir, epoch)?;
        let (log, records) = LogFile::open(&dir.join(log_file_name(epoch)))?;
        let earlier = max_call_before(&dir, epoch);
        Ok(Some(Session::assemble(
            id.clone(),
            dir,
            head,
            log,
            records,
            earlier,
        )))
    }

    /// Opens the session, or creates it with epoch 0's head, freezing what `frozen`
    /// returns, when it has never been used.
    pub fn open_or_create(
        sessions_dir: &Path,
        id: &SessionId,
        frozen: impl FnOnce() -> Result<Frozen, SessionError>,
    ) -> Result<Session, SessionError> {
        if let Some(session) = Session::open(sessions_dir, id)? {
            return Ok(session);
        }
        let Frozen { system, tools } = frozen()?;
        let dir = Session::dir_of(sessions_dir, id);
        std::fs::create_dir_all(&dir).map_err(|source| SessionError::Io {
            op: "create",
            path: dir.clone(),
            source,
        })?;
        // The new directories' own entries must be durable before anything inside them
        // is: the session's in `sessions/`, and `sessions/` itself in the state directory
        // when this is the first session ever.
        store::sync_dir(sessions_dir)?;
        if let Some(state_dir) = sessions_dir.parent() {
            store::sync_dir(state_dir)?;
        }
        let head = head::epoch_zero(system, tools);
        head::write_head(&dir, &head)?;
        let (log, records) = LogFile::open(&dir.join(log_file_name(0)))?;
        store::sync_dir(&dir)?;
        plumbing::info!("session {id}: started epoch 0 in {}", dir.display());
        Ok(Session::assemble(id.clone(), dir, head, log, records, 0))
    }

    fn assemble(
        id: SessionId,
        dir: PathBuf,
        head: Head,
        log: LogFile,
        records: Vec<Record>,
        earlier_max_call: u64,
    ) -> Session {
        let label = records
            .iter()
            .filter_map(Record::label)
            .fold(head.carry_label, Label::join);
        let max_call = records
            .iter()
            .filter_map(call_of)
            .fold(earlier_max_call, u64::max);
        Session {
            id,
            dir,
            head,
            log,
            records,
            label,
            next_call: max_call.saturating_add(1),
        }
    }

    /// Makes the epoch whose head is now on disk the current one: `log` is its log, opened
    /// (and so created) before the head was renamed into place, so that nothing after
    /// that commit point can fail and leave memory on the old epoch while the disk is on
    /// the new one. Call numbers go on from where they were.
    pub fn enter(&mut self, head: Head, log: LogFile, records: Vec<Record>) {
        let next_call = self.next_call;
        let dir = std::mem::take(&mut self.dir);
        *self = Session::assemble(self.id.clone(), dir, head, log, records, 0);
        self.next_call = self.next_call.max(next_call);
    }

    /// Puts `record` on disk (one write, then fdatasync), then into the epoch.
    pub fn append(&mut self, record: Record) -> Result<(), SessionError> {
        self.log.append(&record)?;
        if let Some(l) = record.label() {
            self.label = self.label.join(l);
        }
        if let Some(call) = call_of(&record) {
            self.next_call = self.next_call.max(call.saturating_add(1));
        }
        self.records.push(record);
        Ok(())
    }

    /// A fresh tool call number, unique in the session.
    pub fn take_call(&mut self) -> u64 {
        let call = self.next_call;
        self.next_call = self.next_call.saturating_add(1);
        call
    }

    pub fn id(&self) -> &SessionId {
        &self.id
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn head(&self) -> &Head {
        &self.head
    }

    pub fn epoch(&self) -> u64 {
        self.head.epoch
    }

    pub fn carry(&self) -> Option<&str> {
        self.head.carry.as_deref()
    }

    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// The session's context label: what the model has seen this epoch.
    pub fn label(&self) -> Label {
        self.label
    }

    pub fn log_path(&self) -> &Path {
        self.log.path()
    }

    /// The epoch's last `usage` record.
    pub fn last_usage(&self) -> Option<Usage> {
        self.records.iter().rev().find_map(|r| match r {
            Record::Usage {
                slot,
                cache_n,
                prompt_n,
                predicted_n,
                ..
            } => Some(Usage {
                slot: *slot,
                cache_n: *cache_n,
                prompt_n: *prompt_n,
                predicted_n: *predicted_n,
            }),
            _ => None,
        })
    }
}

fn call_of(record: &Record) -> Option<u64> {
    match record {
        Record::ToolResult { call, .. } | Record::ToolSummary { call, .. } => Some(*call),
        Record::User { .. }
        | Record::Assistant { .. }
        | Record::Usage { .. }
        | Record::Note { .. } => None,
    }
}

/// The largest `call` in the logs of epochs before `epoch`. Those epochs are closed and
/// were checked when they were current; a line that no longer parses is reported and
/// passed over here, since it can only make the next number larger than needed.
fn max_call_before(dir: &Path, epoch: u64) -> u64 {
    let mut max = 0;
    for e in 0..epoch {
        let path = dir.join(log_file_name(e));
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
            Err(err) => {
                plumbing::warn!(
                    "{}: {err}; call numbers from it are not counted",
                    path.display()
                );
                continue;
            }
        };
        max = max.max(max_call_in(&path, file));
    }
    max
}

/// The largest `call` in one closed log. Lines are read at most one byte past
/// `MAX_RECORD_LINE`, so a damaged log without newlines is never held whole: an over-long
/// line is reported and its rest skipped without being kept.
fn max_call_in(path: &Path, file: std::fs::File) -> u64 {
    let mut max = 0;
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    let mut number = 0usize;
    loop {
        line.clear();
        let n = match (&mut reader)
            .take(MAX_RECORD_LINE + 1)
            .read_until(b'\n', &mut line)
        {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                plumbing::warn!("{} line {}: {e}", path.display(), number + 1);
                break;
            }
        };
        number += 1;
        if n as u64 > MAX_RECORD_LINE && line.last() != Some(&b'\n') {
            plumbing::warn!(
                "{} line {number}: line is over {MAX_RECORD_LINE} bytes; passed over",
                path.display()
            );
            if let Err(e) = reader.skip_until(b'\n') {
                plumbing::warn!("{} line {number}: {e}", path.display());
                break;
            }
            continue;
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        match std::str::from_utf8(text)
            .map_err(|e| e.to_string())
            .and_then(|l| Record::from_line(l).map_err(|e| e.to_string()))
        {
            Ok(record) => max = call_of(&record).map_or(max, |c| c.max(max)),
            Err(e) => plumbing::warn!("{} line {number}: {e}", path.display()),
        }
    }
    max
}

#[cfg(test)]
mod tests;
