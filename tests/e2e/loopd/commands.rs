//! The channel's commands, each answered with exactly one reply block.

use super::Loopd;
use crate::support::standin::text;

#[test]
fn help_compact_unknown_and_empty_lines_each_get_one_block() {
    let l = Loopd::start("");
    let mut c = l.client();
    let help = c.ask("/help");
    assert!(help.iter().any(|l| l.starts_with("/status")), "{help:?}");
    assert_eq!(
        c.ask("/compact"),
        ["error: session main: it is new; there is nothing to compact"]
    );
    assert!(c.ask("/frobnicate")[0].starts_with("error: unknown command /frobnicate"));
    assert!(c.ask("")[0].starts_with("error: empty line"));
    assert_eq!(c.ask("/quit"), ["bye"]);
    assert!(c.try_block().is_none(), "the server closes after /quit");
    assert!(l.llama.chats().is_empty());
}

#[test]
fn status_reports_session_epoch_context_label_and_reachability() {
    let l = Loopd::start("");
    l.llama
        .push(crate::support::standin::text_with(&["hi"], (100, 200, 50)));
    let mut c = l.client();
    c.ask("hello");
    let status = c.ask("/status").join("\n");
    for want in [
        "session: main",
        "epoch: 0 (3 records)",
        "context: 350/4096 tokens (8%)",
        // The owner said "hello": channel.owner_class, private.
        "label: private",
        &format!("llama.cpp: reachable at {}", l.llama.url),
        "memoryd: unreachable: connect ",
    ] {
        assert!(status.contains(want), "no {want:?} in:\n{status}");
    }
}

#[test]
fn status_on_a_fresh_session_says_it_is_new() {
    let l = Loopd::start("");
    let mut c = l.client();
    assert_eq!(
        c.ask("/session fresh"),
        ["session fresh: new; it starts with your first message"]
    );
    let status = c.ask("/status").join("\n");
    assert!(status.contains("session: fresh"), "{status}");
    assert!(status.contains("epoch: 0 (new"), "{status}");
    assert!(
        !l.session_dir("fresh").exists(),
        "nothing is written before a message"
    );
}

#[test]
fn session_switches_this_connection_only_and_validates_the_name() {
    let l = Loopd::start("");
    l.llama.push(text(&["in work"]));
    l.llama.push(text(&["in main"]));
    let mut a = l.client();
    let mut b = l.client();
    assert!(a.ask("/session Bad/Name")[0].starts_with("error: session id"));
    assert_eq!(a.ask("/session"), ["session main"]);
    a.ask("/session work");
    assert_eq!(a.ask("/session"), ["session work"]);
    assert_eq!(a.ask("hi from a"), ["in work"]);
    assert_eq!(b.ask("hi from b"), ["in main"]);
    assert_eq!(l.records("work")[0]["content"], "hi from a");
    assert_eq!(l.records("main")[0]["content"], "hi from b");
}

/// Regression: `/session NAME` to a damaged session answered with the error alone, and
/// the owner, not told the connection stayed where it was, sent the next line to the old
/// session unawares.
#[test]
fn a_switch_to_a_damaged_session_says_where_the_connection_stays() {
    let mut l = Loopd::start("");
    l.llama.push(text(&["in work"]));
    let mut a = l.client();
    a.ask("/session work");
    a.ask("a line in work");
    drop(a);
    let log = l.session_dir("work").join("epoch-000000.jsonl");
    std::fs::write(&log, "{\"type\":\"assistant\"}\n").unwrap();
    l.restart();
    let mut b = l.client();
    let reply = b.ask("/session work");
    assert!(reply[0].starts_with("error: session work: "), "{reply:?}");
    assert!(
        reply[0].ends_with("; this connection stays in session main"),
        "{reply:?}"
    );
    assert_eq!(b.ask("/session"), ["session main"]);
}

#[test]
fn a_status_sent_after_a_message_is_answered_after_its_reply() {
    let l = Loopd::start("");
    let gate = crate::support::standin::Gate::new();
    l.llama.push(crate::support::standin::Reply::Held(
        gate.clone(),
        Box::new(text(&["the answer"])),
    ));
    let mut c = l.client();
    c.send("question");
    c.send("/status");
    c.send("/help");
    l.llama.wait_chats(1);
    gate.open();
    assert_eq!(c.block(), ["the answer"]);
    assert_eq!(c.block()[0], "session: main");
    assert!(c.block()[0].starts_with("Each line you send"));
}
