//! `/remind` and delivery: to a connected client on time; to the next connection, after
//! its first reply block, when nobody was there; late, once, after loopd was down.

use super::{notes, spawn, start};
use crate::loopd::Loopd;
use crate::support::prereq::tool;

#[test]
fn bad_whens_get_an_error_naming_what_could_not_be_read() {
    let lp = start("", 0);
    let mut c = lp.client();
    for (line, word) in [
        ("/remind noon lunch", "\"noon\""),
        ("/remind 25:00 lunch", "\"25:00\""),
        ("/remind tomorrow morning lunch", "\"morning\""),
        ("/remind in a while lunch", "\"a\""),
        ("/remind 2026-13-40 09:00 lunch", "\"2026-13-40\""),
    ] {
        let reply = c.ask(line);
        assert_eq!(reply.len(), 1, "{reply:?}");
        assert!(reply[0].starts_with("error: "), "{line}: {reply:?}");
        assert!(reply[0].contains(word), "{line}: {reply:?}");
    }
    let reply = c.ask("/remind in 2h");
    assert!(
        reply[0].starts_with("error: ") && reply[0].contains("text"),
        "{reply:?}"
    );
    assert!(c.ask("/remind")[0].starts_with("no reminders in session main"));
}

#[test]
fn a_reminder_a_minute_ahead_is_delivered_to_a_connected_client() {
    let lp = start("", 0);
    let mut c = lp.client();
    let set = c.ask("/remind in 1m put the kettle on");
    assert_eq!(set.len(), 1, "{set:?}");
    assert!(set[0].starts_with("reminder 1 set for "), "{set:?}");
    assert!(set[0].ends_with("(in 1m): put the kettle on"), "{set:?}");
    let listed = c.ask("/remind");
    assert!(
        listed[0].starts_with("1  ") && listed[0].ends_with("put the kettle on"),
        "{listed:?}"
    );

    c.ask("/testclock 61");
    let block = c.block();
    assert_eq!(block.len(), 2, "{block:?}");
    assert!(block[0].starts_with("· reminder 1, due "), "{block:?}");
    assert_eq!(block[1], "put the kettle on");
    assert!(
        c.ask("/remind")[0].starts_with("no reminders"),
        "delivered, so gone"
    );
    let status = c.ask("/status");
    assert!(
        status.contains(&"inbox: 0 messages waiting (/inbox shows the last ones)".to_string()),
        "{status:?}"
    );

    let notes = notes(&lp, "main");
    assert!(
        notes[0].starts_with("reminder 1 set by the owner for "),
        "{notes:?}"
    );
    assert_eq!(
        notes[1], "reminder 1 delivered: to 1 connected clients",
        "the delivery note names the reminder, not its text (docs/forgetting.md)"
    );
}

#[test]
fn a_cancelled_reminder_is_never_delivered() {
    let lp = start("", 0);
    let mut c = lp.client();
    c.ask("/remind in 1m one");
    c.ask("/remind in 2m two");
    assert_eq!(c.ask("/remind cancel 1"), ["reminder 1 cancelled: one"]);
    assert!(c.ask("/remind cancel 1")[0].starts_with("error: no reminder 1"));
    c.ask("/testclock 150");
    let block = c.block();
    assert_eq!(block[1], "two", "{block:?}");
    assert!(c.ask("/inbox").iter().all(|l| l != "one"));
}

/// "water the plants", due while nobody of `main` is connected: it waits in the inbox.
fn reminder_for_nobody(lp: &Loopd) {
    let mut setter = lp.client();
    setter.ask("/remind in 1m water the plants");
    drop(setter);
    // A client of another session moves the clock: nobody of `main` is connected.
    let mut elsewhere = lp.client();
    elsewhere.ask("/session other");
    elsewhere.ask("/testclock 61");
    lp.daemon
        .wait_log("reminder for nobody connected; it waits in the inbox");
}

#[test]
fn with_nobody_connected_a_reminder_waits_for_the_next_connections_first_reply() {
    let lp = start("", 0);
    reminder_for_nobody(&lp);

    let mut owner = lp.client();
    let status = owner.ask("/status");
    assert!(
        status.contains(&"inbox: 1 messages waiting (/inbox shows the last ones)".to_string()),
        "{status:?}"
    );
    let waited = owner.block();
    assert_eq!(waited.len(), 3, "{waited:?}");
    assert!(
        waited[0].starts_with("· while you were away: reminder at "),
        "{waited:?}"
    );
    assert!(waited[1].starts_with("· reminder 1, due "), "{waited:?}");
    assert_eq!(waited[2], "water the plants");
    // Delivered once: the next line's block is its own reply, and the inbox is empty.
    let status = owner.ask("/status");
    assert!(
        status.contains(&"inbox: 0 messages waiting (/inbox shows the last ones)".to_string()),
        "{status:?}"
    );
    let again = owner.ask("/inbox");
    assert!(again[0].starts_with("· reminder at "), "{again:?}");
    assert_eq!(again.last().unwrap(), "water the plants");
    let mut later = lp.client();
    assert_eq!(later.ask("/session"), ["session main"]);
    assert_eq!(
        later.ask("/session"),
        ["session main"],
        "nothing more was waiting"
    );
}

