//! The reporter when it cannot know whether Honcho took a batch, against a stand-in that
//! commits a create after its client has gone and answers lists meanwhile (as Honcho
//! does: its list takes no lock); and how a fixed token or a reload ends a backoff.

use super::test_standin::{config, got, options, settle, Expected, Logs, TEST_COMMIT_WINDOW};
use super::*;
use standins::honcho::{Fault, Standin, HANG};
use std::time::Instant;

fn turns(logs: &mut Logs, n: usize) -> Vec<Expected> {
    (0..n).flat_map(|i| logs.owner_turn(0, i, false)).collect()
}

/// Regression: after a post timed out, loopd asked Honcho for its newest message and,
/// seeing an older one (the create had not committed yet), posted the batch again; the
/// create then committed too, and each message was held twice for good.
#[test]
fn a_create_that_commits_after_the_request_timed_out_is_not_posted_again() {
    let server = Standin::start();
    let timeout = Duration::from_millis(300);
    let window = Duration::from_millis(1500);
    // Held past loopd's request timeout, committed well inside the commit window.
    server.with(|st| {
        st.post_faults
            .push_back(Fault::LateCommit(Duration::from_millis(800)))
    });
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 2);
    let opts = Options {
        request_timeout: timeout,
        commit_window: window,
        ..options(AfterPost::Continue)
    };
    let reporter = Reporter::start_with(Arc::new(config(state.path(), &server)), opts).unwrap();
    reporter.poke("main");
    server.wait(|st| st.messages.len() >= want.len() && st.creating == 0);
    settle(&reporter, &server, "main", want.len());
    server.with(|st| {
        assert_eq!(st.duplicates(), vec![], "each message once");
        assert_eq!(got(st), want);
        assert_eq!(
            st.posts().len(),
            1,
            "the batch was posted once: {:?}",
            st.seen
        );
    });
}

/// Regression: a 408 that came after the request timed out (a proxy's timeout, not
/// Honcho's end of the create) was taken as the create's end: loopd listed at once, did
/// not see the batch still to commit, and posted it again. It goes through the fence.
#[test]
fn a_late_408_is_not_taken_as_the_end_of_the_create() {
    let server = Standin::start();
    let timeout = Duration::from_millis(300);
    let window = Duration::from_millis(1500);
    // Answered 408 past loopd's request timeout, committed after that, inside the window.
    server.with(|st| {
        st.post_faults.push_back(Fault::AnswerThenCommit(
            408,
            Duration::from_millis(600),
            Duration::from_millis(1200),
        ))
    });
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 2);
    let opts = Options {
        request_timeout: timeout,
        commit_window: window,
        ..options(AfterPost::Continue)
    };
    let reporter = Reporter::start_with(Arc::new(config(state.path(), &server)), opts).unwrap();
    reporter.poke("main");
    server.wait(|st| st.messages.len() >= want.len() && st.creating == 0);
    settle(&reporter, &server, "main", want.len());
    server.with(|st| {
        assert_eq!(st.duplicates(), vec![], "each message once");
        assert_eq!(got(st), want);
        assert_eq!(st.posts().len(), 1, "posted once: {:?}", st.seen);
    });
}

/// The stand-in lets a list overtake a create, as Honcho does (its list takes no lock):
/// a create held past its client's timeout is not in a list answered meanwhile, and is
/// stored all the same. What the tests above and `tests_stall` guard against.
#[test]
fn the_stand_in_lets_a_list_overtake_a_create_still_to_commit() {
    let server = Standin::start();
    server.with(|st| {
        st.post_faults
            .push_back(Fault::LateCommit(Duration::from_secs(1)))
    });
    let url = format!("{}/v3/workspaces/ws/sessions/main/messages", server.url());
    let impatient = ureq::AgentBuilder::new()
        .timeout(Duration::from_millis(200))
        .build();
    let body = r#"{"messages": [{"content": "hi", "peer_id": "owner"}]}"#;
    assert!(impatient.post(&url).send_string(body).is_err(), "timed out");
    let listed = ureq::post(&format!("{url}/list"))
        .send_string("{}")
        .unwrap()
        .into_string()
        .unwrap();
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed["items"], serde_json::json!([]));
    server.wait(|st| st.messages.len() == 1 && st.creating == 0);
}

