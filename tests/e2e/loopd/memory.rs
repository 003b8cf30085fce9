//! loopd as memoryd's client: the `recall` tool, `/recall`, and the nudge after a turn,
//! against a fake memoryd that answers frames from a script and records the requests.

use super::Loopd;
use crate::support::standin::{text, tool_calls};
use crate::support::HANG;
use proto::frame::{read_frame, write_frame};
use proto::memory::{render_hits, Hit, MemoryStatus, Request, Response};
use proto::{DataClass, Label};
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::sync::mpsc;

fn hits() -> Vec<Hit> {
    vec![
        Hit {
            session: "main".into(),
            epoch: 0,
            time: "2026-11-30T06:00:00.000Z".into(),
            kind: "session".into(),
            role: "owner".into(),
            label: Label::new(DataClass::Private, false),
            text: "tea at four".into(),
            relevance: proto::memory::FULLY_RELEVANT,
        },
        Hit {
            session: "main".into(),
            epoch: 0,
            time: "2026-11-30T07:00:00.000Z".into(),
            kind: "summary".into(),
            role: "summary".into(),
            label: Label::new(DataClass::Public, true),
            text: "a page about tea".into(),
            relevance: proto::memory::FULLY_RELEVANT,
        },
    ]
}

/// A fake memoryd on `path`: every request is sent to the returned channel.
fn fake_memoryd(path: &Path) -> mpsc::Receiver<Request> {
    let listener = UnixListener::bind(path).unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let Ok(request) = read_frame::<Request>(&mut stream) else {
                continue;
            };
            let response = match &request {
                Request::Recall { .. } => Response::Hits(hits()),
                Request::Nudge { .. } | Request::Status => Response::Status(MemoryStatus {
                    logs: 1,
                    rows: 2,
                    index_bytes: 3,
                    ..MemoryStatus::default()
                }),
                Request::Forget { .. } => Response::Forgot { rows: 0 },
            };
            let _ = write_frame(&mut stream, &response);
            let _ = tx.send(request);
        }
    });
    rx
}

fn next_request(rx: &mpsc::Receiver<Request>, want: impl Fn(&Request) -> bool) -> Request {
    loop {
        let r = rx
            .recv_timeout(HANG)
            .expect("memoryd never got the request");
        if want(&r) {
            return r;
        }
    }
}

#[test]
fn the_recall_tool_returns_rendered_hits_labelled_with_their_join() {
    let l = Loopd::start("");
    let rx = fake_memoryd(&l.fx.memoryd_sock);
    l.llama
        .push(tool_calls(&[("c1", "recall", "{\"query\":\"tea\"}")]));
    l.llama.push(text(&["At four."]));
    // Memory in the turn brought the same hits first, and says so on its own line.
    assert_eq!(
        l.client().ask("when is tea?"),
        [
            "· from memory: 2 passages, session main 2026-11-30",
            "· recall {\"query\":\"tea\"}",
            "At four."
        ]
    );
    // The model's own recall, not the one memory in the turn made with the owner's line.
    let recall = next_request(
        &rx,
        |r| matches!(r, Request::Recall { query, .. } if query == "tea"),
    );
    assert_eq!(
        recall,
        Request::Recall {
            query: "tea".into(),
            max_class: DataClass::Private,
            limit: 8
        }
    );
    let records = l.records("main");
    let result = records.iter().find(|r| r["type"] == "tool_result").unwrap();
    assert_eq!(result["content"], render_hits(&hits()));
    assert_eq!(result["class"], "private");
    assert_eq!(result["untrusted"], true);
    // A turn ends with a nudge naming its session.
    let nudge = next_request(&rx, |r| matches!(r, Request::Nudge { .. }));
    assert_eq!(
        nudge,
        Request::Nudge {
            session: "main".into()
        }
    );
}

#[test]
fn slash_recall_asks_memoryd_directly_without_the_model() {
    let l = Loopd::start("");
    let _rx = fake_memoryd(&l.fx.memoryd_sock);
    let reply = l.client().ask("/recall tea");
    // Each header is memoryd's rendering, written by loopd itself (docs/channel.md,
    // 'Quoted text').
    assert_eq!(
        reply,
        [
            "memory · session main · 2026-11-30T06:00:00.000Z",
            "the owner said: tea at four",
            "memory-tainted · session main · 2026-11-30T07:00:00.000Z",
            "the assistant said: a page about tea",
        ]
    );
    assert!(l.llama.chats().is_empty());
    let status = l.client().ask("/status").join("\n");
    assert!(status.contains("memoryd: reachable at"), "{status}");
}

#[test]
fn slash_recall_with_memoryd_down_is_an_error() {
    let l = Loopd::start("");
    let mut c = l.client();
    let reply = c.ask("/recall tea");
    assert!(
        reply[0].starts_with("error: memory unavailable: connect "),
        "{reply:?}"
    );
    assert_eq!(c.ask("/recall"), ["error: /recall needs a query"]);
}
