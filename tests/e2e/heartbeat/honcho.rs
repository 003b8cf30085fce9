//! Honcho reporting from the real loopd: every finished owner turn reaches Honcho once and
//! in order, across a `kill -9` between Honcho accepting a batch and loopd storing its
//! cursor, and across an outage of Honcho; heartbeat turns are never reported.

use super::{start_with, EVERY};
use crate::loopd::Loopd;
use crate::support::standin::{text, Standin};
use crate::support::Daemon;
use standins::honcho::{Standin as Honcho, State};
use std::os::unix::process::ExitStatusExt;

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
    lp.daemon = Daemon::start("loopd", &lp.fx);
    lp.daemon.wait_log("honcho: session main: report delayed");
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
