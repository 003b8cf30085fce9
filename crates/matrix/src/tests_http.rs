//! The client's failures as the library's one error, against a homeserver played on a
//! loopback socket: a refused token, a rate limit, a refusal, silence, an answer too
//! large or not JSON. Nothing an answer says reaches an error's text.

use crate::error::{Call, Error};
use crate::Client;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

/// A server that answers one request with `status` and `body` (and `headers`), or
/// holds the connection without answering when `status` is 0. Returns its url.
fn answer_once(status: u16, headers: &str, body: Vec<u8>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let headers = headers.to_string();
    std::thread::spawn(move || {
        let Ok((mut s, _)) = l.accept() else { return };
        let mut buf = [0u8; 4096];
        let _ = s.read(&mut buf);
        if status == 0 {
            // Hold the connection open, unanswered, until the client gives up.
            let _ = s.read(&mut buf);
            return;
        }
        let head = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let _ = s.write_all(head.as_bytes());
        let _ = s.write_all(&body);
    });
    url
}

fn whoami(status: u16, headers: &str, body: &str) -> Error {
    let url = answer_once(status, headers, body.as_bytes().to_vec());
    Client::new(&url, "@box:example.org", "secret-token")
        .with_deadline(Duration::from_millis(500))
        .whoami()
        .err()
        .unwrap()
}

#[test]
fn a_refused_token_is_its_own_error_and_not_worth_retrying() {
    let e = whoami(
        401,
        "",
        r#"{"errcode":"M_UNKNOWN_TOKEN","error":"Invalid access token passed.","soft_logout":true}"#,
    );
    assert_eq!(
        e,
        Error::UnknownToken {
            call: Call::Whoami,
            soft_logout: true
        }
    );
    assert!(!e.retryable());
    assert!(!e.to_string().contains("secret-token"));
}

#[test]
fn a_rate_limit_carries_its_wait_bounded() {
    let e = whoami(
        429,
        "",
        r#"{"errcode":"M_LIMIT_EXCEEDED","error":"Too Many Requests","retry_after_ms":881}"#,
    );
    assert_eq!(
        e,
        Error::LimitExceeded {
            call: Call::Whoami,
            retry_after: Some(Duration::from_millis(881))
        }
    );
    // A wait of a day is believed up to the bound; a bare 429 with Retry-After in seconds
    // is a rate limit too.
    let e = whoami(
        429,
        "",
        r#"{"errcode":"M_LIMIT_EXCEEDED","retry_after_ms":86400000}"#,
    );
    assert!(
        matches!(e, Error::LimitExceeded { retry_after: Some(d), .. } if d == crate::MAX_RETRY_AFTER)
    );
    let e = whoami(429, "Retry-After: 3\r\n", "");
    assert!(
        matches!(e, Error::LimitExceeded { retry_after: Some(d), .. } if d == Duration::from_secs(3))
    );
}

