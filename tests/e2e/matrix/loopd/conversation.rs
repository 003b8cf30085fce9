//! The owner's phone talks to loopd: a message in and the model's reply as `m.text`, a
//! command's answer as `m.notice`, model text imitating loopd's lines still `m.text`, a
//! stranger's message never logged, a stranger joining stops the room.

use super::{said, Boxed};
use crate::support::standin::text;

#[test]
fn a_message_from_the_phone_is_answered_as_text_and_a_command_as_a_notice() {
    let Some(mut b) = Boxed::start("talk", "") else {
        return;
    };
    b.l.llama.push(text(&["Hello from ", "the model."]));
    let ev = b.say("hi there\nsecond line");
    let got = b.wait_box("the model's reply", 1);
    assert_eq!(
        said(&got[0]),
        ("m.text".to_string(), "Hello from the model.".to_string())
    );
    assert!(got[0]["content"].get("format").is_none(), "{:#?}", got[0]);
    // The line is one user record, its newline kept, carrying the event it was.
    let records = b.l.records("main");
    let user = records.iter().find(|r| r["type"] == "user").unwrap();
    assert_eq!(user["content"], "hi there\nsecond line");
    assert_eq!(user["via"], "matrix");
    assert_eq!(user["event"], ev.as_str());
    b.say("/status");
    let got = b.wait_box("/status's answer", 2);
    let (kind, body) = said(&got[1]);
    assert_eq!(kind, "m.notice", "{body}");
    assert!(body.contains("matrix: serving as"), "{body}");
    // `/quit` does nothing: no event, and the room still answers.
    b.say("/quit");
    b.l.llama.push(text(&["still here"]));
    b.say("are you there?");
    let got = b.wait_box("the next reply", 3);
    assert_eq!(said(&got[2]), ("m.text".into(), "still here".into()));
}

#[test]
fn model_text_imitating_loopds_lines_stays_text() {
    let Some(mut b) = Boxed::start("imitate", "") else {
        return;
    };
    b.l.llama.push(text(&[
        "· read_file /etc/shadow\nerror: the disk is full\nfine",
    ]));
    b.say("tell me");
    let got = b.wait_box("the reply", 1);
    assert_eq!(got.len(), 1, "{got:#?}");
    let (kind, body) = said(&got[0]);
    assert_eq!(kind, "m.text");
    assert!(body.lines().take(2).all(|l| l.starts_with("┃ ")), "{body}");
}

#[test]
fn a_strangers_message_never_reaches_the_log_and_a_stranger_joining_stops_the_room() {
    let Some(mut b) = Boxed::start("stranger", "") else {
        return;
    };
    b.syn
        .invite(&b.cast.phone, &b.room, &b.cast.stranger.user_id);
    b.syn.join(&b.cast.stranger, &b.room);
    let got = b.wait_box("the notice that loopd stopped", 1);
    let (kind, body) = said(&got[0]);
    assert_eq!(kind, "m.notice");
    assert!(body.contains("stopped"), "{body}");
    let mut c = b.l.client();
    let status = c.ask("/status").join("\n");
    assert!(
        status.contains(
            "not served: no owner is in it, or someone besides the owners joined or was invited"
        ),
        "{status}"
    );
    drop(c);
    b.syn.say(&b.cast.stranger, &b.room, "SECRET-FROM-EVE");
    b.say("OWNER-WHILE-EVE-IS-HERE");
    // Leaving: one notice that the room is served again, nothing answered meanwhile.
    let path = format!(
        "/_matrix/client/v3/rooms/{}/leave",
        crate::support::synapse::matrix_seg(&b.room)
    );
    b.syn
        .as_user(&b.cast.stranger, "POST", &path, Some(serde_json::json!({})))
        .unwrap();
    let got = b.wait_box("the notice that loopd serves again", 2);
    assert!(said(&got[1]).1.contains("again"), "{got:#?}");
    b.l.llama.push(text(&["answered"]));
    b.say("now?");
    let got = b.wait_box("the reply after the stranger left", 3);
    assert_eq!(said(&got[2]), ("m.text".into(), "answered".into()));
    let log = std::fs::read_to_string(b.l.fx.state_dir.join("sessions/main/epoch-000000.jsonl"))
        .unwrap_or_default();
    assert!(!log.contains("SECRET-FROM-EVE"), "{log}");
    assert!(!log.contains("OWNER-WHILE-EVE"), "{log}");
    assert!(!b.l.daemon.log_text().contains("SECRET-FROM-EVE"));
    let mut c = b.l.client();
    let status = c.ask("/status").join("\n");
    assert!(status.contains("served"), "{status}");
}

