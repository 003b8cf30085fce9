//! Crashes and outages: loopd killed at each step between taking a line and the
//! homeserver acknowledging its answer, the homeserver stopped and started again, a
//! revoked token.

use super::{said, Boxed};
use crate::matrix::WITHIN;
use crate::support::standin::text;
use serde_json::Value;

/// Where loopd is aborted, in the order a line passes them.
const POINTS: &[&str] = &[
    "matrix-lines-stored",
    "after-user-append",
    "matrix-reply-planned",
    "matrix-acknowledged",
];

/// Times each point is tried in one run of the test: every point, each crash a
/// restart of its own, on one room and one log (0 lost and 0 duplicated is checked
/// after each). `BOXMAKER_TEST_MATRIX_CRASH_ROUNDS` asks for more (25 is 100 crashes).
const ROUNDS: usize = 3;

fn rounds() -> usize {
    std::env::var("BOXMAKER_TEST_MATRIX_CRASH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ROUNDS)
}

fn user_records(b: &Boxed) -> Vec<Value> {
    b.l.records("main")
        .into_iter()
        .filter(|r| r["type"] == "user")
        .collect()
}

#[test]
fn a_line_cut_short_by_a_crash_at_any_step_is_answered_once_after_the_restart() {
    let Some(mut b) = Boxed::start("crash", "") else {
        return;
    };
    let runs: Vec<&str> = (0..rounds()).flat_map(|_| POINTS.iter().copied()).collect();
    for (i, point) in runs.iter().enumerate() {
        b.restart_with(&[("BOXMAKER_TEST_ABORT_AT", point)]);
        let answer = format!("answer {i}");
        b.l.llama.push(text(&[&answer]));
        let ev = b.say(&format!("question {i}"));
        let status = b.l.daemon.wait_within(WITHIN);
        assert!(!status.success(), "{point}: loopd did not abort");
        b.restart_with(&[]);
        // The room's newest events hold the answer once (the phone reads the newest
        // 100, so a long run checks each answer, not a running count).
        let me = b.cast.boxmaker.user_id.clone();
        b.wait(point, |e| e["sender"] == me.as_str() && said(e).1 == answer);
        let copies: Vec<Value> = b
            .box_says()
            .into_iter()
            .filter(|e| said(e).1 == answer)
            .collect();
        assert_eq!(copies.len(), 1, "{point}: {copies:#?}");
        assert_eq!(said(&copies[0]).0, "m.text", "{point}");
        let users = user_records(&b);
        assert_eq!(users.len(), i + 1, "{point}: {users:#?}");
        assert_eq!(users[i]["event"], ev.as_str(), "{point}");
        assert_eq!(
            b.l.llama.chats().len(),
            i + 1,
            "{point}: the model was asked again"
        );
    }
    // Nothing more comes: the next line's answer is the newest event.
    b.l.llama.push(text(&["the end"]));
    b.say("last");
    let me = b.cast.boxmaker.user_id.clone();
    b.wait("the last answer", |e| {
        e["sender"] == me.as_str() && said(e).1 == "the end"
    });
    let last = b.box_says();
    assert_eq!(said(last.last().unwrap()).1, "the end");
    // The whole room: every answer exactly once, in order.
    let answers: Vec<String> = b
        .history()
        .iter()
        .filter(|e| e["sender"] == me.as_str() && said(e).1.starts_with("answer "))
        .map(|e| said(e).1)
        .collect();
    let want: Vec<String> = (0..runs.len()).map(|i| format!("answer {i}")).collect();
    assert_eq!(answers, want);
}

#[test]
fn a_revoked_token_is_said_once_and_a_new_one_is_picked_up_from_its_file() {
    let Some(mut b) = Boxed::start("revoked", "") else {
        return;
    };
    b.syn.client(&b.cast.boxmaker).logout().unwrap();
    b.l.daemon.wait_log("refused the access token");
    let mut c = b.l.client();
    let status = c.ask("/status").join("\n");
    assert!(status.contains("refused the access token"), "{status}");
    assert!(!status.contains(&b.cast.boxmaker.token), "{status}");
    // What the owner writes meanwhile is taken once a new token is in the file.
    b.l.llama.push(text(&["welcome back"]));
    b.say("are you there?");
    let token = b.syn.login(&b.cast.boxmaker);
    std::fs::write(&b.token_file, format!("{token}\n")).unwrap();
    let got = b.wait_box("the reply with the new token", 1);
    assert_eq!(said(&got[0]), ("m.text".into(), "welcome back".into()));
    let log = b.l.daemon.log_text();
    assert_eq!(
        log.matches("refused the access token").count(),
        1,
        "one journal line for the refusal, not a loop:\n{log}"
    );
    assert!(!log.contains(&token) && !log.contains(&b.cast.boxmaker.token));
}

#[test]
fn a_sighup_reads_the_token_file_again() {
    let Some(mut b) = Boxed::start("hup", "") else {
        return;
    };
    b.syn.client(&b.cast.boxmaker).logout().unwrap();
    b.l.daemon.wait_log("refused the access token");
    // The new token goes in with the old file's time, so only the SIGHUP says it changed.
    let before = std::fs::metadata(&b.token_file)
        .unwrap()
        .modified()
        .unwrap();
    let token = b.syn.login(&b.cast.boxmaker);
    std::fs::write(&b.token_file, format!("{token}\n")).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&b.token_file)
        .unwrap()
        .set_modified(before)
        .unwrap();
    b.l.daemon.signal(nix::sys::signal::Signal::SIGHUP);
    b.l.llama.push(text(&["heard you"]));
    b.say("after the hangup");
    let got = b.wait_box("the reply after SIGHUP", 1);
    assert_eq!(said(&got[0]), ("m.text".into(), "heard you".into()));
}

/// Regression: the notice that URL previews could not be turned off was sent again at
/// each start, so "once" rested on the homeserver remembering its transaction id (a day,
/// and for one device); and the device the token belongs to was not kept, so a token for
/// another device passed unsaid. Both are kept in loopd's state now.
#[test]
fn after_a_new_devices_token_and_a_restart_the_previews_notice_is_not_sent_again() {
    let Some(mut b) = Boxed::start("new-device", "") else {
        return;
    };
    let position = b.l.fx.state_dir.join("matrix/position.json");
    b.wait_until("the room kept as set up", |_| {
        std::fs::read_to_string(&position).is_ok_and(|p| p.contains("\"previews\":[\"!"))
    });
    b.syn.client(&b.cast.boxmaker).logout().unwrap();
    let token = b.syn.login(&b.cast.boxmaker);
    std::fs::write(&b.token_file, format!("{token}\n")).unwrap();
    b.restart_with(&[]);
    b.l.llama.push(text(&["still here"]));
    b.say("are you still there?");
    let got = b.wait_box("the reply after the restart", 1);
    assert_eq!(said(&got[0]).1, "still here");
    let me = b.cast.boxmaker.user_id.clone();
    let notices = b
        .events()
        .into_iter()
        .filter(|e| e["sender"] == me.as_str() && said(e).1.starts_with(super::PREVIEWS))
        .count();
    assert_eq!(notices, 1, "the previews' notice once");
    let log = b.l.daemon.log_text();
    assert!(log.contains("as before: events sent again"), "{log}");
    assert!(!log.contains(&token), "{log}");
}
