//! The reporter's test harness, for its own tests and for loopd's tests of it across a
//! `/forget` (behind the `test-support` feature, which brings in no crate): session logs
//! written as loopd writes them, a configuration, fast options, and waits on the rounds
//! the reporter finished, never on sleeps. What needs the stand-in Honcho lives with the
//! tests that run it (`test_standin` here, loopd's `tests_honcho`): no library depends on
//! a crate under `tests/`. Test code only: every failure here is a test's, so it panics.
#![allow(clippy::unwrap_used)]

use crate::{message, AfterPost, Options, Reporter, StatusHandle};
use proto::config::Config;
use proto::head::{head_file_name, log_file_name, Head, Reason, SummarySource};
use proto::{Label, Origin, Record, Tokens, ToolCall};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Writes a session's logs the way loopd does: a head per epoch, one whole line per record.
pub struct Logs {
    pub dir: PathBuf,
    clock: i64,
}

impl Logs {
    pub fn new(state: &Path, session: &str) -> Logs {
        let dir = state.join("sessions").join(session);
        std::fs::create_dir_all(&dir).unwrap();
        let logs = Logs {
            dir,
            clock: 1_796_013_296_000,
        };
        logs.head(0, None);
        logs
    }

    pub fn head(&self, epoch: u64, carry: Option<&str>) {
        let head = Head {
            epoch,
            started: "2026-11-30T04:34:56.000Z".into(),
            system: "you are helpful".into(),
            tools: serde_json::json!([]),
            carry: carry.map(str::to_string),
            carry_label: Label::default(),
            reason: if epoch == 0 {
                Reason::Start
            } else {
                Reason::ContextFull
            },
            summary_source: SummarySource::Model,
        };
        let text = serde_json::to_string(&head).unwrap();
        std::fs::write(self.dir.join(head_file_name(epoch)), text).unwrap();
    }

    pub fn raw(&self, epoch: u64, bytes: &str) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(log_file_name(epoch)))
            .unwrap();
        f.write_all(bytes.as_bytes()).unwrap();
    }

    pub fn time(&mut self) -> String {
        self.clock += 1000;
        proto::time::format_unix_millis(self.clock)
    }

    pub fn user(&mut self, epoch: u64, text: &str, origin: Origin) -> String {
        let time = self.time();
        let rec = Record::User {
            time: time.clone(),
            content: text.into(),
            origin,
            matrix: None,
        };
        self.raw(epoch, &rec.to_line());
        time
    }

    pub fn assistant(&mut self, epoch: u64, text: Option<&str>, tools: bool) -> String {
        let time = self.time();
        let tool_calls = if tools {
            vec![ToolCall {
                id: "c1".into(),
                name: "read_file".into(),
                arguments: "{\"path\":\"/x\"}".into(),
            }]
        } else {
            vec![]
        };
        let rec = Record::Assistant {
            cut: false,
            time: time.clone(),
            content: text.map(str::to_string),
            tool_calls,
        };
        self.raw(epoch, &rec.to_line());
        time
    }

    pub fn tool_traffic(&mut self, epoch: u64) {
        self.assistant(epoch, Some("TOOL-ROUND-TEXT"), true);
        let time = self.time();
        let rec = Record::ToolResult {
            time: time.clone(),
            call: 1,
            tool_call_id: "c1".into(),
            name: "read_file".into(),
            content: "TOOL-RESULT-BODY".into(),
            class: proto::DataClass::Private,
            untrusted: false,
        };
        self.raw(epoch, &rec.to_line());
    }

    pub fn usage_and_note(&mut self, epoch: u64) {
        let time = self.time();
        let usage = Record::Usage {
            time: time.clone(),
            slot: 0,
            tokens: Tokens {
                cache_n: 10,
                prompt_n: 5,
                predicted_n: 3,
            },
        };
        let note = Record::Note {
            time,
            text: "NOTE-TEXT".into(),
        };
        self.raw(epoch, &(usage.to_line() + &note.to_line()));
    }

    /// A whole owner turn; returns the messages Honcho should get for it.
    pub fn owner_turn(&mut self, epoch: u64, n: usize, tools: bool) -> Vec<Expected> {
        let q = format!("question {n}");
        let a = format!("answer {n}");
        let tq = self.user(epoch, &q, Origin::Owner);
        if tools {
            self.tool_traffic(epoch);
        }
        let ta = self.assistant(epoch, Some(&a), false);
        self.usage_and_note(epoch);
        vec![("owner".into(), q, tq), ("assistant".into(), a, ta)]
    }
}

/// (peer, content, created_at)
pub type Expected = (String, String, String);

/// A configuration reporting to the Honcho at `url`, workspace `ws`.
pub fn config_at(state: &Path, url: &str) -> Config {
    let mut cfg = Config {
        state_dir: state.to_path_buf(),
        ..Config::default()
    };
    cfg.honcho.url = url.to_string();
    cfg.honcho.workspace = "ws".into();
    cfg
}

/// How long a test waits for something that should happen before calling it a hang: not
/// an assertion on speed, so generous for a shared machine.
pub const HANG: Duration = Duration::from_secs(120);

/// Fast backoff so that outages heal quickly; no rescans, so that only pokes and retries
/// start rounds.
pub fn options(after_post: AfterPost) -> Options {
    Options {
        min_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(50),
        rescan: Duration::from_secs(3600),
        after_post,
        status: StatusHandle::default(),
        rewriting: crate::never_rewriting,
        commit_window: TEST_COMMIT_WINDOW,
        request_timeout: crate::client::REQUEST_TIMEOUT,
    }
}

/// A commit window the stand-in's late commits in these tests stay inside.
pub const TEST_COMMIT_WINDOW: Duration = Duration::from_millis(600);

/// A reporter on a copy of `cfg` (tests change a configuration before they start one).
pub fn start(cfg: &Config) -> Reporter {
    Reporter::start_with(
        std::sync::Arc::new(cfg.clone()),
        options(AfterPost::Continue),
    )
    .unwrap()
}

/// A UTC time as loopd writes it, `…:57.123Z`.
pub fn millis(t: &str) -> String {
    let (whole, frac) = message::time_key(t);
    format!("{whole}.{}Z", &frac[..3])
}

/// Waits for one more finished round than now, after a poke.
pub fn round(reporter: &Reporter, session: &str) {
    let rounds = reporter.health().idle_rounds;
    reporter.poke(session);
    let h = reporter.wait_for(HANG, |h| h.idle_rounds > rounds);
    assert!(h.idle_rounds > rounds, "reporter never went idle: {h:?}");
}

/// Leaves the marker of a post cut short, as a `kill -9` mid-post does: the next start
/// checks with Honcho before it posts.
pub fn was_posting(state: &Path, session: &str) {
    crate::flight::mark(state, session).unwrap();
}

/// Where the line holding `needle` starts in `main`'s epoch 0 log.
pub fn offset_of(logs: &Logs, needle: &str) -> u64 {
    let log = std::fs::read_to_string(logs.dir.join(log_file_name(0))).unwrap();
    let mut at = 0;
    for line in log.split_inclusive('\n') {
        if line.contains(needle) {
            return at;
        }
        at += line.len() as u64;
    }
    panic!("no line with {needle:?}");
}
