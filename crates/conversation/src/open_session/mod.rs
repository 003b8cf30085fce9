//! An open session: what loopd holds in memory of a session it is working in
//! (docs/sessions.md). `Session` is the current epoch — its head, its records, the
//! context label they add up to — plus the append that puts a record on disk before
//! anyone is told it happened. The files themselves (`<state_dir>/sessions/<id>/`: names,
//! heads, the log, the torn-tail rule, atomic writes) are the `sessions` crate's, hence
//! this module's name.
//!
//! **Invariant:** the session owns its open log, and follows the disk: before each
//! append (and at the start of each job, `follow_disk`) it asks the log whether the file
//! at its path is still the one it holds; one replaced, removed or written by something
//! else makes it read the session from disk again, as a restart would, so an edit is
//! respected and nothing acknowledged goes to a deleted file (docs/sessions.md, 'A log
//! changed under loopd').

use proto::head::{log_file_name, Head, Reason, SummarySource};
use proto::{DataClass, Label, Record, SessionId, Tokens};
use sessions::lines::{Line, LineReader};
use sessions::log::{Changed, LogFile};
use sessions::{atomic, epochs};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Why a session could not be opened, created or appended to. Each names the file.
#[derive(Debug)]
pub enum SessionError {
    /// The session files: a directory, a head, the log.
    Files(sessions::Error),
    /// The session's directory could not be created.
    Create { path: PathBuf, source: io::Error },
    /// A prompt a new epoch freezes is missing or unreadable.
    Prompt { path: PathBuf, source: io::Error },
    /// Every call number is taken: a log holds `u64::MAX` (only a hand edit puts it
    /// there), and a number is never given twice (docs/sessions.md, 'Records').
    CallsUsedUp { session: SessionId },
    /// The session's log changed on disk and, read again, the directory `path` holds no
    /// epoch (its heads are gone).
    Gone { path: PathBuf, changed: Changed },
}

impl From<sessions::Error> for SessionError {
    fn from(e: sessions::Error) -> SessionError {
        SessionError::Files(e)
    }
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::Files(e) => e.fmt(f),
            SessionError::Create { path, source } => {
                write!(f, "create {}: {source}", path.display())
            }
            SessionError::Prompt { path, source } => {
                write!(f, "prompt {}: {source}", path.display())
            }
            SessionError::CallsUsedUp { session } => write!(
                f,
                "session {session}: its tool call numbers are used up (the last, {}, is taken), and a number is never given twice; go on in another session (/session NAME)",
                u64::MAX
            ),
            SessionError::Gone { path, changed } => write!(
                f,
                "session directory {}: its log changed on disk ({changed}) and no epoch head is left to read it again from",
                path.display()
            ),
        }
    }
}

impl std::error::Error for SessionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SessionError::Files(e) => Some(e),
            SessionError::Create { source, .. } | SessionError::Prompt { source, .. } => {
                Some(source)
            }
            SessionError::CallsUsedUp { .. } => None,
            SessionError::Gone { .. } => None,
        }
    }
}

/// What a new epoch freezes: the system prompt text and the tool schemas.
pub struct Frozen {
    pub system: String,
    pub tools: serde_json::Value,
}

pub struct Session {
    id: SessionId,
    dir: PathBuf,
    head: Head,
    log: LogFile,
    records: Vec<Record>,
    /// The join of the head's carry label and every record label in the epoch but the
    /// owner's words, whose class is the configuration's (`channel.owner_class`, which a
    /// reload may change) and is joined in by [`Session::label`].
    label: Label,
    /// Whether the owner said anything in this epoch.
    owner_spoke: bool,
    /// The next tool call number: one more than any `call` in the session's logs; `None`
    /// when a log holds `u64::MAX`, so there is no number left to give.
    next_call: Option<u64>,
    /// The log must be told `label` (a `forgotten` record carrying it) before anything
    /// else is written to it: a re-read found the file adding up to less than the model
    /// read under, and the record saying so is not on disk yet (`follow_disk`).
    floor_owed: bool,
}

impl Session {
    pub(crate) fn dir_of(sessions_dir: &Path, id: &SessionId) -> PathBuf {
        sessions_dir.join(id.as_str())
    }

