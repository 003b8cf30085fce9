//! Honcho reporting from the real loopd: every finished owner turn reaches Honcho once and
//! in order, across a `kill -9` between Honcho accepting a batch and loopd storing its
//! cursor, across a `kill -9` during a post whose create Honcho commits late, across an
//! outage of Honcho and a stretch of 401s; a fixed token is used at once after a SIGHUP,
//! and `/status` says what waits and why; heartbeat turns are never reported; names
//! Honcho would refuse are named at start.

use super::{start, start_with, EVERY};
use crate::loopd::Loopd;
use crate::support::standin::{text, Standin};
use crate::support::Daemon;
use nix::sys::signal::Signal;
use serde_json::json;
use standins::honcho::{Fault, Standin as Honcho, State};
use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::time::Duration;

/// The commit window loopd waits out in these tests (the test hook's), and how late the
/// stand-in commits a create: inside it, as Honcho's own timeouts keep a create inside
/// `COMMIT_WINDOW`.
const WINDOW_MS: &str = "4000";
const LATE: Duration = Duration::from_secs(2);

fn short_window(cmd: &mut Command) {
    cmd.env("BOXMAKER_TEST_HONCHO_COMMIT_WINDOW_MS", WINDOW_MS);
}

/// The stand-in's messages as (peer, content), in the order Honcho stored them.
fn said(st: &State) -> Vec<(String, String)> {
    st.messages
        .iter()
        .map(|m| (m.peer_id.clone(), m.content.clone()))
        .collect()
}

fn turns(n: usize) -> Vec<(String, String)> {
    (1..=n)
        .flat_map(|i| {
            [
                ("owner".to_string(), format!("question {i}")),
                ("assistant".to_string(), format!("answer {i}")),
            ]
        })
        .collect()
}

#[test]
fn every_owner_turn_is_reported_once_in_order_across_a_kill_and_an_outage() {
    let mut honcho = Honcho::start();
    let tables = format!("[honcho]\nurl = {:?}\n", honcho.url());
    let script = |llama: &Standin| {
        for i in 1..=4 {
            llama.push_for(&format!("question {i}"), text(&[&format!("answer {i}")]));
        }
        llama.set_fallback(text(&["HEARTBEAT_OK"]));
    };
    // First life, armed to abort right after Honcho accepts a batch: the kill -9 between
    // the post and the cursor write.
    let mut lp = start_with(EVERY, &tables, script, |cmd| {
        cmd.env("BOXMAKER_TEST_HONCHO_ABORT_AFTER_POST", "1");
    });
    // The answer may or may not reach the client before the abort; the log has it.
    let mut client = lp.client();
    client.send("question 1");
    let status = lp.daemon.wait();
    assert_eq!(status.signal(), Some(libc::SIGABRT), "{status:?}");
    honcho.with(|st| assert_eq!(said(st), turns(1)));
    // The cursor, if heartbeats moved it at all, is not past the batch Honcho took.
    let question = offset_of(&lp, "question 1");
    let cursor = lp.fx.state_dir.join("honcho").join("main.cursor");
    if let Ok(text) = std::fs::read_to_string(&cursor) {
        let c: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(c["offset"].as_u64().unwrap() <= question, "{text}");
    }

    // Second life, during an outage: turns are answered as ever, reports wait.
    honcho.down();
    let mut cmd = Daemon::command("loopd", &lp.fx);
    short_window(&mut cmd);
    lp.daemon = Daemon::spawn(cmd, &lp.fx);
    lp.daemon.ready();
    lp.daemon
        .wait_log("honcho: session main: reports held back");
    let mut client = lp.client();
    assert_eq!(client.ask("question 2"), ["answer 2"]);
    assert_eq!(client.ask("question 3"), ["answer 3"]);
    lp.daemon.wait_log("heartbeat: nothing to report");

    // Honcho is back: the rest goes out, the batch it already had is not sent again.
    honcho.up();
    honcho.wait(|st| st.messages.len() >= 6);
    assert_eq!(client.ask("question 4"), ["answer 4"]);
    honcho.wait(|st| st.messages.len() >= 8);
    honcho.with(|st| {
        assert_eq!(
            said(st),
            turns(4),
            "each owner turn once, in order, and no heartbeat"
        );
        let mut ids: Vec<&str> = st
            .messages
            .iter()
            .map(|m| m.metadata["boxmaker_id"].as_str().unwrap())
            .collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 8);
    });
    let records = lp.records("main");
    assert!(records.iter().any(|r| r["origin"] == "heartbeat"));
}

