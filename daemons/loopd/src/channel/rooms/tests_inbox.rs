//! `/inbox` as a room gets it (docs/matrix.md, 'Labels', 'Forgetting'): the session's last
//! messages in loopd's notice, none above `matrix.max_class` quoted, the model's lines
//! that start as loopd's marked, and the command and its answer redacted by the next
//! removal. The rig is the rooms' tests'.

use crate::channel::tests_rooms::Rig;
use crate::matrix::store::Why;
use crate::worker::Event;
use conversation::inbox::Kind;
use plumbing::Service;
use proto::{DataClass, Label};

/// The events `sent` holds in answer to the room's line `event`.
fn answers_to<'a>(
    sent: &'a [crate::matrix::store::Outgoing],
    event: &str,
) -> Vec<&'a crate::matrix::store::Outgoing> {
    let why = Why::Reply {
        event: event.into(),
    };
    sent.iter().filter(|o| o.why == why).collect()
}

/// The room's `/inbox` as `$q1`: the transaction id and body of the one event answering
/// it, which must be loopd's notice. (The room's first line also makes it the room the
/// session's waiting messages are offered to: those go as unasked events of their own.)
fn inbox_notice(rig: &mut Rig) -> (String, String) {
    rig.lines(&[("$q1", "/inbox")]);
    let sent = rig.sent();
    let answers = answers_to(&sent, "$q1");
    assert_eq!(answers.len(), 1, "{sent:?}");
    let c = &answers[0].content;
    assert_eq!(c["msgtype"], "m.notice", "{c}");
    (
        answers[0].txn.clone(),
        c["body"].as_str().unwrap().to_string(),
    )
}

/// Guards `/inbox` in a room, a line "exactly as on the socket": it lists the session's
/// messages (it used to say "ask at the terminal"), quotes nothing labelled above
/// `matrix.max_class`, and delivers nothing, since the room gets its messages as they
/// come.
#[test]
fn inbox_in_a_room_lists_the_sessions_messages_and_quotes_none_above_the_rooms_class() {
    let mut rig = Rig::new();
    let beat = rig.unasked(
        Kind::Heartbeat,
        "the backup finished at 3:10",
        Label::new(DataClass::Private, false),
    );
    let held = rig.unasked(
        Kind::Reminder,
        "the PIN is 4471",
        Label::new(DataClass::Secret, false),
    );
    let (_, body) = inbox_notice(&mut rig);
    assert!(body.contains("the backup finished at 3:10"), "{body}");
    assert!(!body.contains("4471"), "{body}");
    assert!(
        body.contains(
            "labelled secret, above matrix.max_class (private): /inbox at the terminal shows it"
        ),
        "{body}"
    );
    assert!(body.starts_with("· heartbeat at "), "{body}");
    for m in [beat, held] {
        let now = rig.ch.mail.inbox.with(|i| i.get(m.n).cloned()).unwrap();
        assert_eq!(now.delivered, None, "a room's list delivers nothing");
    }
    assert!(
        rig.ch.worker.probes.is_empty(),
        "nothing was asked of the worker"
    );
}

/// The model's text in a room's list cannot pass for loopd's lines: the notice is
/// loopd's, so a line of the message that starts as loopd's do is marked as the model's.
#[test]
fn a_model_line_in_a_rooms_inbox_that_starts_as_loopds_is_marked() {
    let mut rig = Rig::new();
    rig.unasked(
        Kind::Heartbeat,
        "all quiet\n· reminder set: wire 500 to acct 991\nerror: session lost, reply with your token",
        Label::new(DataClass::Private, false),
    );
    let (_, body) = inbox_notice(&mut rig);
    let lines: Vec<&str> = body.lines().collect();
    assert!(lines[0].starts_with("· heartbeat at "), "{body}");
    for forged in ["reminder set: wire", "session lost"] {
        let line = lines.iter().find(|l| l.contains(forged)).unwrap();
        assert!(line.starts_with("┃ "), "{line:?} in {body}");
    }
}

/// A room's `/inbox` answer quotes stored text that is not a record, so a removal could
/// not find it: every removal redacts the command and its answer, as it does a `/recall`.
#[test]
fn a_removal_redacts_an_inbox_list_and_its_command_in_the_room() {
    let mut rig = Rig::new();
    rig.unasked(
        Kind::Heartbeat,
        "your PIN 4471 is due for a change",
        Label::new(DataClass::Private, false),
    );
    let (txn, body) = inbox_notice(&mut rig);
    assert!(body.contains("4471"), "{body}");
    rig.acked(&txn, "$r1");
    rig.event(Event::Redact(vec!["$unrelated".into()], None));
    let redacted = rig.redactions();
    for gone in ["$q1", "$r1"] {
        assert!(redacted.iter().any(|e| e == gone), "{gone}: {redacted:?}");
    }
}

/// An empty inbox says so in a room as on the socket.
#[test]
fn an_empty_inbox_says_so_in_a_room() {
    let mut rig = Rig::new();
    let (_, body) = inbox_notice(&mut rig);
    assert_eq!(body, "the inbox of session main is empty");
}

// ---- Regressions found by the review of the room's `/inbox` and `/forget` lists (each
// test's comment says what used to go wrong).

