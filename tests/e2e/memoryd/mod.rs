//! memoryd end to end (docs/memoryd.md): the real daemon over real session logs written the
//! way loopd writes them, asked through its socket and its `recall` command.

mod budget;
mod catchup;
mod clients;
mod crash;
mod faults;
mod forget;
mod late;
mod pinned;
mod questions;
mod robust;
mod vectors;

use crate::support::{frames, Daemon, Fixture};
use proto::head::{head_file_name, log_file_name, Head, Reason, SummarySource};
use proto::label::{DataClass, Label};
use proto::memory::{Hit, MemoryStatus, Request, Response};
use proto::record::Record;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Output;

pub use crate::support::records::{assistant, note, tool_result, tool_summary, user, T};

/// One epoch of one session on disk: its head, then its log, as docs/sessions.md lays them out.
pub struct Epoch {
    pub log: PathBuf,
}

impl Epoch {
    /// Writes the head of `epoch` in session `id` under `state_dir`.
    pub fn begin(state_dir: &Path, id: &str, epoch: u64, carry_label: Label) -> Epoch {
        let dir = state_dir.join("sessions").join(id);
        std::fs::create_dir_all(&dir).unwrap();
        let head = Head {
            epoch,
            started: T.into(),
            system: "You are a helpful assistant.".into(),
            tools: serde_json::json!([]),
            carry: (epoch > 0).then(|| "earlier".to_string()),
            carry_label,
            reason: if epoch == 0 {
                Reason::Start
            } else {
                Reason::Threshold
            },
            summary_source: SummarySource::Model,
        };
        std::fs::write(
            dir.join(head_file_name(epoch)),
            serde_json::to_vec(&head).unwrap(),
        )
        .unwrap();
        Epoch {
            log: dir.join(log_file_name(epoch)),
        }
    }

    pub fn start(fx: &Fixture, id: &str) -> Epoch {
        Epoch::begin(&fx.state_dir, id, 0, Label::PUBLIC)
    }

    /// Appends raw bytes, as one write.
    pub fn raw(&self, bytes: &[u8]) -> &Epoch {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        f.write_all(bytes).unwrap();
        self
    }

    pub fn add(&self, record: &Record) -> &Epoch {
        self.raw(record.to_line().as_bytes())
    }
}

/// A recall at `max_class` for up to 50 hits.
pub fn recall_at(fx: &Fixture, query: &str, max_class: DataClass) -> Vec<Hit> {
    let request = Request::Recall {
        query: query.into(),
        max_class,
        limit: 50,
    };
    match frames::ask(&fx.memoryd_sock, &request).unwrap() {
        Response::Hits(hits) => hits,
        other => panic!("recall {query:?} answered {other:?}"),
    }
}

pub fn recall(fx: &Fixture, query: &str) -> Vec<Hit> {
    recall_at(fx, query, DataClass::Private)
}

pub fn status(fx: &Fixture) -> MemoryStatus {
    match frames::ask(&fx.memoryd_sock, &Request::Status).unwrap() {
        Response::Status(s) => s,
        other => panic!("status answered {other:?}"),
    }
}

/// Runs `memoryd --config … recall WORDS…` to completion.
pub fn cli_recall(fx: &Fixture, words: &[&str]) -> Output {
    Daemon::command("memoryd", fx)
        .arg("recall")
        .args(words)
        .output()
        .unwrap()
}

/// Every byte of the index on disk: the database, its WAL and the WAL's index.
pub fn index_bytes(fx: &Fixture) -> Vec<u8> {
    let mut all = Vec::new();
    for name in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"] {
        if let Ok(bytes) = std::fs::read(fx.state_dir.join("memory").join(name)) {
            all.extend(bytes);
        }
    }
    all
}

pub fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}
