//! Regressions found by trying to break loopd's Matrix channel against a real Synapse:
//! each test's comment says what used to go wrong, and the test guards against it.

use super::{said, Boxed};
use crate::matrix::WITHIN;
use crate::support::standin::text;
use crate::support::synapse::matrix_seg;
use serde_json::Value;
use std::time::{Duration, Instant};

/// The room's messages whose content still shows `needle`.
fn shows(b: &Boxed, needle: &str) -> Vec<Value> {
    b.events()
        .into_iter()
        .filter(|e| e["type"] == "m.room.message" && e["content"].to_string().contains(needle))
        .collect()
}

/// Regression (it used to be so): `/forget` redacts only the events of turns whose records held the text
/// (`Found::event`, set from user records). A reminder's text is held by the owner's
/// `/remind` event, loopd's confirmation notice and the unasked reminder delivered to the
/// room (kept in `store.sent` under `inbox N`), none of which is ever redacted: after the
/// removal the phone's room still shows the PIN, though docs/forgetting.md says events loopd sent
/// to or took from a room that hold the text are redacted.
#[test]
fn review_forget_redacts_a_reminders_text_in_the_room() {
    let Some(mut b) = Boxed::start("rv-forget-remind", "") else {
        return;
    };
    // The owner makes boxmaker a moderator, so it may redact the owner's events too.
    b.make_moderator();
    b.say("/remind in 1h call the bank, card PIN 4471");
    b.wait_box("the reminder set", 1);
    b.say("/testclock 3700");
    b.wait("the reminder delivered", |e| {
        e["content"]["formatted_body"]
            .as_str()
            .is_some_and(|f| f.contains("4471"))
    });
    let mut c = b.l.client();
    let list = c.ask("/forget \"4471\"").join("\n");
    assert!(list.contains("4471"), "{list}");
    let answer = c.ask("/forget all").join("\n");
    drop(c);
    let start = Instant::now();
    while !shows(&b, "4471").is_empty() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(
        shows(&b, "4471").is_empty(),
        "after /forget ({answer}) the room still shows the text in {:#?}",
        shows(&b, "4471").iter().map(said).collect::<Vec<_>>()
    );
}

/// Regression (it used to be so): at start the send thread sends what the store holds as soon as it has a
/// token, judging "served" by `position.json`'s told rooms, before the sync thread's
/// first round has read the rooms' members. A stranger who joined while loopd was down
/// receives the reply planned before the crash (and an unasked message due at start
/// would go the same way), ahead of the "stopped" notice.
#[test]
fn review_what_waited_at_a_restart_is_not_sent_to_a_room_a_stranger_joined_meanwhile() {
    let Some(mut b) = Boxed::start("rv-stale-served", "") else {
        return;
    };
    b.restart_with(&[("BOXMAKER_TEST_ABORT_AT", "matrix-reply-planned")]);
    b.l.llama.push(text(&["THE-PLANNED-REPLY"]));
    b.say("what is on my calendar?");
    let status = b.l.daemon.wait_within(WITHIN);
    assert!(!status.success(), "loopd did not abort after planning");
    // While loopd is down, a stranger is invited and joins.
    b.syn
        .invite(&b.cast.phone, &b.room, &b.cast.stranger.user_id);
    b.syn.join(&b.cast.stranger, &b.room);
    b.restart_with(&[]);
    let me = b.cast.boxmaker.user_id.clone();
    b.wait("the notice that boxmaker stopped", |e| {
        e["sender"] == me.as_str() && said(e).1.starts_with("loopd: this room has")
    });
    std::thread::sleep(Duration::from_secs(2));
    let events = b.events();
    let joined = events
        .iter()
        .position(|e| {
            e["type"] == "m.room.member"
                && e["state_key"] == b.cast.stranger.user_id.as_str()
                && e["content"]["membership"] == "join"
        })
        .expect("the stranger's join");
    let leaked: Vec<(String, String)> = events[joined..]
        .iter()
        .filter(|e| e["sender"] == me.as_str() && said(e).1.contains("THE-PLANNED-REPLY"))
        .map(said)
        .collect();
    assert!(
        leaked.is_empty(),
        "sent after a stranger joined the room: {leaked:?}"
    );
}

