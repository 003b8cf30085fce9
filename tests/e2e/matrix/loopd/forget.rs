//! `/forget` from the phone: the text the owner sent, the reply that repeated it and the
//! owner's own `/forget` line that named it are redacted in the room, and the answer says
//! what the homeserver may still keep.

use super::{said, Boxed};
use crate::support::standin::text;
use serde_json::Value;

/// Whether the room still shows `needle` in a message's content.
pub(super) fn shows(b: &Boxed, needle: &str) -> Vec<Value> {
    b.events()
        .into_iter()
        .filter(|e| e["type"] == "m.room.message" && e["content"].to_string().contains(needle))
        .collect()
}

/// Waits, up to `WITHIN`, for the room to show `needle` nowhere; the caller asserts.
pub(super) fn wait_gone(b: &Boxed, needle: &str) {
    let start = std::time::Instant::now();
    while !shows(b, needle).is_empty() && start.elapsed() < crate::matrix::WITHIN {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn forgetting_a_text_sent_both_ways_redacts_it_in_the_room() {
    let Some(mut b) = Boxed::start("forget", "") else {
        return;
    };
    // The owner makes boxmaker a moderator, so it may redact the owner's events too.
    b.make_moderator();
    b.l.llama.push(text(&["Noted: your PIN is 4471."]));
    b.say("my PIN is 4471");
    b.wait_box("the reply holding the PIN", 1);
    // The list is shown in the room as at the terminal (nothing in it is above
    // `matrix.max_class`), in loopd's notice; the removal is asked for there too, and
    // takes the list with it.
    b.say("/forget \"4471\"");
    let got = b.wait_box("the list", 2);
    let (kind, list) = said(&got[1]);
    assert_eq!(kind, "m.notice", "{list}");
    assert!(
        list.contains("4471") && list.contains("/forget all"),
        "{list}"
    );
    b.say("/forget all");
    let got = b.wait_box("the removal's answer", 3);
    let (kind, answer) = said(&got[2]);
    assert_eq!(kind, "m.notice");
    assert!(answer.contains("redaction_retention_period"), "{answer}");
    let start = std::time::Instant::now();
    while !shows(&b, "4471").is_empty() {
        assert!(
            start.elapsed() < crate::matrix::WITHIN,
            "still shown: {:#?}\nloopd's log:\n{}",
            shows(&b, "4471"),
            b.l.daemon.log_text()
        );
        // Each redaction wakes the phone's long-poll.
        b.wait("a redaction", |e| {
            e["type"] == "m.room.redaction" && {
                let redacts = e["redacts"].as_str().or(e["content"]["redacts"].as_str());
                redacts.is_some()
            }
        });
        let n = b
            .events()
            .iter()
            .filter(|e| e["type"] == "m.room.redaction")
            .count();
        if n >= 4 {
            break;
        }
    }
    assert!(shows(&b, "4471").is_empty(), "{:#?}", shows(&b, "4471"));
    // The removal's own answer stays readable.
    assert!(!shows(&b, "redaction_retention_period").is_empty());
    let log =
        std::fs::read_to_string(b.l.fx.state_dir.join("sessions/main/epoch-000000.jsonl")).unwrap();
    assert!(!log.contains("4471"), "{log}");
}

/// Regression: the notes loopd writes for `/remind …` and `/remind cancel N` were taken
/// for part of the room's turn before them: `/forget` redacted that unrelated turn, and
/// the owner's `/remind` message and the two confirmations, which held the words, stayed.
#[test]
fn forgetting_a_cancelled_reminders_words_redacts_its_events_not_the_turn_before() {
    let Some(mut b) = Boxed::start("forget-cancelled", "") else {
        return;
    };
    b.make_moderator();
    b.l.llama.push(text(&["Sounds good."]));
    b.say("unrelated garden plan");
    b.wait_box("the reply", 1);
    b.say("/remind in 1h feed PELICAN8");
    b.wait_box("the reminder set", 2);
    b.say("/remind cancel 1");
    b.wait_box("the reminder cancelled", 3);
    let mut c = b.l.client();
    let list = c.ask("/forget \"PELICAN8\"").join("\n");
    assert!(list.contains("PELICAN8"), "{list}");
    let answer = c.ask("/forget all").join("\n");
    drop(c);
    wait_gone(&b, "PELICAN8");
    assert!(
        shows(&b, "PELICAN8").is_empty(),
        "after /forget ({answer}) the room still shows {:#?}",
        shows(&b, "PELICAN8").iter().map(said).collect::<Vec<_>>()
    );
    assert!(
        !shows(&b, "unrelated garden plan").is_empty(),
        "the turn before was redacted"
    );
    assert!(
        !shows(&b, "Sounds good.").is_empty(),
        "its reply was redacted"
    );
}

/// A room may not read text above `matrix.max_class`: its `/forget` list numbers such an
/// entry as the terminal's does and says where it is shown, without its text, and
/// `/forget all` from the room still removes it.
#[test]
fn a_rooms_forget_list_quotes_nothing_above_the_rooms_class() {
    let Some(mut b) = Boxed::start("forget-held", "max_class = \"public\"") else {
        return;
    };
    b.l.llama.push(text(&["Noted."]));
    let mut c = b.l.client();
    c.ask("my alarm code is HERON-5521");
    drop(c);
    b.say("/forget HERON");
    let list = b.wait("the list", |e| said(e).1.contains("1. session main"));
    let (kind, body) = said(&list);
    assert_eq!(kind, "m.notice", "{body}");
    assert!(
        body.contains("above matrix.max_class (public): the list at the terminal shows it"),
        "{body}"
    );
    assert!(!body.contains("5521"), "{body}");
    b.say("/forget all");
    b.wait("the removal's answer", |e| {
        said(e).1.starts_with("forgot 1 record")
    });
    let log =
        std::fs::read_to_string(b.l.fx.state_dir.join("sessions/main/epoch-000000.jsonl")).unwrap();
    assert!(!log.contains("5521"), "{log}");
}

/// Heartbeats delivered to the room after the one the test forgets: more than the inbox
/// keeps delivered (ten), so that message is found by its turn alone.
const LATER_BEATS: usize = 11;

/// Regression: a heartbeat's message in the room was redacted only while the inbox still
/// kept it (the last ten heartbeats), so the words of an older one left the logs and the
/// index but stayed readable on the phone. And in a room where boxmaker is no moderator
/// the homeserver refused to redact the owner's own line, which loopd took for a room
/// refusing its messages: the session's next reminder never reached the room.
#[test]
fn forgetting_an_older_heartbeats_words_redacts_its_message_and_the_room_still_gets_reminders() {
    let Some(mut b) = Boxed::start("forget-heartbeat", "[heartbeat]\nevery_s = 1\n") else {
        return;
    };
    b.l.llama.set_fallback(text(&["HEARTBEAT_OK"]));
    b.l.llama
        .push_for("ZEBRA4455 later", text(&["Sure, I will."]));
    b.say("tell me about ZEBRA4455 later");
    b.wait_until("the reply", |b| !shows(b, "Sure, I will.").is_empty());
    b.l.llama.set_fallback(text(&["news ZEBRA4455 first"]));
    b.wait_until("the heartbeat's news", |b| {
        shows(b, "news ZEBRA4455 first").len() == 1
    });
    b.l.llama.set_fallback(text(&["other news"]));
    b.wait_until("the later heartbeats", |b| {
        shows(b, "other news").len() >= LATER_BEATS
    });
    b.l.llama.set_fallback(text(&["HEARTBEAT_OK"]));
    b.l.daemon.wait_log("heartbeat: nothing to report");
    let mut c = b.l.client();
    let list = c.ask("/forget \"ZEBRA4455\"").join("\n");
    assert!(list.contains("news ZEBRA4455 first"), "{list}");
    let answer = c.ask("/forget all").join("\n");
    wait_gone(&b, "news ZEBRA4455");
    assert!(
        shows(&b, "news ZEBRA4455").is_empty(),
        "after /forget ({answer}) the room still shows the heartbeat's news"
    );
    // The owner's own line stays (boxmaker may not redact it; the answer said so), and
    // the room is still the session's.
    let set = c.ask("/remind in 1s water the plants").join("\n");
    assert!(set.starts_with("reminder 1 set for "), "{set}");
    drop(c);
    b.wait_until("the reminder in the room", |b| {
        !shows(b, "water the plants").is_empty()
    });
}
