//! Faults: a 429 waited out for its `retry_after_ms`, a revoked token as its own error.

use super::{owners_room, Driver};
use crate::support::synapse::shared;
use ::matrix::outgoing::{plan, Style};
use ::matrix::{honouring_rate_limits, Call, Error};
use std::time::{Duration, Instant};

#[test]
fn a_rate_limit_is_waited_out_and_every_part_is_sent_once() {
    let Some(syn) = shared() else { return };
    let cast = syn.cast("ratelimit");
    let dir = tempfile::tempdir().unwrap();
    let mut d = Driver::open(syn, &cast.boxmaker, &[&cast.phone], dir.path());
    d.round();
    let room = owners_room(syn, &cast, &mut d);
    // One message a second, no burst: the second of two sent at once is refused.
    syn.limit_messages(&cast.boxmaker, 1, 1);
    // Three replies, one event each.
    let parts: Vec<_> = (0..3)
        .flat_map(|block| plan("main", block, Style::Text, "", &format!("reply {block}")))
        .collect();
    let mut limited = None;
    let mut probes = 0;
    for i in 0..10 {
        probes += 1;
        let p = ::matrix::outgoing::content(Style::Notice, "", &format!("probe {i}"));
        match d.client.send(&room, &format!("bm-probe-{i}"), &p) {
            Ok(_) => {}
            Err(e) => {
                limited = Some(e);
                break;
            }
        }
    }
    match limited {
        Some(Error::LimitExceeded {
            call: Call::Send,
            retry_after: Some(wait),
        }) => assert!(wait <= Duration::from_secs(2), "{wait:?}"),
        other => panic!("a typed rate limit with its wait: {other:?}"),
    }

    let deadline = Instant::now() + super::WITHIN;
    let mut ids = Vec::new();
    let mut refused = 0;
    for p in &parts {
        ids.push(
            honouring_rate_limits(deadline, || {
                let r = d.client.send(&room, &p.txn, &p.content);
                refused += usize::from(matches!(r, Err(Error::LimitExceeded { .. })));
                r
            })
            .unwrap(),
        );
    }
    // Three events at one a second: at least one was refused, waited out and sent.
    assert!(refused >= 1, "after {probes} probes");
    let events = syn.events(&cast.phone, &room);
    for id in &ids {
        assert_eq!(
            events
                .iter()
                .filter(|e| e["event_id"] == id.as_str())
                .count(),
            1
        );
    }
    for p in &parts {
        let copies = events
            .iter()
            .filter(|e| e["content"]["body"] == p.content["body"])
            .count();
        assert_eq!(copies, 1, "no part sent twice");
    }
}

#[test]
fn a_revoked_token_is_the_unknown_token_error_on_every_call() {
    let Some(syn) = shared() else { return };
    let cast = syn.cast("revoked");
    let client = syn.client(&cast.boxmaker);
    let me = client.whoami().unwrap();
    assert_eq!(me.user_id, cast.boxmaker.user_id);
    assert_eq!(
        me.device_id.as_deref(),
        Some(cast.boxmaker.device_id.as_str())
    );
    client.logout().unwrap();
    let whoami = client.whoami();
    assert!(
        matches!(
            whoami,
            Err(Error::UnknownToken {
                call: Call::Whoami,
                ..
            })
        ),
        "{whoami:?}"
    );
    let sync = client.sync(None, Duration::from_secs(1), 10);
    assert!(
        matches!(
            sync,
            Err(Error::UnknownToken {
                call: Call::Sync,
                ..
            })
        ),
        "{sync:?}"
    );
    let e = sync.err().unwrap();
    assert!(!e.retryable(), "retrying a refused token cannot help");
    let shown = e.to_string();
    assert!(!shown.contains(&cast.boxmaker.token), "{shown}");
    assert!(shown.starts_with("matrix sync: "), "{shown}");
}
