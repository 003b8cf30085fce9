//! What the reporter does with each kind of refusal: statuses that hold the batch until
//! Honcho takes it (401, 403, 409, 429, a 422 not about one message), a 422 about one
//! message (narrowed to it, the others go through), a server with a lower message limit,
//! names Honcho would refuse, the assistant peer's `observe_me`, and what `/status` is told
//! meanwhile.

use super::client::{CallError, Client};
use super::test_standin::{config, got, options, settle, start, Expected, Logs};
use super::*;
use plumbing::backoff::Backoff;
use proto::Origin;
use serde_json::json;
use standins::honcho::{cl100k_special_tokens, o200k_special_tokens, Fault, Standin, HANG};
use std::time::Instant;

fn turns(logs: &mut Logs, from: usize, n: usize) -> Vec<Expected> {
    (from..from + n)
        .flat_map(|i| logs.owner_turn(0, i, false))
        .collect()
}

/// An owner turn with the given texts.
fn turn(logs: &mut Logs, q: &str, a: &str) -> Vec<Expected> {
    let tq = logs.user(0, q, Origin::Owner);
    let ta = logs.assistant(0, Some(a), false);
    vec![
        ("owner".into(), q.into(), tq),
        ("assistant".into(), a.into(), ta),
    ]
}

/// Regression: 401 was taken as "refused for good" and the batch skipped, so an expired or
/// rotated token lost every turn made until it was fixed.
#[test]
fn a_stretch_of_401s_delays_reports_and_every_turn_made_meanwhile_arrives() {
    let server = Standin::start();
    server.with(|st| st.post_faults.extend([Fault::Status(401); 4]));
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut want = turns(&mut logs, 0, 1);
    let reporter = start(&config(state.path(), &server));
    reporter.poke("main");
    let h = reporter.wait_for(HANG, |h| h.failures >= 1);
    assert!(h.failures >= 1, "{h:?}");
    // Turns made while Honcho refuses.
    want.extend(turns(&mut logs, 1, 2));
    reporter.poke("main");
    settle(&reporter, &server, "main", want.len());
    server.with(|st| {
        assert_eq!(got(st), want, "every turn once, in order");
        let refused = st.posts().iter().filter(|p| p.status == 401).count();
        assert_eq!(refused, 4);
    });
}

/// Regression: 403 and 409 (a creation race in Honcho, gone on the next try) dropped the
/// batch too.
#[test]
fn a_403_and_a_409_hold_the_batch_until_honcho_takes_it() {
    let server = Standin::start();
    server.with(|st| {
        st.post_faults
            .extend([Fault::Status(403), Fault::Status(409), Fault::Status(403)])
    });
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 0, 3);
    let reporter = start(&config(state.path(), &server));
    settle(&reporter, &server, "main", want.len());
    server.with(|st| assert_eq!(got(st), want));
    assert!(reporter.health().failures >= 3, "{:?}", reporter.health());
}

#[test]
fn a_429_with_retry_after_is_waited_out_and_loses_nothing() {
    let server = Standin::start();
    // An hour asked for; the tests' backoff cap (50 ms) bounds it, as MAX_BACKOFF does.
    server.with(|st| {
        st.post_faults
            .extend([Fault::Limited(3600), Fault::Limited(1)])
    });
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 0, 2);
    let reporter = start(&config(state.path(), &server));
    settle(&reporter, &server, "main", want.len());
    server.with(|st| assert_eq!(got(st), want));
}

#[test]
fn the_retry_after_of_an_answer_reaches_the_wait_and_is_capped() {
    let server = Standin::start();
    server.with(|st| st.post_faults.push_back(Fault::Limited(7)));
    let state = tempfile::tempdir().unwrap();
    let client = Client::new(&config(state.path(), &server).honcho);
    let e = client.post("main", "main", &[]).unwrap_err();
    let CallError::Status {
        status,
        retry_after,
        ..
    } = e
    else {
        panic!("{e:?}")
    };
    assert_eq!((status, retry_after), (429, Some(Duration::from_secs(7))));

    let s = Duration::from_secs;
    let mut b = Backoff::new(s(1), s(300));
    assert_eq!(retry_wait(&mut b, Some(s(20)), s(300)), s(20));
    assert_eq!(retry_wait(&mut b, Some(s(3600)), s(300)), s(300));
    assert_eq!(
        retry_wait(&mut b, None, s(300)),
        s(4),
        "the backoff goes on"
    );
    assert_eq!(
        retry_wait(&mut b, Some(s(1)), s(300)),
        s(8),
        "never shorter"
    );
}

