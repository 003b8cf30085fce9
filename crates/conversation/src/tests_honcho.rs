//! The Honcho reporter across loopd's `/forget`, which rewrites a log the reporter has
//! already reported from: every turn goes to Honcho exactly once, the record standing in
//! for a forgotten one is never posted, and nothing after it is skipped, whether the
//! forgotten record's replacement is longer or shorter than the record (every later line
//! of the epoch moves either way); and what a forget asks of Honcho still finds a record
//! an earlier forget moved. Here rather than in the honcho crate because they run
//! loopd's own find, plan and apply.

use crate::forget::find::find;
use crate::forget::{apply, plan::Plan};
use honcho::forget::forget;
use honcho::moved::move_cursor;
use honcho::test_support::{config_at, millis, offset_of, options, round, Expected, Logs};
use honcho::{AfterPost, Options, Reporter};
use proto::config::Config;
use proto::Origin;
use standins::honcho::{Standin, State};
use std::path::Path;
use std::sync::Arc;

/// A configuration reporting to `server`.
fn config(state: &Path, server: &Standin) -> Config {
    config_at(state, &server.url())
}

/// What the stand-in holds, its times in loopd's form (milliseconds) again.
fn got(st: &State) -> Vec<Expected> {
    st.messages
        .iter()
        .map(|m| (m.peer_id.clone(), m.content.clone(), millis(&m.created_at)))
        .collect()
}

/// Pokes, waits until the stand-in holds `n` messages, then for one more finished round,
/// so a duplicate posted late would be seen too.
fn settle(reporter: &Reporter, server: &Standin, session: &str, n: usize) {
    reporter.poke(session);
    server.wait(|st| st.messages.len() >= n);
    round(reporter, session);
}

/// A reporter that holds back a session while loopd's forget plan for it exists, as the
/// worker's does.
fn start(cfg: &Config) -> Reporter {
    start_after(cfg, AfterPost::Continue)
}

fn start_after(cfg: &Config, after_post: AfterPost) -> Reporter {
    let opts = Options {
        rewriting: crate::forget::plan::pending,
        ..options(after_post)
    };
    Reporter::start_with(Arc::new(cfg.clone()), opts).unwrap()
}

/// Forgets every record holding `query` in `main` as the worker does (`/forget QUERY`,
/// then `/forget all`): the reporter held still from before the plan is written until it
/// is removed, the logs rewritten, the cursor moved and the session reloaded.
fn forget_all(state: &std::path::Path, reporter: &Reporter, query: &str) -> Plan {
    let paused = reporter.pause();
    let dir = state.join("sessions").join("main");
    let found = find(&dir, query, proto::DataClass::Private).unwrap();
    assert!(!found.is_empty(), "nothing holds {query:?}");
    let chosen: Vec<_> = found.iter().collect();
    let plan = Plan::build("main", proto::time::now_rfc3339(), &chosen, query);
    apply::run(state, &state.join("sessions"), &plan).unwrap();
    move_cursor(state, "main", &plan.rewrite()).unwrap();
    paused.reload("main");
    crate::forget::plan::remove(state, "main").unwrap();
    drop(paused);
    reporter.poke("main");
    plan
}

fn every_turn_once_across_a_forget(first_question: &str) {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let tq = logs.user(0, first_question, Origin::Owner);
    let ta = logs.assistant(0, Some("answer 1"), false);
    let mut want: Vec<Expected> = vec![
        ("owner".into(), first_question.into(), tq),
        ("assistant".into(), "answer 1".into(), ta),
    ];
    for n in 2..4 {
        want.extend(logs.owner_turn(0, n, false));
    }
    let cfg = config(state.path(), &server);
    let reporter = start(&cfg);
    settle(&reporter, &server, "main", want.len());

    forget_all(state.path(), &reporter, first_question);
    for n in 4..7 {
        want.extend(logs.owner_turn(0, n, false));
    }
    settle(&reporter, &server, "main", want.len());
    server.with(|st| assert_eq!(got(st), want, "each turn once, in order"));
    reporter.stop();

    // A restart asks Honcho what it holds, whose newest id names a place in the log as
    // it is now; and a turn more still goes out once.
    let again = start(&cfg);
    want.extend(logs.owner_turn(0, 7, false));
    settle(&again, &server, "main", want.len());
    server.with(|st| {
        assert_eq!(got(st), want, "each turn once, in order");
        assert!(st.messages.iter().all(|m| !m.content.contains("forgotten")));
    });
}

#[test]
fn a_forget_that_lengthens_an_early_line_neither_skips_nor_reposts_turns() {
    every_turn_once_across_a_forget("q1");
}

#[test]
fn a_forget_that_shortens_an_early_line_neither_skips_nor_reposts_turns() {
    every_turn_once_across_a_forget(&"a long first question ".repeat(40));
}