    /// Opens the session's current epoch, or `None` when the session has no head yet.
    pub fn open(sessions_dir: &Path, id: &SessionId) -> Result<Option<Session>, SessionError> {
        Session::open_dir(Session::dir_of(sessions_dir, id), id)
    }

    /// `open`, given the session's directory.
    fn open_dir(dir: PathBuf, id: &SessionId) -> Result<Option<Session>, SessionError> {
        let Some(epoch) = epochs::list(&dir)?.current() else {
            return Ok(None);
        };
        let head = sessions::head::read(&dir, epoch)?;
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
        std::fs::create_dir_all(&dir).map_err(|source| SessionError::Create {
            path: dir.clone(),
            source,
        })?;
        // The new directories' own entries must be durable before anything inside them
        // is: the session's in `sessions/`, and `sessions/` itself in the state directory
        // when this is the first session ever.
        atomic::sync_dir(sessions_dir)?;
        if let Some(state_dir) = sessions_dir.parent() {
            atomic::sync_dir(state_dir)?;
        }
        // A log left at epoch 0's name without a head (its head removed by hand) is set
        // aside, as at any new epoch: never adopted by the new head (docs/sessions.md).
        sessions::leftovers::set_aside(&dir, 0)?;
        let head = epoch_zero(system, tools);
        sessions::head::write(&dir, &head)?;
        let (log, records) = LogFile::open(&dir.join(log_file_name(0)))?;
        atomic::sync_dir(&dir)?;
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
        // Counted with the owner's words public: they join in at `label`.
        let label = proto::record::context_label(head.carry_label, &records, DataClass::Public);
        let owner_spoke = records.iter().any(is_owners);
        let max_call = records
            .iter()
            .filter_map(numbered)
            .fold(earlier_max_call, u64::max);
        Session {
            id,
            dir,
            head,
            log,
            records,
            label,
            owner_spoke,
            next_call: max_call.checked_add(1),
            floor_owed: false,
        }
    }

    /// Makes the epoch whose head is now on disk the current one: `log` is its log, opened
    /// (and so created) before the head was renamed into place, so that nothing after
    /// that commit point can fail and leave memory on the old epoch while the disk is on
    /// the new one. Call numbers go on from where they were.
    pub(crate) fn enter(&mut self, head: Head, log: LogFile, records: Vec<Record>) {
        let next_call = self.next_call;
        let dir = std::mem::take(&mut self.dir);
        *self = Session::assemble(self.id.clone(), dir, head, log, records, 0);
        self.next_call = later(self.next_call, next_call);
    }

    /// Reads the session from disk again when its log there is no longer the file it
    /// holds open (another file renamed over it, removed, or written by something else),
    /// so the file at the path is the one written next and its records the ones replayed.
    /// It is read as a restart reads it: a torn tail cut, a bad line refused naming file
    /// and line, the current epoch the highest with a head. Call numbers go on from where
    /// they were, so none is handed out twice.
    pub fn follow_disk(&mut self) -> Result<(), SessionError> {
        if let Some(changed) = self.log.changed()? {
            self.read_again(changed)?;
        }
        self.pay_floor()
    }

    /// `follow_disk`'s re-read, once the log changed.
    fn read_again(&mut self, changed: Changed) -> Result<(), SessionError> {
        plumbing::warn!(
            "{}: the log changed on disk while loopd held it open ({changed}); reading session {} again from disk",
            self.log.path().display(),
            self.id
        );
        let Some(again) = Session::open_dir(self.dir.clone(), &self.id)? else {
            return Err(SessionError::Gone {
                path: self.dir.clone(),
                changed,
            });
        };
        let (next_call, label, owner_spoke) = (self.next_call, self.label, self.owner_spoke);
        *self = again;
        self.next_call = later(self.next_call, next_call);
        self.owner_spoke |= owner_spoke;
        // What the model has read, it has read: an edit on disk that takes a secret
        // record out (or lowers its class) must not lower the label the rest of a turn
        // is judged under (docs/sessions.md, 'A log changed under loopd'). Memory keeps
        // it first, whatever the disk does next; the file is told it by `pay_floor`.
        let joined = self.label.join(label);
        if joined != self.label {
            self.label = joined;
            self.floor_owed = true;
        }
        // The file at the path was written by something else, which may not have made
        // it durable; loopd's records are acknowledged once on disk, and this file is now
        // where they are (one a copy already holds is not written again).
        self.log.sync()?;
        Ok(())
    }

