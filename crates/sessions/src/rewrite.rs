//! A log rewritten record by record: what forgetting does to an epoch's log
//! (docs/sessions.md, 'Forgetting rewrites a log'). The lines are read by `lines`'
//! `LineReader`, so the bound and the torn-tail rule are the ones every reader keeps; each
//! record line is kept byte for byte or replaced by the caller; a bad line and a torn tail
//! are kept as they are (a torn tail is for the next open of the log to cut). The new file
//! is written beside the log and replaced atomically (`atomic`), and only when a line
//! changed. No more than one line is held at a time.

use crate::atomic;
use crate::lines::{Line, LineReader};
use crate::Error;
use proto::Record;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// A rewrite in progress of the log `dir/name`. Dropped without `commit`, it leaves the
/// log as it was and removes its temporary file.
pub struct Rewrite {
    reader: LineReader,
    out: Option<BufWriter<File>>,
    dir: PathBuf,
    name: String,
    tmp: PathBuf,
    /// The record line `next_record` returned, not yet kept or replaced.
    pending: bool,
    changed: bool,
}

/// One record of the log, as `Rewrite::next_record` hands it over.
pub struct Seen {
    /// The line's number, from 0, counting every line before it (bad ones too).
    pub line: u64,
    pub record: Record,
}

impl Rewrite {
    /// Starts rewriting `dir/name`; `None` when there is no such log.
    pub fn open(dir: &Path, name: &str) -> Result<Option<Rewrite>, Error> {
        let Some(reader) = LineReader::open(&dir.join(name), 0, 0)? else {
            return Ok(None);
        };
        let (file, tmp) = atomic::create_temp(dir, name)?;
        Ok(Some(Rewrite {
            reader,
            out: Some(BufWriter::new(file)),
            dir: dir.to_path_buf(),
            name: name.to_string(),
            tmp,
            pending: false,
            changed: false,
        }))
    }

    /// The next record, or `None` at the end (after a torn tail, which is copied). The
    /// caller then calls `keep` or `replace`; a record neither kept nor replaced is kept.
    /// A bad line is copied as it is and passed over; one too long to hold is an error,
    /// since it cannot be copied without being held.
    pub fn next_record(&mut self) -> Result<Option<Seen>, Error> {
        if self.pending {
            self.keep()?;
        }
        loop {
            let line = self.reader.lines();
            match self.reader.next_line() {
                Ok(Line::Record { record, .. }) => {
                    self.pending = true;
                    return Ok(Some(Seen { line, record }));
                }
                Ok(Line::Torn { .. }) => {
                    self.copy()?;
                    return Ok(None);
                }
                Ok(Line::End) => return Ok(None),
                Err(Error::BadLine { .. }) if self.reader.raw().is_some() => self.copy()?,
                Err(e) => return Err(e),
            }
        }
    }

    /// Keeps the record `next_record` returned as it is.
    pub fn keep(&mut self) -> Result<(), Error> {
        self.pending = false;
        self.copy()
    }

    /// Writes `line` (a whole record line, newline included) where the record `next_record`
    /// returned stood.
    pub fn replace(&mut self, line: &str) -> Result<(), Error> {
        self.pending = false;
        if self.reader.raw() == Some(line.as_bytes()) {
            // Already so: a plan applied again changes nothing.
            return self.copy();
        }
        self.changed = true;
        self.write(line.as_bytes())
    }

    /// Puts the new log in place when a line changed (fsync, rename, fsync the
    /// directory); otherwise leaves the log alone. True when it was rewritten.
    pub fn commit(mut self) -> Result<bool, Error> {
        if self.pending {
            self.keep()?;
        }
        // Whatever follows the last line `next_record` saw (it stopped early) is copied too.
        while self.next_record()?.is_some() {}
        let Some(out) = self.out.take() else {
            return Ok(false);
        };
        if !self.changed {
            drop(out);
            self.remove_tmp();
            return Ok(false);
        }
        let file = out
            .into_inner()
            .map_err(|e| Error::io("write", &self.tmp)(e.into_error()))?;
        file.sync_all().map_err(Error::io("fsync", &self.tmp))?;
        atomic::rename_into_place(&self.dir, &self.tmp, &self.name)?;
        atomic::sync_dir(&self.dir)?;
        Ok(true)
    }

    fn copy(&mut self) -> Result<(), Error> {
        let raw = self.reader.raw().unwrap_or_default().to_vec();
        self.write(&raw)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), Error> {
        match self.out.as_mut() {
            Some(out) => out.write_all(bytes).map_err(Error::io("write", &self.tmp)),
            None => Ok(()),
        }
    }

    fn remove_tmp(&self) {
        // Best effort: a temporary left behind is replaced by the next rewrite, and
        // `leftovers` never takes it for a log.
        let _ = std::fs::remove_file(&self.tmp);
    }
}

impl Drop for Rewrite {
    fn drop(&mut self) {
        if self.out.take().is_some() {
            self.remove_tmp();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn note(text: &str) -> String {
        Record::Note {
            time: "2026-11-30T06:00:00.000Z".into(),
            text: text.into(),
        }
        .to_line()
    }

    fn write_log(bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("epoch-000000.jsonl");
        std::fs::write(&path, bytes).unwrap();
        (dir, path)
    }

    #[test]
    fn a_replaced_line_is_rewritten_and_every_other_byte_kept() {
        let torn = "{\"type\":\"no";
        let log = format!("{}not json\n{}{torn}", note("a"), note("b"));
        let (dir, path) = write_log(log.as_bytes());
        let mut rw = Rewrite::open(dir.path(), "epoch-000000.jsonl")
            .unwrap()
            .unwrap();
        let mut lines = Vec::new();
        while let Some(seen) = rw.next_record().unwrap() {
            lines.push(seen.line);
            if seen.line == 2 {
                rw.replace(&note("gone")).unwrap();
            }
        }
        assert_eq!(lines, [0, 2], "the bad line counts but is no record");
        assert!(rw.commit().unwrap());
        let now = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            now,
            format!("{}not json\n{}{torn}", note("a"), note("gone"))
        );
        assert!(!dir.path().join("epoch-000000.jsonl.tmp").exists());
    }

    #[test]
    fn a_rewrite_that_changes_nothing_leaves_the_file_alone() {
        let log = note("a");
        let (dir, path) = write_log(log.as_bytes());
        let before = std::fs::metadata(&path).unwrap();
        let mut rw = Rewrite::open(dir.path(), "epoch-000000.jsonl")
            .unwrap()
            .unwrap();
        let seen = rw.next_record().unwrap().unwrap();
        rw.replace(&seen.record.to_line()).unwrap();
        assert!(!rw.commit().unwrap());
        let after = std::fs::metadata(&path).unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_eq!(before.ino(), after.ino());
        assert!(!dir.path().join("epoch-000000.jsonl.tmp").exists());
    }

    #[test]
    fn a_dropped_rewrite_leaves_the_log_and_no_temporary() {
        let (dir, path) = write_log(note("a").as_bytes());
        let mut rw = Rewrite::open(dir.path(), "epoch-000000.jsonl")
            .unwrap()
            .unwrap();
        rw.next_record().unwrap();
        rw.replace(&note("b")).unwrap();
        drop(rw);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), note("a"));
        assert!(!dir.path().join("epoch-000000.jsonl.tmp").exists());
    }

    #[test]
    fn a_missing_log_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Rewrite::open(dir.path(), "epoch-000000.jsonl")
            .unwrap()
            .is_none());
    }
}
