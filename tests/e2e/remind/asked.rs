//! A reminder asked for in words (docs/reminders.md, 'Asked in words'): a scripted model
//! that answers without calling the `remind` tool, as the default model with tools off
//! does, and one that calls it.

use super::start;
use crate::support::standin::{text, tool_calls};

/// loopd's line for a reminder asked in words and not set.
const UNSET: &str = "· no reminder was set; ";

/// Regression: at `scripts/run-local` (tools off) "remind me to call the plumber at 5pm
/// tomorrow" got "Please call the plumber at 5pm tomorrow." and no reminder, and nothing
/// said so: the owner walked away believing one was set.
#[test]
fn a_reminder_asked_in_words_and_not_set_gets_the_command_that_sets_it() {
    let lp = start("", 0);
    lp.llama
        .push(text(&["Please call the plumber ", "at 5pm tomorrow."]));
    let mut c = lp.client();
    let reply = c.ask("remind me to call the plumber at 5pm tomorrow");
    assert_eq!(
        reply,
        [
            "Please call the plumber at 5pm tomorrow.",
            "· no reminder was set; to set it, send: /remind tomorrow 17:00 call the plumber",
        ]
    );
    // The command is exact: sent as shown, it sets the reminder.
    let set = c.ask("/remind tomorrow 17:00 call the plumber");
    assert!(set[0].starts_with("reminder 1 set for "), "{set:?}");
    assert!(
        c.ask("/remind")[0].ends_with("call the plumber"),
        "the reminder is not listed"
    );
}

/// A model that did call `remind`: its own `· ` line says so, and nothing more is added.
#[test]
fn a_reminder_the_model_set_gets_no_second_line() {
    let lp = start("", 0);
    lp.llama.push(tool_calls(&[(
        "c1",
        "remind",
        r#"{"when":"tomorrow 17:00","text":"call the plumber"}"#,
    )]));
    lp.llama.push(text(&["Done."]));
    let reply = lp
        .client()
        .ask("remind me to call the plumber at 5pm tomorrow");
    assert!(
        reply.iter().any(|l| l.starts_with("· reminder 1 set for ")),
        "{reply:?}"
    );
    assert!(!reply.iter().any(|l| l.starts_with(UNSET)), "{reply:?}");
}

/// A question about memory is not a reminder: no line.
#[test]
fn a_question_about_what_was_said_gets_no_reminder_line() {
    let lp = start("", 0);
    lp.llama
        .push(text(&["You said the plumber comes on Friday."]));
    let reply = lp.client().ask("remind me what we said about the plumber");
    assert_eq!(reply, ["You said the plumber comes on Friday."]);
}