/// No heartbeats: only the owner's turns run.
const OFF: &str = "[heartbeat]\nevery_s = 0\n";

/// Regression: after a `kill -9` mid-post, the new loopd asked Honcho for its newest
/// message, got an older one (Honcho had not committed the create yet: its list takes no
/// lock) and posted the batch again; Honcho then committed both, for good.
#[test]
fn a_kill_during_a_post_whose_create_commits_late_leaves_each_message_once() {
    let honcho = Honcho::start();
    honcho.with(|st| st.post_faults.push_back(Fault::LateCommit(LATE)));
    let tables = format!("[honcho]\nurl = {:?}\n", honcho.url());
    let mut lp = start_with(
        OFF,
        &tables,
        |llama| {
            for i in 1..=2 {
                llama.push_for(&format!("question {i}"), text(&[&format!("answer {i}")]));
            }
        },
        short_window,
    );
    let mut client = lp.client();
    assert_eq!(client.ask("question 1"), ["answer 1"]);
    honcho.wait(|st| st.creating == 1);
    lp.daemon.signal(Signal::SIGKILL);
    lp.daemon.wait();
    let mut cmd = Daemon::command("loopd", &lp.fx);
    short_window(&mut cmd);
    lp.daemon = Daemon::spawn(cmd, &lp.fx);
    lp.daemon.ready();
    lp.daemon
        .wait_log("Honcho already holds 2 of the 2 messages");
    let mut client = lp.client();
    assert_eq!(client.ask("question 2"), ["answer 2"]);
    honcho.wait(|st| st.messages.len() >= 4 && st.creating == 0);
    lp.settle();
    honcho.with(|st| {
        assert_eq!(st.duplicates(), vec![], "each message once");
        assert_eq!(said(st), turns(2));
    });
}

/// Regression: during a 401 period `/status` said only how many records waited, and a
/// fixed token file was used only at the next backoff try (up to 300 s later), a SIGHUP
/// with `[honcho]` unchanged changing nothing; and it said only "a detail message of 11
/// bytes" where Honcho had said which fix it needs. Now `/status` says what waits, since
/// when and why (Honcho's own fixed detail, with what to do; anything else by kind), and
/// the fixed token goes out at once.
#[test]
fn status_tells_a_401_period_and_a_fixed_token_is_used_at_once_after_sighup() {
    let honcho = Honcho::start();
    honcho.with(|st| st.tokens = vec![("good-token".into(), None)]);
    let fx_dir = tempfile::tempdir().unwrap();
    let token = fx_dir.path().join("honcho.token");
    std::fs::write(&token, "expired-token\n").unwrap();
    let tables = format!(
        "[honcho]\nurl = {:?}\ntoken_file = {:?}\n",
        honcho.url(),
        token.display().to_string()
    );
    let lp = start(OFF, &tables, |llama| {
        llama.push_for("question 1", text(&["answer 1"]));
    });
    let mut client = lp.client();
    assert_eq!(client.ask("question 1"), ["answer 1"]);
    lp.daemon.wait_log("honcho answered 401");
    let status = client.ask("/status").join("\n");
    assert!(
        status.contains("honcho: 2 messages waiting, held back for"),
        "{status}"
    );
    assert!(
        status.contains(
            "honcho answered 401 (\"Invalid JWT\": honcho.token_file holds a token this server did not sign)"
        ),
        "{status}"
    );
    std::fs::write(&token, "good-token\n").unwrap();
    lp.daemon.signal(Signal::SIGHUP);
    honcho.wait(|st| st.messages.len() >= 2);
    lp.daemon.wait_log("reports go out again");
    honcho.with(|st| assert_eq!(said(st), turns(1)));
    let status = client.ask("/status").join("\n");
    assert!(status.contains("honcho: reporting"), "{status}");
}

