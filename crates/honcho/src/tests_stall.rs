//! The reporter against a Honcho whose session set-up stalls (docs/honcho.md, 'Nothing
//! lost, nothing twice'): Honcho locks the session's peer rows before its lock timeout
//! applies, so a create can wait there far longer than any window loopd could pick, while
//! lists answer without it. And what needs no waiting: a start with no post cut short,
//! a connection never made.

use super::test_standin::{config, got, options, settle, was_posting, Expected, Logs};
use super::*;
use standins::honcho::{Standin, HANG};
use std::time::Instant;

/// The stall a second Honcho worker (or any transaction) holding the owner's peer row
/// put on the real server's create.
const STALL: Duration = Duration::from_secs(60);

fn turns(logs: &mut Logs, n: usize) -> Vec<Expected> {
    (0..n).flat_map(|i| logs.owner_turn(0, i, false)).collect()
}

/// Short waits of loopd's own, so the stall is many times longer than all of them.
fn impatient() -> Options {
    Options {
        request_timeout: Duration::from_millis(300),
        ..options(AfterPost::Continue)
    }
}

/// Regression: a post that waited at Honcho's session set-up longer than the request
/// timeout and the commit window was posted again (the list did not show it yet), and
/// both creates committed once the rows were free: every message stored twice, for good.
#[test]
fn a_post_stalled_at_session_setup_past_every_window_is_never_posted_twice() {
    let server = Standin::start();
    server.with(|st| st.hold_setup("main", STALL));
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 2);
    let status = StatusHandle::default();
    let opts = Options {
        status: status.clone(),
        ..impatient()
    };
    let reporter = Reporter::start_with(Arc::new(config(state.path(), &server)), opts).unwrap();
    reporter.poke("main");
    server.wait(|st| st.stalled == 1);
    // The post timed out at loopd; the session is held back, waiting for its answer.
    let h = reporter.wait_for(HANG, |h| h.failures >= 1);
    assert!(h.failures >= 1, "{h:?}");
    let line = status.get().line(Instant::now());
    assert!(
        line.contains("waited") || line.contains("not answered"),
        "{line}"
    );
    // More turns meanwhile wait behind it.
    let mut all = want.clone();
    all.extend(logs.owner_turn(0, 9, false));
    reporter.poke("main");
    server.wait(|st| st.messages.len() >= all.len() && st.creating == 0);
    settle(&reporter, &server, "main", all.len());
    server.with(|st| {
        assert_eq!(st.duplicates(), vec![], "each message once: {:?}", st.seen);
        assert_eq!(got(st), all);
        assert_eq!(
            st.posts().len(),
            2,
            "the stalled batch once, then the new turn"
        );
    });
    assert_eq!(reporter.health().duplicates, 0);
}

/// The same across a restart: the new reporter has no connection to wait on, so it asks
/// Honcho to answer a write through the same session set-up (the fence), which waits
/// behind the stall too, and believes a list only a commit window after that answer.
#[test]
fn a_restart_while_a_post_is_stalled_at_session_setup_does_not_post_it_again() {
    let server = Standin::start();
    server.with(|st| st.hold_setup("main", Duration::from_secs(8)));
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 2);
    let cfg = config(state.path(), &server);
    let first = Reporter::start_with(Arc::new(cfg.clone()), impatient()).unwrap();
    first.poke("main");
    server.wait(|st| st.stalled == 1);
    first.stop();
    let second = Reporter::start_with(Arc::new(cfg), impatient()).unwrap();
    second.poke("main");
    server.wait(|st| st.messages.len() >= want.len() && st.creating == 0);
    settle(&second, &server, "main", want.len());
    server.with(|st| {
        assert_eq!(st.duplicates(), vec![], "each message once: {:?}", st.seen);
        assert_eq!(got(st), want);
        assert!(st.seen.iter().any(|s| s.session), "the fence was asked");
    });
}

/// A record Honcho holds twice anyway is named in the journal and counted on `/status`.
#[test]
fn a_duplicate_found_anyway_is_shown_on_status() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 1);
    let record = format!("main/0/{}/owner", want[0].2);
    server.with(|st| {
        for i in 0..2 {
            st.messages.push(standins::honcho::Stored {
                id: format!("dup{i}"),
                session: "main".into(),
                peer_id: "owner".into(),
                content: want[0].1.clone(),
                created_at: standins::honcho::now_utc(),
                metadata: serde_json::json!({
                    "boxmaker_record": record,
                    "boxmaker_session": "main",
                }),
            });
        }
    });
    was_posting(state.path(), "main");
    let status = StatusHandle::default();
    let opts = Options {
        status: status.clone(),
        ..options(AfterPost::Continue)
    };
    let reporter = Reporter::start_with(Arc::new(config(state.path(), &server)), opts).unwrap();
    settle(&reporter, &server, "main", 3);
    let line = status.get().line(Instant::now());
    assert!(
        line.contains("Honcho holds 1 message more than once"),
        "{line}"
    );
    assert!(!line.contains(&want[0].1), "no text on /status: {line}");
}

/// Regression: every start with turns waiting waited out the whole commit window (20 s)
/// before posting, though no post had been under way.
#[test]
fn a_start_with_turns_waiting_and_no_post_cut_short_posts_at_once() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 1);
    let opts = Options {
        commit_window: HANG * 2,
        ..options(AfterPost::Continue)
    };
    let reporter = Reporter::start_with(Arc::new(config(state.path(), &server)), opts).unwrap();
    settle(&reporter, &server, "main", want.len());
    server.with(|st| {
        assert_eq!(got(st), want);
        assert!(
            !st.seen.iter().any(|s| s.list || s.session),
            "{:?}",
            st.seen
        );
    });
}

/// Regression: a refused connection (nothing can have been created) was treated as a
/// post whose outcome is unknown, so the retry waited out the whole commit window.
#[test]
fn a_refused_connection_is_retried_without_waiting_out_the_commit_window() {
    let mut server = Standin::start();
    server.down();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 1);
    let opts = Options {
        commit_window: HANG * 2,
        ..options(AfterPost::Continue)
    };
    let reporter = Reporter::start_with(Arc::new(config(state.path(), &server)), opts).unwrap();
    reporter.poke("main");
    let h = reporter.wait_for(HANG, |h| h.failures >= 1);
    assert_eq!(h.failures, 1, "{h:?}");
    server.up();
    reporter.retry_now();
    server.wait(|st| st.messages.len() >= want.len());
    server.with(|st| {
        assert_eq!(got(st), want);
        assert!(
            !st.seen.iter().any(|s| s.list || s.session),
            "{:?}",
            st.seen
        );
    });
}