/// Regression: lines sent together (`printf '/session\n/status\n/inbox\n'`) were
/// answered before the poll loop had written the inbox's blocks released after the
/// first reply, so `/status` counted them as waiting and `/inbox` listed them
/// "(was waiting)" right below the blocks delivering them.
#[test]
fn status_and_inbox_sent_with_the_first_line_do_not_count_what_is_on_its_way_as_waiting() {
    let lp = start("", 0);
    reminder_for_nobody(&lp);

    let mut owner = lp.client();
    owner.send("/session");
    owner.send("/status");
    owner.send("/inbox");
    assert_eq!(owner.block(), ["session main"]);
    let waited = owner.block();
    assert!(
        waited[0].starts_with("· while you were away: reminder at "),
        "{waited:?}"
    );
    let status = owner.block();
    assert!(
        status.contains(&"inbox: 0 messages waiting (/inbox shows the last ones)".to_string()),
        "{status:?}"
    );
    let inbox = owner.block();
    assert!(inbox[0].starts_with("· reminder at "), "{inbox:?}");
    assert!(!inbox[0].contains("(was waiting)"), "{inbox:?}");
}

#[test]
fn a_reminder_due_while_loopd_was_down_is_delivered_late_once_at_start() {
    let mut lp = start("", 0);
    let mut c = lp.client();
    c.ask("/remind in 1h ring the bank");
    drop(c);
    lp.settle();
    // Killed, not stopped: nothing is written on the way down.
    let _ = lp.daemon.child.kill();
    let _ = lp.daemon.child.wait();
    lp.daemon = spawn(&lp.fx, 2 * 3600);
    lp.daemon
        .wait_log("reminder for nobody connected; it waits in the inbox");

    let mut owner = lp.client();
    assert_eq!(owner.ask("/session"), ["session main"]);
    let late = owner.block();
    assert!(late[1].starts_with("· reminder 1 (late: due "), "{late:?}");
    assert!(
        late[1].ends_with("while loopd was not running)"),
        "{late:?}"
    );
    assert_eq!(late[2], "ring the bank");
    drop(owner);
    // Marked delivered once its block was written whole; a kill before that would
    // deliver it again, marked `(again)`.
    lp.daemon.wait_log("1 inbox messages delivered to client");

    // Started once more: nothing is delivered again.
    let _ = lp.daemon.child.kill();
    let _ = lp.daemon.child.wait();
    lp.daemon = spawn(&lp.fx, 3 * 3600);
    let mut again = lp.client();
    assert_eq!(again.ask("/session"), ["session main"]);
    assert!(
        again.ask("/remind")[0].starts_with("no reminders"),
        "and no block before it"
    );
    let delivered: Vec<String> = notes(&lp, "main")
        .into_iter()
        .filter(|n| n.starts_with("reminder 1 delivered"))
        .collect();
    assert_eq!(
        delivered,
        ["reminder 1 delivered late: nobody was connected; it waits in the inbox"]
    );
}

