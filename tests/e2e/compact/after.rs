//! The `.` before the after-turn work (docs/turn.md): a turn's reply block ends as soon as its
//! answer is complete; tool summaries and a threshold compaction run after it, and a line
//! arriving meanwhile first gets a `· ` line saying what it waits for. The stand-in holds
//! the summary's answer behind a gate, so "before" is the stand-in's state, not time.

use super::*;
use crate::support::standin::{text, text_with, Gate, Reply};

#[test]
fn the_dot_comes_before_the_compaction_and_the_next_line_is_told_what_it_waits_for() {
    let l = Loopd::start("");
    let gate = Gate::new();
    l.llama.push(text_with(&["one"], OVER));
    l.llama
        .push(Reply::Held(gate.clone(), Box::new(text(&["the summary"]))));
    l.llama.push(text(&["two"]));
    let mut c = l.client();
    // The whole block, `.` included, while the summary call is still unanswered.
    assert_eq!(c.ask("first"), ["one"]);
    let chats = l.llama.wait_chats(2);
    assert_eq!(chats[1].last(), COMPACT, "the summary call is out");
    let new_head = l.session_dir("main").join("epoch-000001.head.json");
    assert!(!new_head.exists(), "the compaction has not finished");
    c.send("second");
    assert_eq!(c.line(), "· compacting session main: epoch 0 → 1");
    gate.open();
    assert_eq!(c.block(), ["two"]);
    // The waiting line ran in the new epoch, after the compaction.
    let third = &l.llama.wait_chats(3)[2];
    assert_eq!(
        roles(&third.json())[1..],
        [
            pair("user", &carried("the summary")),
            pair("user", "second")
        ]
    );
}

#[test]
fn a_line_on_another_connection_is_told_too_and_a_command_that_needs_no_worker_is_not() {
    let l = Loopd::start("");
    let gate = Gate::new();
    l.llama.push(text_with(&["one"], OVER));
    l.llama
        .push(Reply::Held(gate.clone(), Box::new(text(&["the summary"]))));
    l.llama.push(text(&["two"]));
    let mut c = l.client();
    assert_eq!(c.ask("first"), ["one"]);
    l.llama.wait_chats(2);
    let mut other = l.client();
    // `/session` with no name is answered on the spot: it waits for nothing.
    assert_eq!(other.ask("/session"), ["session main"]);
    other.send("from elsewhere");
    assert_eq!(other.line(), "· compacting session main: epoch 0 → 1");
    gate.open();
    assert_eq!(other.block(), ["two"]);
}

#[test]
fn the_dot_comes_before_the_tool_summaries_and_the_next_line_is_told_what_it_waits_for() {
    let l = Loopd::start("[tools.http_fetch]\nallow_private = true\n");
    let gate = Gate::new();
    let args = serde_json::json!({ "url": format!("{}/health", l.llama.url) }).to_string();
    l.llama.push(crate::support::standin::tool_calls(&[(
        "c1",
        "http_fetch",
        &args,
    )]));
    l.llama.push(text(&["done"]));
    l.llama.push(Reply::Held(
        gate.clone(),
        Box::new(text(&["a health check"])),
    ));
    l.llama.push(text(&["two"]));
    let mut c = l.client();
    let reply = c.ask("check the server");
    assert_eq!(reply.last().unwrap(), "done", "{reply:?}");
    let chats = l.llama.wait_chats(3);
    assert_eq!(
        chats[2].json()["id_slot"],
        1,
        "the summary call is out, on the background slot"
    );
    c.send("next");
    assert_eq!(c.line(), "· summarising 1 tool result of session main");
    gate.open();
    assert_eq!(c.block(), ["two"]);
    let kinds = epoch_kinds(&l, 0);
    assert!(kinds.contains(&"tool_summary".to_string()), "{kinds:?}");
}
