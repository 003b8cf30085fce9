//! What a heartbeat's answer comes to: an acknowledgement is logged and not delivered;
//! news goes to every client of the session as a block of its own, and a client inside a
//! reply block gets it after that block.

use super::{beat_text, is_beat, start, EVERY};
use crate::support::standin::{text, tool_calls, Gate, Reply};

#[test]
fn an_ack_is_logged_but_not_delivered() {
    let lp = start(EVERY, "", |llama| {
        llama.set_fallback(text(&["HEARTBEAT_OK"]))
    });
    let mut client = lp.client();
    let first = lp.llama.wait_chats(1).remove(0);
    assert!(is_beat(&lp, &first), "{}", first.body);
    let body = first.json();
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages.last().unwrap()["role"], "user");
    lp.daemon.wait_log("heartbeat: nothing to report");

    let records = lp.records("main");
    assert_eq!(records[0]["type"], "user");
    assert_eq!(records[0]["origin"], "heartbeat");
    assert_eq!(records[0]["content"], beat_text(&lp));
    assert_eq!(records[1]["type"], "assistant");
    assert_eq!(records[1]["content"], "HEARTBEAT_OK");

    // Nothing came before the answer to this line: the acknowledgement was not sent.
    assert_eq!(client.ask("/session"), ["session main"]);
}

#[test]
fn news_reaches_every_client_of_the_session_as_a_block_of_its_own() {
    let lp = start(EVERY, "", |llama| {
        for n in 1..=300 {
            llama.push(text(&["beat ", &n.to_string(), "\n.dotted line"]));
        }
    });
    let mut a = lp.client();
    let mut b = lp.client();
    let mut elsewhere = lp.client();
    let number = |block: &[String]| -> usize {
        assert_eq!(block.len(), 2, "{block:?}");
        assert_eq!(block[1], ".dotted line", "dot-stuffed and un-stuffed");
        block[0].strip_prefix("beat ").unwrap().parse().unwrap()
    };
    let (first_a, first_b) = (number(&a.block()), number(&b.block()));
    assert!(first_a >= 1 && first_b >= 1);

    // A client in another session hears no heartbeats from `main`.
    elsewhere.send("/session other");
    loop {
        let block = elsewhere.block();
        if block[0].starts_with("session other") {
            break;
        }
        number(&block);
    }
    // Every beat from the next request on started after the switch; once `a` has read
    // one, `elsewhere` would have been sent it too.
    let after = lp.llama.chats().len() + 1;
    while number(&a.block()) < after {}
    elsewhere.send("/session");
    loop {
        // A beat that came while its switch was in flight was held for it, and follows
        // the switch's reply; nothing that started after the switch may.
        let block = elsewhere.block();
        if block[0].starts_with("beat ") {
            assert!(number(&block) < after, "a beat of main after the switch");
            continue;
        }
        assert_eq!(block, ["session other"]);
        break;
    }
    while number(&b.block()) < after {}

    let kinds = lp.kinds("main");
    assert!(kinds.starts_with(&["user".into(), "assistant".into(), "usage".into()]));
    assert!(!lp.session_dir("other").join("epoch-000000.jsonl").exists());
}

#[test]
fn a_client_inside_a_reply_block_gets_the_heartbeat_after_that_block() {
    let gate = Gate::new();
    let lp = start(EVERY, "", |llama| {
        llama.push(Reply::Held(gate.clone(), Box::new(text(&["News!"]))));
        llama.push_for("hello", text(&["hi ", "there"]));
        llama.set_fallback(text(&["HEARTBEAT_OK"]));
    });
    let mut waiting = lp.client();
    let mut idle = lp.client();
    let beat = lp.llama.wait_chats(1).remove(0);
    assert!(is_beat(&lp, &beat));

    // `waiting` sends a line while the beat runs: its turn queues behind the beat, so it
    // is inside a reply block when the beat's news comes. `/help`, answered on the spot,
    // shows the loop has read that line (a socket's bytes are read in arrival order).
    waiting.send("hello");
    assert_eq!(idle.ask("/help")[0].split_whitespace().next(), Some("Each"));
    gate.open();

    assert_eq!(idle.block(), ["News!"]);
    assert_eq!(waiting.block(), ["hi there"], "its own reply first");
    assert_eq!(
        waiting.block(),
        ["News!"],
        "then the news, as a block of its own"
    );
    assert_eq!(waiting.ask("/session"), ["session main"]);
}

#[test]
fn a_heartbeat_that_used_a_tool_delivers_its_activity_and_answer_and_an_ack_after_tools_does_not() {
    let lp = start(EVERY, "", |llama| {
        llama.push(tool_calls(&[("c1", "read_file", r#"{"path":"/nowhere"}"#)]));
        llama.push(text(&["Nothing at /nowhere."]));
        llama.push(tool_calls(&[("c2", "read_file", r#"{"path":"/nowhere"}"#)]));
        llama.push(text(&["HEARTBEAT_OK"]));
        llama.set_fallback(text(&["HEARTBEAT_OK"]));
    });
    let mut client = lp.client();
    let block = client.block();
    assert_eq!(block.len(), 2, "{block:?}");
    assert!(block[0].starts_with("· read_file"), "{block:?}");
    assert_eq!(block[1], "Nothing at /nowhere.");
    // The second beat used a tool too, then acknowledged: nothing more is delivered.
    lp.llama.wait_chats(5);
    lp.daemon.wait_log("heartbeat: nothing to report");
    assert_eq!(client.ask("/session"), ["session main"]);
}

/// Regression: a beat that set a reminder and then acknowledged was silent whole, so the
/// owner never saw the `· reminder N set …` line every reminder the model sets is shown
/// by; the reminder only turned up in `/remind`.
#[test]
fn a_heartbeat_that_sets_a_reminder_and_acknowledges_still_shows_the_reminder_line() {
    let lp = start(EVERY, "", |llama| {
        llama.push(tool_calls(&[(
            "c1",
            "remind",
            r#"{"when":"in 3h","text":"stretch your legs"}"#,
        )]));
        llama.push(text(&["HEARTBEAT_OK"]));
        llama.set_fallback(text(&["HEARTBEAT_OK"]));
    });
    let mut client = lp.client();
    let block = client.block();
    assert_eq!(block.len(), 1, "only the reminder's line: {block:?}");
    assert!(block[0].starts_with("· reminder 1 set for "), "{block:?}");
    assert!(block[0].contains("stretch your legs"), "{block:?}");
    lp.daemon.wait_log("heartbeat: nothing to report");
    assert_eq!(client.ask("/session"), ["session main"]);
}