#[test]
fn an_error_body_is_named_by_its_errcode_and_length_never_its_text() {
    let body = r#"{"errcode":"M_TOO_LARGE","error":"my PIN is 4471"}"#;
    let e = whoami(413, "", body);
    let shown = e.to_string();
    assert!(!shown.contains("4471"), "{shown}");
    assert!(shown.contains("M_TOO_LARGE"), "{shown}");
    assert!(shown.contains(&format!("{} bytes", body.len())), "{shown}");
    // An errcode that is not a protocol word is not kept.
    let e = whoami(400, "", r#"{"errcode":"my PIN is 4471"}"#);
    assert!(matches!(e, Error::Status { errcode: None, .. }), "{e:?}");
    let e = whoami(403, "", r#"{"errcode":"M_FORBIDDEN","error":"x"}"#);
    assert_eq!(e, Error::Forbidden { call: Call::Whoami });
    assert!(!e.outcome_unknown());
    let e = whoami(502, "", "<html>bad gateway</html>");
    assert!(e.outcome_unknown() && e.retryable(), "{e:?}");
}

#[test]
fn silence_is_a_timeout_within_the_deadline() {
    let e = whoami(0, "", "");
    assert!(
        matches!(
            e,
            Error::Timeout {
                call: Call::Whoami,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.outcome_unknown());
}

#[test]
fn an_answer_over_its_bound_is_too_large_and_one_not_json_is_malformed() {
    let big = vec![b' '; crate::client::MAX_SMALL_BYTES as usize + 10];
    let url = answer_once(200, "", big);
    let e = Client::new(&url, "@box:example.org", "t")
        .whoami()
        .err()
        .unwrap();
    assert_eq!(
        e,
        Error::TooLarge {
            call: Call::Whoami,
            limit: crate::client::MAX_SMALL_BYTES
        }
    );
    let e = whoami(200, "", r#"{"user_id": "my PIN is 4471""#);
    assert!(
        matches!(
            e,
            Error::Malformed {
                why: "cut short",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(!e.to_string().contains("4471"));
    let e = whoami(200, "", r#"{"user_id": 4471}"#);
    assert!(
        matches!(
            e,
            Error::Malformed {
                why: "no user_id",
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn nothing_listening_is_a_transport_error() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    drop(l);
    let e = Client::new(&url, "@box:example.org", "t")
        .whoami()
        .err()
        .unwrap();
    assert!(
        matches!(
            e,
            Error::Transport {
                call: Call::Whoami,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.outcome_unknown());
}

#[test]
fn a_token_file_holds_one_token_on_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("token");
    std::fs::write(&p, "syt_abc_123\n").unwrap();
    assert_eq!(crate::read_token(&p).unwrap(), "syt_abc_123");
    for bad in ["", "  \n", "two tokens\n"] {
        std::fs::write(&p, bad).unwrap();
        let e = crate::read_token(&p).err().unwrap();
        assert!(matches!(e, Error::TokenFile { .. }), "{bad:?}");
        assert!(
            !e.to_string().contains("tokens"),
            "the content is not shown"
        );
    }
    std::fs::write(&p, "x".repeat(5000)).unwrap();
    assert!(crate::read_token(&p).is_err());
}

/// A sync answer over its bound is asked again at once with a timeline of one event a
/// room, so the channel never fails the same way for ever.
#[test]
fn a_sync_too_large_is_asked_again_with_a_timeline_of_one() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        let mut asked = Vec::new();
        for big in [true, false] {
            let Ok((mut s, _)) = l.accept() else { break };
            let mut buf = vec![0u8; 16384];
            let n = s.read(&mut buf).unwrap_or(0);
            asked.push(String::from_utf8_lossy(&buf[..n]).into_owned());
            let body = if big {
                vec![b' '; crate::client::MAX_SYNC_BYTES as usize + 1]
            } else {
                br#"{"next_batch": "s2"}"#.to_vec()
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(&body);
        }
        asked
    });
    let client = Client::new(&url, "@box:example.org", "t");
    let sync = crate::round::bounded_sync(&client, Some("s1"), Duration::from_millis(10)).unwrap();
    assert_eq!(sync.next_batch, "s2");
    let asked = server.join().unwrap();
    // The filter's timeline limit, as the request line carries it (percent-encoded JSON).
    assert!(asked[0].contains("%22limit%22%3A50"), "{}", asked[0]);
    assert!(asked[1].contains("%22limit%22%3A1%2C"), "{}", asked[1]);
}

/// loopd will sync on one thread and send on others through one client.
#[test]
fn a_client_can_be_shared_between_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<Client>();
    shared::<crate::Machine>();
}

/// A `429` whose `retry_after_ms` is `0` (or a `Retry-After: 0` from a proxy) is waited
/// out for `MIN_RETRY` all the same, not asked again at once in a tight loop until the
/// deadline against a homeserver that asks loopd to slow down.
#[test]
fn review_a_rate_limit_of_zero_ms_is_not_a_tight_request_loop() {
    let calls = std::cell::Cell::new(0u32);
    let deadline = std::time::Instant::now() + Duration::from_millis(300);
    let r: Result<(), Error> = crate::honouring_rate_limits(deadline, || {
        calls.set(calls.get() + 1);
        Err(Error::LimitExceeded {
            call: Call::Send,
            retry_after: Some(Duration::ZERO),
        })
    });
    assert!(r.is_err());
    assert!(
        calls.get() <= 5,
        "{} requests within 300 ms against a homeserver that said 429",
        calls.get()
    );
}

/// A gap's page over its bound (a homeserver bundles each event's latest edit with it) is
/// asked again with half as many events; an event too large even alone ends that room's
/// gap, reported as cut, and the round goes on. A stranger's text is not kept.
#[test]
fn a_gap_page_too_large_is_asked_again_smaller_and_never_fails_the_round() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        let mut asked = Vec::new();
        while let Ok((mut s, _)) = l.accept() {
            let mut buf = vec![0u8; 16384];
            let n = s.read(&mut buf).unwrap_or(0);
            let line = String::from_utf8_lossy(&buf[..n]).into_owned();
            let first = line.lines().next().unwrap_or("").to_string();
            let body = if first.contains("limit=50") || first.contains("from=e1") {
                vec![b' '; crate::client::MAX_PAGE_BYTES as usize + 1]
            } else {
                serde_json::json!({"end": "e1", "chunk": [
                    {"event_id": "$o", "sender": "@owner:example.org", "type": "m.room.message",
                     "content": {"msgtype": "m.text", "body": "mine"}},
                    {"event_id": "$s", "sender": "@eve:example.org", "type": "m.room.message",
                     "content": {"msgtype": "m.text", "body": "spam"}},
                ]})
                .to_string()
                .into_bytes()
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(&body);
            let done = first.contains("from=e1") && first.contains("limit=1&");
            asked.push(first);
            if done {
                break;
            }
        }
        asked
    });
    let client = Client::new(&url, "@box:example.org", "t");
    let needs = crate::Needs {
        gaps: vec![crate::Gap {
            room: "!r:example.org".into(),
            from: "p0".into(),
            to: "s1".into(),
        }],
        owners: ["@owner:example.org".to_string()].into(),
        ..crate::Needs::default()
    };
    let filled = crate::read_needs(&client, &needs).unwrap();
    let asked = server.join().unwrap();
    let limits: Vec<&str> = asked
        .iter()
        .map(|a| a.split("limit=").nth(1).unwrap().split('&').next().unwrap())
        .collect();
    assert_eq!(limits, ["50", "25", "25", "12", "6", "3", "1"]);
    assert_eq!(filled.cut, vec!["!r:example.org".to_string()]);
    let events = &filled.extra.gaps["!r:example.org"];
    let bodies: Vec<(&str, &crate::event::Kind)> = events
        .iter()
        .map(|e| (e.sender.as_str(), &e.kind))
        .collect();
    assert_eq!(
        bodies,
        [
            (
                "@eve:example.org",
                &crate::event::Kind::Text {
                    body: String::new()
                }
            ),
            (
                "@owner:example.org",
                &crate::event::Kind::Text {
                    body: "mine".into()
                }
            ),
        ]
    );
}

/// Rate limits in a row that name no wait at all are waited out all the same, and longer
/// each time.
#[test]
fn rate_limits_of_zero_ms_in_a_row_wait_longer_each_time() {
    let mut at = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_millis(1300);
    let _: Result<(), Error> = crate::honouring_rate_limits(deadline, || {
        at.push(std::time::Instant::now());
        Err(Error::LimitExceeded {
            call: Call::Send,
            retry_after: Some(Duration::ZERO),
        })
    });
    let gaps: Vec<Duration> = at.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(gaps.len(), 2, "{gaps:?}");
    assert!(gaps[0] >= crate::client::MIN_RETRY, "{gaps:?}");
    assert!(gaps[1] >= 2 * crate::client::MIN_RETRY, "{gaps:?}");
}