/// The same after a `kill -9` mid-post (the thread ends without a cursor), with a fresh
/// reporter started at once while the create is still to commit.
#[test]
fn a_restart_while_a_create_is_still_to_commit_does_not_post_it_again() {
    let server = Standin::start();
    server.with(|st| {
        st.post_faults
            .push_back(Fault::LateCommit(TEST_COMMIT_WINDOW / 2))
    });
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut want = turns(&mut logs, 2);
    let cfg = config(state.path(), &server);
    let opts = Options {
        request_timeout: Duration::from_millis(100),
        ..options(AfterPost::Continue)
    };
    let first = Reporter::start_with(Arc::new(cfg.clone()), opts).unwrap();
    first.poke("main");
    server.wait(|st| st.creating == 1);
    // The first reporter gives up on the post and is stopped: nothing of it is stored.
    first.stop();
    let second = Reporter::start_with(Arc::new(cfg.clone()), options(AfterPost::Continue)).unwrap();
    want.extend(logs.owner_turn(0, 7, false));
    second.poke("main");
    server.wait(|st| st.messages.len() >= want.len() && st.creating == 0);
    settle(&second, &server, "main", want.len());
    server.with(|st| {
        assert_eq!(st.duplicates(), vec![], "each message once");
        assert_eq!(got(st), want);
    });
}

/// A record Honcho holds twice (a create that outlived the commit window) is warned
/// about once, and the batch is not posted a third time.
#[test]
fn a_duplicate_found_anyway_is_warned_about_once_and_not_posted_again() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 1);
    let owner_record = format!("main/0/{}/owner", want[0].2);
    let answer_record = format!("main/0/{}/assistant", want[1].2);
    // A post was cut short: its marker is there, so the start checks with Honcho.
    super::test_standin::was_posting(state.path(), "main");
    server.with(|st| {
        for (i, (peer, content, record)) in [
            ("owner", &want[0].1, &owner_record),
            ("assistant", &want[1].1, &answer_record),
            ("owner", &want[0].1, &owner_record),
        ]
        .into_iter()
        .enumerate()
        {
            st.messages.push(standins::honcho::Stored {
                id: format!("dup{i}"),
                session: "main".into(),
                peer_id: peer.into(),
                content: content.clone(),
                created_at: standins::honcho::now_utc(),
                metadata: serde_json::json!({
                    "boxmaker_record": record,
                    "boxmaker_session": "main",
                }),
            });
        }
    });
    let reporter = Reporter::start_with(
        Arc::new(config(state.path(), &server)),
        options(AfterPost::Continue),
    )
    .unwrap();
    super::test_standin::round(&reporter, "main");
    super::test_standin::round(&reporter, "main");
    assert_eq!(reporter.health().duplicates, 1);
    server.with(|st| {
        assert!(st.posts().is_empty(), "{:?}", st.seen);
        assert_eq!(st.duplicates(), vec![(owner_record.clone(), 2)]);
    });
}