/// Regression (it used to be so): a gap is read from `/messages` in pages of 50 events bounded at 4 MiB
/// (`MAX_PAGE_BYTES`), sized for 50 events of at most 64 KiB. But the homeserver serves an
/// event with its bundled edit (`unsigned."m.relations"."m.replace"`, the whole edit
/// event), so a page can be twice that. One such page fails the whole round, every time
/// (`TooLarge` has no smaller retry, unlike the sync's `SMALL_TIMELINE`): anyone who can
/// post in any room loopd is in (a stranger in a room loopd stopped serving, which it
/// never leaves) stops loopd from taking any owner's line from any room.
#[test]
fn review_a_stranger_s_large_edited_messages_do_not_stop_the_channel() {
    let Some(mut b) = Boxed::start("rv-big-gap", "") else {
        return;
    };
    let _ = b.l.daemon.child.kill();
    let _ = b.l.daemon.child.wait();
    b.syn
        .invite(&b.cast.phone, &b.room, &b.cast.stranger.user_id);
    b.syn.join(&b.cast.stranger, &b.room);
    let big = "x".repeat(56 * 1024);
    let send = |n: usize, content: Value| {
        let path = format!(
            "/_matrix/client/v3/rooms/{}/send/m.room.message/rv{n}",
            matrix_seg(&b.room)
        );
        let v = b
            .syn
            .as_user(&b.cast.stranger, "PUT", &path, Some(content))
            .unwrap();
        v["event_id"].as_str().unwrap().to_string()
    };
    let originals: Vec<String> = (0..60)
        .map(|i| send(i, serde_json::json!({"msgtype": "m.text", "body": big})))
        .collect();
    for (i, of) in originals.iter().enumerate() {
        send(
            1000 + i,
            serde_json::json!({
                "msgtype": "m.text",
                "body": "* edited",
                "m.new_content": {"msgtype": "m.text", "body": big},
                "m.relates_to": {"rel_type": "m.replace", "event_id": of},
            }),
        );
    }
    let path = format!("/_matrix/client/v3/rooms/{}/leave", matrix_seg(&b.room));
    b.syn
        .as_user(&b.cast.stranger, "POST", &path, Some(serde_json::json!({})))
        .unwrap();
    // The room holds only the owner and boxmaker again; the owner writes.
    b.say("are you there?");
    b.l.llama.push(text(&["yes, here"]));
    b.restart_with(&[]);
    let me = b.cast.boxmaker.user_id.clone();
    b.wait("the answer to the owner's line", |e| {
        e["sender"] == me.as_str() && said(e).1 == "yes, here"
    });
}

/// Regression (it used to be so): an owner's invite to an encrypted room is accepted so that loopd can say,
/// in one notice, that it does not serve it; "it never sends plain text into an encrypted
/// room beyond that notice" (docs/matrix.md). But the room is new to the
/// machine, so it is also set up: boxmaker lacks the power to turn URL previews off
/// there, and sends its previews notice in the clear as well.
#[test]
fn review_an_encrypted_room_gets_one_plaintext_notice_only() {
    let Some(b) = Boxed::start("rv-encrypted", "") else {
        return;
    };
    let v = b
        .syn
        .as_user(
            &b.cast.phone,
            "POST",
            "/_matrix/client/v3/createRoom",
            Some(serde_json::json!({
                "preset": "private_chat",
                "invite": [b.cast.boxmaker.user_id],
                "initial_state": [{"type": "m.room.encryption", "state_key": "",
                                   "content": {"algorithm": "m.megolm.v1.aes-sha2"}}],
            })),
        )
        .unwrap();
    let room = v["room_id"].as_str().unwrap().to_string();
    let me = b.cast.boxmaker.user_id.clone();
    let plain = |b: &Boxed| -> Vec<(String, String)> {
        b.syn
            .events(&b.cast.phone, &room)
            .iter()
            .filter(|e| e["sender"] == me.as_str() && e["type"] == "m.room.message")
            .map(said)
            .collect()
    };
    let start = Instant::now();
    while !plain(&b).iter().any(|(_, body)| body.contains("encrypted")) {
        assert!(
            start.elapsed() < WITHIN,
            "no encrypted notice: {:?}",
            plain(&b)
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    std::thread::sleep(Duration::from_secs(2));
    let sent = plain(&b);
    assert_eq!(
        sent.len(),
        1,
        "plain text sent into an encrypted room: {sent:#?}"
    );
}

/// Regression (it used to be so): the Matrix half of a removal is not crash-safe. The redactions are asked
/// for in memory (`Event::Redact`) only after every plan was carried out and removed;
/// the plan on disk names the log lines, not the Matrix events, and `finish_forgets` at
/// start never asks for redactions. A crash after the logs are rewritten (here at
/// `forget-after-heads`) and before the poll loop saved the redactions in `store.json`
/// leaves the text in the room for good, though docs/forgetting.md says a crash "finishes the
/// removal on the next start".
#[test]
fn review_a_forget_cut_short_by_a_crash_still_redacts_the_room() {
    let Some(mut b) = Boxed::start("rv-forget-crash", "") else {
        return;
    };
    // The owner makes boxmaker a moderator, so it may redact the owner's events too.
    b.make_moderator();
    b.restart_with(&[("BOXMAKER_TEST_ABORT_AT", "forget-after-heads")]);
    b.l.llama.push(text(&["Noted: your PIN is 4471."]));
    b.say("my PIN is 4471");
    b.wait_box("the reply holding the PIN", 1);
    let mut c = b.l.client();
    let list = c.ask("/forget \"4471\"").join("\n");
    assert!(list.contains("4471"), "{list}");
    c.send("/forget all");
    let status = b.l.daemon.wait_within(WITHIN);
    assert!(!status.success(), "loopd did not abort in the removal");
    drop(c);
    b.restart_with(&[]);
    let log =
        std::fs::read_to_string(b.l.fx.state_dir.join("sessions/main/epoch-000000.jsonl")).unwrap();
    assert!(
        !log.contains("4471"),
        "the removal was finished at start: {log}"
    );
    let start = Instant::now();
    while !shows(&b, "4471").is_empty() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(
        shows(&b, "4471").is_empty(),
        "the room still shows the forgotten text after the removal was finished: {:#?}",
        shows(&b, "4471").iter().map(said).collect::<Vec<_>>()
    );
}
