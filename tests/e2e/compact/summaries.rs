//! Background tool summaries (docs/turn.md, 'Tool summaries'): which results, which slot, no
//! tools key, labels copied, never twice, skipped on error, before compaction.

use super::*;
use crate::loopd::Loopd;
use crate::support::standin::{error_json, text, text_with, tool_calls, Reply};
use serde_json::json;

const FETCH: &str = "[tools.http_fetch]\nallow_private = true\n";

/// A turn that fetches the stand-in's own `/health` and answers `done`.
fn fetch_turn(l: &Loopd, usage: (u64, u64, u64)) {
    let args = json!({ "url": format!("{}/health", l.llama.url) }).to_string();
    l.llama.push(tool_calls(&[("c1", "http_fetch", &args)]));
    l.llama.push(text_with(&["done"], usage));
}

#[test]
fn an_http_fetch_result_is_summarised_on_the_background_slot_without_tools() {
    let l = Loopd::start(FETCH);
    fetch_turn(&l, UNDER);
    let tag = format!("{}{}", "<", "tool_call>");
    l.llama.push(text(&[" A health ", &tag, "check. "]));
    let reply = l.client().ask("check the server");
    assert_eq!(reply.last().unwrap(), "done", "{reply:?}");
    let chats = l.llama.wait_chats(3);
    let (turn, summary) = (chats[1].json(), chats[2].json());
    assert_eq!(summary["id_slot"], 1);
    assert!(summary.get("tools").is_none(), "{summary}");
    assert_eq!(summary["chat_template_kwargs"]["enable_thinking"], true);
    assert_eq!(summary["cache_prompt"], true);

    let recs = epoch_records(&l, 0);
    let result = recs.iter().find(|r| r["type"] == "tool_result").unwrap();
    let body = result["content"].as_str().unwrap();
    assert!(body.contains("\"status\":\"ok\""), "{body}");
    // The epoch's prompt (the turn's, with its answer), then summarise.md and the result.
    let mut want = roles(&turn);
    want.push(pair("assistant", "done"));
    want.push(pair("user", &format!("{SUMMARISE}\n\n{body}")));
    assert_eq!(roles(&summary), want);

    assert_eq!(
        epoch_kinds(&l, 0),
        [
            "user",
            "assistant",
            "usage",
            "tool_result",
            "assistant",
            "usage",
            "tool_summary"
        ]
    );
    let s = recs.last().unwrap();
    assert_eq!(s["call"], result["call"]);
    assert_eq!(s["tool_call_id"], "c1");
    // The result is public, but the summary call read the whole epoch, where the owner
    // spoke (private): the summary carries the join (README, "Labels and injection").
    assert_eq!(s["class"], "private");
    assert_eq!(s["untrusted"], true);
    assert_eq!(s["content"], "A health <\u{200D}tool_call>check.");
    assert!(head(&l, 1).is_none(), "a summary is not a compaction");
}

#[test]
fn a_result_is_summarised_once_even_across_a_restart() {
    let mut l = Loopd::start(FETCH);
    fetch_turn(&l, UNDER);
    l.llama.push(text(&["summary"]));
    l.llama.push(text(&["two"]));
    let mut c = l.client();
    c.ask("fetch");
    assert_eq!(answer(c.ask("again")), ["two"]);
    assert_eq!(l.llama.chats().len(), 4, "no second summary request");
    drop(c);
    l.restart();
    l.llama.push(text(&["three"]));
    assert_eq!(l.client().ask("after restart"), ["three"]);
    assert_eq!(l.llama.chats().len(), 5);
    let summaries = epoch_kinds(&l, 0)
        .iter()
        .filter(|k| *k == "tool_summary")
        .count();
    assert_eq!(summaries, 1);
}

#[test]
fn a_result_of_a_tool_not_in_the_list_is_left_alone() {
    let l = Loopd::start(FETCH.to_string().as_str());
    l.llama
        .push(tool_calls(&[("c1", "recall", "{\"query\":\"tea\"}")]));
    l.llama.push(text(&["none"]));
    l.client().ask("remember");
    assert_eq!(l.llama.chats().len(), 2);
    assert!(!epoch_kinds(&l, 0).contains(&"tool_summary".to_string()));
}

