//! Session files changed by something other than loopd while it runs: a log replaced the
//! way an editor does it, a stray log in the way of a new epoch, a session directory that
//! is a symbolic link (docs/sessions.md). Each is noticed, said in the journal, and never
//! costs an acknowledged record or replays what is not the epoch's.

use super::{records_in, write_config, write_session, Loopd, N_CTX};
use crate::support::standin::{text, Standin};
use crate::support::{Daemon, Fixture};
use serde_json::json;

/// The head of a hand-written epoch 0.
fn head() -> serde_json::Value {
    json!({"epoch": 0, "started": "2026-11-30T06:00:00.000Z", "system": "You are terse.",
        "tools": [], "carry": null, "carry_label": {"class": "public", "untrusted": false},
        "reason": "start", "summary_source": "model"})
}

fn user(time: &str, content: &str) -> serde_json::Value {
    json!({"type": "user", "time": time, "content": content, "origin": "owner"})
}

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

/// Regression: a stray `epoch-000001.jsonl` with no head, left alone at start, was opened
/// by `/compact` as epoch 1's log, and its line (older than epoch 1) replayed to the
/// model; and `/forget` said nothing on the box held its words.
#[test]
fn a_stray_log_past_the_current_epoch_is_set_aside_at_compaction_and_named_by_forget() {
    let mut l = Loopd::start("");
    write_session(
        &l.fx,
        "main",
        &head(),
        &[user("2026-11-30T06:00:00.000Z", "kept")],
    );
    let stray = l.session_dir("main").join("epoch-000001.jsonl");
    std::fs::write(
        &stray,
        format!("{}\n", user("2020-01-01T00:00:00.000Z", "stale line zebra")),
    )
    .unwrap();
    l.restart();
    l.daemon.wait_log("left alone");
    let mut c = l.client();
    let listed = c.ask("/forget zebra").join("\n");
    assert!(
        listed.starts_with("nothing in the files searched holds that")
            && listed.contains(&format!("{} was not searched", stray.display())),
        "{listed}"
    );
    l.llama.push(text(&["We said kept."]));
    assert!(c.ask("/compact")[0].starts_with("compacted: epoch 0 → 1"));
    let line = l.daemon.wait_log("set aside as");
    assert!(line.contains(&stray.display().to_string()), "{line}");
    l.llama.push(text(&["fine"]));
    assert_eq!(c.ask("more"), ["fine"]);
    let sent = l.llama.wait_chats(2)[1].json().to_string();
    assert!(
        !sent.contains("zebra"),
        "the stray line was replayed: {sent}"
    );
    let log = records_in(&stray);
    assert_eq!(log[0]["content"], "more", "epoch 1's own log: {log:?}");
    let listed = c.ask("/forget zebra").join("\n");
    assert!(
        listed.contains("epoch-000001.jsonl.stray-") && listed.contains("was not searched"),
        "{listed}"
    );
}

/// Regression: loopd followed a session directory that is a symbolic link, served it and
/// appended to it, while memoryd refused it; `/forget pineapple` then answered that
/// nothing on the box held the words the linked directory still held.
#[test]
fn a_session_directory_that_is_a_symbolic_link_is_refused_and_named_by_forget() {
    let fx = Fixture::new("");
    let llama = Standin::start(N_CTX);
    write_config(&fx, &llama.url, "retries = 2", "", "");
    let real = fx.dir.path().join("elsewhere").join("main");
    std::fs::create_dir_all(&real).unwrap();
    std::fs::write(real.join("epoch-000000.head.json"), head().to_string()).unwrap();
    let said = user(
        "2026-11-30T06:00:00.000Z",
        "remember the code word is pineapple",
    );
    std::fs::write(real.join("epoch-000000.jsonl"), format!("{said}\n")).unwrap();
    let sessions = fx.state_dir.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let link = sessions.join("main");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let daemon = Daemon::start("loopd", &fx);
    let l = Loopd { fx, llama, daemon };
    let mut c = l.client();
    let refused = c.ask("hello");
    assert!(
        refused[0].starts_with("error: session main: open session directory")
            && refused[0].contains(&link.display().to_string())
            && refused[0].contains("is a symbolic link; not followed"),
        "{refused:?}"
    );
    assert!(l.llama.chats().is_empty());
    assert_eq!(records_in(&real.join("epoch-000000.jsonl")).len(), 1);
    // Every other session is served.
    c.ask("/session other");
    l.llama.push(text(&["hi"]));
    assert_eq!(c.ask("hi"), ["hi"]);
    let listed = c.ask("/forget pineapple").join("\n");
    assert!(
        listed.starts_with("nothing in the sessions that could be read holds that")
            && listed.contains("session main could not be searched")
            && listed.contains("is a symbolic link; not followed"),
        "{listed}"
    );
}
