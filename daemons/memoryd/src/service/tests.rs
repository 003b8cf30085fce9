//! The frame service against a real index in a temporary state directory, driven by
//! hand: no poll loop runs, so the start-up timer moves only when a test calls it.

use super::*;
use proto::head::{head_file_name, log_file_name, Head, Reason, SummarySource};
use proto::label::{DataClass, Label};
use proto::record::{Origin, Record};

const T: &str = "2026-11-30T06:00:00.000Z";
const SESSIONS: usize = 20;

/// `SESSIONS` sessions with one line each: one chunk of catch-up per session.
fn backlog(state_dir: &std::path::Path) {
    for n in 0..SESSIONS {
        let dir = state_dir.join("sessions").join(format!("s{n}"));
        std::fs::create_dir_all(&dir).unwrap();
        let head = Head {
            epoch: 0,
            started: T.into(),
            system: "system".into(),
            tools: serde_json::json!([]),
            carry: None,
            carry_label: Label::PUBLIC,
            reason: Reason::Start,
            summary_source: SummarySource::Model,
        };
        std::fs::write(
            dir.join(head_file_name(0)),
            serde_json::to_string(&head).unwrap(),
        )
        .unwrap();
        let line = Record::User {
            time: T.into(),
            content: format!("backlog otter {n}"),
            origin: Origin::Owner,
        }
        .to_line();
        std::fs::write(dir.join(log_file_name(0)), line).unwrap();
    }
}

fn service(state_dir: &std::path::Path) -> FrameService {
    let cfg = Config {
        state_dir: state_dir.to_path_buf(),
        ..Config::default()
    };
    let index = Index::open(state_dir, DataClass::Private).unwrap();
    FrameService::new(state_dir.join("config.toml"), cfg, index)
}

/// Runs the timer while it is due now (the catch-up's slices, a purge), not the next
/// periodic pass minutes away; the bound only stops a broken loop.
fn run_due_timers(svc: &mut FrameService, out: &mut Outbox) {
    for _ in 0..10 * SESSIONS {
        let Some(due) = svc.deadline() else { break };
        if due > Instant::now() {
            break;
        }
        svc.timer(out, due);
    }
}

fn rows(svc: &mut FrameService) -> u64 {
    match svc.answer(Request::Status) {
        Response::Status(s) => s.rows,
        other => panic!("{other:?}"),
    }
}

/// Regression: a recall during a large backlog indexed all of it in one turn of the
/// poll loop, so no watchdog ping went out and systemd killed memoryd.
#[test]
fn a_recall_during_a_backlog_is_answered_within_its_budget_and_the_timer_indexes_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    backlog(dir.path());
    let mut svc = service(dir.path());
    svc.set_request_chunks(3);
    let hits = match svc.answer(Request::Recall {
        query: "otter".into(),
        max_class: DataClass::Private,
        limit: 50,
    }) {
        Response::Hits(hits) => hits,
        other => panic!("{other:?}"),
    };
    assert!(!hits.is_empty() && hits.len() <= 3, "{} hits", hits.len());
    assert!(svc.catching_up());
    assert!(rows(&mut svc) < SESSIONS as u64);
    let mut out = Outbox::default();
    // One chunk a turn: a session each; the bound only stops a broken loop.
    run_due_timers(&mut svc, &mut out);
    assert!(!svc.catching_up());
    assert_eq!(rows(&mut svc), SESSIONS as u64);
}

/// Same for a nudge: it indexes its session within a request's budget and answers.
#[test]
fn a_nudge_during_a_backlog_answers_and_leaves_the_rest_to_the_timer() {
    let dir = tempfile::tempdir().unwrap();
    backlog(dir.path());
    let mut svc = service(dir.path());
    svc.set_request_chunks(0);
    let answer = svc.answer(Request::Nudge {
        session: "s1".into(),
    });
    assert!(matches!(answer, Response::Status(_)), "{answer:?}");
    let mut out = Outbox::default();
    run_due_timers(&mut svc, &mut out);
    assert_eq!(rows(&mut svc), SESSIONS as u64);
}

/// A turn's few new lines are far below a request's budget: recall still sees them.
#[test]
fn a_recall_after_catching_up_sees_every_line_written_before_it() {
    let dir = tempfile::tempdir().unwrap();
    backlog(dir.path());
    let mut svc = service(dir.path());
    let mut out = Outbox::default();
    run_due_timers(&mut svc, &mut out);
    let log = dir.path().join("sessions/s0").join(log_file_name(0));
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str(
        &Record::User {
            time: T.into(),
            content: "fresh heron".into(),
            origin: Origin::Owner,
        }
        .to_line(),
    );
    std::fs::write(&log, text).unwrap();
    let answer = svc.answer(Request::Recall {
        query: "heron".into(),
        max_class: DataClass::Private,
        limit: 50,
    });
    assert!(
        matches!(&answer, Response::Hits(h) if h.len() == 1),
        "{answer:?}"
    );
}
