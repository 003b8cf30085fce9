//! Rooms: invites from the owner only, a room that gains a stranger, an encrypted room,
//! redaction, typing, URL previews off.

use super::{members, owners_room, Driver, WITHIN};
use crate::support::synapse::{matrix_seg, shared, Account, Synapse};
use ::matrix::decide::{Action, Notice};
use ::matrix::outgoing::{content, redaction_txn, Style};
use ::matrix::Error;
use serde_json::{json, Value};
use std::time::Instant;

fn has(decisions: &[::matrix::Decision], want: impl Fn(&Action) -> bool) -> bool {
    decisions.iter().flat_map(|d| &d.actions).any(want)
}

/// A room the phone made with boxmaker in it and served; the driver past the join.
fn served_room(
    syn: &Synapse,
    test: &str,
) -> (
    crate::support::synapse::Cast,
    Driver,
    String,
    tempfile::TempDir,
) {
    let cast = syn.cast(test);
    let dir = tempfile::tempdir().unwrap();
    let mut d = Driver::open(syn, &cast.boxmaker, &[&cast.phone], dir.path());
    d.round();
    let room = owners_room(syn, &cast, &mut d);
    (cast, d, room, dir)
}

#[test]
fn an_invite_from_an_owner_is_accepted_and_one_from_a_stranger_rejected() {
    let Some(syn) = shared() else { return };
    let cast = syn.cast("invites");
    let dir = tempfile::tempdir().unwrap();
    let mut d = Driver::open(syn, &cast.boxmaker, &[&cast.phone], dir.path());
    d.round();
    let owners_room = syn.create_room(&cast.phone, &[&cast.boxmaker]);
    let strangers_room = syn.create_room(&cast.stranger, &[&cast.boxmaker]);
    let seen = d.until("both invites decided", |_, ds| {
        has(
            ds,
            |a| matches!(a, Action::Accept { room } if *room == owners_room),
        ) && has(
            ds,
            |a| matches!(a, Action::Reject { room } if *room == strangers_room),
        )
    });
    assert!(!has(
        &seen,
        |a| matches!(a, Action::Accept { room } if *room == strangers_room)
    ));
    assert_eq!(
        members(&syn.client(&cast.phone), &owners_room),
        sorted(&[&cast.boxmaker, &cast.phone])
    );
    assert_eq!(
        members(&syn.client(&cast.stranger), &strangers_room),
        sorted(&[&cast.stranger])
    );
    // A crash before the position was saved brings both invites again: done again, each
    // is what it was (Synapse answers a repeated membership with the event it has).
    d.client.join(&owners_room).unwrap();
    d.client.leave(&strangers_room).unwrap();
}

fn sorted(accounts: &[&Account]) -> Vec<String> {
    let mut ids: Vec<String> = accounts.iter().map(|a| a.user_id.clone()).collect();
    ids.sort();
    ids
}

#[test]
fn a_room_that_gains_a_stranger_is_not_served_until_they_leave() {
    let Some(syn) = shared() else { return };
    let (cast, mut d, room, _dir) = served_room(syn, "stranger");
    syn.invite(&cast.phone, &room, &cast.stranger.user_id);
    syn.join(&cast.stranger, &room);
    let stopped = d.until("the stopped notice", |_, ds| {
        has(ds, |a| {
            matches!(
                a,
                Action::Notice {
                    notice: Notice::Stopped { others: 1 },
                    ..
                }
            )
        })
    });
    assert!(stopped
        .iter()
        .all(|d| d.actions.iter().all(|a| !matches!(a, Action::Line { .. }))));
    syn.say(&cast.stranger, &room, "eve's words, never taken");
    syn.say(&cast.phone, &room, "while eve is here");
    let seen = d.until("both messages counted", |_, ds| {
        ds.iter().map(|d| d.strangers).sum::<u64>() == 1
            && ds.iter().map(|d| d.unserved).sum::<u64>() == 1
    });
    assert!(!has(&seen, |a| matches!(a, Action::Line { .. })));
    let path = format!("/_matrix/client/v3/rooms/{}/leave", matrix_seg(&room));
    syn.as_user(&cast.stranger, "POST", &path, Some(json!({})))
        .unwrap();
    syn.say(&cast.phone, &room, "alone again");
    let seen = d.until("served again", |_, ds| {
        has(
            ds,
            |a| matches!(a, Action::Line { body, .. } if body == "alone again"),
        )
    });
    assert!(has(&seen, |a| matches!(
        a,
        Action::Notice {
            notice: Notice::Resumed,
            ..
        }
    )));
    assert_eq!(
        d.taken()
            .iter()
            .map(|t| t.body.as_str())
            .collect::<Vec<_>>(),
        vec!["alone again"]
    );
}

