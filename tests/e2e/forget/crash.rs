//! loopd killed at each step of a removal (`BOXMAKER_TEST_ABORT_AT`), then started
//! again: the start finishes the removal from its plan, so the phrase is gone from every
//! session file, no plan is left, every log opens, and nothing else changed.

use super::*;

fn killed_at_then_restarted(point: &str) {
    let (mut l, _m) = start(Some(point));
    tell_read_carry_recall(&l);
    let before = all_records(&l);
    let mut c = l.client();
    let list = c.ask(&format!("/forget {QUERY}")).join("\n");
    assert!(list.contains(PHRASE), "{list}");
    c.send("/forget all");
    assert!(
        !l.daemon.wait().success(),
        "loopd should have aborted at {point}"
    );
    l.daemon
        .wait_log(&format!("test hook: aborting at {point}"));
    l.daemon = Daemon::start("loopd", &l.fx);
    // `/session` is a worker job: its answer comes after the start's recovery.
    l.settle();
    l.daemon.wait_log("finished a forget cut short");
    assert_eq!(loopd_files_holding(&l), Vec::<PathBuf>::new(), "at {point}");
    assert_eq!(walk(&l.fx.state_dir.join("forget")), Vec::<PathBuf>::new());
    only_the_phrase_is_gone(&before, &all_records(&l));
    assert!(!l
        .daemon
        .log_text()
        .to_lowercase()
        .contains(&PHRASE.to_lowercase()));
    // The line that asked, run again (as a room runs a line a crash cut short), is
    // answered with what the start finished, once; the phrase is not in the answer.
    // Regression: it was "nothing listed to forget", as if nothing had happened.
    // Not in a session the removal did not change.
    let mut elsewhere = l.client();
    elsewhere.ask("/session elsewhere");
    let there = elsewhere.ask("/forget all");
    assert!(there[0].starts_with("error: nothing listed"), "{there:?}");
    let again = l.client().ask("/forget all").join("\n");
    assert!(
        again.starts_with("a removal a restart cut short was finished when loopd started:"),
        "{again}"
    );
    assert!(again.contains("session main: "), "{again}");
    assert!(!again.to_lowercase().contains(&PHRASE.to_lowercase()));
    let twice = l.client().ask("/forget all");
    assert!(twice[0].starts_with("error: nothing listed"), "{twice:?}");
    l.llama.push(text(&["Still here."]));
    assert_eq!(l.client().ask("hello again"), ["Still here."]);
}

#[test]
fn a_kill_after_the_plan_is_written_is_finished_at_the_next_start() {
    killed_at_then_restarted("forget-after-plan");
}

#[test]
fn a_kill_after_the_first_log_is_rewritten_is_finished_at_the_next_start() {
    killed_at_then_restarted("forget-after-log");
}

#[test]
fn a_kill_after_the_heads_are_rewritten_is_finished_at_the_next_start() {
    killed_at_then_restarted("forget-after-heads");
}

#[test]
fn a_kill_before_the_plan_is_removed_is_finished_at_the_next_start() {
    killed_at_then_restarted("forget-before-plan-removed");
}
