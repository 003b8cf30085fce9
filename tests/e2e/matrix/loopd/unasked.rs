//! Unasked messages reach the room: a reminder with nobody on the socket arrives once, as
//! `m.text` with loopd's header set apart, and is marked delivered; one above
//! `matrix.max_class` waits at the terminal with a notice; a homeserver down when it
//! falls due delays it and loses nothing; `/inbox` from the phone lists what the room may
//! read.

use super::{said, Boxed};
use crate::support::synapse::Synapse;
use serde_json::Value;

fn reminders(b: &Boxed) -> Vec<Value> {
    b.box_says()
        .into_iter()
        .filter(|e| e["content"]["formatted_body"].is_string())
        .collect()
}

#[test]
fn a_reminder_with_nobody_on_the_socket_reaches_the_room_once() {
    let Some(mut b) = Boxed::start("remind", "") else {
        return;
    };
    b.say("/remind in 1h water the plants");
    let got = b.wait_box("the reminder set", 1);
    let (kind, body) = said(&got[0]);
    assert_eq!(kind, "m.notice");
    assert!(body.contains("water the plants"), "{body}");
    b.say("/testclock 3700");
    b.wait("the reminder", |e| {
        e["content"]["formatted_body"]
            .as_str()
            .is_some_and(|f| f.contains("water the plants"))
    });
    let r = reminders(&b);
    assert_eq!(r.len(), 1, "{r:#?}");
    let content = &r[0]["content"];
    assert_eq!(content["msgtype"], "m.text");
    assert_eq!(content["format"], "org.matrix.custom.html");
    let html = content["formatted_body"].as_str().unwrap();
    assert!(html.starts_with("<strong>loopd: reminder"), "{html}");
    // The inbox counts it delivered: nothing waits for the terminal.
    let mut c = b.l.client();
    let status = c.ask("/status").join("\n");
    assert!(status.contains("inbox: 0 messages waiting"), "{status}");
    // A restart sends nothing again.
    b.restart_with(&[]);
    b.l.llama.push(crate::support::standin::text(&["ok"]));
    b.say("anything else?");
    let n = b.box_says().len();
    b.wait_box("the reply after the restart", n + 1);
    assert_eq!(reminders(&b).len(), 1);
}

#[test]
fn a_homeserver_stopped_and_started_again_delays_a_reminder_and_loses_nothing() {
    let Some(syn) = Synapse::start() else {
        return;
    };
    let syn: &'static Synapse = Box::leak(Box::new(syn));
    let Some(mut b) = Boxed::start_on(syn, "outage", "") else {
        return;
    };
    b.say("/remind in 1h call the plumber");
    b.wait_box("the reminder set", 1);
    syn.stop();
    let mut c = b.l.client();
    let moved = c.ask("/testclock 3700").join("\n");
    assert!(moved.contains("ahead"), "{moved}");
    drop(c);
    syn.start_again();
    b.wait("the reminder after the outage", |e| {
        e["content"]["formatted_body"]
            .as_str()
            .is_some_and(|f| f.contains("call the plumber"))
    });
    b.l.llama.push(crate::support::standin::text(&["back"]));
    b.say("are you back?");
    let n = b.box_says().len();
    let got = b.wait_box("a reply after the outage", n + 1);
    assert_eq!(said(got.last().unwrap()), ("m.text".into(), "back".into()));
    assert_eq!(reminders(&b).len(), 1);
    syn.stop();
}

#[test]
fn a_reply_labelled_above_max_class_waits_at_the_terminal() {
    let Some(mut b) = Boxed::start("held", "max_class = \"public\"") else {
        return;
    };
    b.l.llama
        .push(crate::support::standin::text(&["THE-PRIVATE-ANSWER"]));
    b.say("what is my balance?");
    let got = b.wait_box("the notice that the reply waits", 1);
    let (kind, body) = said(&got[0]);
    assert_eq!(kind, "m.notice");
    assert!(body.contains("waits at the terminal"), "{body}");
    assert!(!body.contains("THE-PRIVATE-ANSWER"));
    let mut c = b.l.client();
    let inbox = c.ask("/inbox").join("\n");
    assert!(inbox.contains("THE-PRIVATE-ANSWER"), "{inbox}");
    assert!(b
        .events()
        .iter()
        .all(|e| !e.to_string().contains("THE-PRIVATE-ANSWER")));
}

/// Sets a reminder of `text` from the phone, moves the clock past it, waits for what the
/// room gets then (`arrived`), asks `/inbox` from the phone and returns its list's kind
/// and body.
fn inbox_after_a_reminder(
    b: &mut Boxed,
    text: &str,
    arrived: (&str, impl Fn(&Value) -> bool),
) -> (String, String) {
    b.say(&format!("/remind in 1h {text}"));
    b.wait_box("the reminder set", 1);
    b.say("/testclock 3700");
    b.wait(arrived.0, arrived.1);
    b.say("/inbox");
    let list = b.wait("the inbox's list", |e| {
        e["content"]["body"]
            .as_str()
            .is_some_and(|f| f.starts_with("· reminder at "))
    });
    said(&list)
}

/// Guards `/inbox` from the phone, a line "exactly as on the socket" (it used to be
/// answered "ask at the terminal"): the room's list is loopd's notice holding the
/// reminder the room was sent.
#[test]
fn inbox_from_the_phone_lists_the_reminder_the_room_got() {
    let Some(mut b) = Boxed::start("inbox", "") else {
        return;
    };
    let sent = |e: &Value| {
        e["content"]["formatted_body"]
            .as_str()
            .is_some_and(|f| f.contains("water the plants"))
    };
    let (kind, body) = inbox_after_a_reminder(&mut b, "water the plants", ("the reminder", sent));
    assert_eq!(kind, "m.notice", "loopd's words: {body}");
    assert!(body.contains("water the plants"), "{body}");
}

/// A room may not read a message above `matrix.max_class`: its `/inbox` lists it by its
/// `· ` line alone, saying where it can be read, never its text. (The owner's own
/// `/remind` and its confirmation are in the room already: the owner typed the text there.)
#[test]
fn inbox_from_the_phone_quotes_nothing_above_the_rooms_class() {
    let Some(mut b) = Boxed::start("inbox-held", "max_class = \"public\"") else {
        return;
    };
    let held = |e: &Value| {
        e["content"]["body"]
            .as_str()
            .is_some_and(|f| f.contains("waits at the terminal"))
    };
    let waits = ("the notice that the reminder waits", held);
    let (kind, body) = inbox_after_a_reminder(&mut b, "renew the passport 77X", waits);
    assert_eq!(kind, "m.notice", "{body}");
    assert!(
        body.contains("above matrix.max_class (public): /inbox at the terminal shows it"),
        "{body}"
    );
    assert!(!body.contains("passport 77X"), "{body}");
}