/// Regression: a 422 refused the whole batch and all of it was skipped, so one bad message
/// dropped up to 100.
#[test]
fn a_422_for_one_message_lets_the_others_through_and_passes_over_only_that_one() {
    let server = Standin::start();
    server.with(|st| st.refuse_containing = Some("BAD-TEXT".into()));
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut want = turns(&mut logs, 0, 3);
    let bad = turn(&mut logs, "this holds BAD-TEXT", "answer to the bad one");
    want.push(bad[1].clone());
    want.extend(turns(&mut logs, 4, 3));
    let reporter = start(&config(state.path(), &server));
    settle(&reporter, &server, "main", want.len());
    server.with(|st| assert_eq!(got(st), want, "all but the refused message, in order"));

    // The refused message is not sent again; later turns go out after it.
    let refusals = server.with(|st| st.posts().iter().filter(|p| p.status == 422).count());
    want.extend(turns(&mut logs, 7, 1));
    settle(&reporter, &server, "main", want.len());
    server.with(|st| {
        assert_eq!(got(st), want);
        let now = st.posts().iter().filter(|p| p.status == 422).count();
        assert_eq!(now, refusals, "nothing refused again");
    });
}

/// Regression: a message holding one of tiktoken's special tokens (the end-of-text token
/// a question about tokenizers names) was posted as it was; Honcho 3.0.12 counts a
/// message's tokens with tiktoken, which refuses them, and answered 422 at the message,
/// which loopd passed over for good: the turn was never reported. One only the embedding's
/// encoding has (`fim_prefix`) was a 500, retried for ever, holding the session's later
/// turns back. Both are posted broken by an invisible joiner now.
#[test]
fn a_message_holding_a_tokenizer_special_token_is_stored_not_passed_over() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut want = turns(&mut logs, 0, 1);
    let eot = &o200k_special_tokens()[0];
    let fim = &cl100k_special_tokens()[1];
    let q = format!("what does {eot} mean in GPT tokenizers?");
    let a = format!("it ends a text; {fim} opens a fill-in-the-middle prompt");
    let special = turn(&mut logs, &q, &a);
    for (peer, text, time) in special {
        want.push((peer, message::posted_text(&text).into_owned(), time));
    }
    want.extend(turns(&mut logs, 2, 1));
    let reporter = start(&config(state.path(), &server));
    settle(&reporter, &server, "main", want.len());
    server.with(|st| {
        assert_eq!(got(st), want, "every message once, in order");
        assert!(st.seen.iter().all(|s| s.status < 400), "{:?}", st.seen);
        assert!(!st.messages.iter().any(|m| m.content.contains(eot.as_str())));
    });
    let h = reporter.health();
    assert_eq!(h.failures, 0, "{h:?}");
}

/// The stand-in refuses tiktoken's special tokens where Honcho 3.0.12 does: `MessageCreate`
/// counts tokens with `o200k_base` once NUL is stripped (FastAPI's 422 `value_error` at the
/// message), and the create chunks for embedding with `cl100k_base` (a 500, nothing
/// stored). What the test above is run against.
#[test]
fn the_stand_in_refuses_special_tokens_as_honcho_does() {
    let server = Standin::start();
    let url = format!("{}/v3/workspaces/ws/sessions/main/messages", server.url());
    let post = |content: &str| {
        let body = json!({ "messages": [
            { "content": "fine", "peer_id": "owner" },
            { "content": content, "peer_id": "owner" },
        ] });
        match ureq::post(&url).send_string(&body.to_string()) {
            Ok(r) => (r.status(), r.into_string().unwrap()),
            Err(ureq::Error::Status(s, r)) => (s, r.into_string().unwrap()),
            Err(e) => panic!("{e}"),
        }
    };
    let eot = &o200k_special_tokens()[0];
    let hidden = eot.replacen("of", "of\0", 1);
    for content in [format!("a {eot} b"), hidden] {
        let (status, body) = post(&content);
        assert_eq!(status, 422, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["detail"][0]["type"], "value_error", "{body}");
        assert_eq!(
            v["detail"][0]["loc"],
            json!(["body", "messages", 1]),
            "{body}"
        );
    }
    let fim = &cl100k_special_tokens()[1];
    assert!(!o200k_special_tokens().contains(fim));
    assert_eq!(post(&format!("a {fim} b")).0, 500);
    server.with(|st| assert!(st.messages.is_empty(), "nothing stored"));
    let broken = message::posted_text(&format!("a {eot} {fim} b")).into_owned();
    assert_eq!(post(&broken).0, 201);
    server.with(|st| assert_eq!(st.messages.len(), 2));
}

