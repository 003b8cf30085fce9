//! Compaction at the threshold, the carried summary in the next epoch's
//! prefix, and what a failing or context-full summary call does.

use super::*;
use crate::loopd::Loopd;
use crate::support::standin::{context_full, error_json, text, text_with, tool_calls, Reply};
use serde_json::json;

#[test]
fn a_turn_over_the_threshold_compacts_with_the_models_summary_carried_into_the_next_prefix() {
    let l = Loopd::start("");
    l.llama.push(text_with(&["first answer"], OVER));
    l.llama.push(text(&["We talked about tea."]));
    l.llama.push(text(&["second answer"]));
    let mut c = l.client();
    assert_eq!(answer(c.ask("hello")), ["first answer"]);
    let chats = l.llama.wait_chats(2);
    let (turn, summary) = (chats[0].json(), chats[1].json());

    // The summary call: the epoch's prompt plus compact.md, on the main slot, with the
    // epoch's tools so the prefix llama.cpp cached is the one it reads.
    assert_eq!(summary["id_slot"], 0);
    assert_eq!(summary["tools"], turn["tools"]);
    assert_eq!(
        summary["chat_template_kwargs"],
        turn["chat_template_kwargs"]
    );
    assert_eq!(
        roles(&summary),
        [
            pair("system", SYSTEM),
            pair("user", "hello"),
            pair("assistant", "first answer"),
            pair("user", COMPACT),
        ]
    );

    let h = head(&l, 1).expect("epoch 1 has a head");
    assert_eq!(h["epoch"], 1);
    assert_eq!(h["carry"], "We talked about tea.");
    assert_eq!(
        h["carry_label"],
        // The owner spoke in epoch 0: channel.owner_class, private.
        json!({"class": "private", "untrusted": false})
    );
    assert_eq!(h["reason"], "threshold");
    assert_eq!(h["summary_source"], "model");
    assert_eq!(h["system"], SYSTEM);
    assert_eq!(h["tools"], turn["tools"]);
    assert!(l.session_dir("main").join("epoch-000001.jsonl").exists());
    assert!(epoch_records(&l, 1).is_empty());
    assert_eq!(epoch_kinds(&l, 0), ["user", "assistant", "usage"]);

    assert_eq!(answer(c.ask("and now?")), ["second answer"]);
    let next = l.llama.wait_chats(3)[2].json();
    assert_eq!(
        roles(&next),
        [
            pair("system", SYSTEM),
            pair("user", &carried("We talked about tea.")),
            pair("user", "and now?"),
        ]
    );
    // The carry is not a record, and epoch 1's prompt is not an extension of epoch 0's.
    assert_eq!(epoch_kinds(&l, 1), ["user", "assistant", "usage"]);
    let old = serde_json::to_string(&turn["messages"]).unwrap();
    let new = serde_json::to_string(&next["messages"]).unwrap();
    assert!(!new.starts_with(old.strip_suffix(']').unwrap()), "{new}");
    l.daemon
        .wait_log("compacted (threshold): epoch 0 → 1 (summary from model, 20 chars)");
}

#[test]
fn due_is_at_3482_of_4096_tokens_not_at_3481() {
    let l = Loopd::start("");
    l.llama.push(text_with(&["one"], UNDER));
    l.llama.push(text_with(&["two"], OVER));
    l.llama.push(text(&["summary"]));
    let mut c = l.client();
    c.ask("first");
    assert_eq!(l.llama.chats().len(), 1, "3481 is not due");
    assert!(head(&l, 1).is_none());
    c.ask("second");
    assert_eq!(l.llama.wait_chats(3).len(), 3);
    assert_eq!(head(&l, 1).unwrap()["carry"], "summary");
}

#[test]
fn the_carry_is_neutralised_and_capped_to_summary_chars() {
    let l = Loopd::start("[compact]\nsummary_chars = 16\n");
    let tag = format!("{}{}", "<|im_", "end|>");
    l.llama.push(text_with(&["answer"], OVER));
    l.llama
        .push(text(&["  ", &tag, "The owner likes green tea very much."]));
    l.client().ask("hi");
    l.llama.wait_chats(2);
    let carry = head(&l, 1).unwrap()["carry"].as_str().unwrap().to_string();
    assert_eq!(carry, "<\u{200D}|im_end|>The o");
    assert_eq!(carry.chars().count(), 16);
}

#[test]
fn a_context_full_summary_call_carries_the_owners_messages_newest_last() {
    let l = Loopd::start("");
    l.llama.push(text_with(&["one"], UNDER));
    l.llama
        .push(tool_calls(&[("c1", "recall", "{\"query\":\"x\"}")]));
    l.llama.push(text_with(&["two"], OVER));
    l.llama.push(context_full());
    let mut c = l.client();
    c.ask("first message");
    c.ask("second message");
    l.llama.wait_chats(4);
    let h = head(&l, 1).unwrap();
    assert_eq!(h["carry"], "first message\n\nsecond message");
    assert_eq!(h["summary_source"], "fallback");
    assert_eq!(h["reason"], "threshold");
}

#[test]
fn a_failed_summary_call_leaves_a_note_an_error_line_and_the_next_turn_tries_again() {
    let l = Loopd::start("");
    l.llama.push(text_with(&["one"], OVER));
    l.llama.push(Reply::Status(
        400,
        error_json("invalid_request_error", "the stand-in says no"),
    ));
    l.llama.push(text_with(&["two"], OVER));
    l.llama.push(text(&["now a summary"]));
    let mut c = l.client();
    assert_eq!(answer(c.ask("first")), ["one"], "the turn itself succeeded");
    assert!(head(&l, 1).is_none(), "no new epoch");
    let note = epoch_records(&l, 0).pop().unwrap();
    assert_eq!(note["type"], "note");
    assert!(
        note["text"].as_str().unwrap().starts_with(
            "compaction failed: summary call: llama.cpp answered 400: a message of 20 characters"
        ),
        "{note}"
    );
    l.daemon
        .wait_log("compaction of epoch 0 (threshold) failed: summary call");
    assert_eq!(answer(c.ask("second")), ["two"]);
    l.llama.wait_chats(4);
    assert_eq!(head(&l, 1).unwrap()["carry"], "now a summary");
}

