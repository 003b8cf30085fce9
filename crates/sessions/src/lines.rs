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
use proto::{Record, RecordError};
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// The longest log line read back. A record is a message or a tool result (tools cap
/// their own output well below this, a few MiB even after JSON escaping), so a longer
/// line is damage, not data, and reading it whole could exhaust memory.
pub const MAX_RECORD_LINE: u64 = 64 * 1024 * 1024;

/// Read buffer for a log: large enough that a catch-up over many MiB makes few read
/// calls, small enough to hold one per open log without thought.
const READ_BUFFER: usize = 256 * 1024;

/// Opens `options` at `path` with `O_NONBLOCK` (so a FIFO with no writer returns at once)
/// and `O_NOFOLLOW`, and refuses anything that is not a regular file before a byte is
/// read. A symbolic link is refused, never followed: a link in a session directory could
/// otherwise make a daemon read (and index) any file it can open, `/etc/passwd` say.
pub fn open_regular(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    plumbing::bounded::open_regular(options, path, plumbing::bounded::Links::Refuse)
}

/// The record a line of text is, when it is one: for a reader of a file that may or may
/// not be a log (a copy set aside, a file left by hand), which cannot use a `LineReader`'s
/// rule that a bad line is an error. Record lines are parsed here and in `LineReader`
/// only, so what a record line is stays this crate's to say.
pub fn record_in(line: &str) -> Option<Record> {
    // Only a line opening an object (after JSON's white space, which every log reader
    // passes over too) can be one; parsing every line of a text file as JSON first would
    // cost more than searching it.
    if !line
        .trim_start_matches([' ', '\t', '\r', '\n'])
        .starts_with('{')
    {
        return None;
    }
    Record::from_line(line).ok()
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
    /// Whether `buf` holds the last line whole (not the start of an over-long one).
    held: bool,
    /// CRC-32 of the bytes `[0, pos)` when asked for (`with_crc`), kept up as whole
    /// record lines are passed: what lets a reader that stores it notice later that the
    /// part it read was rewritten (see `prefix_crc`).
    crc: Option<crc32fast::Hasher>,
    /// The identity of the open file (see `Identity`).
    identity: Identity,
}

/// Which file a log is, and how it looked when opened: device and inode (a file renamed
/// over the log is another file), size and modification time in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Identity {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
}

impl Identity {
    pub fn of(meta: &std::fs::Metadata) -> Identity {
        use std::os::unix::fs::MetadataExt;
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.len(),
            mtime_ns: meta
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.mtime_nsec()),
        }
    }

    /// The identity of the file at `path`, the link itself when it is a symbolic link.
    /// `None` when there is no such file.
    pub fn at(path: &Path) -> Result<Option<Identity>, Error> {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => Err(Error::Io {
                op: "open",
                path: path.to_path_buf(),
                source: io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "is a symbolic link; not followed",
                ),
            }),
            Ok(m) => Ok(Some(Identity::of(&m))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("stat", path)(e)),
        }
    }
}

/// Bytes read per call while checksumming a prefix.
const CRC_BLOCK: usize = 256 * 1024;

/// The CRC-32 of the first `len` bytes of the log at `path` (opened as `open_regular`
/// does), or `None` when the file is now shorter than that or gone. Reads `len` bytes:
/// a reader calls it only when a log's size or time changed.
pub fn prefix_crc(path: &Path, len: u64) -> Result<Option<u32>, Error> {
    range_crc(path, 0, len)
}

/// The CRC-32 of the `len` bytes from byte `from` of the log at `path`, as `prefix_crc`
/// reads them: `None` when the file now ends before `from + len` or is gone. A reader
/// that remembers the last bytes it read checks them with this instead of the whole part.
pub fn range_crc(path: &Path, from: u64, len: u64) -> Result<Option<u32>, Error> {
    let mut file = match open_regular(OpenOptions::new().read(true), path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("open", path)(e)),
    };
    if from > 0 {
        file.seek(SeekFrom::Start(from))
            .map_err(|e| read_error(path, e))?;
    }
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = vec![0u8; CRC_BLOCK];
    let mut left = len;
    while left > 0 {
        let want = usize::try_from(left.min(CRC_BLOCK as u64)).unwrap_or(CRC_BLOCK);
        let n = file
            .read(&mut buf[..want])
            .map_err(|e| read_error(path, e))?;
        if n == 0 {
            return Ok(None);
        }
        hasher.update(&buf[..n]);
        left -= n as u64;
    }
    Ok(Some(hasher.finalize()))
}

