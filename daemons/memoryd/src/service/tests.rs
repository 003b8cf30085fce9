//! The frame service against a real index in a temporary state directory, driven by
//! hand: no poll loop runs, so the start-up timer moves only when a test calls it.

use super::*;
use crate::fixture::user;
use proto::label::DataClass;

const SESSIONS: usize = 20;

/// `SESSIONS` sessions with one line each: one chunk of catch-up per session.
fn backlog(state_dir: &std::path::Path) {
    for n in 0..SESSIONS {
        let line = user(&format!("backlog otter {n}")).to_line();
        crate::fixture::append(state_dir, &format!("s{n}"), 0, &line);
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
    crate::fixture::append(dir.path(), "s0", 0, &user("fresh heron").to_line());
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

/// Regression: a forget done while memoryd was down rewrote a log; after the restart a
/// recall came before the start-up pass reached that log and answered with the
/// forgotten row.
#[test]
fn a_recall_after_a_restart_never_answers_from_a_log_rewritten_while_memoryd_was_down() {
    let dir = tempfile::tempdir().unwrap();
    backlog(dir.path());
    let told = user("my password is plumquartz 9").to_line();
    crate::fixture::append(dir.path(), "pw", 0, &told);
    {
        let mut svc = service(dir.path());
        let mut out = Outbox::default();
        run_due_timers(&mut svc, &mut out);
        assert!(!svc.catching_up());
    }
    // The forget, as loopd does it: a new file renamed over the log.
    let log = dir.path().join("sessions/pw/epoch-000000.jsonl");
    let forgotten = proto::Record::Forgotten {
        time: "2026-12-01T10:00:00.000Z".into(),
        records: 1,
        chars: 27,
        class: DataClass::Private,
        untrusted: false,
        call: None,
    }
    .to_line();
    let tmp = log.with_extension("jsonl.tmp");
    std::fs::write(&tmp, forgotten).unwrap();
    std::fs::rename(&tmp, &log).unwrap();
    let mut svc = service(dir.path());
    svc.set_request_chunks(0);
    let hits = match svc.answer(Request::Recall {
        query: "plumquartz".into(),
        max_class: DataClass::Private,
        limit: 5,
    }) {
        Response::Hits(hits) => hits,
        other => panic!("{other:?}"),
    };
    assert!(hits.is_empty(), "{hits:?}");
}