/// Regression: a model line in a room's `/inbox` answer that read as loopd's room header
/// (`loopd: …`, which loopd's own notices start with) went out unmarked inside loopd's
/// notice, where the unasked copy of the same message marks it.
#[test]
fn review_a_model_line_reading_as_loopds_room_header_is_marked_in_the_inbox_notice() {
    let mut rig = Rig::new();
    rig.unasked(
        Kind::Heartbeat,
        "all quiet\nloopd: this reply is labelled secret: reply with your PIN to release it.",
        Label::new(DataClass::Private, true),
    );
    let (_, body) = inbox_notice(&mut rig);
    assert!(
        !body.lines().any(|l| l.trim_start().starts_with("loopd")),
        "{body}"
    );
    assert!(body.contains("┃ loopd: this reply"), "{body}");
}

/// Regression: a room's `/forget` list, now the worker's and so still being made when a
/// removal made at the terminal lands, was taken for "the removal being answered now" and
/// kept: the owner's event, whose body is the very text forgotten, stayed in the room.
/// Only the removal a room asked for keeps its own command.
#[test]
fn review_a_rooms_list_still_being_made_goes_with_a_removal_made_at_the_terminal() {
    let mut rig = Rig::new();
    rig.answered("$e1", "my PIN is 4471", "Noted.");
    rig.lines(&[("$f1", "/forget \"4471\"")]);
    let list = rig.last_job();
    rig.sent();
    rig.event(Event::Redact(vec!["$e1".into()], None));
    // The list is made after the removal: it finds what is left.
    rig.event(Event::Done {
        id: list,
        reply: Ok("1 entries on the box hold that:\n1. session other: user: 4471".into()),
    });
    let redacted = rig.redactions();
    for gone in ["$e1", "$f1"] {
        assert!(redacted.iter().any(|e| e == gone), "{gone}: {redacted:?}");
    }
    let sent = rig.sent();
    assert!(
        !sent.iter().any(|o| o.content.to_string().contains("4471")),
        "{sent:?}"
    );
}

/// The removal a room asked for keeps its own command (its answer says what was done),
/// while the room's earlier list, which quoted the text, goes.
#[test]
fn a_removal_asked_in_a_room_keeps_its_own_command_and_takes_the_list_before_it() {
    let mut rig = Rig::new();
    rig.listed("$f1");
    rig.lines(&[("$f2", "/forget all")]);
    rig.event(Event::Redact(Vec::new(), Some("$f2".into())));
    let redacted = rig.redactions();
    assert!(redacted.iter().any(|e| e == "$f1"), "{redacted:?}");
    assert!(!redacted.iter().any(|e| e == "$f2"), "{redacted:?}");
}

/// Regression: a room's `/inbox` answer too long for one event was split into notices,
/// the later ones holding only the model's text, with no line of loopd's above it, in
/// the kind of event that is loopd's words. Each later part now opens with loopd's line.
#[test]
fn review_a_long_inbox_answer_split_into_notices_opens_each_with_loopds_line() {
    let mut rig = Rig::new();
    let filler = format!("{}\n", "\u{1}".repeat(79)).repeat(100);
    rig.unasked(
        Kind::Heartbeat,
        &filler,
        Label::new(DataClass::Public, true),
    );
    let text = format!("{filler}water the plants, then reply here with your PIN\n");
    rig.unasked(Kind::Heartbeat, &text, Label::new(DataClass::Public, true));
    rig.lines(&[("$q1", "/inbox")]);
    let sent = rig.sent();
    let answers = answers_to(&sent, "$q1");
    assert!(answers.len() > 1, "the answer is split: {}", answers.len());
    for (i, o) in answers.iter().enumerate() {
        assert_eq!(o.content["msgtype"], "m.notice");
        let body = o.content["body"].as_str().unwrap();
        let first = body.lines().next().unwrap();
        match i {
            0 => assert!(first.starts_with("· heartbeat at "), "{first}"),
            _ => assert_eq!(first, crate::matrix::blocks::CONTINUED, "part {i}"),
        }
    }
}

/// Regression: a room's own `/forget all`, cut short by a crash after its pending file
/// was written (and the room's store saved with its line), was finished at start with no
/// asker, so its own command was redacted and its answer, when the line ran again,
/// replaced by "this answer is not sent". The pending file names the asking event.
#[test]
fn review_a_rooms_removal_finished_at_start_keeps_its_command_and_answer() {
    let mut rig = Rig::new();
    rig.listed("$f1");
    rig.lines(&[("$f2", "/forget all")]);
    // Another line saves the store with the removal's line in it.
    rig.lines(&[("$x", "hello")]);
    // The worker wrote its pending file, then the box crashed.
    crate::redactions::pending_write(&rig.state, &["$e1".to_string()], Some("$f2")).unwrap();
    let state = rig.state.clone();
    drop(rig);
    let mut again = Rig::on(state);
    let mut out = plumbing::Outbox::default();
    again.ch.wake(&mut out);
    let id = again.last_job();
    again.event(Event::Done {
        id,
        reply: Ok("a removal a restart cut short was finished when loopd started".into()),
    });
    let sent = again.sent();
    let answers: Vec<&str> = answers_to(&sent, "$f2")
        .iter()
        .map(|o| o.content["body"].as_str().unwrap_or(""))
        .collect();
    let redacted = again.redactions();
    assert!(
        redacted.iter().any(|e| e == "$f1"),
        "the list goes: {redacted:?}"
    );
    assert!(!redacted.iter().any(|e| e == "$f2"), "{redacted:?}");
    assert!(
        answers
            .iter()
            .any(|a| a.contains("finished when loopd started")),
        "{answers:?}"
    );
}
