//! The line protocol under bad input and many clients (docs/channel.md).

use super::{write_config, Loopd};
use crate::support::standin::{text, Gate, Reply, Standin};
use crate::support::{Daemon, Fixture, LineClient};

#[test]
fn a_70_kib_line_and_invalid_utf8_get_errors_and_the_connection_goes_on() {
    let l = Loopd::start("");
    l.llama.push(text(&["still here"]));
    let mut c = l.client();
    let mut long = vec![b'x'; 70 * 1024];
    long.push(b'\n');
    c.send_raw(&long);
    c.send_raw(b"caf\xc3\x28 au lait\n");
    c.send("hello");
    let too_long = c.block();
    assert!(
        too_long[0].starts_with("error: line over 65536 bytes"),
        "{too_long:?}"
    );
    assert_eq!(c.block(), ["error: line is not valid utf-8"]);
    assert_eq!(c.block(), ["still here"]);
    assert_eq!(l.kinds("main"), ["user", "assistant", "usage"]);
}

#[test]
fn a_long_line_sent_in_pieces_is_discarded_to_its_newline() {
    let l = Loopd::start("");
    let mut c = l.client();
    let piece = vec![b'y'; 16 * 1024];
    for _ in 0..6 {
        c.send_raw(&piece);
    }
    c.send_raw(b"tail of the long line\n/help\n");
    assert!(c.block()[0].starts_with("error: line over"));
    assert!(c.block()[0].starts_with("Each line you send"));
}

#[test]
fn crlf_line_endings_are_accepted() {
    let l = Loopd::start("");
    l.llama.push(text(&["ok"]));
    let mut c = l.client();
    c.send_raw(b"/session\r\nhi\r\n");
    assert_eq!(c.block(), ["session main"]);
    assert_eq!(c.block(), ["ok"]);
    assert_eq!(l.records("main")[0]["content"], "hi");
}

#[test]
fn twenty_clients_at_once_are_all_answered() {
    let l = Loopd::start("");
    for _ in 0..20 {
        l.llama.push(text(&["answer"]));
    }
    let sock = l.fx.loopd_sock.clone();
    let threads: Vec<_> = (0..20)
        .map(|i| {
            let sock = sock.clone();
            std::thread::spawn(move || {
                let mut c = LineClient::connect(&sock);
                c.ask(&format!("client {i}"))
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), ["answer"]);
    }
    let users = l
        .records("main")
        .iter()
        .filter(|r| r["type"] == "user")
        .count();
    assert_eq!(users, 20);
}

#[test]
fn a_client_that_half_closes_gets_every_reply_then_the_server_closes() {
    let l = Loopd::start("");
    l.llama.push(text(&["one"]));
    l.llama.push(text(&["two"]));
    let mut c = l.client();
    c.send_raw(b"first\nsecond\n/session\n");
    c.half_close();
    assert_eq!(
        c.rest(),
        [
            vec!["one".to_string()],
            vec!["two".into()],
            vec!["session main".into()]
        ]
    );
}

#[test]
fn a_client_that_disconnects_mid_turn_still_has_its_turn_logged() {
    let l = Loopd::start("");
    let gate = Gate::new();
    l.llama
        .push(Reply::Held(gate.clone(), Box::new(text(&["too late"]))));
    l.llama.push(text(&["next"]));
    let mut c = l.client();
    c.send("are you there");
    l.llama.wait_chats(1);
    drop(c);
    gate.open();
    // Turns run one at a time, so the next turn's reply means the first one finished.
    assert_eq!(l.client().ask("again"), ["next"]);
    let recs = l.records("main");
    assert_eq!(recs[0]["content"], "are you there");
    assert_eq!(recs[1]["content"], "too late");
    assert_eq!(recs[2]["type"], "usage");
}

/// Regression: lines read from a client that then went away (a socat without `-t`
/// closes half a second after its input ends) were thrown away with the connection when
/// writing its first answer failed: they ran or not by timing, without a word.
#[test]
fn lines_read_from_a_client_that_went_away_still_run_in_turn() {
    let l = Loopd::start("");
    let gate = Gate::new();
    l.llama
        .push(Reply::Held(gate.clone(), Box::new(text(&["first answer"]))));
    l.llama.push(text(&["second answer"]));
    l.llama.push(text(&["third answer"]));
    l.llama.push(text(&["next"]));
    let mut c = l.client();
    c.send("line one\nline two\nline three");
    l.llama.wait_chats(1);
    drop(c);
    gate.open();
    l.daemon
        .wait_log("went away with 2 lines read and not yet run");
    assert_eq!(l.client().ask("again"), ["next"]);
    let said: Vec<String> = l
        .records("main")
        .iter()
        .filter(|r| r["type"] == "user" || r["type"] == "assistant")
        .map(|r| r["content"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        said,
        [
            "line one",
            "first answer",
            "line two",
            "second answer",
            "line three",
            "third answer",
            "again",
            "next"
        ]
    );
}

fn uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

#[test]
fn a_peer_not_in_allow_uids_gets_one_error_block_then_close() {
    let fx = Fixture::new("");
    let llama = Standin::start(super::N_CTX);
    write_config(
        &fx,
        &llama.url,
        "",
        &format!("allow_uids = [{}]", uid() + 1),
        "",
    );
    let _d = Daemon::start("loopd", &fx);
    let mut c = LineClient::connect(&fx.loopd_sock);
    let block = c.block();
    assert!(block[0].starts_with("error: uid "), "{block:?}");
    assert!(c.try_block().is_none());
}

#[test]
fn a_peer_in_allow_uids_is_served() {
    let fx = Fixture::new("");
    let llama = Standin::start(super::N_CTX);
    write_config(
        &fx,
        &llama.url,
        "",
        &format!("allow_uids = [{}]", uid()),
        "",
    );
    let _d = Daemon::start("loopd", &fx);
    assert_eq!(
        LineClient::connect(&fx.loopd_sock).ask("/session"),
        ["session main"]
    );
}
