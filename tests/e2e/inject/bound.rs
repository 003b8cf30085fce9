//! The once-per-owner-line bound on fetching the owner's URLs while the context is
//! guarded, read from loopd's own records (docs/labels.md, 'While the context is
//! guarded'): a log whose notes were reworded keeps the bound. A heartbeat is the model's
//! turn with no owner line before it, so it meets the records of the owner's last line.

use crate::heartbeat::EVERY;
use crate::loopd::{write_config, write_session, Loopd, N_CTX};
use crate::support::compromised::Collector;
use crate::support::standin::{text, tool_calls, Standin};
use crate::support::{Daemon, Fixture};
use serde_json::json;

/// Regression: the bound was read back from the wording of a `note` loopd wrote after a
/// guarded fetch, so in a log whose note was reworded (or written by a version with other
/// words) the model could fetch the owner's URL again before the owner's next line.
#[test]
fn a_reworded_note_does_not_lift_the_once_per_owner_line_bound() {
    let collector = Collector::start();
    let a = format!("{}/a", collector.url);
    let fx = Fixture::new("");
    let llama = Standin::start(N_CTX);
    // The heartbeat's turn: the model fetches the owner's url once more.
    llama.push(tool_calls(&[(
        "h1",
        "http_fetch",
        &json!({ "url": a }).to_string(),
    )]));
    llama.set_fallback(text(&["HEARTBEAT_OK"]));
    write_config(
        &fx,
        &llama.url,
        "retries = 2",
        "",
        &format!("{EVERY}\n[tools.http_fetch]\nallow_private = true\ntimeout_s = 10\n"),
    );
    let t = "2026-11-30T06:00:00.000Z";
    let head = json!({"epoch": 0, "started": t, "system": "You are a helpful assistant.",
        "tools": [{"type": "function", "function": {"name": "http_fetch", "parameters": {}}}],
        "carry": null, "carry_label": {"class": "public", "untrusted": false},
        "reason": "start", "summary_source": "model"});
    // The owner's line, the model's guarded fetch of its url, the page (untrusted, so the
    // private context is guarded), and the note about the fetch in other words.
    write_session(
        &fx,
        "main",
        &head,
        &[
            json!({"type": "user", "time": t, "content": format!("please read {a}"), "origin": "owner"}),
            json!({"type": "assistant", "time": t, "content": null,
                "tool_calls": [{"id": "c1", "name": "http_fetch", "arguments": json!({ "url": a }).to_string()}]}),
            json!({"type": "tool_result", "time": t, "call": 1, "tool_call_id": "c1",
                "name": "http_fetch", "content": "the page", "class": "public", "untrusted": true}),
            json!({"type": "note", "time": t, "text": format!("the owner's url {a} was fetched under the guard (call 1)")}),
        ],
    );
    let mut daemon = Daemon::spawn(Daemon::command("loopd", &fx), &fx);
    daemon.ready();
    let lp = Loopd { fx, llama, daemon };
    // The beat reached the model; `settle` then waits for the beat's turn to end.
    lp.llama.wait_chats(1);
    lp.settle();

    assert!(
        !collector.seen().iter().any(|p| p == "/a"),
        "fetched twice in one owner line: {:?}",
        collector.seen()
    );
    let records = lp.records("main");
    let call = records
        .iter()
        .find(|r| r["type"] == "tool_result" && r["tool_call_id"] == "h1")
        .unwrap_or_else(|| panic!("the beat's call has no result: {records:?}"))["call"]
        .clone();
    let refused = records
        .iter()
        .find(|r| r["type"] == "refused" && r["call"] == call)
        .unwrap_or_else(|| panic!("call {call} was not refused: {records:?}"));
    assert!(
        refused["reason"]
            .as_str()
            .is_some_and(|r| r.contains("already fetched since their last message (call 1)")),
        "{refused}"
    );
    // Each record is timed as it is written: the log's times never go back.
    let times: Vec<&str> = records.iter().filter_map(|r| r["time"].as_str()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
}
