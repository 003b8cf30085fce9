//! `SessionFull` (docs/turn.md, 'Context full'): the turn's prompt does not fit, so the epoch is
//! compacted (reason `context_full`) and the owner's message is asked once more in the
//! new epoch — answered in the same reply block, never lost, never looped.

use super::*;
use crate::loopd::Loopd;
use crate::support::standin::{context_full, error_json, text, Reply};

#[test]
fn context_full_compacts_and_answers_the_message_in_the_new_epoch_in_the_same_reply() {
    let l = Loopd::start("");
    l.llama.push(context_full());
    l.llama.push(text(&["The owner asked a big question."]));
    l.llama.push(text(&["the ", "answer"]));
    let mut c = l.client();
    assert_eq!(answer(c.ask("big question")), ["the answer"]);
    let chats = l.llama.wait_chats(3);
    assert_eq!(chats.len(), 3, "turn, summary, rerun: no more");
    let summary = chats[1].json();
    assert_eq!(summary["id_slot"], 0);
    assert_eq!(
        roles(&summary),
        [
            pair("system", SYSTEM),
            pair("user", "big question"),
            pair("user", COMPACT),
        ]
    );
    assert_eq!(
        roles(&chats[2].json()),
        [
            pair("system", SYSTEM),
            pair("user", &carried("The owner asked a big question.")),
            pair("user", "big question"),
        ]
    );
    let h = head(&l, 1).unwrap();
    assert_eq!(h["reason"], "context_full");
    assert_eq!(h["summary_source"], "model");
    // The first attempt stays in the old epoch; the rerun is the new epoch's first turn.
    assert_eq!(epoch_kinds(&l, 0), ["user"]);
    assert_eq!(epoch_kinds(&l, 1), ["user", "assistant", "usage"]);
    assert_eq!(epoch_records(&l, 1)[0]["content"], "big question");
    assert_eq!(epoch_records(&l, 1)[1]["content"], "the answer");
    // The connection goes on in the new epoch.
    l.llama.push(text(&["fine"]));
    assert_eq!(answer(c.ask("next")), ["fine"]);
    assert_eq!(epoch_kinds(&l, 1).len(), 6);
}

#[test]
fn a_context_full_summary_after_context_full_carries_the_fallback() {
    let l = Loopd::start("");
    l.llama.push(text(&["hello back"]));
    l.llama.push(context_full());
    l.llama.push(context_full());
    l.llama.push(text(&["answered"]));
    let mut c = l.client();
    c.ask("hello");
    assert_eq!(answer(c.ask("too big")), ["answered"]);
    let h = head(&l, 1).unwrap();
    assert_eq!(h["summary_source"], "fallback");
    assert_eq!(h["reason"], "context_full");
    // The unanswered message is the fallback's newest text, and asked again below it.
    assert_eq!(h["carry"], "hello\n\ntoo big");
    assert_eq!(
        roles(&l.llama.wait_chats(4)[3].json())[1..],
        [
            pair("user", &carried("hello\n\ntoo big")),
            pair("user", "too big")
        ]
    );
}

#[test]
fn still_context_full_after_compaction_is_an_error_and_a_note_not_a_loop() {
    let l = Loopd::start("");
    l.llama.push(context_full());
    l.llama.push(text(&["a summary"]));
    l.llama.push(context_full());
    let mut c = l.client();
    let reply = c.ask("enormous");
    assert_eq!(reply.len(), 1, "{reply:?}");
    assert!(
        reply[0].starts_with(
            "error: context full even after compacting epoch 0 into 1 (request (3031 tokens) exceeds"
        ),
        "{reply:?}"
    );
    assert!(
        reply[0].ends_with("the message was not answered"),
        "{reply:?}"
    );
    assert_eq!(l.llama.chats().len(), 3, "one compaction, one rerun");
    assert!(head(&l, 2).is_none());
    assert_eq!(epoch_kinds(&l, 1), ["user", "note"]);
    let note = &epoch_records(&l, 1)[1]["text"];
    assert!(
        note.as_str()
            .unwrap()
            .starts_with("context full even after compaction; the message was not answered"),
        "{note}"
    );
    // A later, smaller message is answered in the new epoch.
    l.llama.push(text(&["small answer"]));
    assert_eq!(answer(c.ask("small")), ["small answer"]);
    assert!(head(&l, 2).is_none());
}

#[test]
fn context_full_with_a_failing_compaction_is_an_error_and_a_note() {
    let l = Loopd::start("");
    l.llama.push(context_full());
    l.llama.push(Reply::Status(
        400,
        error_json("invalid_request_error", "no summary today"),
    ));
    let reply = l.client().ask("enormous");
    assert!(
        reply[0].starts_with("error: context full (request (3031 tokens)"),
        "{reply:?}"
    );
    assert!(
        reply[0].ends_with(
            "and compaction failed: summary call: llama.cpp answered 400: a message of 16 characters (its words are not repeated: they may quote the conversation); the message was not answered"
        ),
        "{reply:?}"
    );
    assert_eq!(l.llama.chats().len(), 2);
    assert!(head(&l, 1).is_none());
    assert_eq!(epoch_kinds(&l, 0), ["user", "note"]);
    l.daemon
        .wait_log("compaction of epoch 0 (context_full) failed");
}
