//! loopd's append-only epoch log: opened with its torn tail cut (see `lines`), appended
//! one `write` of a whole line plus `fdatasync` at a time.
//!
//! **Invariant:** a record is returned (and so acknowledged to anyone) only after its
//! whole line is on disk. A failed append is rolled back to the last good length so the
//! file never keeps half a line in front of the next record.

use crate::lines::{open_regular, Line, LineReader, MAX_RECORD_LINE};
use crate::Error;
use proto::Record;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

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