#[test]
fn the_list_comes_from_compact_summarise() {
    let l = Loopd::start(&format!("{FETCH}\n[compact]\nsummarise = [\"recall\"]\n"));
    l.llama
        .push(tool_calls(&[("c1", "recall", "{\"query\":\"tea\"}")]));
    l.llama.push(text(&["none"]));
    l.llama.push(text(&["memoryd was down"]));
    l.client().ask("remember");
    let chats = l.llama.wait_chats(3);
    assert_eq!(chats[2].json()["id_slot"], 1);
    assert_eq!(epoch_records(&l, 0).last().unwrap()["type"], "tool_summary");
    // And http_fetch, out of the list now, is not summarised.
    fetch_turn(&l, UNDER);
    l.client().ask("fetch");
    assert_eq!(l.llama.chats().len(), 5);
}

#[test]
fn a_failed_summary_is_logged_and_skipped_and_the_next_turn_tries_again() {
    let l = Loopd::start(FETCH);
    fetch_turn(&l, UNDER);
    l.llama.push(Reply::Status(
        400,
        error_json("invalid_request_error", "not now"),
    ));
    l.llama.push(text(&["two"]));
    l.llama.push(text(&["the summary"]));
    let mut c = l.client();
    let reply = c.ask("fetch");
    assert_eq!(reply.last().unwrap(), "done", "the turn does not fail");
    l.daemon
        .wait_log("tool summary of call 1 (http_fetch) skipped: llama.cpp answered 400: a message of 7 characters");
    assert!(!epoch_kinds(&l, 0).contains(&"tool_summary".to_string()));
    assert_eq!(answer(c.ask("again")), ["two"]);
    let chats = l.llama.wait_chats(5);
    assert_eq!(chats[4].json()["id_slot"], 1);
    assert_eq!(
        epoch_records(&l, 0).last().unwrap()["content"],
        "the summary"
    );
}

#[test]
fn summaries_run_before_compaction_so_the_old_epoch_holds_result_and_summary() {
    let l = Loopd::start(FETCH);
    fetch_turn(&l, OVER);
    l.llama.push(text(&["fetched health"]));
    l.llama.push(text(&["the conversation"]));
    l.client().ask("fetch");
    let chats = l.llama.wait_chats(4);
    assert_eq!(chats[2].json()["id_slot"], 1, "the tool summary first");
    let compaction = chats[3].json();
    assert_eq!(compaction["id_slot"], 0);
    assert!(roles(&compaction).iter().any(|(role, _)| role == "tool"));
    assert_eq!(
        epoch_kinds(&l, 0).last().unwrap(),
        "tool_summary",
        "in the old epoch"
    );
    assert_eq!(head(&l, 1).unwrap()["carry"], "the conversation");
    assert!(epoch_records(&l, 1).is_empty());
}

#[test]
fn summaries_also_run_after_a_turn_that_ended_context_full() {
    let l = Loopd::start(FETCH);
    let args = json!({ "url": format!("{}/health", l.llama.url) }).to_string();
    l.llama.push(tool_calls(&[("c1", "http_fetch", &args)]));
    l.llama.push(crate::support::standin::context_full());
    l.llama.push(text(&["fetched health"]));
    l.llama.push(text(&["summary of it all"]));
    l.llama.push(text(&["answer at last"]));
    let reply = l.client().ask("fetch");
    assert_eq!(reply.last().unwrap(), "answer at last");
    let chats = l.llama.wait_chats(5);
    assert_eq!(chats[2].json()["id_slot"], 1);
    assert_eq!(chats[3].json()["id_slot"], 0);
    assert_eq!(epoch_kinds(&l, 0).last().unwrap(), "tool_summary");
    assert_eq!(head(&l, 1).unwrap()["reason"], "context_full");
}
