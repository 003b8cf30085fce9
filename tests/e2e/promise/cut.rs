//! An answer the server cut at its token limit: logged with `cut: true`, its calls never
//! run, the owner told, and the session never wedged by what it holds.

use super::epoch_records;
use crate::loopd::{messages, write_session, Loopd};
use crate::support::standin::{length_cut, text, Reply};
use serde_json::json;

#[test]
fn a_call_cut_mid_arguments_is_logged_cut_never_run_and_the_next_line_is_answered() {
    let l = Loopd::start("");
    let mut c = l.client();
    l.llama.push(length_cut(
        &[],
        &[("c1", "read_file", "{\"path\": \"/home/ow")],
        64,
    ));
    let reply = c.ask("read my notes");
    assert_eq!(
        reply,
        ["· the answer was cut at 64 tokens: the server's token limit; its tool call was not run"]
    );
    let records = epoch_records(&l, "main", 0);
    let answer = records.iter().find(|r| r["type"] == "assistant").unwrap();
    assert_eq!(answer["cut"], true);
    assert!(
        records.iter().all(|r| r["type"] != "tool_result"),
        "{records:?}"
    );
    // The next line is answered, and the cut call is not in what the server is sent.
    l.llama.push(text(&["Here."]));
    assert_eq!(c.ask("hello again"), ["Here."]);
    let sent = messages(&l.llama.chats().last().unwrap().json());
    assert!(
        sent.iter().all(|m| m.get("tool_calls").is_none()),
        "{sent:?}"
    );
}

#[test]
fn a_plain_answer_cut_at_the_limit_says_so() {
    let l = Loopd::start("");
    l.llama.push(length_cut(&["It was a dark and"], &[], 1024));
    let reply = l.client().ask("tell me a story");
    assert_eq!(
        reply,
        [
            "It was a dark and",
            "· the answer was cut at 1024 tokens: the server's token limit"
        ]
    );
}

#[test]
fn a_log_written_before_the_rule_with_unparseable_arguments_is_replayed_without_that_call() {
    let l = Loopd::start("");
    let head = json!({"epoch": 0, "started": "2026-11-30T06:00:00.000Z",
        "system": "You are terse.", "tools": [], "carry": null,
        "carry_label": {"class": "public", "untrusted": false},
        "reason": "start", "summary_source": "model"});
    let t = "2026-11-30T06:00:01.000Z";
    write_session(
        &l.fx,
        "old",
        &head,
        &[
            json!({"type": "user", "time": t, "content": "read it", "origin": "owner"}),
            json!({"type": "assistant", "time": t, "content": null,
                "tool_calls": [{"id": "c1", "name": "read_file", "arguments": "{\"path\": \"/x"}]}),
            json!({"type": "tool_result", "time": t, "call": 1, "tool_call_id": "c1",
                "name": "read_file", "content": "error: arguments are not valid json",
                "class": "public", "untrusted": false}),
        ],
    );
    let mut c = l.client();
    c.ask("/session old");
    l.llama.push(text(&["Fine."]));
    assert_eq!(c.ask("go on"), ["Fine."]);
    let sent = messages(&l.llama.chats().last().unwrap().json());
    assert!(
        sent.iter()
            .all(|m| m.get("tool_calls").is_none() && m["role"] != "tool"),
        "{sent:?}"
    );
}

#[test]
fn a_history_the_server_refuses_is_not_retried_and_compact_still_starts_a_fresh_epoch() {
    // The wedge: llama.cpp refuses every request of an epoch whose history it cannot
    // parse. Asking again cannot help; /compact must still work.
    let l = Loopd::start("");
    let refusal = || {
        Reply::Status(
            500,
            json!({"error": {"code": 500, "type": "server_error",
                "message": "Failed to parse tool call arguments as JSON"}})
            .to_string(),
        )
    };
    l.llama.set_fallback(refusal());
    let mut c = l.client();
    let reply = c.ask("hello");
    assert!(reply[0].starts_with("error: "), "{reply:?}");
    assert!(reply[0].contains("/compact"), "{reply:?}");
    // Asked once: retrying a request the server refuses as it is only wastes time.
    assert_eq!(l.llama.chats().len(), 1);
    let compacted = c.ask("/compact");
    assert!(compacted[0].starts_with("compacted: "), "{compacted:?}");
    assert!(compacted[0].contains("fallback"), "{compacted:?}");
}
