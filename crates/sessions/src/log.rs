//! loopd's append-only epoch log: opened with its torn tail cut (see `lines`), appended
//! one `write` of a whole line plus `fdatasync` at a time.
//!
//! **Invariant:** a record is returned (and so acknowledged to anyone) only after its
//! whole line is on disk. A failed append is rolled back to the last good length so the
//! file never keeps half a line in front of the next record.
//!
//! **Invariant:** the file written is the file at the log's path. An editor or `sed -i`
//! replaces a log by renaming a new file over it; the descriptor held open would then
//! write to the old, deleted file, and every record after it would be acknowledged and
//! lost. `changed` tells the owner of the log (loopd's open session) before it appends,
//! so it reads the session from disk again (docs/sessions.md, 'A log changed under
//! loopd').

use crate::lines::{open_regular, Line, LineReader, MAX_RECORD_LINE};
use crate::Error;
use proto::Record;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// How the log at a `LogFile`'s path differs from the file it holds open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Changed {
    /// Another file is at the path (renamed over it: an editor, `sed -i`, a copy back).
    Replaced,
    /// Nothing is at the path any more.
    Gone,
    /// The same file, but not as long as the records this wrote end: something else
    /// wrote to it or cut it.
    Resized { held: u64, now: u64 },
}

impl std::fmt::Display for Changed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Changed::Replaced => write!(f, "another file was put at its name"),
            Changed::Gone => write!(f, "it was removed"),
            Changed::Resized { held, now } => write!(
                f,
                "something else changed its length from {held} to {now} bytes"
            ),
        }
    }
}

/// One epoch's append-only log.
pub struct LogFile {
    path: PathBuf,
    file: File,
    /// The length of the file up to the end of the last whole record.
    len: u64,
}

impl LogFile {
    /// Opens (creating when missing) the log at `path` and reads its records. A torn tail
    /// is cut off with a warning; a bad line anywhere else refuses the open.
    pub fn open(path: &Path) -> Result<(LogFile, Vec<Record>), Error> {
        let file = open_regular(
            OpenOptions::new().read(true).append(true).create(true),
            path,
        )
        .map_err(Error::io("open", path))?;
        let reader_file = file.try_clone().map_err(Error::io("open", path))?;
        let mut reader = LineReader::new(reader_file, path, 0, 0)?;
        let mut records = Vec::new();
        loop {
            match reader.next_line()? {
                Line::Record { record, .. } => records.push(record),
                Line::Torn { at, len } => {
                    cut_torn_tail(&file, path, at, len)?;
                    break;
                }
                Line::End => break,
            }
        }
        Ok((
            LogFile {
                path: path.to_path_buf(),
                file,
                len: reader.pos(),
            },
            records,
        ))
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the log on disk is no longer what this holds: another file at the path
    /// (device and inode differ; a symbolic link put there counts as another file), no
    /// file at all, or the same file at another length than the records written end at.
    /// Two `stat` calls, so it is asked before every append; the `fdatasync` after it
    /// costs far more.
    pub fn changed(&self) -> Result<Option<Changed>, Error> {
        use std::os::unix::fs::MetadataExt;
        let held = self
            .file
            .metadata()
            .map_err(Error::io("stat", &self.path))?;
        let now = match std::fs::symlink_metadata(&self.path) {
            Ok(now) => now,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Some(Changed::Gone)),
            Err(e) => return Err(Error::io("stat", &self.path)(e)),
        };
        if (now.dev(), now.ino()) != (held.dev(), held.ino()) {
            return Ok(Some(Changed::Replaced));
        }
        if held.len() != self.len {
            return Ok(Some(Changed::Resized {
                held: self.len,
                now: held.len(),
            }));
        }
        Ok(None)
    }

    /// Makes what the file holds durable (`fdatasync`): for a file loopd did not write,
    /// opened after another program renamed it over the log.
    pub fn sync(&self) -> Result<(), Error> {
        self.file.sync_data().map_err(|source| Error::Io {
            op: "sync",
            path: self.path.clone(),
            source,
        })
    }

    /// Appends `record` as one `write` of its whole line, then `fdatasync`.
    pub fn append(&mut self, record: &Record) -> Result<(), Error> {
        let line = record.to_line();
        // A line the reader would refuse must never be written: it would make the whole
        // session unopenable. JSON escaping can make a line up to six times its text.
        if line.len() as u64 > MAX_RECORD_LINE {
            return Err(Error::Io {
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
                Err(Error::Io {
                    op: "append to",
                    path: self.path.clone(),
                    source,
                })
            }
        }
    }
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

fn cut_torn_tail(file: &File, path: &Path, at: u64, bytes: u64) -> Result<(), Error> {
    plumbing::warn!(
        "{}: cutting a torn last line of {bytes} bytes (a write that never finished)",
        path.display()
    );
    file.set_len(at)
        .and_then(|()| file.sync_data())
        .map_err(Error::io("cut the torn tail of", path))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn note(text: &str) -> Record {
        Record::Note {
            time: "2026-11-30T06:00:00.000Z".into(),
            text: text.into(),
        }
    }

    /// Regression: a log replaced on disk the way an editor or `sed -i` does it (a new
    /// file renamed over the name) went unnoticed, and every later record went to the
    /// deleted file the descriptor still held.
    #[test]
    fn a_log_replaced_removed_or_resized_on_disk_is_told_apart_from_the_one_held() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("epoch-000000.jsonl");
        let (mut log, _) = LogFile::open(&path).unwrap();
        log.append(&note("first")).unwrap();
        assert_eq!(log.changed().unwrap(), None);
        // `cp L L.new; sed -i … L.new; mv L.new L`.
        let new = dir.path().join("epoch-000000.jsonl.new");
        std::fs::copy(&path, &new).unwrap();
        std::fs::rename(&new, &path).unwrap();
        assert_eq!(log.changed().unwrap(), Some(Changed::Replaced));
        let (mut log, records) = LogFile::open(&path).unwrap();
        assert_eq!(records, [note("first")]);
        log.append(&note("second")).unwrap();
        assert_eq!(log.changed().unwrap(), None);
        // Written to in place by something else: the same file, another length.
        let line = note("outside").to_line();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(line.as_bytes())
            .unwrap();
        assert!(matches!(
            log.changed().unwrap(),
            Some(Changed::Resized { .. })
        ));
        std::fs::remove_file(&path).unwrap();
        assert_eq!(log.changed().unwrap(), Some(Changed::Gone));
        // A link put at the name is another file, never followed.
        std::os::unix::fs::symlink("/etc/passwd", &path).unwrap();
        assert_eq!(log.changed().unwrap(), Some(Changed::Replaced));
    }
}