/// A crash after the logs were rewritten and before the cursor was moved: the next
/// reporter holds the session back while the plan exists (its cursor names old offsets),
/// and once the plan is finished — the cursor moved twice, as a second crash and restart
/// would — every turn goes out once.
#[test]
fn a_forget_cut_short_by_a_crash_holds_reports_until_finished_and_moves_the_cursor_once() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut want = Vec::new();
    for n in 1..4 {
        want.extend(logs.owner_turn(0, n, false));
    }
    let cfg = config(state.path(), &server);
    let first = start(&cfg);
    settle(&first, &server, "main", want.len());
    first.stop();

    // The files of the removal are done; the process dies before anything else.
    let dir = state.path().join("sessions").join("main");
    let found = find(&dir, "question 1", proto::DataClass::Private).unwrap();
    let chosen: Vec<_> = found.iter().collect();
    let plan = Plan::build("main", proto::time::now_rfc3339(), &chosen, "question 1");
    apply::run(state.path(), &state.path().join("sessions"), &plan).unwrap();
    for n in 4..6 {
        want.extend(logs.owner_turn(0, n, false));
    }

    let second = start(&cfg);
    second.poke("main");
    let h = second.wait_for(standins::honcho::HANG, |h| h.failures > 0);
    assert!(
        h.last_error
            .as_deref()
            .is_some_and(|e| e.contains("forget")),
        "{h:?}"
    );
    server.with(|st| assert_eq!(st.messages.len(), 6, "nothing posted meanwhile"));

    // Finished at start: the plan applied again, the cursor moved (twice: once only).
    let paused = second.pause();
    apply::files(&state.path().join("sessions"), &plan).unwrap();
    let once = move_cursor(state.path(), "main", &plan.rewrite()).unwrap();
    let twice = move_cursor(state.path(), "main", &plan.rewrite()).unwrap();
    assert_eq!(once, twice);
    paused.reload("main");
    crate::forget::plan::remove(state.path(), "main").unwrap();
    drop(paused);
    settle(&second, &server, "main", want.len());
    server.with(|st| assert_eq!(got(st), want, "each turn once, in order"));
}

/// Honcho took a batch whose cursor was never stored (a crash between the two), then a
/// forget moved every later line: at the next start Honcho's messages name the offsets
/// their records had before the forget, and are still recognised (by `boxmaker_record`:
/// epoch, time and side), so nothing is posted twice.
#[test]
fn messages_honcho_holds_under_offsets_a_forget_moved_are_still_recognised() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut want = logs.owner_turn(0, 1, false);
    let cfg = config(state.path(), &server);
    let first = start(&cfg);
    settle(&first, &server, "main", want.len());
    first.stop();

    for n in 2..4 {
        want.extend(logs.owner_turn(0, n, false));
    }
    let crashing = start_after(&cfg, AfterPost::ExitThread);
    server.wait(|st| st.messages.len() >= want.len());
    crashing.stop();

    let idle = start(&cfg);
    forget_all(state.path(), &idle, "question 1");
    idle.stop();
    want.extend(logs.owner_turn(0, 4, false));
    let again = start(&cfg);
    settle(&again, &server, "main", want.len());
    server.with(|st| assert_eq!(got(st), want, "each turn once, in order"));
}

/// A record reported before an earlier forget of its epoch moved its line is named by
/// Honcho's id under its old place, found by its epoch, side and time.
#[test]
fn a_record_whose_line_an_earlier_forget_moved_is_still_found_in_honcho() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut n = logs.owner_turn(0, 1, false).len();
    let second = logs.owner_turn(0, 2, false);
    n += second.len();
    let cfg = config(state.path(), &server);
    let reporter = start(&cfg);
    settle(&reporter, &server, "main", n);
    reporter.stop();
    let old_offset = offset_of(&logs, "question 2");

    let forget_query = |query: &str| {
        let found = find(&logs.dir, query, proto::DataClass::Private).unwrap();
        let chosen: Vec<_> = found.iter().collect();
        let plan = Plan::build("main", proto::time::now_rfc3339(), &chosen, query);
        apply::run(state.path(), &state.path().join("sessions"), &plan).unwrap();
        crate::forget::plan::remove(state.path(), "main").unwrap();
        plan
    };
    forget_query("question 1");
    let plan = forget_query("question 2");
    let records = plan.reported();
    assert_eq!(records.len(), 1);
    assert_ne!(
        records[0].offset, old_offset,
        "the first forget moved the line"
    );
    let done = forget(&cfg.honcho, "main", &records, Some("question 2")).unwrap();
    let honcho_id = server.with(|st| {
        st.messages
            .iter()
            .find(|m| m.content == "question 2")
            .unwrap()
            .id
            .clone()
    });
    assert_eq!(done.messages_left, vec![honcho_id]);
}
