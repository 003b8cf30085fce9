//! The reporter across crashes and restarts, and the shape of what it sends: batches of at
//! most 100, split long texts, the bearer token, a Honcho session shared by two boxmaker
//! sessions.

use super::message::MAX_MESSAGE_CHARS;
use super::test_standin::{config, got, options, round, settle, start, Expected, Logs};
use super::*;
use proto::head::log_file_name;
use proto::Origin;
use standins::honcho::{Fault, Standin, Stored};

fn turns(logs: &mut Logs, n: usize) -> Vec<Expected> {
    (0..n).flat_map(|i| logs.owner_turn(0, i, false)).collect()
}

/// The length of the first line of `main`'s epoch 0 log: where its second record starts.
fn user_line_len(state: &tempfile::TempDir) -> usize {
    let log = state.path().join("sessions/main").join(log_file_name(0));
    std::fs::read_to_string(log).unwrap().find('\n').unwrap() + 1
}

fn post_sizes(server: &Standin) -> Vec<usize> {
    server.with(|st| st.posts().iter().map(|p| p.count).collect())
}

#[test]
fn a_crash_between_post_and_cursor_write_does_not_duplicate() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 150);
    let cfg = config(state.path(), &server);
    let cursor_file = state.path().join("honcho").join("main.cursor");

    // First life: Honcho takes a batch, the process dies before the cursor is stored.
    let first =
        Reporter::start_with(Arc::new(cfg.clone()), options(AfterPost::ExitThread)).unwrap();
    server.wait(|st| st.messages.len() >= 100);
    first.stop();
    assert!(
        !cursor_file.exists(),
        "the crash came before any cursor write"
    );

    // Second life: the same crash one batch later, after the cursor was moved once.
    let second =
        Reporter::start_with(Arc::new(cfg.clone()), options(AfterPost::ExitThread)).unwrap();
    server.wait(|st| st.messages.len() >= 200);
    second.stop();

    let third = start(&cfg);
    settle(&third, &server, "main", want.len());
    server.with(|st| assert_eq!(got(st), want, "each message once, in order"));
    assert_eq!(post_sizes(&server), vec![100, 100, 100]);
    assert_eq!(third.health().posted, 100);
    let log_len = std::fs::metadata(state.path().join("sessions/main").join(log_file_name(0)))
        .unwrap()
        .len();
    let stored = std::fs::read_to_string(&cursor_file).unwrap();
    assert!(
        stored.contains(&format!("\"offset\":{log_len}")),
        "{stored}"
    );
}

#[test]
fn a_lost_answer_after_honcho_stored_the_batch_does_not_duplicate() {
    let server = Standin::start();
    server.with(|st| st.post_faults.push_back(Fault::StoreThen(503)));
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 3);
    let reporter = start(&config(state.path(), &server));
    settle(&reporter, &server, "main", want.len());
    server.with(|st| assert_eq!(got(st), want));
    assert_eq!(post_sizes(&server), vec![6]);
}

#[test]
fn a_clean_restart_posts_nothing_again() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 2);
    let cfg = config(state.path(), &server);
    let first = start(&cfg);
    settle(&first, &server, "main", want.len());
    first.stop();

    let seen = server.with(|st| st.seen.len());
    let second = start(&cfg);
    round(&second, "main");
    server.with(|st| {
        assert_eq!(got(st), want);
        assert_eq!(st.posts().len(), 1);
        assert_eq!(
            st.seen.len(),
            seen,
            "nothing waits, so nothing was in flight: a restart asks nothing"
        );
    });
}

#[test]
fn batches_hold_at_most_100_messages() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 125);
    let reporter = start(&config(state.path(), &server));
    settle(&reporter, &server, "main", want.len());
    server.with(|st| assert_eq!(got(st), want));
    assert_eq!(post_sizes(&server), vec![100, 100, 50]);
}