/// Regression: a corrected token file was used only at the next backoff try (up to
/// `MAX_BACKOFF`, 300 s, later).
#[test]
fn a_fixed_token_file_is_used_at_once_not_after_the_backoff() {
    let server = Standin::start();
    server.with(|st| st.tokens = vec![("good".into(), None)]);
    let state = tempfile::tempdir().unwrap();
    let token = state.path().join("token");
    std::fs::write(&token, "expired\n").unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 1);
    let mut cfg = config(state.path(), &server);
    cfg.honcho.token_file = token.clone();
    // A backoff longer than the test waits: only the changed file can end it.
    let opts = Options {
        min_backoff: HANG * 2,
        max_backoff: HANG * 2,
        ..options(AfterPost::Continue)
    };
    let status = opts.status.clone();
    let reporter = Reporter::start_with(Arc::new(cfg.clone()), opts).unwrap();
    reporter.poke("main");
    let h = reporter.wait_for(HANG, |h| h.failures >= 1);
    assert_eq!(h.failures, 1, "{h:?}");
    let line = status.get().line(Instant::now());
    assert!(line.contains("2 messages waiting"), "{line}");
    assert!(line.contains("honcho answered 401"), "{line}");
    std::fs::write(&token, "good\n").unwrap();
    server.wait(|st| st.messages.len() >= want.len());
    server.with(|st| {
        assert_eq!(got(st), want);
        let refusals: Vec<&str> = st
            .seen
            .iter()
            .filter(|s| s.status == 401)
            .map(|s| s.path.as_str())
            .collect();
        assert!(!refusals.is_empty());
    });
}

/// Regression: a reload (SIGHUP) with `[honcho]` unchanged left the reporter in its
/// backoff, so Honcho back up was tried only when the backoff ran out.
#[test]
fn retry_now_ends_the_backoff_of_held_back_sessions() {
    let mut server = Standin::start();
    server.down();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 1);
    let opts = Options {
        min_backoff: HANG * 2,
        max_backoff: HANG * 2,
        ..options(AfterPost::Continue)
    };
    let reporter = Reporter::start_with(Arc::new(config(state.path(), &server)), opts).unwrap();
    reporter.poke("main");
    let h = reporter.wait_for(HANG, |h| h.failures >= 1);
    assert_eq!(h.failures, 1, "{h:?}");
    server.up();
    reporter.retry_now();
    server.wait(|st| st.messages.len() >= want.len());
    server.with(|st| assert_eq!(got(st), want));
}

/// Honcho strips NUL from what it stores: a message holding one is still recognised as
/// held after an answer was lost (by its record key, not its text), and not sent twice.
#[test]
fn a_message_honcho_stored_without_its_nul_is_not_posted_again_after_a_lost_answer() {
    let server = Standin::start();
    server.with(|st| st.post_faults.push_back(Fault::StoreThen(503)));
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    logs.user(0, "a\0b", proto::Origin::Owner);
    logs.assistant(0, Some("fine"), false);
    let reporter = Reporter::start_with(
        Arc::new(config(state.path(), &server)),
        options(AfterPost::Continue),
    )
    .unwrap();
    settle(&reporter, &server, "main", 2);
    server.with(|st| {
        assert_eq!(st.duplicates(), vec![]);
        assert_eq!(st.messages[0].content, "ab", "Honcho strips NUL");
        assert_eq!(st.posts().len(), 1);
    });
}

/// Honcho refuses metadata of more than 100 keys or nested deeper than 5; loopd's three
/// flat keys stay inside both, and a `honcho.url` with a trailing slash still reaches the
/// routes (Honcho would redirect other paths, which loopd does not follow).
#[test]
fn what_loopd_sends_keeps_honchos_metadata_limits_and_a_trailing_slash_in_the_url_is_harmless() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 1);
    let mut cfg = config(state.path(), &server);
    cfg.honcho.url = format!("{}/", server.url());
    let reporter =
        Reporter::start_with(Arc::new(cfg.clone()), options(AfterPost::Continue)).unwrap();
    settle(&reporter, &server, "main", want.len());
    server.with(|st| {
        assert_eq!(got(st), want);
        for m in &st.messages {
            let meta = m.metadata.as_object().unwrap();
            assert!(meta.len() <= standins::honcho::METADATA_MAX_KEYS);
            assert!(meta.values().all(|v| !v.is_object()));
        }
        assert!(st.seen.iter().all(|s| s.status != 307 && s.status != 404));
    });
}
