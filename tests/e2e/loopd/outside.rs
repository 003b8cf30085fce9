//! Session files changed by something other than loopd while it runs: a log replaced the
//! way an editor does it, a stray log in the way of a new epoch, a session directory that
//! is a symbolic link (docs/sessions.md). Each is noticed, said in the journal, and never
//! costs an acknowledged record or replays what is not the epoch's.

use super::{records_in, Loopd};
use crate::support::standin::text;

/// Regression: a log replaced on disk while loopd ran (`cp L L.new; sed -i … L.new; mv
/// L.new L`) kept loopd appending to the old, deleted file through the descriptor it
/// held: the next turn was answered and none of its records reached the log at the path.
#[test]
fn a_log_replaced_on_disk_while_loopd_runs_keeps_every_later_turn() {
    let l = Loopd::start("");
    let mut c = l.client();
    l.llama.push(text(&["one"]));
    assert_eq!(c.ask("first"), ["one"]);
    let log = l.session_dir("main").join("epoch-000000.jsonl");
    let edited = log.with_extension("jsonl.new");
    std::fs::copy(&log, &edited).unwrap();
    let text_now = std::fs::read_to_string(&edited).unwrap();
    std::fs::write(
        &edited,
        text_now.replacen("\"first\"", "\"first, edited\"", 1),
    )
    .unwrap();
    std::fs::rename(&edited, &log).unwrap();
    l.llama.push(text(&["two"]));
    assert_eq!(c.ask("second after edit"), ["two"]);
    let users: Vec<_> = records_in(&log)
        .into_iter()
        .filter(|r| r["type"] == "user")
        .map(|r| r["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(users, ["first, edited", "second after edit"]);
    assert_eq!(l.kinds("main").len(), 6, "both turns whole on disk");
    let line = l
        .daemon
        .wait_log("the log changed on disk while loopd held it open");
    assert!(line.contains(&log.display().to_string()), "{line}");
    // The second turn's prompt replayed the edit.
    let sent = l.llama.wait_chats(2)[1].json().to_string();
    assert!(sent.contains("first, edited"), "{sent}");
}
