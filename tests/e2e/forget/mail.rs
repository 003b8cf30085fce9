//! `/forget` reaches the copies outside the session logs (docs/forgetting.md, 'Reminders
//! and the inbox'): a reminder in `reminders.json`, a message waiting in `inbox.json`,
//! and the notes of their setting and delivery.

use crate::remind::start;
use std::path::Path;

/// Every file under `dir` whose bytes hold `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().map(Result::unwrap) {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path)
                .map(|b| String::from_utf8_lossy(&b).contains(needle))
                .unwrap_or(false)
            {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

/// Regression: `/forget P` listed neither reminders nor inbox messages, and `/forget all`
/// left P in `reminders.json` and `inbox.json`; `/remind` and `/inbox` still showed it and
/// the reminder, once due, wrote a fresh `reminder 1 delivered: …P` note into the log.
#[test]
fn forget_removes_a_reminder_a_waiting_inbox_message_and_their_notes() {
    const P: &str = "hunter2-7731";
    let lp = start("", 0);
    let mut owner = lp.client();
    owner.ask(&format!("/remind in 1h call the bank, my password is {P}"));
    owner.ask("/remind in 2h water the plants");
    owner.ask(&format!("/remind in 1m the code is {P} again"));
    drop(owner);
    // From another session, so nobody of `main` receives reminder 3: it waits.
    let mut elsewhere = lp.client();
    elsewhere.ask("/session other");
    elsewhere.ask("/testclock 61");
    lp.daemon
        .wait_log("reminder for nobody connected; it waits in the inbox");

    let list = elsewhere.ask(&format!("/forget {P}"));
    let entry = |place: &str| list.iter().any(|l| l.contains(place));
    assert!(entry("(reminders.json, reminder 1, "), "{list:?}");
    assert!(
        entry("inbox message (waiting) (inbox.json, message 1, "),
        "{list:?}"
    );
    assert!(
        !list.iter().any(|l| l.contains("water the plants")),
        "{list:?}"
    );
    let done = elsewhere.ask("/forget all");
    assert!(
        done.iter()
            .any(|l| l == "reminders.json: 1 reminders removed (1); they will not be delivered"),
        "{done:?}"
    );
    assert!(
        done.iter()
            .any(|l| l == "inbox.json: 1 messages removed (1)"),
        "{done:?}"
    );
    // Regression: the answer told of Matrix redactions on a box with no Matrix room.
    assert!(
        !done.iter().any(|l| l.contains("Matrix")),
        "no rooms, nothing redacted: {done:?}"
    );

    assert_eq!(
        files_holding(&lp.fx.state_dir, P),
        Vec::<String>::new(),
        "nowhere on the box"
    );
    // Past every due time: the plants come, the bank never does.
    elsewhere.ask("/testclock 7200");
    lp.daemon.wait_log("reminder for nobody connected");
    let mut owner = lp.client();
    assert_eq!(owner.ask("/session"), ["session main"]);
    let came = owner.block();
    assert_eq!(came.last().unwrap(), "water the plants", "{came:?}");
    let listed = owner.ask("/remind");
    assert!(listed[0].starts_with("no reminders"), "{listed:?}");
    let inbox = owner.ask("/inbox");
    assert!(!inbox.iter().any(|l| l.contains(P)), "{inbox:?}");
    let delivered: Vec<String> = crate::remind::notes(&lp, "main")
        .into_iter()
        .filter(|n| n.contains("delivered"))
        .collect();
    assert!(!delivered.iter().any(|n| n.contains(P)), "{delivered:?}");
    assert!(
        !delivered.iter().any(|n| n.starts_with("reminder 1 ")),
        "{delivered:?}"
    );
    assert_eq!(files_holding(&lp.fx.state_dir, P), Vec::<String>::new());
    assert!(
        !lp.daemon.log_text().contains(P),
        "nor in loopd's log lines"
    );
}
