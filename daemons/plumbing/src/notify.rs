//! The service manager's notify protocol: `READY=1`, `STATUS=`, `WATCHDOG=1`,
//! `RELOADING=1`, `STOPPING=1`. Without `NOTIFY_SOCKET` every call does nothing, so a
//! daemon in the foreground behaves the same as one under systemd.

use sd_notify::NotifyState;
use std::time::Duration;

/// Sends `states` if a notify socket is set. A failed send is logged, not fatal: the
/// daemon can still serve its clients, and systemd's own timeouts will report the problem.
pub fn send(states: &[NotifyState]) {
    if std::env::var_os("NOTIFY_SOCKET").is_none() {
        return;
    }
    if let Err(e) = sd_notify::notify(false, states) {
        crate::warn!("notify socket: {e}");
    }
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