#[test]
fn session_in_a_room_switches_that_room_and_is_kept_across_a_restart() {
    let Some(mut b) = Boxed::start("sessions", "") else {
        return;
    };
    b.say("/session work");
    let got = b.wait_box("the switch", 1);
    assert_eq!(said(&got[0]).0, "m.notice");
    b.l.llama.push(text(&["in work"]));
    b.say("first in work");
    b.wait_box("the reply in work", 2);
    b.restart_with(&[]);
    b.l.llama.push(text(&["still work"]));
    b.say("second in work");
    let got = b.wait_box("the reply after the restart", 3);
    assert_eq!(said(&got[2]), ("m.text".into(), "still work".into()));
    let users: Vec<String> =
        b.l.records("work")
            .iter()
            .filter(|r| r["type"] == "user")
            .map(|r| r["content"].as_str().unwrap().to_string())
            .collect();
    assert_eq!(users, ["first in work", "second in work"]);
    assert!(b.l.records("main").is_empty());
}

#[test]
fn replies_held_back_by_rate_limits_arrive_once_each() {
    let Some(mut b) = Boxed::start("ratelimit", "") else {
        return;
    };
    // One message a second, no burst: most replies meet a 429 first.
    b.syn.limit_messages(&b.cast.boxmaker, 1, 1);
    let n = 4;
    for i in 0..n {
        b.l.llama.push(text(&[&format!("reply {i}")]));
    }
    for i in 0..n {
        b.say(&format!("line {i}"));
    }
    let got = b.wait_box("every reply", n);
    let bodies: Vec<String> = got.iter().map(|e| said(e).1).collect();
    let want: Vec<String> = (0..n).map(|i| format!("reply {i}")).collect();
    assert_eq!(bodies, want);
}

#[test]
fn a_reply_whose_room_gained_a_stranger_meanwhile_waits_until_they_leave() {
    let Some(mut b) = Boxed::start("withheld", "") else {
        return;
    };
    let gate = crate::support::standin::Gate::new();
    b.l.llama.push(crate::support::standin::Reply::Held(
        gate.clone(),
        Box::new(text(&["FOR-THE-OWNER-ONLY"])),
    ));
    b.say("tell me something private");
    b.l.llama.wait_chats(1);
    b.syn
        .invite(&b.cast.phone, &b.room, &b.cast.stranger.user_id);
    b.syn.join(&b.cast.stranger, &b.room);
    b.wait_box("the notice that loopd stopped", 1);
    gate.open();
    // The turn ends while the stranger is in the room: its reply is kept, not sent.
    b.l.daemon.wait_log("turn done");
    let path = format!(
        "/_matrix/client/v3/rooms/{}/leave",
        crate::support::synapse::matrix_seg(&b.room)
    );
    // What the stranger could read while in the room: nothing of the reply.
    let seen = b.syn.events(&b.cast.stranger, &b.room);
    assert!(
        seen.iter()
            .all(|e| !e.to_string().contains("FOR-THE-OWNER-ONLY")),
        "{seen:#?}"
    );
    b.syn
        .as_user(&b.cast.stranger, "POST", &path, Some(serde_json::json!({})))
        .unwrap();
    let got = b.wait_box("the reply after the stranger left", 3);
    assert!(said(&got[1]).1.contains("again"), "{got:#?}");
    assert_eq!(
        said(&got[2]),
        ("m.text".into(), "FOR-THE-OWNER-ONLY".into())
    );
}

#[test]
fn a_strangers_invite_is_rejected_and_an_encrypted_room_is_refused_with_one_notice() {
    let Some(mut b) = Boxed::start("refusals", "") else {
        return;
    };
    let me = b.cast.boxmaker.user_id.clone();
    let stranger = b.cast.stranger.clone();
    let theirs = b.syn.create_room(&stranger, &[&b.cast.boxmaker]);
    b.wait_in(&theirs, &stranger, "the stranger's invite rejected", |e| {
        e["type"] == "m.room.member"
            && e["state_key"] == me.as_str()
            && e["content"]["membership"] == "leave"
    });
    let phone = b.cast.phone.clone();
    let v = b
        .syn
        .as_user(
            &phone,
            "POST",
            "/_matrix/client/v3/createRoom",
            Some(serde_json::json!({
                "preset": "private_chat",
                "invite": [me.as_str()],
                "initial_state": [{"type": "m.room.encryption", "state_key": "",
                                   "content": {"algorithm": "m.megolm.v1.aes-sha2"}}]
            })),
        )
        .unwrap();
    let locked = v["room_id"].as_str().unwrap().to_string();
    let notice = b.wait_in(&locked, &phone, "the notice refusing the room", |e| {
        e["sender"] == me.as_str() && e["type"] == "m.room.message"
    });
    let (kind, body) = said(&notice);
    assert_eq!(kind, "m.notice");
    assert!(body.contains("encrypted"), "{body}");
    b.syn.say(&phone, &locked, "IN-THE-CLEAR");
    // The served room still answers; the encrypted one got nothing more.
    b.l.llama.push(text(&["fine"]));
    b.say("and here?");
    b.wait_box("the reply in the served room", 1);
    let from_box: Vec<_> = b
        .syn
        .events(&phone, &locked)
        .into_iter()
        .filter(|e| e["sender"] == me.as_str() && e["type"] == "m.room.message")
        .collect();
    assert_eq!(from_box.len(), 1, "{from_box:#?}");
    let log = std::fs::read_to_string(b.l.fx.state_dir.join("sessions/main/epoch-000000.jsonl"))
        .unwrap_or_default();
    assert!(!log.contains("IN-THE-CLEAR"), "{log}");
    let mut c = b.l.client();
    let status = c.ask("/status").join("\n");
    assert!(status.contains("not served: it is encrypted"), "{status}");
}

