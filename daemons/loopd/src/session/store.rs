//! The files of a session on disk: an epoch's log opened with its torn tail cut, appends
//! that are one `write` plus `fdatasync`, and atomic replacement for head files.
//!
//! **Invariant:** a record is in `records` (and so acknowledged to anyone) only after its
//! whole line is on disk. A failed append is rolled back to the last good length so the
//! file never keeps half a line in front of the next record.

use super::SessionError;
use proto::Record;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// The longest log line read back. A record is a message or a tool result (tools cap
/// their own output well below this), so a longer line is damage, not data, and reading
/// it whole could exhaust memory.
pub const MAX_RECORD_LINE: u64 = 64 * 1024 * 1024;

/// One epoch's append-only log.
pub struct LogFile {
    path: PathBuf,
    file: File,
    /// The length of the file up to the end of the last whole record.
    len: u64,
}

impl LogFile {
    /// Opens (creating when missing) the log at `path` and reads its records. A torn last
    /// line is cut off with a warning; a bad line anywhere else refuses the open.
    pub fn open(path: &Path) -> Result<(LogFile, Vec<Record>), SessionError> {
        let io_err = |op: &'static str| {
            let path = path.to_path_buf();
            move |source| SessionError::Io { op, path, source }
        };
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io_err("open"))?;
        let mut reader = BufReader::new(&file);
        let mut records = Vec::new();
        let mut line = Vec::new();
        let mut pos: u64 = 0;
        let mut number = 0usize;
        loop {
            line.clear();
            let n = (&mut reader)
                .take(MAX_RECORD_LINE + 1)
                .read_until(b'\n', &mut line)
                .map_err(io_err("read"))?;
            if n == 0 {
                break;
            }
            number += 1;
            let complete = line.last() == Some(&b'\n');
            let at_end = reader.fill_buf().map_err(io_err("read"))?.is_empty();
            if !complete {
                if at_end {
                    cut_torn_tail(&file, path, pos, n)?;
                    break;
                }
                return Err(SessionError::BadLine {
                    path: path.to_path_buf(),
                    line: number,
                    message: format!("line is over {MAX_RECORD_LINE} bytes"),
                });
            }
            match parse_line(&line) {
                Ok(record) => records.push(record),
                // A whole last line that is not even JSON is a write that never finished
                // (a crash between the data reaching the disk and the newline).
                Err(LineError::NotJson(_)) if at_end => {
                    cut_torn_tail(&file, path, pos, n)?;
                    break;
                }
                Err(e) => {
                    return Err(SessionError::BadLine {
                        path: path.to_path_buf(),
                        line: number,
                        message: e.to_string(),
                    })
                }
            }
            pos += n as u64;
        }
        Ok((
            LogFile {
                path: path.to_path_buf(),
                file,
                len: pos,
            },
            records,
        ))
    }

    /// Appends `record` as one `write` of its whole line, then `fdatasync`.
    pub fn append(&mut self, record: &Record) -> Result<(), SessionError> {
        let line = record.to_line();
        // A line this reader would refuse must never be written: it would make the whole
        // session unopenable. JSON escaping can make a line up to six times its text.
        if line.len() as u64 > MAX_RECORD_LINE {
            return Err(SessionError::Io {
                op: "append to",
                path: self.path.clone(),
                source: io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "a {} record of {} bytes is over the {MAX_RECORD_LINE}-byte line limit",
                        record.kind(),
                        line.len()
                    ),
                ),
            });
        }
        let result =
            write_once(&mut self.file, line.as_bytes()).and_then(|()| self.file.sync_data());
        match result {
            Ok(()) => {
                self.len += line.len() as u64;
                Ok(())
            }
            Err(source) => {
                // Put the file back as it was, so a later append does not land after half
                // a line; if even that fails, the next open cuts the torn tail.
                if let Err(e) = self.file.set_len(self.len) {
                    plumbing::error!("{}: rolling back a failed append: {e}", self.path.display());
                }
                Err(SessionError::Io {
                    op: "append to",
                    path: self.path.clone(),
                    source,
                })
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

enum LineError {
    NotJson(String),
    NotUtf8,
    Record(proto::RecordError),
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineError::NotJson(e) => write!(f, "not valid json: {e}"),
            LineError::NotUtf8 => f.write_str("not valid utf-8"),
            LineError::Record(e) => write!(f, "{e}"),
        }
    }
}

fn parse_line(line: &[u8]) -> Result<Record, LineError> {
    let text = std::str::from_utf8(line).map_err(|_| LineError::NotUtf8)?;
    let text = text.strip_suffix('\n').unwrap_or(text);
    Record::from_line(text).map_err(|e| match e {
        proto::RecordError::NotJson(m) => LineError::NotJson(m),
        other => LineError::Record(other),
    })
}

/// One `write` call for the whole line. A short write (disk full) is an error, not a
/// reason to write the rest later: the line must land whole or not at all.
fn write_once(file: &mut File, bytes: &[u8]) -> io::Result<()> {
    loop {
        match file.write(bytes) {
            Ok(n) if n == bytes.len() => return Ok(()),
            Ok(n) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    format!("short write: {n} of {} bytes", bytes.len()),
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

fn cut_torn_tail(file: &File, path: &Path, at: u64, bytes: usize) -> Result<(), SessionError> {
    plumbing::warn!(
        "{}: cutting a torn last line of {bytes} bytes (a write that never finished)",
        path.display()
    );
    file.set_len(at)
        .and_then(|()| file.sync_data())
        .map_err(|source| SessionError::Io {
            op: "cut the torn tail of",
            path: path.to_path_buf(),
            source,
        })
}

/// Writes `bytes` to `dir/name` atomically: a temporary file, fsync, rename over the
/// name, fsync the directory. A crash leaves either the old file or the new one.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), SessionError> {
    let tmp = write_temp(dir, name, bytes)?;
    rename_into_place(dir, &tmp, name)?;
    sync_dir(dir)
}

/// The first half of `write_atomic`: `bytes` in `dir/<name>.tmp`, fsynced. Nothing that
/// reads the directory takes the temporary name for the real one.
pub fn write_temp(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf, SessionError> {
    let tmp = dir.join(format!("{name}.tmp"));
    let io = |op: &'static str| {
        let path = tmp.clone();
        move |source| SessionError::Io { op, path, source }
    };
    let mut f = File::create(&tmp).map_err(io("create"))?;
    f.write_all(bytes).map_err(io("write"))?;
    f.sync_all().map_err(io("fsync"))?;
    Ok(tmp)
}

/// The second half: the rename that makes the new file visible under `name`. The
/// directory still needs `sync_dir` for the rename to survive a power cut.
pub fn rename_into_place(dir: &Path, tmp: &Path, name: &str) -> Result<(), SessionError> {
    let target = dir.join(name);
    std::fs::rename(tmp, &target).map_err(|source| SessionError::Io {
        op: "rename into place",
        path: target,
        source,
    })
}

/// Makes a directory's entries (a rename, a new file or subdirectory) durable.
pub fn sync_dir(dir: &Path) -> Result<(), SessionError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| SessionError::Io {
            op: "fsync directory",
            path: dir.to_path_buf(),
            source,
        })
}
