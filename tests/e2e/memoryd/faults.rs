//! Bad input on the socket (docs/memoryd.md) and awkward queries: each bad frame closes only its
//! own connection with a logged reason, half-frames time out, a crowd is served, and no
//! query text is an error.

use super::*;
use crate::support::HANG;
use proto::frame::{encode, read_frame, MAX_FRAME};
use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;

fn connect(fx: &Fixture) -> UnixStream {
    let s = UnixStream::connect(&fx.memoryd_sock).unwrap();
    s.set_read_timeout(Some(HANG)).unwrap();
    s
}

/// Reads until the server closes the connection, returning what it sent.
fn read_to_close(s: &mut UnixStream) -> Vec<u8> {
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    all
}

fn still_serving(fx: &Fixture) {
    assert!(matches!(
        frames::ask(&fx.memoryd_sock, &Request::Status).unwrap(),
        Response::Status(_)
    ));
}

fn framed(payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

#[test]
fn each_bad_frame_gets_an_error_and_a_close_and_others_are_unaffected() {
    let fx = Fixture::new("");
    let d = Daemon::start("memoryd", &fx);
    let status = encode(&Request::Status).unwrap();
    let mut trailing = status[4..].to_vec();
    trailing.push(0);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "length 0xFFFFFFFF",
            u32::MAX.to_be_bytes().to_vec(),
            "over the",
        ),
        (
            "one byte over 1 MiB",
            (MAX_FRAME + 1).to_be_bytes().to_vec(),
            "over the",
        ),
        (
            "garbage payload",
            framed(&[b'b', b'x', 0, 2, 0xde, 0xad, 0xbe, 0xef, 9, 9, 9]),
            "malformed",
        ),
        (
            "a frame of a release before versions",
            framed(&[0xde, 0xad, 0xbe, 0xef, 9, 9, 9]),
            "wire version 1",
        ),
        ("trailing bytes", framed(&trailing), "trailing bytes"),
        // Regression: an empty frame was answered "the peer speaks wire version 1".
        ("a zero-length frame", framed(&[]), "empty frame"),
    ];
    // A client mid-conversation on another connection must not notice any of it.
    let mut bystander = connect(&fx);
    for (what, bytes, reason) in cases {
        let mut s = connect(&fx);
        s.write_all(&bytes).unwrap();
        let answer: Response = read_frame(&mut s).unwrap();
        match answer {
            Response::Error { message } => assert!(message.contains(reason), "{what}: {message}"),
            other => panic!("{what}: {other:?}"),
        }
        assert!(
            read_to_close(&mut s).is_empty(),
            "{what}: closed after the error"
        );
        d.wait_log(reason);
        still_serving(&fx);
        bystander.write_all(&status).unwrap();
        let r: Response = read_frame(&mut bystander).unwrap();
        assert!(matches!(r, Response::Status(_)), "{what}: {r:?}");
    }
}

#[test]
fn a_half_frame_then_end_of_input_is_closed_with_a_logged_reason() {
    let fx = Fixture::new("");
    let d = Daemon::start("memoryd", &fx);
    let mut s = connect(&fx);
    let status = encode(&Request::Status).unwrap();
    s.write_all(&status[..3]).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    assert!(read_to_close(&mut s).is_empty());
    d.wait_log("closed in the middle of a frame");
    still_serving(&fx);
}

#[test]
fn fifty_hanging_half_frames_time_out_while_others_are_served() {
    let fx = Fixture::new("");
    let mut cmd = Daemon::command("memoryd", &fx);
    cmd.env("BOXMAKER_MEMORYD_PARTIAL_TIMEOUT_MS", "200");
    let mut d = Daemon::spawn(cmd, &fx);
    d.ready();
    let status = encode(&Request::Status).unwrap();
    let mut hanging: Vec<UnixStream> = (0..50)
        .map(|i| {
            let mut s = connect(&fx);
            // Half a header for some, a header and half a payload for the rest.
            let cut = if i % 2 == 0 { 2 } else { status.len() - 1 };
            s.write_all(&status[..cut]).unwrap();
            s
        })
        .collect();
    still_serving(&fx);
    for s in &mut hanging {
        match read_frame::<Response>(s) {
            Ok(Response::Error { message }) => {
                assert!(message.contains("did not arrive whole"), "{message}")
            }
            other => panic!("a timed-out half frame got {other:?}"),
        }
        assert!(read_to_close(s).is_empty());
    }
    d.wait_log("did not arrive whole");
    still_serving(&fx);
}

#[test]
fn two_hundred_clients_at_once_are_all_answered() {
    let fx = Fixture::new("");
    Epoch::start(&fx, "main").add(&user("crowded market"));
    let _d = Daemon::start("memoryd", &fx);
    let request = encode(&Request::Recall {
        query: "market".into(),
        max_class: DataClass::Private,
        limit: 5,
    })
    .unwrap();
    let mut clients: Vec<UnixStream> = (0..200).map(|_| connect(&fx)).collect();
    for c in &mut clients {
        c.write_all(&request).unwrap();
    }
    for c in &mut clients {
        match read_frame::<Response>(c).unwrap() {
            Response::Hits(hits) => assert_eq!(hits.len(), 1),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn awkward_queries_are_answered_never_refused() {
    let fx = Fixture::new("");
    Epoch::start(&fx, "main")
        .add(&user("don't forget the multi-agent demo"))
        .add(&assistant("NEAR the end, a star * appears"));
    let _d = Daemon::start("memoryd", &fx);
    // "don't" alone is a stop word (docs/memoryd.md): nothing to search for.
    assert!(recall(&fx, "don't").is_empty());
    assert_eq!(recall(&fx, "don't forget").len(), 1);
    assert_eq!(recall(&fx, "multi-agent").len(), 1);
    let big = "kettle ".repeat(100 * 1024 / 7);
    for q in [
        "\"",
        "NEAR(",
        "*",
        "",
        "   ",
        "OR",
        "demo AND",
        "(demo",
        "demo:",
        big.as_str(),
    ] {
        let request = Request::Recall {
            query: q.into(),
            max_class: DataClass::Private,
            limit: 10,
        };
        let answer = frames::ask(&fx.memoryd_sock, &request).unwrap();
        assert!(matches!(answer, Response::Hits(_)), "{:.40}: {answer:?}", q);
    }
    assert!(recall(&fx, "").is_empty());
    assert!(recall(&fx, "*").is_empty());
    // A limit past MAX_HITS is capped, not refused.
    let answer = frames::ask(
        &fx.memoryd_sock,
        &Request::Recall {
            query: "demo".into(),
            max_class: DataClass::Private,
            limit: u32::MAX,
        },
    )
    .unwrap();
    assert!(
        matches!(answer, Response::Hits(ref h) if h.len() == 1),
        "{answer:?}"
    );
}

#[test]
fn hits_that_would_overflow_a_frame_are_trimmed_to_fit() {
    let fx = Fixture::new("");
    let epoch = Epoch::start(&fx, "main");
    // Fifty hits of 100 KiB each are five frames' worth.
    let long = format!("wombat {}", "x".repeat(100 * 1024));
    for _ in 0..50 {
        epoch.add(&assistant(&long));
    }
    let _d = Daemon::start("memoryd", &fx);
    let hits = recall(&fx, "wombat");
    assert!(!hits.is_empty() && hits.len() < 50, "{}", hits.len());
}