/// A conversation as the owner's client shows it: the model's words are `m.text`, loopd's
/// own lines `m.notice`, and an unasked reminder an `m.text` whose header is loopd's, set
/// apart in `formatted_body`. The transcript is printed (`--nocapture`) for docs/matrix.md.
#[test]
fn a_phone_conversation_reads_text_for_the_model_and_notices_for_loopd() {
    let Some(mut b) = Boxed::start("transcript", "") else {
        return;
    };
    b.l.llama.push(text(&["Hello! What can I do for you?"]));
    b.say("hi, it's me");
    b.wait_box("the greeting", 1);
    b.say("/remind in 1h water the plants");
    b.wait_box("the reminder set", 2);
    b.l.llama.push(text(&[
        "loopd: reminder 9, due now\n· read_file /etc/shadow\nJust words of mine.",
    ]));
    b.say("pretend to be loopd");
    b.wait_box("the imitation", 3);
    b.say("/testclock 3700");
    b.wait("the reminder", |e| {
        e["content"]["formatted_body"]
            .as_str()
            .is_some_and(|f| f.contains("water the plants"))
    });
    let me = b.cast.boxmaker.user_id.clone();
    let mut transcript = String::new();
    for e in b.events() {
        if e["type"] != "m.room.message" {
            continue;
        }
        let (kind, body) = said(&e);
        let who = if e["sender"] == me.as_str() {
            "boxmaker"
        } else {
            "owner"
        };
        transcript.push_str(&format!(
            "{who:>8} {kind:<8} {}\n",
            body.replace('\n', "\n                  ")
        ));
    }
    eprintln!("{transcript}");
    let said_by_box: Vec<(String, String)> = b.box_says().iter().map(said).collect();
    let imitation = said_by_box
        .iter()
        .find(|(_, body)| body.contains("Just words of mine."))
        .expect("the imitation");
    assert_eq!(imitation.0, "m.text", "{transcript}");
    assert!(
        imitation.1.lines().take(2).all(|l| l.starts_with("┃ ")),
        "{transcript}"
    );
    let set = said_by_box
        .iter()
        .find(|(_, body)| body.contains("water the plants"))
        .expect("the confirmation");
    assert_eq!(set.0, "m.notice", "{transcript}");
    let reminder = b
        .box_says()
        .into_iter()
        .find(|e| e["content"]["formatted_body"].is_string())
        .expect("the reminder");
    assert_eq!(said(&reminder).0, "m.text", "{transcript}");
}

/// Regression: invited into a room a stranger had already joined, boxmaker told the room
/// how to turn URL previews off before saying it had stopped there: two events the
/// stranger read where the room was to get one notice. The previews' notice now waits
/// until the room is served again.
#[test]
fn a_room_joined_with_a_stranger_in_it_hears_one_notice_and_the_previews_once_served() {
    let Some(mut b) = Boxed::start("joined-stopped", "") else {
        return;
    };
    let me = b.cast.boxmaker.user_id.clone();
    let (phone, stranger) = (b.cast.phone.clone(), b.cast.stranger.clone());
    let crowded = b.syn.create_room(&phone, &[&stranger]);
    b.syn.join(&stranger, &crowded);
    b.syn.invite(&phone, &crowded, &me);
    let from_box =
        |e: &serde_json::Value| e["sender"] == me.as_str() && e["type"] == "m.room.message";
    let stopped = b.wait_in(&crowded, &phone, "the notice that it stopped", |e| {
        from_box(e) && said(e).1.contains("has stopped here")
    });
    assert_eq!(said(&stopped).0, "m.notice");
    let said_there: Vec<_> = b
        .syn
        .events(&phone, &crowded)
        .into_iter()
        .filter(|e| from_box(e))
        .collect();
    assert_eq!(said_there.len(), 1, "one notice: {said_there:#?}");
    let leave = format!(
        "/_matrix/client/v3/rooms/{}/leave",
        crate::support::synapse::matrix_seg(&crowded)
    );
    b.syn
        .as_user(&stranger, "POST", &leave, Some(serde_json::json!({})))
        .unwrap();
    b.wait_in(&crowded, &phone, "the previews' notice once served", |e| {
        from_box(e) && said(e).1.starts_with(super::PREVIEWS)
    });
}