/// Regression: a 500 on the summary call of a compaction loopd started itself was taken
/// for a history the server cannot render and started a new epoch on the fallback; only
/// the owner's `/compact` does that. Here it is a failure like any other: a note, an
/// error line, no new epoch, and the next turn tries again.
#[test]
fn a_server_error_on_the_threshold_summary_is_a_failure_and_the_next_turn_tries_again() {
    let l = Loopd::start("");
    l.llama.push(text_with(&["one"], OVER));
    // Every try of the summary call (`llama.retries` is 2 here).
    for _ in 0..3 {
        l.llama
            .push(Reply::Status(500, error_json("server_error", "boom")));
    }
    l.llama.push(text_with(&["two"], OVER));
    l.llama.push(text(&["now a summary"]));
    let mut c = l.client();
    assert_eq!(answer(c.ask("first")), ["one"], "the turn itself succeeded");
    l.daemon
        .wait_log("compaction of epoch 0 (threshold) failed: summary call");
    assert!(head(&l, 1).is_none(), "no new epoch");
    let note = epoch_records(&l, 0).pop().unwrap();
    assert_eq!(note["type"], "note");
    assert!(
        note["text"].as_str().unwrap().starts_with(
            "compaction failed: summary call: llama.cpp failed 3 times; last: HTTP 500"
        ),
        "{note}"
    );
    assert_eq!(answer(c.ask("second")), ["two"]);
    l.llama.wait_chats(6);
    assert_eq!(head(&l, 1).unwrap()["carry"], "now a summary");
}

#[test]
fn an_empty_summary_is_a_failure_not_an_empty_carry() {
    let l = Loopd::start("");
    l.llama.push(text_with(&["one"], OVER));
    l.llama.push(text(&[" \n "]));
    l.client().ask("first");
    l.llama.wait_chats(2);
    l.daemon.wait_log("the model's answer was empty");
    assert!(head(&l, 1).is_none());
}

#[test]
fn a_changed_system_md_takes_effect_at_the_next_epoch_and_not_before() {
    let l = Loopd::start("");
    l.llama.push(text(&["one"]));
    l.llama.push(text_with(&["two"], OVER));
    l.llama.push(text(&["summary"]));
    l.llama.push(text(&["three"]));
    let mut c = l.client();
    c.ask("first");
    std::fs::write(l.fx.prompts.join("system.md"), "You are a new assistant.").unwrap();
    c.ask("second");
    c.ask("third");
    let chats = l.llama.wait_chats(4);
    assert_eq!(chats[1].json()["messages"][0]["content"], SYSTEM);
    assert_eq!(
        chats[2].json()["messages"][0]["content"],
        SYSTEM,
        "the summary call"
    );
    assert_eq!(
        chats[3].json()["messages"][0]["content"],
        "You are a new assistant."
    );
    assert_eq!(head(&l, 1).unwrap()["system"], "You are a new assistant.");
}

/// Guards the rule that compaction is due by the epoch's last `usage` alone: an epoch
/// whose carried summary leaves its first prompt over the threshold compacts again after
/// that turn, as any due epoch does, with no note declining it.
#[test]
fn an_epoch_over_the_threshold_from_its_first_completion_compacts_again() {
    let l = Loopd::start("");
    l.llama.push(text_with(&["one"], OVER));
    l.llama.push(text(&["a summary"]));
    l.llama.push(text_with(&["two"], OVER));
    l.llama.push(text(&["a second summary"]));
    l.llama.push(text(&["three"]));
    let mut c = l.client();
    c.ask("first");
    assert_eq!(answer(c.ask("second")), ["two"], "the turn goes on");
    assert_eq!(answer(c.ask("third")), ["three"]);
    assert_eq!(l.llama.chats().len(), 5, "two summary calls");
    let h2 = head(&l, 2).expect("epoch 2 started at the threshold");
    assert_eq!(h2["reason"], "threshold");
    assert_eq!(h2["carry"], "a second summary");
    assert!(
        !epoch_kinds(&l, 1).iter().any(|k| *k == "note"),
        "nothing declined"
    );
    assert_eq!(epoch_kinds(&l, 2).first().map(String::as_str), Some("user"));
    // The journal says why every turn now costs a summary, and what to change.
    l.daemon
        .wait_log("from its first completion, so it compacts after every turn");
}

#[test]
fn the_carry_label_is_the_join_of_the_old_epochs_labels() {
    let fx_extra = |root: &std::path::Path| {
        format!(
            "[tools.read_file]\nroots = [{root:?}]\n[[tools.read_file.class]]\nprefix = {:?}\nclass = \"secret\"\n",
            root.join("secret")
        )
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("secret")).unwrap();
    let file = dir.path().join("secret").join("key.txt");
    std::fs::write(&file, "the key is 42").unwrap();
    let l = Loopd::start(&fx_extra(dir.path()));
    let args = json!({ "path": file }).to_string();
    l.llama.push(tool_calls(&[("c1", "read_file", &args)]));
    l.llama.push(text_with(&["read it"], OVER));
    l.llama.push(text(&["a secret summary"]));
    l.client().ask("read my key");
    l.llama.wait_chats(3);
    assert_eq!(
        head(&l, 1).unwrap()["carry_label"],
        json!({"class": "secret", "untrusted": false})
    );
}
