//! Environment variables that change memoryd's behaviour for tests, compiled in only with
//! the `testhooks` cargo feature (the test command turns it on; a release build leaves it
//! out, and `scripts/check-release` makes sure). Without it every function here returns
//! `None` and the names are not in the binary. Each is read once at start.
//!
//! - `BOXMAKER_MEMORYD_PARTIAL_TIMEOUT_MS`: how long a half-sent frame may wait, in
//!   milliseconds, instead of `FRAME_DEADLINE`, so a test of hanging clients needs no
//!   ten-second wait.
//! - `BOXMAKER_MEMORYD_TEST_KILL_AFTER_ROWS`: once this many rows are committed, memoryd
//!   kills itself with SIGKILL in the middle of its next transaction, as `kill -9` would,
//!   so the crash test hits the middle of indexing every time.
//! - `BOXMAKER_MEMORYD_TEST_REQUEST_CHUNKS`: how many chunks a recall or nudge may catch
//!   up before it is answered, instead of `service::REQUEST_CATCH_UP_CHUNKS`, so a test
//!   can make a backlog larger than a request's budget without writing many MiB of logs.

use std::time::Duration;

/// The partial-frame timeout the environment asks for, if it asks.
pub fn partial_timeout() -> Option<Duration> {
    #[cfg(feature = "testhooks")]
    return armed::number("BOXMAKER_MEMORYD_PARTIAL_TIMEOUT_MS").map(Duration::from_millis);
    #[cfg(not(feature = "testhooks"))]
    None
}

/// The crash hook, called inside a transaction after each row is inserted, with the rows
/// committed before it: once they reach `BOXMAKER_MEMORYD_TEST_KILL_AFTER_ROWS`, the
/// process dies here as under `kill -9`. Without the feature it is empty and inlined
/// away.
#[inline(always)]
pub fn row_inserted(committed: u64) {
    #[cfg(feature = "testhooks")]
    {
        static AFTER: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
        let after = *AFTER.get_or_init(|| armed::number("BOXMAKER_MEMORYD_TEST_KILL_AFTER_ROWS"));
        if after.is_some_and(|after| committed >= after) {
            armed::crash_now(committed);
        }
    }
    #[cfg(not(feature = "testhooks"))]
    let _ = committed;
}

/// The per-request catch-up budget the environment asks for, if it asks.
#[cfg(feature = "testhooks")]
pub fn request_chunks() -> Option<usize> {
    armed::number("BOXMAKER_MEMORYD_TEST_REQUEST_CHUNKS").and_then(|n| usize::try_from(n).ok())
}

#[cfg(feature = "testhooks")]
mod armed {
    /// The process dies as under `kill -9`, inside an open transaction.
    pub fn crash_now(committed: u64) -> ! {
        plumbing::warn!(
            "test hook: killing myself in the middle of a transaction, {committed} rows committed"
        );
        let _ = nix::sys::signal::kill(nix::unistd::Pid::this(), nix::sys::signal::Signal::SIGKILL);
        std::process::abort()
    }

    pub fn number(var: &str) -> Option<u64> {
        let value = std::env::var(var).ok()?;
        match value.parse() {
            Ok(n) => Some(n),
            Err(_) => {
                plumbing::warn!("ignoring {var}={value:?}: not a whole number");
                None
            }
        }
    }
}
