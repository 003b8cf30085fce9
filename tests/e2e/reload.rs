//! SIGHUP reload (docs/systemd.md, what `systemctl reload` does): the config is re-read and
//! validated; a bad new config is refused with the key (or the file) named in the log,
//! the old config is kept and the daemon keeps serving, and systemd hears
//! `RELOADING=1` then `READY=1` either way.

use crate::support::{frames, Daemon, Fixture, HANG};
use nix::sys::signal::Signal;
use proto::memory::Request;
use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

const DAEMONS: [&str; 2] = ["loopd", "memoryd"];

/// Bad configs a reload must refuse, each with what the refusal must name.
const BROKEN: &[(&str, &str)] = &[
    // A value out of range: the key is named.
    ("[compact]\nthreshold = 2.0\n", "compact.threshold"),
    // An unknown key (a typo): the key is named.
    ("[loop]\nmax_round = 3\n", "max_round"),
    // A base url without a host: the key is named.
    ("[llama]\nurl = \"http://\"\n", "llama.url"),
    // Not TOML at all: the file is named.
    ("[llama\nurl = \"http://127.0.0.1:1\"\n", "boxmaker.toml"),
];

/// Sends SIGHUP and waits for the reload's `RELOADING=1` and the `READY=1` after it.
fn reload(d: &mut Daemon) {
    d.signal(Signal::SIGHUP);
    d.notify.wait_for_new("RELOADING=1", HANG).unwrap();
    d.notify.wait_for_new("READY=1", HANG).unwrap();
}

/// Waits for a stderr line written after the first `from` lines that holds every needle.
fn wait_new_log(d: &Daemon, from: usize, needles: &[&str]) -> String {
    let deadline = Instant::now() + HANG;
    loop {
        let found = d
            .log
            .lock()
            .unwrap()
            .iter()
            .skip(from)
            .find(|l| needles.iter().all(|n| l.contains(n)))
            .cloned();
        if let Some(line) = found {
            return line;
        }
        assert!(
            Instant::now() < deadline,
            "no log line with {needles:?} after line {from}; log:\n{}",
            d.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn log_len(d: &Daemon) -> usize {
    d.log.lock().unwrap().len()
}

/// Proves the daemon still answers on its socket: a `/help` line to loopd gets one whole
/// reply block; a `Status` frame to memoryd gets an answer frame.
fn assert_serving(name: &str, fx: &Fixture) {
    if name == "memoryd" {
        frames::ask(&fx.memoryd_sock, &Request::Status).unwrap();
        return;
    }
    let mut s = UnixStream::connect(&fx.loopd_sock).unwrap();
    s.set_read_timeout(Some(HANG)).unwrap();
    s.write_all(b"/help\n").unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(
        reply == ".\n" || reply.ends_with("\n.\n"),
        "loopd's reply is not one block ending in \".\": {reply:?}"
    );
}

#[test]
fn a_bad_config_on_sighup_is_refused_naming_the_key_and_the_daemon_keeps_serving() {
    for name in DAEMONS {
        let fx = Fixture::new("");
        let mut d = Daemon::start(name, &fx);
        let pid = d.pid();
        for (extra, key) in BROKEN {
            fx.write_config(extra);
            let mark = log_len(&d);
            reload(&mut d);
            let line = wait_new_log(&d, mark, &["reload refused", key]);
            assert!(
                line.starts_with(&format!("{name}: ")),
                "{name}: the refusal is not a {name}: line: {line}"
            );
            assert!(d.child.try_wait().unwrap().is_none(), "{name} exited");
            assert_eq!(d.pid(), pid);
            assert_serving(name, &fx);
        }
        assert!(d.stop().success(), "{name}");
    }
}

#[test]
fn a_deleted_config_on_sighup_is_refused_naming_the_file() {
    for name in DAEMONS {
        let fx = Fixture::new("");
        let mut d = Daemon::start(name, &fx);
        std::fs::remove_file(&fx.config).unwrap();
        let mark = log_len(&d);
        reload(&mut d);
        let path = fx.config.display().to_string();
        wait_new_log(&d, mark, &["reload refused", &path]);
        assert_serving(name, &fx);
        assert!(d.stop().success(), "{name}");
    }
}

#[test]
fn a_good_config_after_a_refused_one_is_taken() {
    for name in DAEMONS {
        let fx = Fixture::new("");
        let mut d = Daemon::start(name, &fx);
        fx.write_config("[compact]\nthreshold = 2.0\n");
        let mark = log_len(&d);
        reload(&mut d);
        wait_new_log(&d, mark, &["reload refused", "compact.threshold"]);
        fx.write_config("[compact]\nthreshold = 0.5\n");
        let mark = log_len(&d);
        reload(&mut d);
        wait_new_log(&d, mark, &["reloaded configuration"]);
        assert_serving(name, &fx);
        assert!(d.stop().success(), "{name}");
    }
}

/// Regression: the prompt check at reload runs on the poll loop, and it used to open each
/// prompt plainly, so a FIFO at a prompt path blocked the loop forever. It is now refused
/// with the path named, and loopd keeps answering.
#[test]
fn a_fifo_at_a_prompt_path_on_sighup_is_refused_naming_it_and_loopd_keeps_serving() {
    let fx = Fixture::new("");
    let mut d = Daemon::start("loopd", &fx);
    let pid = d.pid();
    let fifo = fx.prompts.join("compact.md");
    std::fs::remove_file(&fifo).unwrap();
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let mark = log_len(&d);
    reload(&mut d);
    let path = fifo.display().to_string();
    wait_new_log(&d, mark, &["reload refused", &path, "not a regular file"]);
    assert!(d.child.try_wait().unwrap().is_none(), "loopd exited");
    assert_eq!(d.pid(), pid);
    assert_serving("loopd", &fx);
    assert!(d.stop().success());
}

/// Regression: a reload that changed `state_dir` made memoryd open an index of the new
/// directory while loopd kept the one it started with, so recall answered from sessions
/// `/forget` does not search. memoryd keeps its directory until its next start too.
#[test]
fn memoryd_keeps_its_state_directory_across_a_reload_that_changes_it() {
    let fx = Fixture::new("");
    let mut d = Daemon::start("memoryd", &fx);
    let other = fx.path().join("other-state");
    let config = std::fs::read_to_string(&fx.config).unwrap().replace(
        &format!("state_dir = {:?}", fx.state_dir),
        &format!("state_dir = {other:?}"),
    );
    assert!(config.contains("other-state"), "{config}");
    std::fs::write(&fx.config, config).unwrap();
    let mark = log_len(&d);
    reload(&mut d);
    wait_new_log(
        &d,
        mark,
        &["state_dir: a changed state directory", "next start"],
    );
    assert_serving("memoryd", &fx);
    assert!(
        !other.exists(),
        "the new directory was used before a restart"
    );
    assert!(d.stop().success());
}