/// A 422 that names no field of a message (Honcho's own `{"detail": "…"}`) is about the
/// request, so passing over "the" message would drop every one after it as well.
#[test]
fn a_422_not_about_one_message_holds_the_batch_instead_of_dropping_it() {
    let server = Standin::start();
    server.with(|st| st.post_faults.extend([Fault::Status(422); 10]));
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 0, 2);
    let reporter = start(&config(state.path(), &server));
    settle(&reporter, &server, "main", want.len());
    server.with(|st| assert_eq!(got(st), want));
}

/// Regression: texts were cut at 25 000 characters whatever the server's
/// `MAX_MESSAGE_SIZE`, so a server set lower refused every long text.
#[test]
fn a_server_with_a_lower_message_limit_gets_long_texts_cut_smaller() {
    let server = Standin::start();
    server.with(|st| st.max_message_size = Some(1000));
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut want = turns(&mut logs, 0, 1);
    let long = "é".repeat(2500);
    let long_turn = turn(&mut logs, "write a lot", &long);
    want.extend(turns(&mut logs, 2, 1));
    let reporter = start(&config(state.path(), &server));
    settle(&reporter, &server, "main", want.len() + 2);
    server.with(|st| {
        let g = got(st);
        assert_eq!(
            g[..3],
            [want[0].clone(), want[1].clone(), long_turn[0].clone()]
        );
        let parts: Vec<&Expected> = g
            .iter()
            .filter(|m| m.0 == "assistant" && m.2 == long_turn[1].2)
            .collect();
        assert!(parts.len() >= 3, "{} parts", parts.len());
        assert!(parts.iter().all(|m| m.1.chars().count() <= 1000));
        let joined: String = parts.iter().map(|m| m.1.as_str()).collect();
        assert_eq!(joined, long);
        assert_eq!(g[g.len() - 2..], want[2..]);
    });
}

/// Regression: names were sent unchecked; Honcho answers a bad workspace or session name
/// with 500 (retried for ever) and a bad peer name with 422.
#[test]
fn a_bad_name_keeps_the_reporter_from_starting_and_says_which_key() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    turns(&mut logs, 0, 1);
    let mut cfg = config(state.path(), &server);
    cfg.honcho.assistant_peer = "my.assistant".into();
    let opts = options(AfterPost::Continue);
    let status = opts.status.clone();
    assert!(Reporter::start_with(Arc::new(cfg.clone()), opts).is_none());
    let line = status.get().line(Instant::now());
    assert!(line.contains("honcho.assistant_peer"), "{line}");
    assert!(line.contains("not reporting"), "{line}");
    server.with(|st| assert!(st.seen.is_empty()));
}

/// Regression: the assistant peer was created by the messages themselves, with Honcho's
/// default `observe_me` (true): the deriver spent model calls on the assistant's words.
#[test]
fn the_assistant_peer_is_set_to_observe_me_false_before_the_first_batch() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 0, 2);
    let reporter = start(&config(state.path(), &server));
    settle(&reporter, &server, "main", want.len());
    server.with(|st| {
        assert_eq!(
            st.peers,
            vec![("assistant".to_string(), json!({ "observe_me": false }))]
        );
        let first_post = st.seen.iter().position(|s| !s.list && !s.peer).unwrap();
        let peer = st.seen.iter().position(|s| s.peer).unwrap();
        assert!(peer < first_post, "{:?}", st.seen);
        assert_eq!(st.seen.iter().filter(|s| s.peer).count(), 1, "set once");
    });
}

