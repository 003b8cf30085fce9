//! Session files for memoryd's unit tests, laid out as loopd writes them
//! (docs/sessions.md): `<state_dir>/sessions/<id>/` with an epoch's head and its log of
//! record lines. One place, so a change to the head or the layout is made once for every
//! test (`index`, `service`, `hybrid`).

use proto::head::{head_file_name, log_file_name, Head, Reason, SummarySource};
use proto::label::{DataClass, Label};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::index::Index;

// The records themselves come from proto's shared builders, dated `T` unless a test
// dates them (`user_at`).
pub(crate) use proto::test_records::{user, user_at, T};

/// An epoch's head as loopd writes one when a session starts.
pub(crate) fn head(epoch: u64, carry_label: Label) -> Head {
    Head {
        epoch,
        started: T.into(),
        system: "system".into(),
        tools: serde_json::json!([]),
        carry: None,
        carry_label,
        reason: Reason::Start,
        summary_source: SummarySource::Model,
    }
}

/// The log of `session`'s `epoch` under `state_dir`, its directory made and its head
/// written (public, at `T`) if it has none yet.
pub(crate) fn log(state_dir: &Path, session: &str, epoch: u64) -> PathBuf {
    let dir = state_dir.join("sessions").join(session);
    std::fs::create_dir_all(&dir).unwrap();
    let h = dir.join(head_file_name(epoch));
    if !h.exists() {
        std::fs::write(
            &h,
            serde_json::to_string(&head(epoch, Label::PUBLIC)).unwrap(),
        )
        .unwrap();
    }
    dir.join(log_file_name(epoch))
}

/// Appends `bytes` (whole record lines, or a torn piece of one) to that log.
pub(crate) fn append(state_dir: &Path, session: &str, epoch: u64, bytes: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log(state_dir, session, epoch))
        .unwrap();
    f.write_all(bytes.as_bytes()).unwrap();
}

/// Rewrites `log` as `/forget` does (a new file renamed over it) without the lines that
/// hold `word`.
pub(crate) fn rewrite_without(log: &Path, word: &str) {
    let text = std::fs::read_to_string(log).unwrap();
    let kept: String = text
        .lines()
        .filter(|l| !l.contains(word))
        .map(|l| format!("{l}\n"))
        .collect();
    let tmp = log.with_file_name("rewrite.tmp");
    std::fs::write(&tmp, kept).unwrap();
    std::fs::rename(&tmp, log).unwrap();
}

/// A temporary state directory that tests write sessions into.
pub(crate) struct World {
    pub(crate) dir: tempfile::TempDir,
}

impl World {
    pub(crate) fn new() -> World {
        World {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub(crate) fn log(&self, session: &str, epoch: u64) -> PathBuf {
        log(self.dir.path(), session, epoch)
    }

    pub(crate) fn append(&self, session: &str, epoch: u64, bytes: &str) {
        append(self.dir.path(), session, epoch, bytes);
    }

    /// The index of this state directory, as the daemon opens it by default.
    pub(crate) fn index(&self) -> Index {
        Index::open(self.dir.path(), DataClass::Private).unwrap()
    }
}
