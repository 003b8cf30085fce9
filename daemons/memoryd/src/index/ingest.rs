//! Reading one log file's new lines into the index, a chunk at a time. Each chunk is one
//! transaction holding its rows and the file's new offset, line count, rolling label and
//! row count, so a crash anywhere leaves the index at the end of some earlier chunk.
//!
//! A torn tail (`sessions::lines`: a last line without its newline, or not JSON) is a
//! write still in progress (or one loopd will cut off when it next opens the log): it is
//! left for later and never indexed half. A bad line with more after it sets the whole
//! file aside, rows removed, until the file changes.

use super::budget::Budget;
use super::rowid::RowIds;
use super::select::{row_of, row_text, Classes};
use super::{class_rank, Index, IndexError};
use proto::label::Label;
use rusqlite::{params, Connection, OptionalExtension};
use sessions::lines::{Identity, Line, LineReader};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How old a log's modification time must be before it is trusted to say "unchanged".
/// File times tick coarsely (a few milliseconds), so a log rewritten within the same tick
/// as the write indexed last would show the same time; a time this recent is stored as
/// unknown, and the next catch-up checks the indexed prefix's CRC instead.
pub(super) const MTIME_SETTLED: Duration = Duration::from_secs(2);

/// Bytes of log read per transaction. Large enough that commits (each an fsync of the
/// WAL at checkpoints) are a small share of the work, small enough that one chunk's
/// uncommitted rows stay a few MiB and the poll loop gets a turn between chunks.
const CHUNK_BYTES: u64 = 1 << 20;

const INSERT_DOC: &str = "INSERT INTO docs \
    (rowid, text, session, epoch, time, kind, role, class, untrusted, file) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";

/// One epoch log on disk whose head exists.
#[derive(Debug, Clone)]
pub(super) struct LogFile {
    /// `<session>/epoch-NNNNNN.jsonl`, the key in `files`.
    pub rel: String,
    pub session: String,
    pub epoch: u64,
    pub path: PathBuf,
    /// The session directory, where the epoch's head is.
    pub dir: PathBuf,
}

/// How far a file has been read, as stored in `files`.
#[derive(Debug, Clone)]
pub(super) struct FileState {
    pub id: Option<i64>,
    pub offset: u64,
    pub line: u64,
    pub label: Label,
    pub rows: u64,
    /// CRC-32 of the bytes before `offset`.
    pub crc: u32,
    /// The file these rows came from: device and inode, and its time when it was last
    /// read (0: unknown, see `MTIME_SETTLED`).
    pub dev: u64,
    pub ino: u64,
    pub mtime_ns: i64,
}

/// `mtime_ns` as stored: 0 (unknown) while it is too recent to trust.
pub(super) fn settled_mtime(mtime_ns: i64) -> i64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    let settled = i64::try_from(MTIME_SETTLED.as_nanos()).unwrap_or(i64::MAX);
    if now.saturating_sub(mtime_ns) < settled {
        0
    } else {
        mtime_ns
    }
}

/// Where reading a file stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Everything complete in the file is indexed.
    CaughtUp,
    /// The budget ran out first.
    More,
    /// The file could not be read or was set aside; the problem has been reported.
    Skipped,
}

/// What one chunk did.
enum Chunk {
    Progress { at_end: bool },
    Bad { line: u64, message: String },
}

enum ChunkError {
    Sql(rusqlite::Error),
    Read(sessions::Error),
}

impl From<rusqlite::Error> for ChunkError {
    fn from(e: rusqlite::Error) -> ChunkError {
        ChunkError::Sql(e)
    }
}

/// The identity of a file's contents when it was set aside: a change to either means
/// someone repaired or replaced it, and it is read again from the start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Signature {
    pub size: u64,
    pub mtime_ns: i64,
}