impl LineReader {
    /// Reads `file` (the log at `path`) from byte `offset`, which is the start of line
    /// `line + 1`.
    pub fn new(mut file: File, path: &Path, offset: u64, line: u64) -> Result<LineReader, Error> {
        let identity = Identity::of(&file.metadata().map_err(Error::io("stat", path))?);
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
            held: false,
            crc: None,
            identity,
        })
    }

    /// Keeps the CRC-32 of everything before `pos()` from here on, given `crc`, the
    /// CRC-32 of the bytes before the starting offset (0 at offset 0).
    #[must_use]
    pub fn with_crc(mut self, crc: u32) -> LineReader {
        self.crc = Some(crc32fast::Hasher::new_with_initial(crc));
        self
    }

    /// The CRC-32 of the bytes before `pos()`, when kept (`with_crc`).
    pub fn crc(&self) -> Option<u32> {
        self.crc.as_ref().map(|h| h.clone().finalize())
    }

    /// The identity of the file as it was when opened.
    pub fn identity(&self) -> Identity {
        self.identity
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
        self.held = false;
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
                self.held = true;
                return Ok(Line::Torn { at, len: n });
            }
            let skipped = self
                .reader
                .skip_until(b'\n')
                .map_err(|e| read_error(&self.path, e))? as u64;
            self.crc = None;
            self.pass(n + skipped);
            return Err(self.bad(at, format!("line is over {MAX_RECORD_LINE} bytes")));
        }
        self.held = true;
        let parsed = std::str::from_utf8(&self.buf[..self.buf.len() - 1])
            .map_err(|_| RecordError::NotJson("not valid utf-8".into()))
            .and_then(Record::from_line);
        match parsed {
            Ok(record) => {
                if let Some(h) = self.crc.as_mut() {
                    h.update(&self.buf);
                }
                self.pass(n);
                Ok(Line::Record { at, len: n, record })
            }
            Err(RecordError::NotJson(_)) if self.at_end()? => Ok(Line::Torn { at, len: n }),
            Err(e) => {
                self.crc = None;
                self.pass(n);
                let message = match e {
                    RecordError::NotJson(m) if m == "not valid utf-8" => m,
                    other => other.to_string(),
                };
                Err(self.bad(at, message))
            }
        }
    }

    /// The bytes of the line `next_line` last returned (a record, a torn tail or a bad
    /// line), its newline included when it has one; `None` after `End`, and for a line
    /// over `MAX_RECORD_LINE`, which is never held whole.
    pub fn raw(&self) -> Option<&[u8]> {
        self.held.then_some(self.buf.as_slice())
    }

    /// Passes `bytes` of a line. Only a record's line is in the CRC: after a bad line the
    /// CRC no longer describes the prefix and is dropped.
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
        // An unknown type is named as such, not as the `time` such a line lacks.
        let (seen, _) = read_all(format!("{GOOD}\n{{\"type\":\"bogus\"}}\n{GOOD}\n").as_bytes());
        assert!(
            seen[1].contains("line 2: unknown record type \"bogus\""),
            "{seen:?}"
        );
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
    fn a_symlinked_log_is_refused_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("passwd");
        std::fs::write(&target, format!("{GOOD}\n")).unwrap();
        let path = dir.path().join("epoch-000000.jsonl");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let e = LineReader::open(&path, 0, 0).err().unwrap();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(e.to_string().contains("epoch-000000.jsonl"), "{e}");
        assert!(Identity::at(&path).is_err());
        assert!(prefix_crc(&path, 1).is_err());
    }

    #[test]
    fn the_running_crc_equals_the_crc_of_the_prefix_read_from_disk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("epoch-000000.jsonl");
        let text = format!("{GOOD}\n{GOOD}\n{GOOD}\n");
        std::fs::write(&path, &text).unwrap();
        let mut r = LineReader::open(&path, 0, 0).unwrap().unwrap().with_crc(0);
        r.next_line().unwrap();
        let first = r.crc().unwrap();
        assert_eq!(prefix_crc(&path, r.pos()).unwrap(), Some(first));
        // Continued from a stored CRC at an offset, it still describes the whole prefix.
        let mut r = LineReader::open(&path, r.pos(), 1)
            .unwrap()
            .unwrap()
            .with_crc(first);
        while let Ok(Line::Record { .. }) = r.next_line() {}
        assert_eq!(r.crc(), Some(crc32fast::hash(text.as_bytes())));
        assert_eq!(prefix_crc(&path, text.len() as u64 + 1).unwrap(), None);
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
