//! What `/forget` asks of the rooms beyond an owner's line and its answer
//! (docs/matrix.md, 'Forgetting'): a heartbeat's message found by its turn, and a
//! redaction the homeserver refuses. The rig is the rooms' tests'.

use crate::channel::tests_rooms::Rig;
use crate::worker::Event;
use conversation::forget::find::heartbeat_line;
use conversation::inbox::{heartbeat_source, Kind, Piece};
use proto::{DataClass, Label};

/// A rig whose room an owner wrote in and whose answer was acknowledged: unasked
/// messages of `main` go there.
fn served() -> Rig {
    let mut rig = Rig::new();
    rig.answered("$e1", "hi", "hello");
    for o in rig.sent() {
        rig.acked(&o.txn, "$r1");
    }
    rig
}

/// A heartbeat's message in `rig`'s inbox, from the turn at `turn`.
fn beat(rig: &mut Rig, turn: &str, text: &str) -> conversation::inbox::Message {
    let (m, saved) = rig.ch.mail.inbox.with(|i| {
        i.add(
            "main",
            Kind::Heartbeat,
            vec![Piece::Text(text.into())],
            Label::new(DataClass::Private, false),
            false,
            Some(heartbeat_source(turn)),
        )
    });
    saved.unwrap();
    m
}

/// Regression: a heartbeat's message delivered to a room was found by `/forget` only as
/// `inbox N`, while the inbox still kept it (the last ten heartbeats): the words of an
/// older heartbeat left the logs and the index but stayed readable in the room. Its event
/// is kept under the heartbeat's turn, which the removal names from the log.
#[test]
fn a_heartbeats_room_event_is_redacted_by_its_turn_once_the_inbox_let_it_go() {
    let mut rig = served();
    let turn = "2026-12-08T09:00:00.000Z";
    let m = beat(&mut rig, turn, "news ZEBRA4455 first");
    assert!(rig.ch.room_offer(&m), "the room gets it");
    let sent = rig.sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    rig.acked(&sent[0].txn, "$hb");
    assert!(
        rig.kept()
            .contains(&("$hb".to_string(), heartbeat_line("main", turn))),
        "{:?}",
        rig.kept()
    );
    // The inbox no longer holds the message: the removal names the turn alone.
    rig.event(Event::Redact(vec![heartbeat_line("main", turn)], None));
    assert!(
        rig.redactions().contains(&"$hb".to_string()),
        "{:?}",
        rig.redactions()
    );
}

/// Found by review: the message's turn was looked up in the inbox when the homeserver
/// acknowledged it; a message the inbox let go before that (delivered to a terminal and
/// ten newer ones after it, or folded while the homeserver was away) was kept as
/// `inbox N` alone. And one still waiting for the homeserver was not taken back by its
/// turn. What it is found by is fixed when it is planned.
#[test]
fn a_heartbeats_turn_is_fixed_when_planned_not_looked_up_when_acknowledged() {
    let mut rig = served();
    let turn = "2026-12-08T09:00:00.000Z";
    let m = beat(&mut rig, turn, "news ZEBRA4455 first");
    assert!(rig.ch.room_offer(&m));
    let planned = rig.sent();
    // A terminal had it, and ten newer ones after it: the inbox lets it go.
    rig.ch.mail.inbox.with(|i| i.delivered(&[m.n])).unwrap();
    for k in 0..10 {
        let later = beat(
            &mut rig,
            &format!("2026-12-08T10:00:{k:02}.000Z"),
            "other news",
        );
        rig.ch.mail.inbox.with(|i| i.delivered(&[later.n])).unwrap();
    }
    assert!(rig.ch.mail.inbox.with(|i| i.get(m.n).is_none()));
    rig.acked(&planned[0].txn, "$hb");
    assert!(
        rig.kept()
            .contains(&("$hb".to_string(), heartbeat_line("main", turn))),
        "{:?}",
        rig.kept()
    );
    // Another, still on its way when the removal names its turn: taken back, or
    // redacted once acknowledged.
    let turn = "2026-12-08T11:00:00.000Z";
    let m = beat(&mut rig, turn, "news PELICAN8 second");
    assert!(rig.ch.room_offer(&m));
    let planned = rig.sent();
    rig.event(Event::Redact(vec![heartbeat_line("main", turn)], None));
    assert!(
        !rig.store().outbox.iter().any(|o| o.txn == planned[0].txn),
        "still waiting to be sent"
    );
    rig.acked(&planned[0].txn, "$late");
    assert!(
        rig.redactions().contains(&"$late".to_string()),
        "{:?}",
        rig.redactions()
    );
}

/// Regression: in a room where loopd is no moderator, the homeserver refuses to redact the
/// owner's own events, and that refusal was taken for a room that refuses loopd's
/// messages: the session's unasked messages (a reminder falling due) stopped going there
/// until the owner wrote in it again.
#[test]
fn a_refused_redaction_leaves_the_room_its_unasked_messages() {
    let mut rig = Rig::new();
    rig.answered("$e1", "my PIN is 4471", "Noted.");
    for (i, o) in rig.sent().iter().enumerate() {
        rig.acked(&o.txn, &format!("$r{i}"));
    }
    rig.event(Event::Redact(vec!["$e1".into()], None));
    let redactions: Vec<_> = rig
        .sent()
        .into_iter()
        .filter(|o| o.content.is_null())
        .collect();
    assert!(!redactions.is_empty());
    for o in &redactions {
        rig.refused(&o.txn);
    }
    let m = rig.unasked(
        Kind::Reminder,
        "water the plants",
        Label::new(DataClass::Private, false),
    );
    assert!(
        rig.ch.room_offer(&m),
        "the room still gets the session's messages"
    );
}

/// Found by review: a removal that named a heartbeat's turn took its message back from
/// the room's queue, but the message, whose own words the removal did not hold, still
/// waited in the inbox, and the owner's next line in the room planned it there again.
#[test]
fn a_message_whose_turn_a_removal_took_from_the_room_is_not_planned_there_again() {
    let mut rig = served();
    let turn = "2026-12-08T11:00:00.000Z";
    let m = beat(&mut rig, turn, "news of the fetched page");
    assert!(rig.ch.room_offer(&m));
    rig.sent();
    rig.event(Event::Redact(vec![heartbeat_line("main", turn)], None));
    assert!(
        rig.ch.mail.inbox.with(|i| i.get(m.n).is_some()),
        "it still waits for the terminal"
    );
    assert!(!rig.ch.room_offer(&m), "not planned in the room again");
    assert!(rig.sent().is_empty());
}

/// Found by review: a removal of only a reminder's note (the reminder kept) names the
/// reminder's number, and that withheld the reminder from the room when it fell due.
#[test]
fn a_kept_reminder_whose_note_was_forgotten_still_reaches_the_room() {
    let mut rig = served();
    rig.event(Event::Redact(vec!["remind 7".into()], None));
    let (m, saved) = rig.ch.mail.inbox.with(|i| {
        i.add(
            "main",
            Kind::Reminder,
            vec![Piece::Text("water the plants".into())],
            Label::new(DataClass::Private, false),
            false,
            Some(conversation::inbox::reminder_source(7)),
        )
    });
    saved.unwrap();
    assert!(rig.ch.room_offer(&m), "the room gets it");
}
