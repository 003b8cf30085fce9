//! The service manager's notify protocol: `READY=1`, `STATUS=`, `WATCHDOG=1`,
//! `RELOADING=1`, `STOPPING=1`. Without `NOTIFY_SOCKET` every call does nothing, so a
//! daemon in the foreground behaves the same as one under systemd.

use sd_notify::NotifyState;
use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Whether the last message failed to go out: the first failure of a run is warned
/// about, the ones after it are not until a message goes out again (said once too), so
/// a notify socket that is gone does not write a line into the journal at every
/// watchdog ping for the rest of the daemon's life.
static FAILING: AtomicBool = AtomicBool::new(false);

/// Sends `states` if a notify socket is set. The send never blocks: the poll loop sends
/// these, and a service manager that stops reading (or a full datagram queue) must not
/// be able to stall it. A message that cannot go out now is dropped with a warning (once
/// per run of failures, `FAILING`); the next status or watchdog ping carries on.
/// sd-notify's own `notify` blocks, so only its `NotifyState` wording is used here.
pub fn send(states: &[NotifyState]) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let msg: String = states.iter().map(|s| format!("{s}\n")).collect();
    let sent = send_nonblocking(&path.to_string_lossy(), msg.as_bytes());
    // A change of state (ready, reloading, stopping) is told whenever it fails; only the
    // periodic pings and statuses are quiet after the first failure.
    let periodic = states
        .iter()
        .all(|s| matches!(s, NotifyState::Watchdog | NotifyState::Status(_)));
    match (change(&FAILING, sent.is_ok()), sent) {
        (Change::Recovered, _) => crate::notice!("notify socket: messages go out again"),
        (Change::Same, Err(e)) if !periodic => {
            let what = msg.lines().next().unwrap_or("");
            crate::warn!("notify socket: {what} not sent: {e}");
        }
        (Change::Failed, Err(e)) => {
            let what = msg.lines().next().unwrap_or("");
            crate::warn!(
                "notify socket: {what} not sent: {e}; further failures are not logged until a message goes out"
            );
        }
        _ => {}
    }
}

/// What a send changed about `failing` (`FAILING`), which is what is logged.
#[derive(Debug, PartialEq, Eq)]
enum Change {
    /// The first failure after a message went out (or the first of the run).
    Failed,
    /// A message went out after failures.
    Recovered,
    /// As before: going out, or still failing.
    Same,
}

fn change(failing: &AtomicBool, ok: bool) -> Change {
    match (failing.swap(!ok, Ordering::Relaxed), ok) {
        (false, false) => Change::Failed,
        (true, true) => Change::Recovered,
        _ => Change::Same,
    }
}

fn send_nonblocking(path: &str, msg: &[u8]) -> io::Result<()> {
    // A leading '@' names a socket in the abstract namespace, as sd_notify(3) allows.
    let addr = match path.strip_prefix('@') {
        Some(name) => SocketAddr::from_abstract_name(name.as_bytes())?,
        None => SocketAddr::from_pathname(path)?,
    };
    let sock = UnixDatagram::unbound()?;
    sock.set_nonblocking(true)?;
    let sent = sock.send_to_addr(msg, &addr)?;
    if sent != msg.len() {
        return Err(io::ErrorKind::WriteZero.into());
    }
    Ok(())
}

pub fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

pub fn status(status: &str) {
    send(&[NotifyState::Status(status)]);
}

pub fn reloading() {
    send(&[NotifyState::Reloading]);
}

pub fn stopping() {
    send(&[NotifyState::Stopping]);
}

pub fn watchdog() {
    send(&[NotifyState::Watchdog]);
}

/// How often to ping the watchdog: half of `WATCHDOG_USEC`, as sd_watchdog_enabled(3)
/// advises, or `None` when no watchdog is armed for this process.
pub fn watchdog_interval() -> Option<Duration> {
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    // WATCHDOG_PID names the process the watchdog is meant for; a child that inherited
    // the variable from its parent must not ping on the parent's behalf.
    if let Ok(pid) = std::env::var("WATCHDOG_PID") {
        if pid.parse::<u32>().ok() != Some(std::process::id()) {
            return None;
        }
    }
    (usec > 0).then(|| Duration::from_micros(usec / 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a notify socket that was gone wrote a warning at every watchdog ping,
    /// a line every 15 s for the daemon's life; the first failure of a run is told, and
    /// the recovery, nothing in between.
    #[test]
    fn a_run_of_failures_is_told_once_and_its_end_once() {
        use Change::{Failed, Recovered, Same};
        let failing = AtomicBool::new(false);
        let seen: Vec<Change> = [true, false, false, false, true, true, false]
            .into_iter()
            .map(|ok| change(&failing, ok))
            .collect();
        assert_eq!(seen, [Same, Failed, Same, Same, Recovered, Same, Failed]);
    }

    #[test]
    fn a_full_notify_queue_does_not_block_the_sender() {
        // Regression: the poll loop sends STATUS= and WATCHDOG=1; with a reader that does
        // not read, a blocking send stalled the loop once the datagram queue filled.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify.sock");
        let _reader = UnixDatagram::bind(&path).unwrap();
        let p = path.to_string_lossy().into_owned();
        let mut refused = 0;
        for _ in 0..10_000 {
            if send_nonblocking(&p, b"STATUS=x\n").is_err() {
                refused += 1;
            }
        }
        assert!(
            refused > 0,
            "the queue never filled, so this test proved nothing"
        );
    }

    #[test]
    fn an_abstract_socket_is_reached() {
        let name = format!("boxmaker-test-{}", std::process::id());
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let reader = UnixDatagram::bind_addr(&addr).unwrap();
        send_nonblocking(&format!("@{name}"), b"READY=1\n").unwrap();
        let mut buf = [0u8; 64];
        let n = reader.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1\n");
    }
}