/// Regression: 401 was taken as "refused for good", so an expired or rotated token lost
/// every turn made until it was fixed.
#[test]
fn a_honcho_answering_401_for_a_while_gets_every_turn_made_meanwhile_with_one_warning() {
    let honcho = Honcho::start();
    honcho.with(|st| st.post_faults.extend([Fault::Status(401); 2]));
    let tables = format!("[honcho]\nurl = {:?}\n", honcho.url());
    let lp = start(OFF, &tables, |llama| {
        for i in 1..=3 {
            llama.push_for(&format!("question {i}"), text(&[&format!("answer {i}")]));
        }
    });
    let mut client = lp.client();
    assert_eq!(client.ask("question 1"), ["answer 1"]);
    lp.daemon.wait_log("honcho answered 401");
    // Turns made while Honcho refuses.
    assert_eq!(client.ask("question 2"), ["answer 2"]);
    assert_eq!(client.ask("question 3"), ["answer 3"]);
    honcho.wait(|st| st.messages.len() >= 6);
    lp.daemon.wait_log("reports go out again");
    honcho.with(|st| {
        assert_eq!(said(st), turns(3), "every turn once, in order");
        assert_eq!(st.posts().iter().filter(|p| p.status == 401).count(), 2);
        assert_eq!(
            st.peers,
            vec![("assistant".to_string(), json!({ "observe_me": false }))],
            "the assistant peer is not observed by Honcho's deriver"
        );
    });
    let log = lp.daemon.log_text();
    assert_eq!(
        log.matches("reports held back").count(),
        1,
        "one warning per change, not per retry: {log}"
    );
}

/// Regression: a bad workspace name was sent as it was, and Honcho's 500 for it was
/// retried for ever. Now both daemons refuse the config at start, naming the key, as they
/// do any bad value.
#[test]
fn a_honcho_name_honcho_would_refuse_is_named_at_start() {
    let fx = crate::support::Fixture::new(
        "[honcho]\nurl = \"http://127.0.0.1:9\"\nworkspace = \"my workspace\"\n",
    );
    for name in ["loopd", "memoryd"] {
        let mut d = crate::support::Daemon::spawn(crate::support::Daemon::command(name, &fx), &fx);
        assert_eq!(d.wait().code(), Some(1));
        let line = d.wait_log("honcho.workspace");
        assert!(line.contains("\"my workspace\""), "{line}");
        assert!(line.contains("letters, digits"), "{line}");
    }
}

/// Where the `user` record holding `content` starts in `main`'s epoch 0 log.
fn offset_of(lp: &Loopd, content: &str) -> u64 {
    let log = std::fs::read_to_string(lp.session_dir("main").join("epoch-000000.jsonl")).unwrap();
    let mut at = 0;
    for line in log.split_inclusive('\n') {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        if r["type"] == "user" && r["content"] == content {
            return at;
        }
        at += line.len() as u64;
    }
    panic!("no user record {content:?} in {log}");
}

/// Regression: a post that waited at Honcho's session set-up (another transaction holding
/// the owner's peer row: Honcho takes those locks before its lock timeout applies) for
/// 60 s timed out at loopd after 30 s; the list after the commit window did not show it
/// yet, loopd posted the batch again, and both creates committed once the row was free.
#[test]
fn a_post_stalled_60_s_at_honchos_session_setup_is_stored_once() {
    let honcho = Honcho::start();
    honcho.with(|st| st.hold_setup("main", Duration::from_secs(60)));
    let tables = format!("[honcho]\nurl = {:?}\n", honcho.url());
    let lp = start_with(
        OFF,
        &tables,
        |llama| {
            for i in 1..=2 {
                llama.push_for(&format!("question {i}"), text(&[&format!("answer {i}")]));
            }
        },
        short_window,
    );
    let mut client = lp.client();
    assert_eq!(client.ask("question 1"), ["answer 1"]);
    honcho.wait(|st| st.stalled == 1);
    lp.daemon
        .wait_log("Honcho has not answered a post of 2 messages");
    let status = client.ask("/status").join("\n");
    assert!(
        status.contains("for Honcho's answer") || status.contains("has not answered"),
        "{status}"
    );
    assert_eq!(client.ask("question 2"), ["answer 2"]);
    honcho.wait(|st| st.messages.len() >= 4 && st.creating == 0);
    lp.settle();
    honcho.with(|st| {
        assert_eq!(st.duplicates(), vec![], "each message once: {:?}", st.seen);
        assert_eq!(said(st), turns(2));
        assert_eq!(st.posts().len(), 2, "{:?}", st.seen);
    });
}
