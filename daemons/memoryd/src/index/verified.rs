//! What memoryd remembers, in memory only, of the logs it verified lately, so a log that
//! grows turn after turn is not checksummed whole at every look (docs/memoryd.md,
//! 'Catching up'). A recall and a nudge each look at the session loopd is writing; the
//! log's time is always younger than the two seconds a time needs to be trusted, so each
//! look read back and checksummed everything indexed so far: a cost growing with the
//! session, twice a line.
//!
//! For each log it remembers where the index stands (file, offset, CRC of the indexed
//! part), the CRC of the indexed part's last bytes (`TAIL_BYTES`), and when the whole
//! indexed part was last found unchanged. A look on a request's behalf that finds the
//! same file grown from where it stood checks only those last bytes, and the whole part
//! again once `FULL_EVERY` has passed since it was last checked whole; a whole pass,
//! a forget and a re-read of a rewritten log always check the whole part. What is
//! remembered never outlives a change of the index: any drop of rows forgets all of it,
//! and a start begins with nothing remembered.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// Bytes at the end of the indexed part checked at a look that finds the log grown: a
/// log rewritten rather than appended to (truncated and written again, another log
/// copied over it) differs there.
pub(super) const TAIL_BYTES: u64 = 4096;

/// How long a whole check of a log's indexed part vouches for it: past this, the next
/// look checks the whole part again. The time a log's modification time needs before it
/// is trusted (`ingest::MTIME_SETTLED`): a log written more often than that is checked
/// whole once in this time instead of at every look, and one written less often is
/// judged by its time, as before.
pub(super) const FULL_EVERY: Duration = super::ingest::MTIME_SETTLED;

/// Logs remembered at most: the sessions a recall looks into (catch-up's hot sessions,
/// 32), a current epoch each, twice over. Past it everything is forgotten and logs are
/// checked whole again at their next look. A test keeps it at twice the hot sessions.
pub(super) const MAX_REMEMBERED: usize = 64;

/// One log as last verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    dev: u64,
    ino: u64,
    /// Where the index stands in the log, and the CRC-32 of the bytes before it.
    offset: u64,
    crc: u32,
    /// The CRC-32 of the `TAIL_BYTES` (fewer in a shorter log) before `offset`.
    tail: u32,
    /// When the whole part before `offset` was last found as indexed.
    whole_at: Instant,
}

/// Where the index stands in one log: its file and offset, and the CRC of what is before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stand {
    pub dev: u64,
    pub ino: u64,
    pub offset: u64,
    pub crc: u32,
}

/// The logs verified lately, by their id in `files`.
#[derive(Debug, Default)]
pub(super) struct Verified {
    seen: HashMap<i64, Seen>,
}

impl Verified {
    /// Forgets every log: rows were dropped, or a log rewritten.
    pub fn forget(&mut self) {
        self.seen.clear();
    }

    /// Whether a look on a request's behalf may check only the last bytes of log `id`,
    /// standing at `at`: it is remembered standing exactly there, and its whole part was
    /// checked within `FULL_EVERY`. Then the CRC its last bytes must have.
    pub fn tail_to_check(&self, id: i64, at: Stand) -> Option<u32> {
        let s = self.seen.get(&id)?;
        let same = (s.dev, s.ino, s.offset, s.crc) == (at.dev, at.ino, at.offset, at.crc);
        (same && s.whole_at.elapsed() < FULL_EVERY).then_some(s.tail)
    }

    /// When log `id`'s whole indexed part was last checked, if it is remembered standing
    /// at `at`.
    pub fn whole_at(&self, id: i64, at: Stand) -> Option<Instant> {
        let s = self.seen.get(&id)?;
        let same = (s.dev, s.ino, s.offset, s.crc) == (at.dev, at.ino, at.offset, at.crc);
        same.then_some(s.whole_at)
    }

    /// Remembers log `id` (at `path`) standing at `at`, its whole part checked at
    /// `whole_at`; its last bytes are read for their CRC. A log whose last bytes cannot
    /// be read is not remembered: its next look checks it whole.
    pub fn note(&mut self, id: i64, path: &Path, at: Stand, whole_at: Instant) {
        self.seen.remove(&id);
        let Some(tail) = tail_crc(path, at.offset) else {
            return;
        };
        if self.seen.len() >= MAX_REMEMBERED {
            self.seen.clear();
        }
        self.seen.insert(
            id,
            Seen {
                dev: at.dev,
                ino: at.ino,
                offset: at.offset,
                crc: at.crc,
                tail,
                whole_at,
            },
        );
    }
}

#[cfg(test)]
impl Verified {
    /// Makes every whole check `by` older.
    pub fn age_by(&mut self, by: Duration) {
        for s in self.seen.values_mut() {
            s.whole_at -= by;
        }
    }

    /// Whether log `id` is remembered.
    pub fn remembers(&self, id: i64) -> bool {
        self.seen.contains_key(&id)
    }
}

/// Whether the last bytes before `offset` of the log at `path` still have CRC-32 `tail`.
pub(super) fn tail_same(path: &Path, offset: u64, tail: u32) -> bool {
    tail_crc(path, offset) == Some(tail)
}

/// The CRC-32 of the `TAIL_BYTES` (or fewer, in a shorter log) before `offset`.
fn tail_crc(path: &Path, offset: u64) -> Option<u32> {
    let len = offset.min(TAIL_BYTES);
    sessions::lines::range_crc(path, offset - len, len)
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stand(offset: u64, crc: u32) -> Stand {
        Stand {
            dev: 1,
            ino: 2,
            offset,
            crc,
        }
    }

    #[test]
    fn a_log_is_vouched_for_only_where_it_was_verified_and_only_for_a_while() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, "x".repeat(10_000)).unwrap();
        let mut v = Verified::default();
        v.note(7, &path, stand(9_000, 42), Instant::now());
        let tail = v.tail_to_check(7, stand(9_000, 42)).unwrap();
        assert!(tail_same(&path, 9_000, tail));
        // Elsewhere, another CRC, another file: checked whole.
        assert_eq!(v.tail_to_check(7, stand(8_000, 42)), None);
        assert_eq!(v.tail_to_check(7, stand(9_000, 43)), None);
        assert_eq!(v.tail_to_check(8, stand(9_000, 42)), None);
        // Checked whole too long ago.
        let long_ago = Instant::now() - FULL_EVERY - Duration::from_millis(1);
        v.note(7, &path, stand(9_000, 42), long_ago);
        assert_eq!(v.tail_to_check(7, stand(9_000, 42)), None);
        assert_eq!(v.whole_at(7, stand(9_000, 42)), Some(long_ago));
        // Forgotten.
        v.note(7, &path, stand(9_000, 42), Instant::now());
        v.forget();
        assert_eq!(v.tail_to_check(7, stand(9_000, 42)), None);
    }

    #[test]
    fn last_bytes_written_again_differ() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, "a".repeat(10_000)).unwrap();
        let mut v = Verified::default();
        v.note(1, &path, stand(10_000, 0), Instant::now());
        let tail = v.tail_to_check(1, stand(10_000, 0)).unwrap();
        let mut text = "a".repeat(10_000).into_bytes();
        text[9_000] = b'b';
        std::fs::write(&path, &text).unwrap();
        assert!(!tail_same(&path, 10_000, tail));
        // A log now shorter than where the index stands has no such bytes.
        std::fs::write(&path, "a".repeat(100)).unwrap();
        assert!(!tail_same(&path, 10_000, tail));
    }
}
