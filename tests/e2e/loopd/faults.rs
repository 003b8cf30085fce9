//! Faults: llama.cpp down, failing, loading or broken; loopd killed mid-turn; a damaged
//! log. Each ends with a clear error (and a `note` on disk) and a loopd that goes on.

use super::{records_in, write_config, Loopd, N_CTX};
use crate::support::standin::{
    cut, error_chunk_in_stream, error_field_in_stream, malformed, text, unavailable, Gate, Reply,
    Standin,
};
use crate::support::{Daemon, Fixture};
use nix::sys::signal::Signal;

fn notes(l: &Loopd) -> Vec<String> {
    l.records("main")
        .iter()
        .filter(|r| r["type"] == "note")
        .map(|r| r["text"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn llama_down_at_start_is_a_warning_and_a_turn_fails_clearly_after_retries() {
    let fx = Fixture::new("");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    write_config(
        &fx,
        &format!("http://127.0.0.1:{port}"),
        "retries = 1",
        "",
        "",
    );
    let d = Daemon::start("loopd", &fx);
    d.wait_log("is not answering at start");
    let mut c = crate::support::LineClient::connect(&fx.loopd_sock);
    let reply = c.ask("hello?");
    assert!(
        reply[0].starts_with("error: llama.cpp failed 2 times"),
        "{reply:?}"
    );
    d.wait_log("retry 1 of 1");
    let recs = records_in(&fx.state_dir.join("sessions/main/epoch-000000.jsonl"));
    assert_eq!(recs[0]["type"], "user");
    assert_eq!(recs[1]["type"], "note");
    assert!(recs[1]["text"]
        .as_str()
        .unwrap()
        .starts_with("turn failed: "));
    // loopd itself is fine.
    assert!(c.ask("/help")[0].starts_with("Each line"));
}

#[test]
fn a_slot_context_other_than_expected_is_warned_about_at_start() {
    let fx = Fixture::new("");
    let llama = Standin::start(N_CTX / 2);
    write_config(&fx, &llama.url, "", "", "");
    let d = Daemon::start("loopd", &fx);
    d.wait_log(&format!(
        "slot 0 has n_ctx {}, but expect.n_ctx is {N_CTX}",
        N_CTX / 2
    ));
}

#[test]
fn answering_503_twice_then_200_is_retried_to_an_answer() {
    let l = Loopd::start("");
    l.llama.push(unavailable());
    l.llama.push(unavailable());
    l.llama.push(text(&["loaded now"]));
    assert_eq!(l.client().ask("hi"), ["loaded now"]);
    assert_eq!(l.llama.chats().len(), 3);
    l.daemon.wait_log("retry 2 of 2");
    assert_eq!(l.kinds("main"), ["user", "assistant", "usage"]);
}

/// Regression: a 500 not known to repeat (here a proxy's or a server's passing failure)
/// failed the turn at the first try, though 5xx are retried.
#[test]
fn a_500_then_200_is_retried_to_an_answer() {
    let l = Loopd::start("");
    l.llama.push(Reply::Status(
        500,
        crate::support::standin::error_json("server_error", "boom"),
    ));
    l.llama.push(text(&["fine now"]));
    assert_eq!(l.client().ask("hi"), ["fine now"]);
    assert_eq!(l.llama.chats().len(), 2);
    assert_eq!(l.kinds("main"), ["user", "assistant", "usage"]);
}

/// Regression: an error llama.cpp sent inside its 200 stream before any of the answer (the
/// decode step's passing "failed to find a memory slot", in either form) failed the turn
/// at the first try, though the same 500 before the stream is retried.
#[test]
fn an_error_in_the_stream_before_any_text_is_retried_to_an_answer() {
    let l = Loopd::start("");
    let failed = "failed to find a memory slot for batch of size 512";
    l.llama.push(error_chunk_in_stream(failed));
    l.llama.push(error_field_in_stream(failed));
    l.llama.push(text(&["fine now"]));
    assert_eq!(l.client().ask("hi"), ["fine now"]);
    assert_eq!(l.llama.chats().len(), 3);
    l.daemon.wait_log("retry 2 of 2");
    assert_eq!(l.kinds("main"), ["user", "assistant", "usage"]);
}

#[test]
fn a_stream_that_dies_midway_fails_the_turn_and_the_next_turn_works() {
    let l = Loopd::start("");
    l.llama.push(cut(&["Half an ans"]));
    l.llama.push(text(&["whole"]));
    let mut c = l.client();
    let reply = c.ask("tell me");
    assert_eq!(reply[0], "Half an ans");
    assert!(
        reply[1].starts_with("error: llama.cpp: the stream "),
        "{reply:?}"
    );
    assert_eq!(l.llama.chats().len(), 1, "a broken stream is not retried");
    assert_eq!(c.ask("again"), ["whole"]);
    assert_eq!(
        l.kinds("main"),
        ["user", "note", "user", "assistant", "usage"]
    );
}

#[test]
fn a_malformed_sse_line_fails_the_turn_with_a_note() {
    let l = Loopd::start("");
    l.llama.push(malformed());
    l.llama.push(text(&["fine"]));
    let mut c = l.client();
    let reply = c.ask("hi");
    assert!(
        reply
            .last()
            .unwrap()
            .starts_with("error: llama.cpp: malformed stream"),
        "{reply:?}"
    );
    assert!(notes(&l)[0].contains("malformed stream"));
    assert_eq!(c.ask("again"), ["fine"]);
}

#[test]
fn kill_9_during_a_turn_loses_nothing_acknowledged_and_the_next_turn_works() {
    let mut l = Loopd::start("");
    l.llama.push(text(&["first answer"]));
    let gate = Gate::new();
    l.llama
        .push(Reply::Held(gate.clone(), Box::new(text(&["never heard"]))));
    let mut c = l.client();
    assert_eq!(c.ask("first"), ["first answer"]);
    c.send("second");
    l.llama.wait_chats(2);
    l.daemon.signal(Signal::SIGKILL);
    l.daemon.wait();
    gate.open();
    l.restart();
    assert_eq!(l.kinds("main"), ["user", "assistant", "usage", "user"]);
    l.llama.push(text(&["third answer"]));
    assert_eq!(l.client().ask("third"), ["third answer"]);
    let last = super::messages(&l.llama.wait_chats(3)[2].json());
    let contents: Vec<&str> = last
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        contents[1..],
        ["first", "first answer", "second", "third"],
        "the unanswered message stays in the conversation"
    );
}

#[test]
fn an_abort_mid_stream_leaves_a_log_that_opens_and_goes_on() {
    let fx = Fixture::new("");
    let llama = Standin::start(N_CTX);
    write_config(&fx, &llama.url, "", "", "");
    llama.push(text(&["partial", " answer"]));
    let mut cmd = Daemon::command("loopd", &fx);
    cmd.env("BOXMAKER_TEST_ABORT_AT", "mid-stream");
    let mut d = Daemon::spawn(cmd, &fx);
    d.ready();
    let mut c = crate::support::LineClient::connect(&fx.loopd_sock);
    c.send("hello");
    assert!(!d.wait().success());
    drop(d);
    let _d = Daemon::start("loopd", &fx);
    llama.push(text(&["after"]));
    assert_eq!(
        crate::support::LineClient::connect(&fx.loopd_sock).ask("again"),
        ["after"]
    );
    let recs = records_in(&fx.state_dir.join("sessions/main/epoch-000000.jsonl"));
    let kinds: Vec<&str> = recs.iter().map(|r| r["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["user", "user", "assistant", "usage"]);
}

#[test]
fn a_torn_last_line_is_cut_on_restart_with_a_warning_naming_its_bytes() {
    let mut l = Loopd::start("");
    l.llama.push(text(&["one"]));
    l.client().ask("first");
    l.daemon.signal(Signal::SIGKILL);
    l.daemon.wait();
    let log = l.session_dir("main").join("epoch-000000.jsonl");
    let good = std::fs::read(&log).unwrap();
    let torn = br#"{"type":"user","time":"2026-11-30T06:00:00.000Z","cont"#;
    std::fs::write(&log, [&good[..], &torn[..]].concat()).unwrap();
    l.restart();
    l.llama.push(text(&["two"]));
    assert_eq!(l.client().ask("second"), ["two"]);
    l.daemon
        .wait_log(&format!("cutting a torn last line of {} bytes", torn.len()));
    assert_eq!(
        l.kinds("main"),
        ["user", "assistant", "usage", "user", "assistant", "usage"]
    );
}

#[test]
fn a_bad_line_in_the_middle_refuses_the_session_naming_file_and_line() {
    let mut l = Loopd::start("");
    l.llama.push(text(&["one"]));
    l.client().ask("first");
    let log = l.session_dir("main").join("epoch-000000.jsonl");
    let text_now = std::fs::read_to_string(&log).unwrap();
    let mut lines: Vec<&str> = text_now.lines().collect();
    lines[1] = "{\"type\":\"assistant\"}";
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    l.restart();
    let mut c = l.client();
    let reply = c.ask("hello");
    assert!(reply[0].contains("epoch-000000.jsonl line 2"), "{reply:?}");
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        lines.join("\n") + "\n",
        "untouched"
    );
    assert!(c.ask("/help")[0].starts_with("Each line"));
}

#[test]
fn a_missing_prompt_refuses_the_start_naming_its_path() {
    let fx = Fixture::new("");
    std::fs::remove_file(fx.prompts.join("compact.md")).unwrap();
    let mut d = Daemon::spawn(Daemon::command("loopd", &fx), &fx);
    assert_eq!(d.wait().code(), Some(1));
    d.wait_log(&fx.prompts.join("compact.md").display().to_string());
}

#[test]
fn a_server_that_never_answers_times_out_and_is_not_retried() {
    let fx = Fixture::new("");
    let llama = Standin::start(N_CTX);
    write_config(&fx, &llama.url, "retries = 3", "", "");
    let config = std::fs::read_to_string(&fx.config)
        .unwrap()
        .replace("timeout_s = 60", "timeout_s = 1");
    std::fs::write(&fx.config, config).unwrap();
    let gate = Gate::new();
    llama.push(Reply::Held(gate.clone(), Box::new(text(&["too late"]))));
    let _d = Daemon::start("loopd", &fx);
    let mut c = crate::support::LineClient::connect(&fx.loopd_sock);
    let reply = c.ask("hello");
    gate.open();
    assert!(reply[0].starts_with("error: llama.cpp: "), "{reply:?}");
    assert!(reply[0].contains("timed out"), "{reply:?}");
    assert_eq!(llama.chats().len(), 1);
    let recs = records_in(&fx.state_dir.join("sessions/main/epoch-000000.jsonl"));
    assert_eq!(recs[1]["type"], "note");
}
