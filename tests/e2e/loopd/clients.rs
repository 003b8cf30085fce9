//! Careless and hostile clients of the channel (docs/channel.md): pipelined floods are
//! answered by backpressure, not dropped; the last line before a half-close counts; a
//! client over the connection limit is told so; idle connections give way to a newcomer;
//! and memoryd's silence reaches the owner in words.

use super::{write_config, Loopd, N_CTX};
use crate::support::standin::{text, Gate, Reply, Standin};
use crate::support::{Daemon, Fixture, LineClient, HANG};
use std::io::Write;
use std::time::Instant;

/// Regression: 10 000 lines in one write from a client reading all the while got no
/// reply at all ("4097 lines refused without reading replies; closing").
#[test]
fn ten_thousand_pipelined_lines_from_a_reading_client_are_all_answered() {
    let l = Loopd::start("");
    let lines = 10_000;
    let mut c = l.client();
    let mut writer = c.stream.try_clone().unwrap();
    let writing = std::thread::spawn(move || {
        writer
            .write_all("/session\n".repeat(lines).as_bytes())
            .unwrap();
    });
    for i in 0..lines {
        assert_eq!(c.block(), ["session main"], "line {i}");
    }
    writing.join().unwrap();
    assert_eq!(
        c.ask("/session"),
        ["session main"],
        "the connection goes on"
    );
}

/// Regression: lines 2–64 queued behind a turn were dropped without a word once more
/// lines than the pending limit had arrived.
#[test]
fn lines_queued_behind_a_held_turn_are_all_answered_in_order() {
    let l = Loopd::start("");
    let gate = Gate::new();
    l.llama
        .push(Reply::Held(gate.clone(), Box::new(text(&["first"]))));
    let mut c = l.client();
    let mut lines = String::from("hold on\n");
    for i in 0..200 {
        lines.push_str(&format!("/session s{i}\n"));
    }
    c.send_raw(lines.as_bytes());
    l.llama.wait_chats(1);
    gate.open();
    assert_eq!(c.block(), ["first"]);
    for i in 0..200 {
        let want = format!("session s{i}: new; it starts with your first message");
        assert_eq!(c.block(), [want], "line {i}");
    }
}