#[test]
fn a_long_answer_is_split_into_messages_honcho_accepts() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let long = "x".repeat(MAX_MESSAGE_CHARS * 2 + 1);
    let tq = logs.user(0, "write a lot", Origin::Owner);
    let ta = logs.assistant(0, Some(&long), false);
    let reporter = start(&config(state.path(), &server));
    settle(&reporter, &server, "main", 4);
    server.with(|st| {
        let g = got(st);
        assert_eq!(g[0], ("owner".into(), "write a lot".into(), tq));
        let parts: Vec<&str> = g[1..].iter().map(|m| m.1.as_str()).collect();
        assert_eq!(parts.concat(), long);
        assert!(g[1..].iter().all(|m| m.0 == "assistant" && m.2 == ta));
        let ids: Vec<&str> = st.messages[1..]
            .iter()
            .map(|m| m.metadata["boxmaker_id"].as_str().unwrap())
            .collect();
        let at = user_line_len(&state);
        assert_eq!(
            ids,
            [
                format!("main/0/{at}/assistant"),
                format!("main/0/{at}/assistant/1"),
                format!("main/0/{at}/assistant/2"),
            ]
        );
    });
}

#[test]
fn the_bearer_token_comes_from_token_file() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 1);
    let token = state.path().join("honcho.token");
    std::fs::write(&token, "tok-123\n").unwrap();
    let mut cfg = config(state.path(), &server);
    cfg.honcho.token_file = token;
    let reporter = start(&cfg);
    settle(&reporter, &server, "main", want.len());
    server.with(|st| {
        assert!(!st.seen.is_empty());
        for s in &st.seen {
            assert_eq!(s.authorization.as_deref(), Some("Bearer tok-123"));
        }
    });
}

#[test]
fn no_token_file_sends_no_authorization() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 1);
    let reporter = start(&config(state.path(), &server));
    settle(&reporter, &server, "main", want.len());
    server.with(|st| assert!(st.seen.iter().all(|s| s.authorization.is_none())));
}

#[test]
fn two_sessions_sharing_one_honcho_session_are_told_apart_after_a_restart() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut a = Logs::new(state.path(), "a");
    let mut b = Logs::new(state.path(), "b");
    let want_a = turns(&mut a, 2);
    let want_b = turns(&mut b, 2);
    let mut cfg = config(state.path(), &server);
    cfg.honcho.session = "shared".into();
    cfg.honcho.owner_peer = "me".into();
    let first = start(&cfg);
    settle(&first, &server, "a", 8);
    settle(&first, &server, "b", 8);
    first.stop();

    // Honcho's newest message is b's; a's cursor must not be moved by it.
    let more_a = a.owner_turn(0, 9, false);
    let second = start(&cfg);
    settle(&second, &server, "a", 10);
    server.with(|st| {
        assert!(st.messages.iter().all(|m| m.session == "shared"));
        let of = |s: &str| -> Vec<Expected> {
            st.messages
                .iter()
                .filter(|m| m.metadata["boxmaker_session"] == s)
                .map(|m| {
                    let t = super::test_standin::millis(&m.created_at);
                    (m.peer_id.clone(), m.content.clone(), t)
                })
                .collect()
        };
        let owner_peer = |v: Vec<Expected>| -> Vec<Expected> {
            v.into_iter()
                .map(|(p, c, t)| (if p == "owner" { "me".into() } else { p }, c, t))
                .collect()
        };
        assert_eq!(
            of("a"),
            owner_peer([want_a.clone(), more_a.clone()].concat())
        );
        assert_eq!(of("b"), owner_peer(want_b.clone()));
        assert_eq!(st.messages.len(), 10);
    });
}

#[test]
fn an_old_message_with_the_same_id_but_other_text_does_not_skip_turns() {
    let server = Standin::start();
    // Honcho still holds what an earlier install of this session sent.
    server.with(|st| {
        st.messages.push(Stored {
            id: "old1".into(),
            session: "main".into(),
            peer_id: "owner".into(),
            content: "a question from before the logs were started over".into(),
            created_at: "2020-01-01T00:00:00.000Z".into(),
            metadata: serde_json::json!({"boxmaker_id": "main/0/0/owner", "boxmaker_session": "main"}),
        })
    });
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 2);
    let reporter = start(&config(state.path(), &server));
    settle(&reporter, &server, "main", 1 + want.len());
    server.with(|st| assert_eq!(got(st)[1..], want[..]));
}