/// Regression: the connection that starts loopd under socket activation has its line
/// read before the late reminders fire at start; the reminder went out at once, before
/// that line's reply block, and a script pairing lines with blocks took it as the answer.
#[test]
fn a_late_reminder_comes_after_the_first_reply_of_the_connection_that_started_loopd() {
    use crate::support::channel::LineClient;
    use crate::support::notify::NotifySocket;
    use crate::support::Daemon;
    use std::time::{Duration, Instant};
    if !tool("systemd-socket-activate") {
        return;
    }
    let mut lp = start("", 0);
    lp.client().ask("/remind in 1h ring the bank");
    lp.settle();
    assert!(lp.daemon.stop().success());
    let notify = NotifySocket::bind(&lp.fx.path());
    let mut cmd = std::process::Command::new("systemd-socket-activate");
    for var in [
        format!("NOTIFY_SOCKET={}", notify.path.display()),
        "BOXMAKER_TEST_CLOCK_OFFSET_S=7200".to_string(),
        format!("PATH={}", std::env::var("PATH").unwrap_or_default()),
    ] {
        cmd.arg("-E").arg(var);
    }
    cmd.arg("-l")
        .arg(&lp.fx.loopd_sock)
        .arg(crate::support::bin("loopd"))
        .arg("--config")
        .arg(&lp.fx.config);
    lp.daemon = Daemon::spawn_with(cmd, notify);
    // The first connection starts loopd; its line waits in the socket meanwhile.
    let deadline = Instant::now() + Duration::from_secs(30);
    let first = loop {
        match std::os::unix::net::UnixStream::connect(&lp.fx.loopd_sock) {
            Ok(stream) => break stream,
            Err(e) => assert!(Instant::now() < deadline, "the socket never listened: {e}"),
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut owner = LineClient::over(first);
    owner.send("/session");
    assert_eq!(
        owner.block(),
        ["session main"],
        "the line's own answer first"
    );
    let late = owner.block();
    assert!(
        late.iter()
            .any(|l| l.starts_with("· reminder 1 (late: due ")),
        "{late:?}"
    );
    assert!(late.contains(&"ring the bank".to_string()), "{late:?}");
}

#[test]
fn a_heartbeat_nobody_heard_waits_in_the_inbox_for_the_next_connection() {
    use crate::support::standin::text;
    let lp = crate::heartbeat::start(crate::heartbeat::EVERY, "", |llama| {
        llama.push(text(&["The backup finished overnight."]));
        llama.set_fallback(text(&["HEARTBEAT_OK"]));
    });
    lp.daemon
        .wait_log("heartbeat for nobody connected; it waits in the inbox");
    let mut owner = lp.client();
    assert_eq!(owner.ask("/session"), ["session main"]);
    let waited = owner.block();
    assert_eq!(waited.len(), 2, "{waited:?}");
    assert!(
        waited[0].starts_with("· while you were away: heartbeat at "),
        "{waited:?}"
    );
    assert_eq!(waited[1], "The backup finished overnight.");
    let shown = owner.ask("/inbox");
    assert!(shown[0].starts_with("· heartbeat at "), "{shown:?}");
    assert_eq!(shown[1], "The backup finished overnight.");
}

/// Regression: a connection that half-closed after its line (`printf '…\n' | socat`, the
/// contract's own example of a client) was taken for a script and never got what waited,
/// though it is the next connection and reads until loopd closes.
#[test]
fn a_piped_socat_connection_gets_what_waited_after_its_reply() {
    if !tool("socat") {
        return;
    }
    let lp = start("", 0);
    reminder_for_nobody(&lp);
    // socat's -t: how long it keeps reading after its input ended.
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "printf '/session\\n' | socat -t 30 - UNIX-CONNECT:{}",
            lp.fx.loopd_sock.display()
        ))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("session main\n.\n· while you were away: reminder at "),
        "{text}"
    );
    assert!(text.ends_with("\nwater the plants\n.\n"), "{text}");
    let status = lp.client().ask("/status");
    assert!(
        status.contains(&"inbox: 0 messages waiting (/inbox shows the last ones)".to_string()),
        "{status:?}"
    );
}

#[test]
fn a_reminder_the_inbox_could_not_take_stays_in_the_book_through_a_kill() {
    // Regression: a failed write of `inbox.json` was logged and the reminder taken out of
    // the book anyway, so it was on disk nowhere and the next start lost it.
    let mut lp = start("", 0);
    let mut setter = lp.client();
    setter.ask("/remind in 1m water the plants");
    drop(setter);
    // The inbox's file cannot be written: its temporary file's name is a directory's.
    let blocker = lp.fx.state_dir.join("inbox.json.tmp");
    std::fs::create_dir_all(blocker.join("x")).unwrap();
    let mut elsewhere = lp.client();
    elsewhere.ask("/session other");
    elsewhere.ask("/testclock 61");
    lp.daemon
        .wait_log("reminder 1 stays in the book and is tried again in 10 s");
    drop(elsewhere);
    // kill -9, the disk freed, and loopd again with its clock past the due time.
    let _ = lp.daemon.child.kill();
    let _ = lp.daemon.child.wait();
    std::fs::remove_dir_all(&blocker).unwrap();
    lp.daemon = spawn(&lp.fx, 61);
    let mut owner = lp.client();
    assert_eq!(owner.ask("/session"), ["session main"]);
    let waited = owner.block();
    assert!(
        waited[0].starts_with("· while you were away: "),
        "{waited:?}"
    );
    assert_eq!(waited.last().unwrap(), "water the plants", "{waited:?}");
}