/// Regression: a last line without a newline before end of input was dropped silently.
#[test]
fn a_last_line_without_newline_before_half_close_is_answered() {
    let l = Loopd::start("");
    l.llama.push(text(&["one"]));
    l.llama.push(text(&["two"]));
    let mut c = l.client();
    c.send_raw(b"first\nno newline");
    c.half_close();
    assert_eq!(c.rest(), [vec!["one".to_string()], vec!["two".into()]]);
    let users: Vec<_> = l
        .records("main")
        .into_iter()
        .filter(|r| r["type"] == "user")
        .map(|r| r["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(users, ["first", "no newline"]);
}

/// Regression: the 65th connection was reset with nothing said.
#[test]
fn a_client_over_the_connection_limit_reads_one_error_line_before_the_close() {
    let l = Loopd::start("");
    let gate = Gate::new();
    l.llama
        .push(Reply::Held(gate.clone(), Box::new(text(&["held"]))));
    l.llama.set_fallback(text(&["later"]));
    // 64 = loopd::limits::MAX_CLIENTS, each with a line in flight: none may be evicted.
    let mut busy: Vec<LineClient> = (0..64).map(|_| l.client()).collect();
    busy[0].send("hold the worker");
    l.llama.wait_chats(1);
    for c in &mut busy[1..] {
        c.send("waiting behind it");
    }
    // The 65th reads its refusal and then the end of the stream.
    let mut extra = l.client();
    let last = extra.try_block().unwrap_or_default();
    assert!(extra.try_block().is_none(), "closed after the error");
    assert_eq!(last.len(), 1, "{last:?}");
    assert!(
        last[0].starts_with("error: too many clients: all 64 connections are busy"),
        "{last:?}"
    );
    gate.open();
    assert_eq!(busy[0].block(), ["held"]);
    for c in &mut busy[1..] {
        assert_eq!(c.block(), ["later"]);
    }
}

/// Regression: 64 idle connections held every slot for ever.
#[test]
fn sixty_four_idle_connections_give_way_to_a_new_client() {
    let l = Loopd::start("");
    let mut idle: Vec<LineClient> = (0..64).map(|_| l.client()).collect();
    // Each is accepted and served: all 64 slots are taken by connections now idle.
    for c in &mut idle {
        assert_eq!(c.ask("/session"), ["session main"]);
    }
    // A newcomer gets in once the oldest has been quiet for loopd::limits::EVICT_QUIET.
    let deadline = Instant::now() + HANG;
    let answer = loop {
        assert!(Instant::now() < deadline, "never got in");
        let mut c = l.client();
        // A refused newcomer may be closed before this write lands: that is not a failure.
        let _ = c.stream.write_all(b"/session\n");
        match c.try_block() {
            Some(b) if b[0].starts_with("error: too many clients") => {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            Some(b) => break b,
            None => {}
        }
    };
    assert_eq!(answer, ["session main"]);
    let evicted = idle[0].block();
    assert!(
        evicted[0].starts_with("error: closed to make room for a new client"),
        "{evicted:?}"
    );
    assert!(idle[0].try_block().is_none());
    assert_eq!(
        idle[63].ask("/session"),
        ["session main"],
        "the others stay"
    );
}

/// Regression: a memoryd that accepted and never answered reached the owner as
/// "Resource temporarily unavailable (os error 11)".
#[test]
fn a_memoryd_that_never_answers_is_reported_in_words() {
    let l = Loopd::start("");
    // Bound but never accepting: connect succeeds into the backlog, no answer comes.
    let _silent = std::os::unix::net::UnixListener::bind(&l.fx.memoryd_sock).unwrap();
    let block = l.client().ask("/recall anything");
    assert_eq!(
        block,
        ["error: memory unavailable: memoryd did not answer within 5 s"],
        "{block:?}"
    );
}

/// A script that writes thousands of lines before it reads anything is held by
/// backpressure (loopd stops reading it once 1 MiB of replies wait), not cut off, and
/// others are served meanwhile; once it reads, every line has its block.
#[test]
fn a_client_that_reads_late_is_held_not_dropped_and_gets_every_reply() {
    let l = Loopd::start("");
    let lines = 3000; // about 2 MiB of `/help` blocks: past loopd::limits::MAX_OUTPUT
    let mut c = l.client();
    let mut writer = c.stream.try_clone().unwrap();
    let writing = std::thread::spawn(move || {
        writer
            .write_all("/help\n".repeat(lines).as_bytes())
            .unwrap();
    });
    assert_eq!(l.client().ask("/session"), ["session main"]);
    for i in 0..lines {
        assert!(c.block()[0].starts_with("Each line you send"), "line {i}");
    }
    writing.join().unwrap();
}

/// The same for a script that half-closes after its last line: the replies still owed
/// when loopd held it are all sent once it reads, then the server closes.
#[test]
fn a_half_closed_client_that_reads_late_still_gets_every_reply_then_the_close() {
    let l = Loopd::start("");
    let lines = 3000;
    let mut c = l.client();
    let mut writer = c.stream.try_clone().unwrap();
    let writing = std::thread::spawn(move || {
        writer
            .write_all("/help\n".repeat(lines).as_bytes())
            .unwrap();
        writer.shutdown(std::net::Shutdown::Write).unwrap();
    });
    assert_eq!(l.client().ask("/session"), ["session main"]);
    writing.join().unwrap();
    let blocks = c.rest();
    assert_eq!(blocks.len(), lines);
    assert!(blocks
        .iter()
        .all(|b| b[0].starts_with("Each line you send")));
}

/// Regression: 64 connections sending a byte every 30 s held every slot for ever; the
/// partial-line timeout counted from the last byte. Now a line must arrive whole within
/// loopd::limits::LINE_DEADLINE of its first byte. The test hook shortens the deadline to 2 s, so
/// the test does not wait out the real 30 s; the trickle still outlasts it many times.
#[test]
fn a_line_trickled_past_the_line_deadline_is_closed_with_an_error() {
    let fx = Fixture::new("");
    let llama = Standin::start(N_CTX);
    write_config(&fx, &llama.url, "retries = 2", "", "");
    let mut cmd = Daemon::command("loopd", &fx);
    cmd.env("BOXMAKER_TEST_LINE_DEADLINE_MS", "2000");
    let mut daemon = Daemon::spawn(cmd, &fx);
    daemon.ready();
    let l = Loopd { fx, llama, daemon };
    let mut c = l.client();
    let mut writer = c.stream.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        // A byte every tenth of a second, past the deadline, until loopd closes the
        // connection; bounded by the hang guard.
        let every = std::time::Duration::from_millis(100);
        for _ in 0..HANG.as_millis() / every.as_millis() {
            if writer.write_all(b"x").is_err() {
                return true;
            }
            std::thread::sleep(every);
        }
        false
    });
    let block = c.block();
    assert_eq!(
        block,
        ["error: closed: a line did not arrive whole within 2 s of its first byte"]
    );
    assert!(trickle.join().unwrap(), "the trickling client was closed");
    assert_eq!(l.client().ask("/session"), ["session main"]);
}
