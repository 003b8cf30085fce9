//! What memoryd does on its poll loop stays bounded: a request during a large backlog is
//! answered from what is indexed so far, and a FIFO where a head or the config belongs
//! is refused instead of blocking the loop.

use super::*;
use crate::support::HANG;
use nix::sys::signal::Signal;
use nix::sys::stat::Mode;
use std::time::Instant;

/// Sessions in the backlog, one line each: with the request budget at one chunk, each
/// is a chunk of catch-up of its own.
const BACKLOG: u64 = 200;

/// Polls `Status` until `rows` rows are indexed, failing the test after `HANG`.
fn wait_rows(fx: &Fixture, rows: u64) -> MemoryStatus {
    let deadline = Instant::now() + HANG;
    loop {
        let s = status(fx);
        if s.rows == rows {
            return s;
        }
        assert!(s.rows < rows, "{s:?}");
        assert!(Instant::now() < deadline, "stuck at {s:?}");
        std::thread::yield_now();
    }
}

/// Regression: a recall during the start-up catch-up indexed the whole backlog before
/// answering, in one turn of the poll loop, with no watchdog ping meanwhile.
#[test]
fn a_recall_during_a_large_backlog_is_answered_and_the_rest_is_indexed_later() {
    let fx = Fixture::new("");
    for n in 0..BACKLOG {
        Epoch::start(&fx, &format!("s{n}")).add(&user(&format!("backlog otter {n}")));
    }
    let mut cmd = Daemon::command("memoryd", &fx);
    cmd.env("BOXMAKER_MEMORYD_TEST_REQUEST_CHUNKS", "1");
    let mut d = Daemon::spawn(cmd, &fx);
    d.ready();
    let hits = recall(&fx, "otter");
    assert!(hits.len() as u64 <= BACKLOG);
    let s = wait_rows(&fx, BACKLOG);
    assert_eq!(s.logs, BACKLOG);
    assert_eq!(recall(&fx, "otter").len(), 50);
}

/// Regression: a head was read with an unbounded `std::fs::read`, which waits forever
/// on a FIFO for a writer.
#[test]
fn a_fifo_in_place_of_a_head_is_reported_and_the_other_logs_are_served() {
    let fx = Fixture::new("");
    Epoch::start(&fx, "good").add(&user("good marten"));
    let dir = fx.state_dir.join("sessions/piped");
    std::fs::create_dir_all(&dir).unwrap();
    nix::unistd::mkfifo(
        &dir.join(head_file_name(0)),
        Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    std::fs::write(dir.join(log_file_name(0)), user("piped marten").to_line()).unwrap();
    let d = Daemon::start("memoryd", &fx);
    let hits = recall(&fx, "marten");
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].text, "good marten");
    d.wait_log("not a regular file");
}

/// Regression: the config was read with an unbounded `read_to_string` on reload, on the
/// poll loop; a FIFO there blocked the loop forever.
#[test]
fn a_fifo_in_place_of_the_config_fails_the_reload_and_the_daemon_keeps_serving() {
    let fx = Fixture::new("");
    let d = Daemon::start("memoryd", &fx);
    std::fs::remove_file(&fx.config).unwrap();
    nix::unistd::mkfifo(&fx.config, Mode::from_bits_truncate(0o600)).unwrap();
    d.signal(Signal::SIGHUP);
    d.wait_log("not a regular file");
    assert_eq!(status(&fx).rows, 0);
}

/// A FIFO config at start is refused at once with the path named, not waited on.
#[test]
fn a_fifo_in_place_of_the_config_at_start_is_an_error() {
    let fx = Fixture::new("");
    std::fs::remove_file(&fx.config).unwrap();
    nix::unistd::mkfifo(&fx.config, Mode::from_bits_truncate(0o600)).unwrap();
    let mut d = Daemon::spawn(Daemon::command("memoryd", &fx), &fx);
    assert!(!d.wait().success());
    d.wait_log("boxmaker.toml: not a regular file");
}