impl Index {
    /// Indexes `file` from `state` on, within `budget`. `started` says whether this
    /// catch-up has read a chunk yet, and is set once it has.
    pub(super) fn ingest(
        &mut self,
        file: &LogFile,
        mut state: FileState,
        sig: Signature,
        budget: &mut Budget,
        started: &mut bool,
    ) -> Result<Outcome, IndexError> {
        let mut reader = match LineReader::open(&file.path, state.offset, state.line) {
            Ok(Some(r)) => r.with_crc(state.crc),
            // Removed since the scan (a session being deleted): the next catch-up drops it.
            Ok(None) => return Ok(Outcome::Skipped),
            Err(e) => {
                self.report(&file.path, e.to_string());
                return Ok(Outcome::Skipped);
            }
        };
        loop {
            if budget.exhausted(*started) {
                return Ok(Outcome::More);
            }
            let before = state.rows;
            let chunk = read_chunk(
                &mut self.conn,
                &mut reader,
                file,
                &mut state,
                &mut self.rowids,
                Classes {
                    max: self.max_class,
                    owner: self.owner_class,
                },
                self.committed_rows,
            );
            match chunk {
                Ok(Chunk::Progress { at_end }) => {
                    self.committed_rows += state.rows - before;
                    budget.spend();
                    *started = true;
                    if at_end {
                        self.clear_report(&file.path);
                        return Ok(Outcome::CaughtUp);
                    }
                }
                Ok(Chunk::Bad { line, message }) => {
                    let message = format!(
                        "{}: line {line}: {message}; this log is not indexed until it changes",
                        file.path.display()
                    );
                    self.set_aside(file, &message, sig)?;
                    self.report(&file.path, message);
                    return Ok(Outcome::Skipped);
                }
                Err(ChunkError::Read(e)) => {
                    self.report(&file.path, e.to_string());
                    return Ok(Outcome::Skipped);
                }
                Err(ChunkError::Sql(e)) => return Err(self.sql(e)),
            }
        }
    }

    /// Removes a file's rows and records it as broken, in one transaction.
    fn set_aside(
        &mut self,
        file: &LogFile,
        message: &str,
        sig: Signature,
    ) -> Result<(), IndexError> {
        let run = |conn: &mut Connection| -> rusqlite::Result<()> {
            let tx = conn.transaction()?;
            if let Some(id) = tx
                .query_row("SELECT id FROM files WHERE path = ?1", [&file.rel], |r| {
                    r.get::<_, i64>(0)
                })
                .optional()?
            {
                super::near_field::drop_file(&tx, id)?;
            }
            tx.execute(
                "DELETE FROM docs WHERE file = (SELECT id FROM files WHERE path = ?1)",
                [&file.rel],
            )?;
            tx.execute(
                "INSERT INTO files (path, session, epoch, offset, line, class, untrusted, rows,
                                    broken, broken_size, broken_mtime)
                 VALUES (?1, ?2, ?3, 0, 0, 0, 0, 0, ?4, ?5, ?6)
                 ON CONFLICT (path) DO UPDATE SET offset = 0, line = 0, rows = 0,
                    broken = ?4, broken_size = ?5, broken_mtime = ?6",
                params![
                    file.rel,
                    file.session,
                    epoch_i64(file.epoch),
                    message,
                    i64::try_from(sig.size).unwrap_or(i64::MAX),
                    sig.mtime_ns
                ],
            )?;
            tx.commit()
        };
        // Rows went: a group once common may not be now, and their words are not kept.
        self.common.forget();
        self.kept.forget();
        self.verified.forget();
        run(&mut self.conn).map_err(|e| self.sql(e))
    }
}

fn epoch_i64(epoch: u64) -> i64 {
    i64::try_from(epoch).unwrap_or(i64::MAX)
}

/// Reads up to `CHUNK_BYTES` of whole lines and commits their rows with the file's new
/// state. On any error the transaction is dropped, which rolls it back.
fn read_chunk(
    conn: &mut Connection,
    reader: &mut LineReader,
    file: &LogFile,
    state: &mut FileState,
    rowids: &mut RowIds,
    classes: Classes,
    // Rows committed before this chunk: only the crash test hook reads it.
    committed: u64,
) -> Result<Chunk, ChunkError> {
    let tx = conn.transaction()?;
    let fresh = state.id.is_none();
    let id = file_row(&tx, file, state)?;
    let start = state.offset;
    let Identity {
        dev, ino, mtime_ns, ..
    } = reader.identity();
    let lines = read_lines(&tx, reader, file, id, state, rowids, classes, committed)?;
    let (at_end, first) = match lines {
        Lines::Read { at_end, first } => (at_end, first),
        Lines::Bad { line, message } => return Ok(Chunk::Bad { line, message }),
    };
    if state.offset == start {
        // Nothing new was complete; dropping the transaction undoes a fresh file row.
        if fresh {
            state.id = None;
        }
        return Ok(Chunk::Progress { at_end: true });
    }
    if let Some(first) = first {
        super::near_field::refresh(&tx, id, first)?;
    }
    state.crc = reader.crc().unwrap_or(0);
    (state.dev, state.ino, state.mtime_ns) = (dev, ino, settled_mtime(mtime_ns));
    store_state(&tx, id, state)?;
    tx.commit()?;
    Ok(Chunk::Progress { at_end })
}

