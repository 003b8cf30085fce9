//! `/compact` (docs/channel.md): a compaction now, reason `manual`, picking up a changed
//! `system.md`, answered with one reply block.

use super::*;
use crate::loopd::Loopd;
use crate::support::standin::{error_json, text, Reply};

#[test]
fn slash_compact_starts_a_new_epoch_with_the_current_system_md() {
    let l = Loopd::start("");
    l.llama.push(text(&["hello back"]));
    l.llama.push(text(&["We said hello."]));
    l.llama.push(text(&["again"]));
    let mut c = l.client();
    c.ask("hello");
    std::fs::write(l.fx.prompts.join("system.md"), "You are brief.").unwrap();
    assert_eq!(
        c.ask("/compact"),
        ["compacted: epoch 0 → 1 (summary from model, 14 chars)"]
    );
    let h = head(&l, 1).unwrap();
    assert_eq!(h["reason"], "manual");
    assert_eq!(h["system"], "You are brief.");
    assert_eq!(h["carry"], "We said hello.");
    let summary = l.llama.wait_chats(2)[1].json();
    assert_eq!(
        summary["messages"][0]["content"], SYSTEM,
        "the old epoch's prompt"
    );
    c.ask("more");
    assert_eq!(
        roles(&l.llama.wait_chats(3)[2].json()),
        [
            pair("system", "You are brief."),
            pair("user", &carried("We said hello.")),
            pair("user", "more"),
        ]
    );
    let status = c.ask("/status").join("\n");
    assert!(status.contains("epoch: 1 (3 records)"), "{status}");
}

#[test]
fn slash_compact_twice_makes_two_epochs() {
    let l = Loopd::start("");
    l.llama.push(text(&["hi"]));
    l.llama.push(text(&["first summary"]));
    l.llama.push(text(&["second summary"]));
    let mut c = l.client();
    c.ask("hello");
    assert!(c.ask("/compact")[0].starts_with("compacted: epoch 0 → 1"));
    assert!(c.ask("/compact")[0].starts_with("compacted: epoch 1 → 2"));
    let second = l.llama.wait_chats(3)[2].json();
    assert_eq!(second["messages"][1]["content"], carried("first summary"));
    assert_eq!(head(&l, 2).unwrap()["carry"], "second summary");
}

#[test]
fn slash_compact_on_a_new_session_says_there_is_nothing_to_compact() {
    let l = Loopd::start("");
    let mut c = l.client();
    assert_eq!(
        c.ask("/compact"),
        ["error: session main: it is new; there is nothing to compact"]
    );
    assert!(l.llama.chats().is_empty());
    assert!(!l.session_dir("main").exists(), "nothing written");
}

#[test]
fn a_failing_slash_compact_is_an_error_and_a_note() {
    let l = Loopd::start("");
    l.llama.push(text(&["hi"]));
    l.llama.push(Reply::Status(
        400,
        error_json("invalid_request_error", "refused"),
    ));
    let mut c = l.client();
    c.ask("hello");
    assert_eq!(
        c.ask("/compact"),
        ["error: compaction failed: summary call: llama.cpp answered 400: a message of 7 characters (its words are not repeated: they may quote the conversation)"]
    );
    assert!(head(&l, 1).is_none());
    assert_eq!(epoch_kinds(&l, 0).last().unwrap(), "note");
    assert!(c.ask("/help")[0].starts_with("Each line"), "still usable");
}

#[test]
fn a_missing_system_md_fails_the_compaction_naming_the_path_and_asks_nothing() {
    let l = Loopd::start("");
    l.llama.push(text(&["hi"]));
    let mut c = l.client();
    c.ask("hello");
    let path = l.fx.prompts.join("system.md");
    std::fs::remove_file(&path).unwrap();
    let reply = c.ask("/compact");
    assert_eq!(
        reply,
        [format!(
            "error: compaction failed: prompt {}: No such file or directory (os error 2)",
            path.display()
        )]
    );
    assert_eq!(l.llama.chats().len(), 1);
}
