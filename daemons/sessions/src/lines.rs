//! Reading an epoch log's record lines, bounded, with the one torn-tail rule that every
//! reader of the logs (loopd opening its log, the Honcho reporter, memoryd's index)
//! shares:
//!
//! **The torn-tail rule:** the last line of a log is *torn* — a write that never finished,
//! or one still in progress — when it has no newline, or when it has one but is not JSON
//! (a crash between the data reaching the disk and the newline's). A torn tail is never
//! read as a record: loopd cuts it off when it opens the log, other readers stop before it
//! and read it again once it is whole. Any other bad line is damage and an error naming
//! the file and line. A line longer than `MAX_RECORD_LINE` is always damage (loopd never
//! writes one), and is skipped without being held.

use crate::Error;
use nix::fcntl::OFlag;
use proto::{Record, RecordError};
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The longest log line read back. A record is a message or a tool result (tools cap
/// their own output well below this, a few MiB even after JSON escaping), so a longer
/// line is damage, not data, and reading it whole could exhaust memory.
pub const MAX_RECORD_LINE: u64 = 64 * 1024 * 1024;

/// Read buffer for a log: large enough that a catch-up over many MiB makes few read
/// calls, small enough to hold one per open log without thought.
const READ_BUFFER: usize = 256 * 1024;

/// Opens `options` at `path` with `O_NONBLOCK` (so a FIFO with no writer returns at once)
/// and refuses anything that is not a regular file before a byte is read.
pub fn open_regular(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    let file = options
        .custom_flags((OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits())
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

/// One step of a `LineReader`.
#[derive(Debug)]
pub enum Line {
    /// A whole record; its line starts at byte `at` and is `len` bytes with the newline.
    Record { at: u64, len: u64, record: Record },
    /// The torn tail: `len` bytes from `at` to the end of the file. The reader stays
    /// before it (`pos()` is `at`).
    Torn { at: u64, len: u64 },
    /// The end of the file, after a whole line.
    End,
}

/// Reads record lines from an offset on. After `Torn` or `End` the reader is done; a
/// reader following a live log opens a new one at `pos()` later.
pub struct LineReader {
    reader: BufReader<File>,
    path: PathBuf,
    pos: u64,
    line: u64,
    buf: Vec<u8>,
}

impl LineReader {
    /// Reads `file` (the log at `path`) from byte `offset`, which is the start of line
    /// `line + 1`.
    pub fn new(mut file: File, path: &Path, offset: u64, line: u64) -> Result<LineReader, Error> {
        if offset > 0 {
            file.seek(SeekFrom::Start(offset))
                .map_err(Error::io("read", path))?;
        }
        Ok(LineReader {
            reader: BufReader::with_capacity(READ_BUFFER, file),
            path: path.to_path_buf(),
            pos: offset,
            line,
            buf: Vec::new(),
        })
    }

    /// Opens the log at `path` read-only (see `open_regular`) and reads it from `offset`.
    /// `None` when there is no such file.
    pub fn open(path: &Path, offset: u64, line: u64) -> Result<Option<LineReader>, Error> {
        match open_regular(OpenOptions::new().read(true), path) {
            Ok(file) => LineReader::new(file, path, offset, line).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("open", path)(e)),
        }
    }

    /// The offset just past the last line returned (the start of the next one).
    pub fn pos(&self) -> u64 {
        self.pos
    }

    /// How many lines have been passed, counting those before the starting offset.
    pub fn lines(&self) -> u64 {
        self.line
    }

    /// The next line. An `Error::BadLine` has been passed over: reading on continues with
    /// the line after it.
    pub fn next_line(&mut self) -> Result<Line, Error> {
        self.buf.clear();
        let n = (&mut self.reader)
            .take(MAX_RECORD_LINE + 1)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| read_error(&self.path, e))? as u64;
        if n == 0 {
            return Ok(Line::End);
        }
        let at = self.pos;
        if self.buf.last() != Some(&b'\n') {
            if n <= MAX_RECORD_LINE {
                // `read_until` stopped short of its limit without a newline: the end of
                // the file.
                return Ok(Line::Torn { at, len: n });
            }
            let skipped = self
                .reader
                .skip_until(b'\n')
                .map_err(|e| read_error(&self.path, e))? as u64;
            self.pass(n + skipped);
            return Err(self.bad(at, format!("line is over {MAX_RECORD_LINE} bytes")));
        }
        let parsed = std::str::from_utf8(&self.buf[..self.buf.len() - 1])
            .map_err(|_| RecordError::NotJson("not valid utf-8".into()))
            .and_then(Record::from_line);
        match parsed {
            Ok(record) => {
                self.pass(n);
                Ok(Line::Record { at, len: n, record })
            }
            Err(RecordError::NotJson(_)) if self.at_end()? => Ok(Line::Torn { at, len: n }),
            Err(e) => {
                self.pass(n);
                let message = match e {
                    RecordError::NotJson(m) if m == "not valid utf-8" => m,
                    other => other.to_string(),
                };
                Err(self.bad(at, message))
            }
        }
    }

    fn pass(&mut self, bytes: u64) {
        self.pos += bytes;
        self.line += 1;
    }

    fn at_end(&mut self) -> Result<bool, Error> {
        Ok(self
            .reader
            .fill_buf()
            .map_err(|e| read_error(&self.path, e))?
            .is_empty())
    }

    fn bad(&self, at: u64, message: String) -> Error {
        Error::BadLine {
            path: self.path.clone(),
            line: self.line,
            at,
            message,
        }
    }
}

/// Built only on failure, since reading a line is the hot path.
fn read_error(path: &Path, source: io::Error) -> Error {
    Error::Io {
        op: "read",
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const GOOD: &str = r#"{"type":"note","time":"2026-11-30T06:00:00.000Z","text":"n"}"#;

    fn read_all(bytes: &[u8]) -> (Vec<String>, LineReader) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("epoch-000000.jsonl");
        std::fs::write(&path, bytes).unwrap();
        let mut r = LineReader::open(&path, 0, 0).unwrap().unwrap();
        let mut seen = Vec::new();
        loop {
            match r.next_line() {
                Ok(Line::Record { .. }) => seen.push("record".to_string()),
                Ok(Line::Torn { at, len }) => {
                    seen.push(format!("torn {at}+{len}"));
                    break;
                }
                Ok(Line::End) => break,
                Err(e) => seen.push(format!("bad: {e}")),
            }
        }
        (seen, r)
    }

    #[test]
    fn a_last_line_without_newline_or_not_json_is_torn_and_the_reader_stays_before_it() {
        let good = format!("{GOOD}\n");
        for tail in ["{\"type\":\"no", "{\"type\":\"no\n", "\u{fffd}garbage\n"] {
            let (seen, r) = read_all(format!("{good}{tail}").as_bytes());
            let want = format!("torn {}+{}", good.len(), tail.len());
            assert_eq!(seen, ["record".to_string(), want], "{tail:?}");
            assert_eq!(r.pos(), good.len() as u64);
            assert_eq!(r.lines(), 1);
        }
    }

    #[test]
    fn a_bad_line_with_more_after_it_is_damage_and_reading_goes_on() {
        let (seen, r) = read_all(format!("{GOOD}\nnot json\n{GOOD}\n").as_bytes());
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert!(seen[1].contains("line 2: not valid json"), "{seen:?}");
        assert_eq!(r.lines(), 3);
        // A whole last line that is JSON but not a record is damage too, not a torn tail.
        let (seen, _) = read_all(format!("{GOOD}\n{{\"type\":\"user\"}}\n").as_bytes());
        assert!(seen[1].starts_with("bad:"), "{seen:?}");
    }

    #[test]
    fn an_over_long_line_is_passed_over_without_being_held() {
        let huge = "x".repeat(MAX_RECORD_LINE as usize + 1);
        let (seen, r) = read_all(format!("{huge}\n{GOOD}\n").as_bytes());
        assert!(
            seen[0].contains(&format!("over {MAX_RECORD_LINE} bytes")),
            "{seen:?}"
        );
        assert_eq!(seen[1], "record");
        assert_eq!(r.lines(), 2);
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("epoch-000000.jsonl");
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = LineReader::open(&path, 0, 0).err().unwrap();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
}