    /// Writes the `forgotten` record a re-read owes the log (`floor_owed`): every other
    /// reader of the file (memoryd, the Honcho reporter, `/forget`, a restart) steps the
    /// label through it, so from here on the file says what loopd holds. It follows the
    /// records the edit left, at the end of the log: those are labelled as the edited
    /// file says (docs/sessions.md, 'A log changed under loopd').
    fn pay_floor(&mut self) -> Result<(), SessionError> {
        if !self.floor_owed {
            return Ok(());
        }
        let floor = Record::Forgotten {
            time: proto::time::now_rfc3339(),
            records: 0,
            chars: 0,
            class: self.label.class,
            untrusted: self.label.untrusted,
            call: None,
        };
        self.log.append(&floor)?;
        self.records.push(floor);
        self.floor_owed = false;
        Ok(())
    }

    /// Whether a re-read's `forgotten` record is still to be written (its write failed):
    /// the session must stay open, since only memory holds the label it carries.
    pub fn owes_floor(&self) -> bool {
        self.floor_owed
    }

    /// The label the log is still to be told (`owes_floor`), for whoever lets the
    /// session leave memory to keep and hand back (`owe`).
    pub fn owed(&self) -> Option<Label> {
        self.floor_owed.then_some(self.label)
    }

    /// Takes on `label`, owed to the log by a copy of this session that left memory:
    /// joined into the label, and owed to the log when the file's is lower.
    pub fn owe(&mut self, label: Label) {
        let joined = self.label.join(label);
        if joined != self.label {
            self.label = joined;
            self.floor_owed = true;
        }
    }

    /// Puts `record` on disk (one write, then fdatasync), then into the epoch; into the
    /// log at the session's path, read again first when it changed there
    /// (`follow_disk`).
    pub fn append(&mut self, record: Record) -> Result<(), SessionError> {
        self.append_then(record, |_| {})
    }

    /// `append`, running `meanwhile` with the log's path between the write and the check
    /// after it: where another program's rename lands in the race `again_if_replaced`
    /// closes, which tests need to place exactly.
    fn append_then(
        &mut self,
        record: Record,
        meanwhile: impl FnOnce(&Path),
    ) -> Result<(), SessionError> {
        self.follow_disk()?;
        let before = self.records.len();
        self.log.append(&record)?;
        meanwhile(self.log.path());
        let held = self.again_if_replaced(&record, before)?;
        self.label = proto::record::context_label_after(self.label, &record, DataClass::Public);
        self.owner_spoke |= is_owners(&record);
        if let Some(call) = record.call() {
            self.next_call = later(self.next_call, call.checked_add(1));
        }
        // Read again with the file that holds it, the record is in the epoch already.
        if !held {
            self.records.push(record);
        }
        Ok(())
    }

    /// After `record` was written, `before` records into the epoch: another file renamed
    /// over the log between the check and the write took the record into the file it
    /// replaced, which nobody reads, so it goes again into the file now at the path.
    /// (Written to in place instead, the file holds it already.) A file copied after the
    /// write and renamed over the log during its `fdatasync` holds the record already,
    /// as the record after the `before` it was written after: it is not written twice.
    /// Returns whether the records read again hold it (so it is not added to them again).
    fn again_if_replaced(&mut self, record: &Record, before: usize) -> Result<bool, SessionError> {
        if !matches!(
            self.log.changed()?,
            Some(sessions::log::Changed::Replaced | sessions::log::Changed::Gone)
        ) {
            return Ok(false);
        }
        let epoch = self.head.epoch;
        self.follow_disk()?;
        let held = self.head.epoch == epoch
            && self.records.len() > before
            && self.records.get(before) == Some(record);
        if !held {
            self.log.append(record)?;
        }
        Ok(held)
    }

