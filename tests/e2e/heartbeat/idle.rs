//! A heartbeat never interrupts or queues behind a turn: one due while a turn runs waits
//! for it, then runs.

use super::{beat_text, is_beat, start, EVERY};
use crate::support::standin::{text, Gate, Reply};

#[test]
fn a_heartbeat_never_starts_while_a_turn_runs_and_runs_after_it() {
    let gate = Gate::new();
    let lp = start(EVERY, "", |llama| {
        llama.push_for(
            "hold me",
            Reply::Held(gate.clone(), Box::new(text(&["held ", "answer"]))),
        );
        llama.set_fallback(text(&["HEARTBEAT_OK"]));
    });
    let mut client = lp.client();
    client.send("hold me");
    let owner = lp.llama.wait_chat(|r| r.last() == "hold me");

    // loopd says a beat fell due while the turn ran; none reached the model meanwhile.
    lp.daemon.wait_log("heartbeat: due while a turn is running");
    let during: Vec<_> = lp
        .llama
        .chats()
        .into_iter()
        .filter(|r| is_beat(&lp, r) && r.first_byte > owner.first_byte)
        .collect();
    assert!(during.is_empty(), "a heartbeat started during a turn");

    gate.open();
    assert_eq!(client.block(), ["held answer"]);
    lp.llama
        .wait_chat(|r| is_beat(&lp, r) && r.first_byte > owner.first_byte);
    lp.daemon.wait_log("heartbeat: nothing to report");

    // In the log the owner's turn is whole: no heartbeat record inside it.
    let records = lp.records("main");
    let at = records
        .iter()
        .position(|r| r["content"] == "hold me")
        .unwrap();
    assert_eq!(records[at]["origin"], "owner");
    assert_eq!(records[at + 1]["type"], "assistant");
    assert_eq!(records[at + 1]["content"], "held answer");
    assert_eq!(records[at + 2]["type"], "usage");
    let next_user = records[at + 1..]
        .iter()
        .find(|r| r["type"] == "user")
        .unwrap();
    assert_eq!(next_user["origin"], "heartbeat");
    assert_eq!(next_user["content"], beat_text(&lp));
}
