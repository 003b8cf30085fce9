//! `/allow N` from the phone for a reminder the model asked for while the context was
//! untrusted: the confirmation is loopd's words, so it arrives as an `m.notice` like every
//! other answer of loopd's, and forgetting the reminder's text redacts that confirmation
//! too (docs/matrix.md, 'Replies out' and 'Forgetting').

use super::{said, Boxed};
use crate::loopd::write_session;
use crate::remind::held::{head, page};
use crate::support::standin::{text, tool_calls};
use serde_json::Value;

/// boxmaker's messages in the room whose content holds `needle`.
fn showing(b: &Boxed, needle: &str) -> Vec<Value> {
    b.events()
        .into_iter()
        .filter(|e| e["type"] == "m.room.message" && e["content"].to_string().contains(needle))
        .collect()
}

/// A room whose session holds a fetched page, where the model asked for a reminder that
/// was held and the phone allowed it: the confirmation event, once it arrived.
fn allowed_from_the_phone(test: &str) -> Option<(Boxed, Value)> {
    let mut b = Boxed::start(test, "")?;
    // The owner makes boxmaker a moderator, so it may redact the owner's events too.
    b.make_moderator();
    write_session(&b.l.fx, "main", &head(), &[page()]);
    b.l.llama.push(tool_calls(&[(
        "c1",
        "remind",
        r#"{"when":"in 2h","text":"water the plants"}"#,
    )]));
    b.l.llama.push(text(&["I asked."]));
    b.say("what did the page say?");
    b.wait("the model's reply", |e| said(e).1 == "I asked.");
    let refused = showing(&b, "remind refused");
    assert_eq!(refused.len(), 1, "{:#?}", b.events());
    assert_eq!(said(&refused[0]).0, "m.notice");
    b.say("/allow 5");
    let set = b.wait("the confirmation", |e| {
        said(e).1.contains("reminder 1 set for")
    });
    Some((b, set))
}

/// The owner forgets the reminder's text: listed at the terminal, removed from the room.
fn forget_the_text(b: &mut Boxed) {
    // Listed at the terminal, removed from the room: a removal asked for in a room works
    // on the list last shown for its session, wherever it was shown.
    let mut c = b.l.client();
    let list = c.ask("/forget \"water the plants\"").join("\n");
    assert!(list.contains("water the plants"), "{list}");
    drop(c);
    b.say("/forget all");
    b.wait("the removal's answer", |e| {
        said(e).1.contains("redaction_retention_period")
    });
    b.wait_until("the reminder's text gone from the room", |b| {
        showing(b, "water the plants").is_empty()
    });
}

/// Regression: the confirmation of a reminder set by `/allow N` in a room went out as the
/// model's text (`m.text`), and `/forget` of the reminder's text left it in the room.
#[test]
fn a_held_reminder_allowed_from_the_phone_is_confirmed_in_a_notice_and_forgotten_with_it() {
    let Some((mut b, set)) = allowed_from_the_phone("allow") else {
        return;
    };
    let (kind, body) = said(&set);
    assert_eq!(kind, "m.notice", "{body}");
    assert!(body.ends_with(": water the plants"), "{body}");
    assert!(set["content"].get("format").is_none(), "{set:#?}");
    forget_the_text(&mut b);
}

/// Regression: with the reminder already gone from the book (cancelled), nothing but the
/// session's records held its text, and `/forget` left `/allow N`'s confirmation in the
/// room: the records `/allow N` wrote now name the command whose events go with them.
#[test]
fn the_confirmation_of_an_allowed_reminder_goes_with_its_records_after_a_cancel() {
    let Some((mut b, _)) = allowed_from_the_phone("allow-cancel") else {
        return;
    };
    let mut c = b.l.client();
    let cancelled = c.ask("/remind cancel 1").join("\n");
    assert!(cancelled.contains("cancel"), "{cancelled}");
    drop(c);
    forget_the_text(&mut b);
}
