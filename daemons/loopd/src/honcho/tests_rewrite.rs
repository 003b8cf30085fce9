//! The reporter across a `/forget` that rewrites a log it has already reported from: every
//! turn goes to Honcho exactly once, the note standing in for a forgotten record is never
//! posted, and nothing after it is skipped, whether the forgotten record's note is longer
//! or shorter than the record (every later line of the epoch moves either way).

use super::moved::move_cursor;
use super::tests::{config, got, settle, start, Expected, Logs};
use super::Reporter;
use crate::forget::find::find;
use crate::forget::{apply, plan::Plan};
use proto::Origin;
use standins::honcho::Standin;

/// Forgets every record holding `query` in `main` as the worker does (`/forget QUERY`,
/// then `/forget all`): the reporter held still from before the plan is written until it
/// is removed, the logs rewritten, the cursor moved and the session reloaded.
fn forget_all(state: &std::path::Path, reporter: &Reporter, query: &str) -> Plan {
    let paused = reporter.pause();
    let dir = state.join("sessions").join("main");
    let found = find(&dir, query).unwrap();
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
