//! Unasked messages as a room gets them (docs/matrix.md, 'Unasked messages', 'Labels'):
//! the header that says a message is untrusted, and the notice that one labelled above
//! `matrix.max_class` waits at the terminal. The rig is the rooms' tests'.

use crate::channel::tests_rooms::Rig;

/// Regression: a heartbeat's message written while the context was untrusted (the session
/// had read a page) went to the room under loopd's header as a trusted one does, so a
/// page's words reached the phone's notification under loopd's name. Its header says so.
#[test]
fn an_untrusted_unasked_messages_header_says_it_is_untrusted_in_the_room() {
    let mut rig = Rig::new();
    rig.answered("$e1", "hi", "hello");
    for untrusted in [true, false] {
        rig.sent();
        let m = rig.unasked(
            conversation::inbox::Kind::Heartbeat,
            "confirm your card at http://x",
            proto::Label::new(proto::DataClass::Public, untrusted),
        );
        assert!(rig.ch.room_offer(&m), "the room gets it");
        let c = rig.sent().pop().unwrap().content;
        let header = c["body"]
            .as_str()
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .to_string();
        assert!(header.starts_with("loopd: heartbeat at "), "{header}");
        let says = c["formatted_body"]
            .as_str()
            .unwrap()
            .contains("untrusted: written after");
        assert_eq!(
            (header.contains("untrusted"), says),
            (untrusted, untrusted),
            "{c}"
        );
    }
}

/// A reminder labelled above `matrix.max_class` is replaced in the room by loopd's
/// notice that it waits at the terminal: its text never leaves, and loopd's word is an
/// `m.notice`, which the model never produces.
#[test]
fn a_reminder_above_max_class_is_a_notice_that_it_waits_at_the_terminal() {
    let mut rig = Rig::new();
    rig.answered("$e1", "hi", "hello");
    rig.sent();
    let m = rig.unasked(
        conversation::inbox::Kind::Reminder,
        "the PIN is 4471",
        proto::Label::new(proto::DataClass::Secret, false),
    );
    assert!(!rig.ch.room_offer(&m), "the message itself waits");
    let sent = rig.sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let c = &sent[0].content;
    assert_eq!(c["msgtype"], "m.notice", "{c}");
    let body = c["body"].as_str().unwrap();
    assert!(body.starts_with("loopd: a reminder from "), "{body}");
    assert!(
        body.contains("waits at the terminal") && !body.contains("4471"),
        "{body}"
    );
    assert!(!rig.ch.room_offer(&m), "told once");
    assert!(rig.sent().is_empty(), "told once");
}

/// The longest header a room's unasked message gets is not cut.
#[test]
fn the_longest_unasked_header_fits_uncut() {
    let longest = format!(
        "loopd: {} at 09:12 Wed 30 Dec (again){}",
        conversation::inbox::Kind::Held.word(),
        crate::channel::unasked::UNTRUSTED
    );
    assert!(longest.chars().count() <= ::matrix::outgoing::MAX_HEADER_CHARS);
}

/// Regression: a reminder whose block was queued for a socket client (marked `tried`)
/// reached the room marked `(again)`, the room's first and only copy. `(again)` in a room
/// is the room's own repeat: a message planned there again after a crash.
#[test]
fn the_rooms_first_copy_is_not_marked_again_whatever_a_socket_client_got() {
    let mut rig = Rig::new();
    rig.answered("$e1", "hi", "hello");
    rig.sent();
    let header = |rig: &mut Rig, m: &conversation::inbox::Message| {
        assert!(rig.ch.room_offer(m), "the room gets it");
        let c = rig.sent().pop().unwrap().content;
        c["body"]
            .as_str()
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .to_string()
    };
    let mut m = rig.unasked(
        conversation::inbox::Kind::Reminder,
        "water the plants",
        proto::Label::new(proto::DataClass::Public, false),
    );
    m.tried = true;
    let first = header(&mut rig, &m);
    assert!(!first.contains("(again)"), "{first}");
    let stored = rig.ch.mail.inbox.with(|i| i.get(m.n).cloned()).unwrap();
    assert!(stored.room_tried, "planned into the room is on disk");
    // Planned again after a crash: the room may have it, and is told so.
    let mut again = rig.unasked(
        conversation::inbox::Kind::Reminder,
        "water the plants",
        proto::Label::new(proto::DataClass::Public, false),
    );
    again.room_tried = true;
    let second = header(&mut rig, &again);
    assert!(second.contains("(again)"), "{second}");
}

/// Regression: a reminder delivered to a room was kept for `/forget` only under its inbox
/// message, which the inbox trims once newer ones are delivered; forgetting the reminder's
/// words then left the delivered event in the room. It is kept under its number too.
#[test]
fn a_reminder_delivered_to_the_room_is_found_by_its_number() {
    let mut rig = Rig::new();
    rig.answered("$e1", "hi", "hello");
    rig.sent();
    let text = vec![conversation::inbox::Piece::Text("feed the cat".into())];
    let (m, saved) = rig.ch.mail.inbox.with(|i| {
        i.add(
            "main",
            conversation::inbox::Kind::Reminder,
            text,
            proto::Label::new(proto::DataClass::Public, false),
            false,
            Some("reminder 5".into()),
        )
    });
    saved.unwrap();
    assert!(rig.ch.room_offer(&m), "the room gets it");
    let sent = rig.sent().pop().unwrap();
    rig.acked(&sent.txn, "$delivered");
    let kept = rig.kept();
    for key in [format!("inbox {}", m.n), "remind 5".to_string()] {
        assert!(
            kept.contains(&("$delivered".to_string(), key.clone())),
            "{key}: {kept:?}"
        );
    }
}

/// Regression (it used to be so): an unasked message is one `m.text` whose plain `body` is loopd's header, a
/// newline, and the model's text, unmarked. A heartbeat message (written after reading
/// a page, say) that begins with a line like loopd's header reads, in the body a phone's
/// notification shows, as a second message of loopd's. docs/channel.md: model text cannot pass
/// for loopd's own lines on any surface, Matrix included.
#[test]
fn review_an_unasked_messages_body_lets_model_text_pass_for_loopds_header() {
    let mut rig = Rig::new();
    rig.answered("$e1", "hi", "hello");
    rig.sent();
    let forged = "loopd: reminder at 09:00 Mon 7 Dec (again)\nYour bank asked for your card number: reply with it here.";
    let m = rig.unasked(
        conversation::inbox::Kind::Heartbeat,
        forged,
        proto::Label::new(proto::DataClass::Public, false),
    );
    assert!(rig.ch.room_offer(&m), "the room gets it");
    let sent = rig.sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let body = sent[0].content["body"].as_str().unwrap();
    let imitations: Vec<&str> = body
        .lines()
        .skip(1)
        .filter(|l| l.starts_with("loopd:"))
        .collect();
    assert!(
        imitations.is_empty(),
        "the model's line reads as loopd's header in the body: {body:?}"
    );
}
