//! The reporter against the stand-in Honcho: session logs are written here as loopd writes
//! them, and the reporter is driven with pokes. Waiting is on events (requests the stand-in
//! saw, rounds the reporter finished), never on sleeps.

use super::*;
use proto::head::{head_file_name, log_file_name, Head, Reason, SummarySource};
use proto::{Label, Origin, Record, Tokens, ToolCall};
use standins::honcho::{Fault, Standin, State, HANG};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes a session's logs the way loopd does: a head per epoch, one whole line per record.
pub(super) struct Logs {
    pub(super) dir: PathBuf,
    clock: i64,
}

impl Logs {
    pub(super) fn new(state: &Path, session: &str) -> Logs {
        let dir = state.join("sessions").join(session);
        std::fs::create_dir_all(&dir).unwrap();
        let logs = Logs {
            dir,
            clock: 1_796_013_296_000,
        };
        logs.head(0, None);
        logs
    }

    pub(super) fn head(&self, epoch: u64, carry: Option<&str>) {
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

    pub(super) fn raw(&self, epoch: u64, bytes: &str) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(log_file_name(epoch)))
            .unwrap();
        f.write_all(bytes.as_bytes()).unwrap();
    }

    pub(super) fn time(&mut self) -> String {
        self.clock += 1000;
        proto::time::format_unix_millis(self.clock)
    }

    pub(super) fn user(&mut self, epoch: u64, text: &str, origin: Origin) -> String {
        let time = self.time();
        let rec = Record::User {
            time: time.clone(),
            content: text.into(),
            origin,
        };
        self.raw(epoch, &rec.to_line());
        time
    }

    pub(super) fn assistant(&mut self, epoch: u64, text: Option<&str>, tools: bool) -> String {
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

    fn tool_traffic(&mut self, epoch: u64) {
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

    fn usage_and_note(&mut self, epoch: u64) {
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
    pub(super) fn owner_turn(&mut self, epoch: u64, n: usize, tools: bool) -> Vec<Expected> {
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
pub(super) type Expected = (String, String, String);

pub(super) fn config(state: &Path, server: &Standin) -> Config {
    let mut cfg = Config {
        state_dir: state.to_path_buf(),
        ..Config::default()
    };
    cfg.honcho.url = server.url();
    cfg.honcho.workspace = "ws".into();
    cfg
}

/// Fast backoff so that outages heal quickly; no rescans, so that only pokes and retries
/// start rounds.
pub(super) fn options(after_post: AfterPost) -> Options {
    Options {
        min_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(50),
        rescan: Duration::from_secs(3600),
        after_post,
        status: StatusHandle::default(),
        rewriting: crate::forget::plan::pending,
        commit_window: TEST_COMMIT_WINDOW,
        request_timeout: client::REQUEST_TIMEOUT,
    }
}

/// A commit window the stand-in's late commits in these tests stay inside.
pub(super) const TEST_COMMIT_WINDOW: Duration = Duration::from_millis(600);

pub(super) fn start(cfg: &Config) -> Reporter {
    Reporter::start_with(cfg, options(AfterPost::Continue)).unwrap()
}

/// What the stand-in holds, its times in loopd's form (milliseconds) again: Honcho gives a
/// time back with six fraction digits.
pub(super) fn got(st: &State) -> Vec<Expected> {
    st.messages
        .iter()
        .map(|m| (m.peer_id.clone(), m.content.clone(), millis(&m.created_at)))
        .collect()
}

/// A UTC time as loopd writes it, `…:57.123Z`.
pub(super) fn millis(t: &str) -> String {
    let (whole, frac) = message::time_key(t);
    format!("{whole}.{}Z", &frac[..3])
}

/// Pokes, waits until the stand-in holds `n` messages and then until the reporter has
/// finished a round after that, so a duplicate posted late would be seen too.
pub(super) fn settle(reporter: &Reporter, server: &Standin, session: &str, n: usize) {
    reporter.poke(session);
    server.wait(|st| st.messages.len() >= n);
    let rounds = reporter.health().idle_rounds;
    reporter.poke(session);
    let h = reporter.wait_for(HANG, |h| h.idle_rounds > rounds);
    assert!(h.idle_rounds > rounds, "reporter never went idle: {h:?}");
}

/// Waits for one more finished round than now, after a poke.
pub(super) fn round(reporter: &Reporter, session: &str) {
    let rounds = reporter.health().idle_rounds;
    reporter.poke(session);
    let h = reporter.wait_for(HANG, |h| h.idle_rounds > rounds);
    assert!(h.idle_rounds > rounds, "reporter never went idle: {h:?}");
}

#[test]
fn no_url_means_no_reporter() {
    assert!(Reporter::start(&Config::default(), crate::forget::plan::pending).is_none());
}

#[test]
fn owner_turns_are_reported_once_in_order_without_heartbeats_or_tool_traffic() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut want = logs.owner_turn(0, 1, true);
    logs.user(0, "HEARTBEAT-PROMPT", Origin::Heartbeat);
    logs.assistant(0, Some("HEARTBEAT_OK"), false);
    want.extend(logs.owner_turn(0, 2, false));
    let reporter = start(&config(state.path(), &server));
    reporter.poke("main");
    settle(&reporter, &server, "main", want.len());
    server.with(|st| {
        assert_eq!(got(st), want);
        for m in &st.messages {
            assert_eq!(
                m.session, "main",
                "the boxmaker session names the Honcho session"
            );
            assert_eq!(m.metadata["boxmaker_session"], "main");
        }
        let ids: Vec<&str> = st
            .messages
            .iter()
            .map(|m| m.metadata["boxmaker_id"].as_str().unwrap())
            .collect();
        assert!(ids[0].starts_with("main/0/0/owner"), "{ids:?}");
        assert!(ids[1].ends_with("/assistant"), "{ids:?}");
    });
    // Later turns go out after the earlier ones, and nothing is sent twice.
    let more = logs.owner_turn(0, 3, false);
    want.extend(more);
    settle(&reporter, &server, "main", want.len());
    server.with(|st| assert_eq!(got(st), want));
}

#[test]
fn an_unfinished_turn_waits_for_its_final_answer_and_a_torn_line_is_not_read() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let tq = logs.user(0, "question", Origin::Owner);
    logs.tool_traffic(0);
    let reporter = start(&config(state.path(), &server));
    round(&reporter, "main");
    server.with(|st| assert!(st.posts().is_empty(), "posted {:?}", st.messages));

    // The final answer's line without its newline yet: still not read.
    let ta = logs.time();
    let line = Record::Assistant {
        cut: false,
        time: ta.clone(),
        content: Some("answer".into()),
        tool_calls: vec![],
    }
    .to_line();
    logs.raw(0, line.trim_end_matches('\n'));
    round(&reporter, "main");
    server.with(|st| assert!(st.posts().is_empty(), "posted {:?}", st.messages));

    logs.raw(0, "\n");
    settle(&reporter, &server, "main", 2);
    let want = vec![
        ("owner".to_string(), "question".to_string(), tq),
        ("assistant".to_string(), "answer".to_string(), ta),
    ];
    server.with(|st| assert_eq!(got(st), want));
}

#[test]
fn a_turn_rerun_in_the_next_epoch_is_reported_once_and_the_carry_never() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut want = logs.owner_turn(0, 1, false);
    // Turn 2 runs out of context in epoch 0 and is run again in epoch 1.
    logs.user(0, "question 2", Origin::Owner);
    logs.tool_traffic(0);
    logs.head(1, Some("CARRY-SUMMARY"));
    want.extend(logs.owner_turn(1, 2, false));
    let reporter = start(&config(state.path(), &server));
    settle(&reporter, &server, "main", want.len());
    server.with(|st| {
        assert_eq!(got(st), want);
        assert!(st.messages.iter().all(|m| !m.content.contains("CARRY")));
    });
}

#[test]
fn a_stretch_of_503s_delays_reports_and_loses_none() {
    let server = Standin::start();
    server.with(|st| {
        st.list_faults
            .extend([Fault::Status(503), Fault::Status(502)]);
        st.post_faults.extend([Fault::Status(503); 3]);
    });
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut want = Vec::new();
    for n in 0..3 {
        want.extend(logs.owner_turn(0, n, n == 1));
    }
    let reporter = start(&config(state.path(), &server));
    reporter.poke("main");
    settle(&reporter, &server, "main", want.len());
    server.with(|st| assert_eq!(got(st), want));
    assert!(reporter.health().failures >= 5, "{:?}", reporter.health());
}

#[test]
fn a_server_that_is_down_then_up_gets_everything_once_in_order() {
    let mut server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut want = logs.owner_turn(0, 1, false);
    let reporter = start(&config(state.path(), &server));
    settle(&reporter, &server, "main", want.len());

    server.down();
    let failures = reporter.health().failures;
    want.extend(logs.owner_turn(0, 2, true));
    reporter.poke("main");
    want.extend(logs.owner_turn(0, 3, false));
    reporter.poke("main");
    let h = reporter.wait_for(HANG, |h| h.failures >= failures + 2);
    assert!(h.failures >= failures + 2, "{h:?}");
    assert!(h.last_error.is_some());

    server.up();
    settle(&reporter, &server, "main", want.len());
    server.with(|st| assert_eq!(got(st), want));
}

#[test]
fn a_bad_line_stops_the_scan_with_the_file_and_byte_named() {
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    logs.owner_turn(0, 1, false);
    let at = std::fs::metadata(logs.dir.join(log_file_name(0)))
        .unwrap()
        .len();
    logs.raw(0, "{\"type\":\"user\"}\n");
    logs.owner_turn(0, 2, false);
    let e = scan::scan(&logs.dir, cursor::Cursor::default(), 50)
        .unwrap_err()
        .to_string();
    assert!(e.contains("epoch-000000.jsonl"), "{e}");
    assert!(e.contains(&format!("byte {at}")), "{e}");
    assert!(e.contains("`time`"), "{e}");
}

#[test]
fn a_cursor_past_the_logs_is_an_error_not_a_silent_stop() {
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    logs.owner_turn(0, 1, false);
    let past_end = cursor::Cursor {
        epoch: 0,
        offset: 1 << 20,
        done: 0,
    };
    let e = scan::scan(&logs.dir, past_end, 50).unwrap_err().to_string();
    assert!(e.contains("past the end of log"), "{e}");
    let gone = cursor::Cursor {
        epoch: 7,
        offset: 0,
        done: 0,
    };
    let e = scan::scan(&logs.dir, gone, 50).unwrap_err().to_string();
    assert!(e.contains("epoch 7"), "{e}");
}

/// Regression: the scan read log lines without a cap, so a damaged log with no newlines was
/// held whole in memory. A line past `MAX_RECORD_LINE` is now a bad line, named like one.
#[test]
fn a_log_line_over_the_record_line_limit_is_a_bad_line_not_read_whole() {
    use sessions::MAX_RECORD_LINE;
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    logs.owner_turn(0, 1, false);
    let at = std::fs::metadata(logs.dir.join(log_file_name(0)))
        .unwrap()
        .len();
    logs.raw(0, &"x".repeat(MAX_RECORD_LINE as usize + 1));
    logs.raw(0, "\n");
    logs.owner_turn(0, 2, false);
    let e = scan::scan(&logs.dir, cursor::Cursor::default(), 50)
        .unwrap_err()
        .to_string();
    assert!(e.contains("epoch-000000.jsonl"), "{e}");
    assert!(e.contains(&format!("byte {at}")), "{e}");
    assert!(e.contains(&format!("over {MAX_RECORD_LINE} bytes")), "{e}");
}