/// A token limited to one session may post messages but not change peers: that must not
/// hold reports back, and the set-up is tried again after a batch Honcho took.
#[test]
fn a_refused_peer_setup_does_not_hold_reports_back_and_is_tried_again() {
    let server = Standin::start();
    server.with(|st| st.peer_faults.push_back(Fault::Status(401)));
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 0, 1);
    let reporter = start(&config(state.path(), &server));
    settle(&reporter, &server, "main", want.len());
    server.with(|st| {
        assert_eq!(got(st), want);
        let peers: Vec<u16> = st
            .seen
            .iter()
            .filter(|s| s.peer)
            .map(|s| s.status)
            .collect();
        assert_eq!(peers, [401, 201], "refused before the batch, set after it");
        assert_eq!(st.peers.len(), 1);
    });
}

/// Regression: every retry during a 401 period cost two requests, the peer set-up and
/// then the post; a peer Honcho refused is now tried again only after a batch it took.
#[test]
fn a_retry_while_honcho_refuses_is_one_request() {
    let server = Standin::start();
    server.with(|st| {
        st.peer_faults.push_back(Fault::Status(401));
        st.post_faults.extend([Fault::Status(401); 4]);
    });
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 0, 1);
    let reporter = start(&config(state.path(), &server));
    settle(&reporter, &server, "main", want.len());
    server.with(|st| {
        assert_eq!(got(st), want);
        let kinds: Vec<(bool, u16)> = st
            .seen
            .iter()
            .filter(|s| !s.list)
            .map(|s| (s.peer, s.status))
            .collect();
        assert_eq!(
            kinds,
            [
                (true, 401),
                (false, 401),
                (false, 401),
                (false, 401),
                (false, 401),
                (false, 201),
                (true, 201)
            ],
            "one request per retry: {:?}",
            st.seen
        );
    });
}

#[test]
fn while_reports_are_held_back_status_counts_what_waits_and_since_when() {
    let mut server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut want = turns(&mut logs, 0, 1);
    let reporter = start(&config(state.path(), &server));
    settle(&reporter, &server, "main", want.len());
    let status = reporter.status();
    assert_eq!(status.get(), HonchoStatus::default());

    server.down();
    want.extend(turns(&mut logs, 1, 3));
    let failures = reporter.health().failures;
    reporter.poke("main");
    let h = reporter.wait_for(HANG, |h| h.failures >= failures + 2);
    assert!(h.failures >= failures + 2, "{h:?}");
    let held = status.get();
    assert_eq!(held.backlog, 6, "{held:?}");
    assert!(held.retrying_since.is_some(), "{held:?}");
    assert!(held.last_error.is_some(), "{held:?}");

    server.up();
    settle(&reporter, &server, "main", want.len());
    server.with(|st| assert_eq!(got(st), want));
    assert_eq!(status.get(), HonchoStatus::default());
}

#[test]
fn refusals_of_one_message_are_sorted_by_what_honcho_said() {
    use refused::{sort_rejection, Rejection};
    let too_long = r#"{"detail":[{"type":"string_too_long","loc":["body","messages",0,"content"],"msg":"String should have at most 10000 characters","input":"xxxx"#;
    assert_eq!(
        sort_rejection(422, too_long, 25_000),
        Rejection::TooLong(10_000)
    );
    // A stated limit no shorter than the piece says nothing useful: halve.
    assert_eq!(
        sort_rejection(422, too_long, 9000),
        Rejection::TooLong(4500)
    );
    assert_eq!(sort_rejection(413, "", 2000), Rejection::TooLong(1000));
    assert_eq!(
        sort_rejection(413, "", 300),
        Rejection::Message,
        "too small to cut"
    );
    let field =
        r#"{"detail": [{"type":"datetime_parsing","loc":["body","messages",0,"created_at"]}]}"#;
    assert_eq!(sort_rejection(422, field, 10), Rejection::Message);
    let own = r#"{"detail":"Peer name(s) ['x'] are scopes."}"#;
    assert_eq!(sort_rejection(422, own, 10), Rejection::Request);
}
