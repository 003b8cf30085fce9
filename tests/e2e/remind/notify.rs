//! `notify.command`: a message nobody received is handed to it once, on its standard
//! input; one that fails or hangs is a warning and the message still waits in the inbox;
//! one labelled above `notify.max_class`, or written while the context was untrusted, is
//! handed over as one line saying a message waits; a burst waits its turn at
//! `notify.max_running`; the command sees no descriptor but 0-2 and only the environment
//! it is given.

use super::{notes, notify_to, start};

/// Sets a reminder in `main` and moves the clock past it from a client of another
/// session, so no client of `main` receives it.
fn miss_a_reminder(lp: &crate::loopd::Loopd, text: &str) {
    let mut setter = lp.client();
    setter.ask(&format!("/remind in 1m {text}"));
    drop(setter);
    let mut elsewhere = lp.client();
    elsewhere.ask("/session other");
    elsewhere.ask("/testclock 61");
}

/// The owner connects: the first reply, then the waiting message.
fn owner_reads_it(lp: &crate::loopd::Loopd, text: &str) {
    let mut owner = lp.client();
    assert_eq!(owner.ask("/session"), ["session main"]);
    let waited = owner.block();
    assert_eq!(waited.last().unwrap(), text, "{waited:?}");
}

#[test]
fn a_message_nobody_received_is_handed_to_the_notify_command_once() {
    let dir = tempfile::tempdir().unwrap();
    let got = dir.path().join("got");
    let mut lp = start(&notify_to(&got), 0);
    miss_a_reminder(&lp, "take the bins out");
    lp.daemon
        .wait_log("notify: inbox message 1 (reminder) of session main handed to /bin/sh");
    let text = std::fs::read_to_string(&got).unwrap();
    assert!(text.starts_with("· reminder 1, due "), "{text}");
    assert!(text.ends_with("\ntake the bins out\n---\n"), "{text}");
    owner_reads_it(&lp, "take the bins out");

    // Handed over once: a restart does not run the command for it again.
    lp.restart();
    lp.settle();
    assert_eq!(std::fs::read_to_string(&got).unwrap(), text);
    assert!(!lp.daemon.log_text().contains("handed to"));
}

#[test]
fn a_failing_notify_command_is_a_warning_and_the_message_still_waits() {
    let lp = start("[notify]\ncommand = [\"/bin/sh\", \"-c\", \"exit 3\"]\n", 0);
    miss_a_reminder(&lp, "call the plumber");
    let warning = lp
        .daemon
        .wait_log("notify: /bin/sh failed (exit status: 3)");
    assert!(
        warning.contains("the message waits in the inbox"),
        "{warning}"
    );
    assert!(
        !warning.contains("plumber"),
        "no conversation text in the log"
    );
    owner_reads_it(&lp, "call the plumber");
}

#[test]
fn a_hanging_notify_command_is_killed_at_its_deadline_and_the_message_still_waits() {
    let lp = start(
        "[notify]\ncommand = [\"/bin/sh\", \"-c\", \"sleep 600\"]\ntimeout_s = 1\n",
        0,
    );
    miss_a_reminder(&lp, "feed the cat");
    lp.daemon
        .wait_log("did not finish within notify.timeout_s (1 s) and was killed");
    owner_reads_it(&lp, "feed the cat");
}

/// Regression: a message above `notify.max_class` was passed over in silence; the command
/// now gets one line saying a message waits, with its kind and time only.
#[test]
fn a_message_above_notify_max_class_is_handed_over_as_one_line_that_it_waits() {
    let dir = tempfile::tempdir().unwrap();
    let got = dir.path().join("got");
    let tables = format!(
        "{}max_class = \"public\"\n",
        notify_to(&got).replace("timeout_s = 20\n", "")
    );
    let lp = start(&tables, 0);
    miss_a_reminder(&lp, "the door code is 4471");
    lp.daemon
        .wait_log("only a line saying it waits is handed over");
    lp.daemon
        .wait_log("notify: inbox message 1 (reminder) of session main handed to /bin/sh");
    owner_reads_it(&lp, "the door code is 4471");
    let text = std::fs::read_to_string(&got).unwrap();
    assert!(
        text.starts_with("· a reminder message from ")
            && text.ends_with(" waits in the inbox\n---\n"),
        "{text}"
    );
    assert_eq!(
        text.lines().count(),
        2,
        "one line and the command's own marker"
    );
    let notes = notes(&lp, "main");
    assert!(
        notes.iter().any(|n| n.starts_with("inbox message 1 (reminder): notify.command got only a line saying it waits: it is private and notify.max_class is public")),
        "{notes:?}"
    );
}

/// Regression: a reminder that fell due while its session's only client waited on a
/// reply was held for the end of that block; the client left first, and the reminder
/// never reached the notify command, and the next connection got it marked `(again)`
/// though nobody had seen it.
#[test]
fn a_reminder_held_for_a_client_that_leaves_mid_turn_goes_to_notify_and_comes_as_new() {
    use crate::support::standin::{text, Gate, Reply};
    let dir = tempfile::tempdir().unwrap();
    let got = dir.path().join("got");
    let lp = start(&notify_to(&got), 0);
    let mut owner = lp.client();
    owner.ask("/remind in 1m ring the garage");
    // Switched before the turn starts: `/session` waits for the worker.
    let mut elsewhere = lp.client();
    elsewhere.ask("/session other");
    let gate = Gate::new();
    lp.llama
        .push(Reply::Held(gate.clone(), Box::new(text(&["too late"]))));
    owner.send("a question the model is slow on");
    lp.llama.wait_chats(1);
    elsewhere.ask("/testclock 61");
    lp.daemon
        .wait_log("reminder 1 delivered: to 1 connected clients");
    // Gone for good: loopd learns it when the reply cannot be written.
    drop(owner);
    gate.open();
    lp.daemon
        .wait_log("notify: inbox message 1 (reminder) of session main handed to /bin/sh");
    let text = std::fs::read_to_string(&got).unwrap();
    assert!(text.contains("ring the garage"), "{text}");
    assert!(!text.contains("(again)"), "{text}");
    let mut next = lp.client();
    next.ask("/session");
    let waited = next.block();
    assert!(
        waited[0].starts_with("· while you were away: reminder at "),
        "{waited:?}"
    );
    assert!(!waited[0].contains("(again)"), "nobody saw it: {waited:?}");
    assert_eq!(waited.last().unwrap(), "ring the garage");
}
