//! The client's answers read as Honcho gives them, and the pieces they are read with.

use super::*;

#[test]
fn retry_after_is_read_in_seconds_only() {
    assert_eq!(retry_after(" 7 "), Some(Duration::from_secs(7)));
    assert_eq!(retry_after("Wed, 21 Oct 2026 07:28:00 GMT"), None);
}

#[test]
fn only_server_errors_and_silence_leave_the_outcome_unknown() {
    let status = |s| CallError::Status {
        status: s,
        body: String::new(),
        retry_after: None,
    };
    for s in [400, 401, 403, 409, 413, 422, 429] {
        assert!(!status(s).outcome_unknown(), "{s}");
    }
    for s in [408, 500, 502, 503] {
        assert!(status(s).outcome_unknown(), "{s}");
    }
    assert!(CallError::Transport("timed out".into()).outcome_unknown());
    assert!(!CallError::Unsent("connection refused".into()).outcome_unknown());
    let page = CallError::Unconfirmed {
        status: 200,
        why: "an HTML page of 37 bytes".into(),
    };
    assert!(page.outcome_unknown());
}

fn sent(ids: &[&str]) -> Vec<Outgoing> {
    ids.iter()
        .map(|id| Outgoing {
            id: id.to_string(),
            record: format!("{id}/r"),
            peer: "owner".into(),
            content: "secret words".into(),
            created_at: "2026-11-30T04:34:57.000Z".into(),
        })
        .collect()
}

fn answer(status: u16, body: &str) -> ureq::Response {
    ureq::Response::new(status, "X", body).unwrap()
}

fn echoed(ids: &[&str]) -> String {
    let items: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            json!({ "id": format!("n{i}"), "content": "secret words", "peer_id": "owner",
                    "session_id": "main", "workspace_id": "ws", "token_count": 2,
                    "created_at": "2026-11-30T04:34:57.000000Z",
                    "metadata": { "boxmaker_id": id, "boxmaker_record": "r" } })
        })
        .collect();
    Value::Array(items).to_string()
}

/// Only Honcho's 201 with the list of the messages created, one per message sent and
/// in order, says a batch is stored; anything else leaves it unknown, described
/// without quoting it.
#[test]
fn only_a_201_listing_the_messages_sent_counts_as_stored() {
    let batch = sent(&["a", "b"]);
    let ok = echoed(&["a", "b"]);
    assert_eq!(created(answer(201, &ok), "u", &batch, 1 << 20), Ok(()));
    for (status, body) in [
        (200, ok.clone()),
        (202, ok.clone()),
        (201, echoed(&["a"])),
        (201, echoed(&["b", "a"])),
        (201, "<html>Maintenance: secret words</html>".into()),
        (201, String::new()),
        (201, r#"{"detail": "secret words"}"#.into()),
    ] {
        let e = created(answer(status, &body), "u", &batch, 1 << 20).unwrap_err();
        assert!(
            matches!(e, CallError::Unconfirmed { status: s, .. } if s == status),
            "{status} {body}: {e:?}"
        );
        assert!(e.outcome_unknown());
        let shown = e.to_string();
        assert!(!shown.contains("secret"), "{shown}");
        assert!(
            shown.starts_with(&format!("honcho answered {status} with ")),
            "{shown}"
        );
    }
    let e = created(answer(201, &ok), "u", &batch, 64).unwrap_err();
    assert!(e.to_string().contains("more than 64 bytes"), "{e}");
}

/// Regression: a refused batch's body (FastAPI's 422 echoes the messages it refused)
/// was put in loopd's log lines as it came.
#[test]
fn an_error_body_is_shown_by_its_kind_and_length_never_its_text() {
    let body = r#"{"detail":[{"type":"string_too_long","loc":["body","messages",3,"content"],"msg":"String should have at most 25000 characters","input":"my PIN is 4471","ctx":{"max_length":25000}}]}"#;
    let e = CallError::Status {
        status: 422,
        body: body.into(),
        retry_after: None,
    };
    let shown = e.to_string();
    assert!(!shown.contains("4471"), "{shown}");
    assert!(
        shown.contains("string_too_long at body.messages.3.content"),
        "{shown}"
    );
    assert!(shown.contains(&format!("{} bytes", body.len())), "{shown}");
    let plain = body_kind(r#"{"detail":"a message of the server's own"}"#);
    assert_eq!(plain, "a detail message of 29 bytes");
    let odd = body_kind(r#"{"detail":[{"type":"My PIN","loc":["body","4471 secret"]}]}"#);
    assert!(!odd.contains("PIN") && !odd.contains("4471"), "{odd}");
}

#[test]
fn path_segments_are_encoded() {
    assert_eq!(encode("main-1_x"), "main-1_x");
    assert_eq!(encode("a b/c"), "a%20b%2Fc");
}
