//! One loopd per state directory (docs/systemd.md, 'One loopd per state directory'): a
//! second one on the same `state_dir` refuses to start, and the first goes on; the lock
//! goes with its holder, `kill -9` included.

use super::Loopd;
use crate::support::standin::text;
use crate::support::{Daemon, HANG};
use nix::sys::signal::Signal;
use std::time::{Duration, Instant};

/// Regression: two loopd processes started on one `state_dir` (each with its own socket)
/// both ran, without a lock or a word, and one's acknowledged turns dropped out of the
/// other's conversation. The second now exits at start naming the directory and the
/// first's pid, before it listens.
#[test]
fn a_second_loopd_on_the_same_state_directory_refuses_to_start_naming_it_and_the_holder() {
    let mut l = Loopd::start("");
    l.llama.push(text(&["first answer"]));
    assert_eq!(l.client().ask("first"), ["first answer"]);

    // The same config but for the channel's socket, so only the state directory is shared.
    let second_sock = l.fx.path().join("second.sock");
    let config = std::fs::read_to_string(&l.fx.config).unwrap().replace(
        &format!("socket = {:?}", l.fx.loopd_sock),
        &format!("socket = {second_sock:?}"),
    );
    let second_config = l.fx.path().join("second.toml");
    std::fs::write(&second_config, config).unwrap();
    let mut cmd = Daemon::command("loopd", &l.fx);
    cmd.arg("--config").arg(&second_config);
    let mut second = Daemon::spawn(cmd, &l.fx);
    let deadline = Instant::now() + HANG;
    let status = loop {
        if let Some(status) = second.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            !second_sock.exists(),
            "a second loopd started on the same state directory; its log:\n{}",
            second.log_text()
        );
        assert!(
            Instant::now() < deadline,
            "the second loopd neither started nor exited"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!status.success());
    let line = second.wait_log("another loopd");
    let state_dir = l.fx.state_dir.display().to_string();
    let pid = format!("(pid {})", l.daemon.pid());
    assert!(
        line.starts_with("loopd: ") && line.contains(&state_dir) && line.contains(&pid),
        "{line}"
    );

    // The first never noticed.
    l.llama.push(text(&["second answer"]));
    assert_eq!(l.client().ask("second"), ["second answer"]);

    // Killed, it leaves no lock behind: the next loopd starts at once.
    l.daemon.signal(Signal::SIGKILL);
    l.daemon.wait();
    l.restart();
    l.llama.push(text(&["third answer"]));
    assert_eq!(l.client().ask("third"), ["third answer"]);
}

/// A reload naming another `state_dir` keeps the directory loopd started with and holds
/// the lock of (docs/config.md, 'Top-level keys'): a session made after it is still made
/// there, and the other directory is untouched until the next start, which locks it.
#[test]
fn a_changed_state_dir_on_sighup_waits_for_the_next_start() {
    let mut l = Loopd::start("");
    let other = l.fx.path().join("other-state");
    let config = std::fs::read_to_string(&l.fx.config).unwrap().replace(
        &format!("state_dir = {:?}", l.fx.state_dir),
        &format!("state_dir = {other:?}"),
    );
    std::fs::write(&l.fx.config, config).unwrap();
    l.daemon.signal(Signal::SIGHUP);
    l.daemon.notify.wait_for_new("RELOADING=1", HANG).unwrap();
    l.daemon.notify.wait_for_new("READY=1", HANG).unwrap();
    l.daemon.wait_log("state_dir: a changed state directory");
    let mut c = l.client();
    c.ask("/session fresh");
    l.llama.push(text(&["made where it started"]));
    assert_eq!(c.ask("hello"), ["made where it started"]);
    assert!(l.session_dir("fresh").is_dir());
    assert!(
        !other.exists(),
        "the new state directory was used before a restart"
    );
    l.restart();
    assert!(other.join("loopd.lock").exists(), "taken at the next start");
}