#[test]
fn an_encrypted_room_is_detected_and_nothing_is_taken_from_it() {
    let Some(syn) = shared() else { return };
    let cast = syn.cast("encrypted");
    let dir = tempfile::tempdir().unwrap();
    let mut d = Driver::open(syn, &cast.boxmaker, &[&cast.phone], dir.path());
    d.round();
    let v = syn
        .as_user(
            &cast.phone,
            "POST",
            "/_matrix/client/v3/createRoom",
            Some(
                json!({"preset": "private_chat", "invite": [cast.boxmaker.user_id],
                "initial_state": [{"type": "m.room.encryption", "state_key": "",
                                   "content": {"algorithm": "m.megolm.v1.aes-sha2"}}]}),
            ),
        )
        .unwrap();
    let room = v["room_id"].as_str().unwrap().to_string();
    d.until("the encrypted notice", |_, ds| {
        has(
            ds,
            |a| matches!(a, Action::Notice { notice: Notice::Encrypted, room: r } if *r == room),
        )
    });
    assert!(d.client.encrypted(&room).unwrap());
    syn.say(
        &cast.phone,
        &room,
        "sent in the clear into an encrypted room",
    );
    d.until("the message counted as not served", |_, ds| {
        ds.iter().map(|d| d.unserved).sum::<u64>() == 1
    });
    assert!(d.taken().is_empty());
}

#[test]
fn a_redaction_removes_the_event_and_is_one_redaction_when_retried() {
    let Some(syn) = shared() else { return };
    let (cast, d, room, _dir) = served_room(syn, "redact");
    let sent = d
        .client
        .send(
            &room,
            "bm-redact-1",
            &content(Style::Text, "", "my PIN is 4471"),
        )
        .unwrap();
    let txn = redaction_txn(&room, &sent);
    let first = d.client.redact(&room, &sent, &txn).unwrap();
    let again = d.client.redact(&room, &sent, &txn).unwrap();
    assert_eq!(first, again, "a retried redaction is the same event");
    let events = syn.events(&cast.phone, &room);
    let ev = events
        .iter()
        .find(|e| e["event_id"] == sent.as_str())
        .unwrap();
    assert_eq!(
        ev["content"],
        json!({}),
        "the phone sees the text gone: {ev}"
    );
    let redactions = events
        .iter()
        .filter(|e| e["type"] == "m.room.redaction")
        .count();
    assert_eq!(redactions, 1);
}

/// The phone's view of who is typing in `room`, from its own long-poll syncs.
fn typing_seen_by(syn: &Synapse, phone: &Account, room: &str, want: bool, user: &str) {
    let deadline = Instant::now() + WITHIN;
    let mut since: Option<String> = None;
    loop {
        assert!(Instant::now() < deadline, "typing {want} not seen");
        let mut path = "/_matrix/client/v3/sync?timeout=5000".to_string();
        if let Some(s) = &since {
            path.push_str(&format!("&since={}", matrix_seg(s)));
        }
        let v = syn.as_user(phone, "GET", &path, None).unwrap();
        since = v["next_batch"].as_str().map(str::to_string);
        let ephemeral = &v["rooms"]["join"][room]["ephemeral"]["events"];
        let typing: Vec<&Value> = ephemeral
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["type"] == "m.typing")
            .collect();
        if let Some(t) = typing.last() {
            let ids = t["content"]["user_ids"].as_array().unwrap();
            if ids.iter().any(|i| i == user) == want {
                return;
            }
        }
    }
}