/// The file's row in `files`, added (at offset 0) when it has none yet.
fn file_row(tx: &Connection, file: &LogFile, state: &mut FileState) -> rusqlite::Result<i64> {
    if let Some(id) = state.id {
        return Ok(id);
    }
    let id = tx.query_row(
        "INSERT INTO files (path, session, epoch, offset, line, class, untrusted, rows)
         VALUES (?1, ?2, ?3, 0, 0, ?4, ?5, 0)
         RETURNING id",
        params![
            file.rel,
            file.session,
            epoch_i64(file.epoch),
            class_rank(state.label.class),
            state.label.untrusted
        ],
        |r| r.get(0),
    )?;
    state.id = Some(id);
    Ok(id)
}

/// What `read_lines` read.
enum Lines {
    /// Up to `CHUNK_BYTES` of lines indexed; `at_end` when the log's end (or a torn
    /// tail) was reached, `first` the smallest row id added.
    Read { at_end: bool, first: Option<i64> },
    /// A bad line with more after it.
    Bad { line: u64, message: String },
}

/// Inserts the rows of the lines from `state`'s offset on, up to `CHUNK_BYTES`, moving
/// `state` past each line read.
#[allow(clippy::too_many_arguments)]
fn read_lines(
    tx: &Connection,
    reader: &mut LineReader,
    file: &LogFile,
    id: i64,
    state: &mut FileState,
    rowids: &mut RowIds,
    classes: Classes,
    committed: u64,
) -> Result<Lines, ChunkError> {
    let start = state.offset;
    // The chunk's earliest row: the neighbours' field changes from two rows before it.
    let mut first: Option<i64> = None;
    let mut insert = tx.prepare_cached(INSERT_DOC)?;
    while state.offset - start < CHUNK_BYTES {
        let (len, record) = match reader.next_line() {
            Ok(Line::Record { len, record, .. }) => (len, record),
            // A torn tail is a write still in progress: left for a later catch-up.
            Ok(Line::Torn { .. } | Line::End) => {
                return Ok(Lines::Read {
                    at_end: true,
                    first,
                })
            }
            Err(sessions::Error::BadLine { line, message, .. }) => {
                return Ok(Lines::Bad { line, message })
            }
            Err(e) => return Err(ChunkError::Read(e)),
        };
        if let Some(row) = row_of(&record, &mut state.label, classes.max, classes.owner) {
            let rowid = rowids.next(tx, row.time)?;
            let text = row_text(row.text);
            insert.execute(params![
                rowid,
                &*text,
                file.session,
                epoch_i64(file.epoch),
                row.time,
                row.kind,
                row.role,
                class_rank(row.label.class),
                row.label.untrusted,
                id
            ])?;
            first = Some(first.map_or(rowid, |f| f.min(rowid)));
            state.rows += 1;
            crate::hooks::row_inserted(committed);
        }
        state.offset += len;
        state.line += 1;
    }
    Ok(Lines::Read {
        at_end: false,
        first,
    })
}

/// Stores how far the file has been read, in the chunk's transaction.
fn store_state(tx: &Connection, id: i64, state: &FileState) -> rusqlite::Result<()> {
    tx.execute(
        "UPDATE files SET offset = ?2, line = ?3, class = ?4, untrusted = ?5, rows = ?6,
                          broken = NULL, broken_size = NULL, broken_mtime = NULL,
                          dev = ?7, ino = ?8, mtime = ?9, crc = ?10
         WHERE id = ?1",
        params![
            id,
            i64::try_from(state.offset).unwrap_or(i64::MAX),
            i64::try_from(state.line).unwrap_or(i64::MAX),
            class_rank(state.label.class),
            state.label.untrusted,
            i64::try_from(state.rows).unwrap_or(i64::MAX),
            state.dev as i64,
            state.ino as i64,
            state.mtime_ns,
            i64::from(state.crc)
        ],
    )?;
    Ok(())
}