    /// A fresh tool call number, unique in the session; an error once `u64::MAX` is
    /// taken, never a number given before.
    pub fn take_call(&mut self) -> Result<u64, SessionError> {
        let Some(call) = self.next_call else {
            return Err(SessionError::CallsUsedUp {
                session: self.id.clone(),
            });
        };
        self.next_call = call.checked_add(1);
        Ok(call)
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

    /// The session's context label: what the model has seen this epoch, the owner's words
    /// labelled `owner_class` (`channel.owner_class` as configured now, so a reload that
    /// raises it raises the label of the open epoch too; docs/labels.md, 'The owner's
    /// class').
    pub fn label(&self, owner_class: DataClass) -> Label {
        if self.owner_spoke {
            self.label.join(Label::new(owner_class, false))
        } else {
            self.label
        }
    }

    /// The token counts of the epoch's last `usage` record.
    pub(crate) fn last_usage(&self) -> Option<Tokens> {
        self.records.iter().rev().find_map(usage_of)
    }

    /// The token counts of the epoch's first `usage` record: its first completion.
    pub(crate) fn first_usage(&self) -> Option<Tokens> {
        self.records.iter().find_map(usage_of)
    }
}

/// The token counts `record` holds, when it is a `usage` record.
fn usage_of(record: &Record) -> Option<Tokens> {
    match record {
        Record::Usage { tokens, .. } => Some(*tokens),
        _ => None,
    }
}

/// The later of two next call numbers, where `None` is past every number.
fn later(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    a.zip(b).map(|(a, b)| a.max(b))
}

/// Whether `record` is the owner's words, whose label is `channel.owner_class`.
fn is_owners(record: &Record) -> bool {
    matches!(
        record,
        Record::User {
            origin: proto::Origin::Owner,
            ..
        }
    )
}

/// The largest call number `record` shows: its `call`, or for an answer the `N` of each
/// `call-N` id loopd gave a call the server sent without one. A call of an answer cut
/// at its token limit never runs, so no record but the answer holds its number, and
/// counting only `call` fields would hand that number (and its id) out again after a
/// restart (docs/sessions.md, 'Records').
pub(crate) fn numbered(record: &Record) -> Option<u64> {
    match record {
        Record::Assistant { tool_calls, .. } => tool_calls
            .iter()
            .filter_map(|c| c.id.strip_prefix("call-")?.parse::<u64>().ok())
            .max(),
        other => other.call(),
    }
}

/// The largest `call` in the logs of epochs before `epoch`. Those epochs are closed and
/// were checked when they were current; a line that no longer parses (or is over the line
/// limit, and so is skipped without being held) is reported and passed over here, since it
/// can only make the next number larger than needed.
fn max_call_before(dir: &Path, epoch: u64) -> u64 {
    let mut max = 0;
    for e in 0..epoch {
        let path = dir.join(log_file_name(e));
        let mut reader = match LineReader::open(&path, 0, 0) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(err) => {
                plumbing::warn!("{err}; call numbers from it are not counted");
                continue;
            }
        };
        loop {
            match reader.next_line() {
                Ok(Line::Record { record, .. }) => {
                    max = numbered(&record).map_or(max, |c| c.max(max))
                }
                Ok(Line::Torn { .. } | Line::End) => break,
                Err(err @ sessions::Error::BadLine { .. }) => {
                    plumbing::warn!("{err}; passed over")
                }
                Err(err) => {
                    plumbing::warn!("{err}");
                    break;
                }
            }
        }
    }
    max
}

/// The head of a session's first epoch. docs/sessions.md gives no `summary_source` for epoch 0,
/// which has no summary; it is written as `model` with a null `carry` and a public,
/// trusted `carry_label`, so a reader can treat every head alike.
pub(crate) fn epoch_zero(system: String, tools: serde_json::Value) -> Head {
    Head {
        epoch: 0,
        started: proto::time::now_rfc3339(),
        system,
        tools,
        carry: None,
        carry_label: Label::PUBLIC,
        reason: Reason::Start,
        summary_source: SummarySource::Model,
    }
}

#[cfg(test)]
mod tests;