#[test]
fn a_typing_notice_starts_and_stops() {
    let Some(syn) = shared() else { return };
    let (cast, d, room, _dir) = served_room(syn, "typing");
    d.client
        .typing(&room, Some(std::time::Duration::from_secs(30)))
        .unwrap();
    typing_seen_by(syn, &cast.phone, &room, true, &cast.boxmaker.user_id);
    d.client.typing(&room, None).unwrap();
    typing_seen_by(syn, &cast.phone, &room, false, &cast.boxmaker.user_id);
}

#[test]
fn url_previews_are_turned_off_where_loopd_may_and_refused_typed_where_it_may_not() {
    let Some(syn) = shared() else { return };
    let (cast, d, room, _dir) = served_room(syn, "previews");
    // A private chat gives a new member no power over state events.
    let refused = d.client.disable_previews(&room);
    assert!(
        matches!(refused, Err(Error::Forbidden { .. })),
        "{refused:?}"
    );
    let path = format!(
        "/_matrix/client/v3/rooms/{}/state/m.room.power_levels/",
        matrix_seg(&room)
    );
    let mut levels = syn.as_user(&cast.phone, "GET", &path, None).unwrap();
    levels["users"][cast.boxmaker.user_id.as_str()] = json!(50);
    syn.as_user(&cast.phone, "PUT", &path, Some(levels))
        .unwrap();
    d.client.disable_previews(&room).unwrap();
    let state = d
        .client
        .state(&room, ::matrix::client::PREVIEW_URLS, "")
        .unwrap();
    assert_eq!(state, Some(json!({"disable": true})));
}

/// The split's budget against the homeserver's real limit: a long reply of the costliest
/// characters is accepted part by part and reads back whole, while one event of the whole
/// text is refused; each kind of event reaches the phone as planned.
#[test]
fn a_long_reply_is_accepted_part_by_part_and_each_kind_arrives_as_planned() {
    let Some(syn) = shared() else { return };
    let (cast, d, room, _dir) = served_room(syn, "split");
    let line = "\"quoted\" \\ \u{1} <b>ünï</b> & ✓ ".repeat(40);
    let text: Vec<String> = (0..120).map(|i| format!("{i:03} {line}")).collect();
    let text = text.join("\n");
    let whole = content(Style::Text, "", &text);
    let refused = d.client.send(&room, "bm-whole", &whole);
    assert!(
        matches!(refused, Err(Error::Status { status: 413, .. })),
        "one event of it all is over the limit: {refused:?}"
    );
    // Only an unasked message's parts all carry a header; a notice's later parts open
    // with one line (a command's answer split), which the split's own tests check.
    for (block, style) in [(1, Style::Text), (2, Style::Notice), (3, Style::Unasked)] {
        let header = match style {
            Style::Unasked => "loopd: reminder",
            _ => "",
        };
        let parts = ::matrix::plan("main", block, style, header, &text);
        assert!(parts.len() > 1);
        for p in &parts {
            d.client.send(&room, &p.txn, &p.content).unwrap();
        }
    }
    let events: Vec<Value> = syn
        .events(&cast.phone, &room)
        .into_iter()
        .filter(|e| e["type"] == "m.room.message")
        .collect();
    let bodies = |msgtype: &str, formatted: bool| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["content"]["msgtype"] == msgtype)
            .filter(|e| e["content"].get("formatted_body").is_some() == formatted)
            .map(|e| e["content"]["body"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(bodies("m.text", false).join("\n"), text);
    assert_eq!(bodies("m.notice", false).join("\n"), text);
    let unasked = bodies("m.text", true);
    assert!(unasked.iter().all(|b| b.starts_with("loopd: reminder\n")));
    let rejoined: Vec<&str> = unasked
        .iter()
        .map(|b| &b["loopd: reminder\n".len()..])
        .collect();
    assert_eq!(rejoined.join("\n"), text);
    let formatted = events
        .iter()
        .find(|e| e["content"]["format"] == "org.matrix.custom.html")
        .unwrap();
    let html = formatted["content"]["formatted_body"].as_str().unwrap();
    assert!(
        html.starts_with("<strong>loopd: reminder</strong><br>"),
        "{html:.80}"
    );
    assert!(
        !html.contains("<b>"),
        "the text after the header is escaped"
    );
}
