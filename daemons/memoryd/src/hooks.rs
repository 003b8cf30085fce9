//! Environment variables that change memoryd's behaviour for tests. Each is read once at
//! start; none belongs in a production unit.
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

pub const PARTIAL_TIMEOUT_VAR: &str = "BOXMAKER_MEMORYD_PARTIAL_TIMEOUT_MS";
pub const KILL_AFTER_ROWS_VAR: &str = "BOXMAKER_MEMORYD_TEST_KILL_AFTER_ROWS";
pub const REQUEST_CHUNKS_VAR: &str = "BOXMAKER_MEMORYD_TEST_REQUEST_CHUNKS";

/// The partial-frame timeout the environment asks for, if it asks.
pub fn partial_timeout() -> Option<Duration> {
    number(PARTIAL_TIMEOUT_VAR).map(Duration::from_millis)
}

pub fn kill_after_rows() -> Option<u64> {
    number(KILL_AFTER_ROWS_VAR)
}

/// The per-request catch-up budget the environment asks for, if it asks.
pub fn request_chunks() -> Option<usize> {
    number(REQUEST_CHUNKS_VAR).and_then(|n| usize::try_from(n).ok())
}

fn number(var: &str) -> Option<u64> {
    let value = std::env::var(var).ok()?;
    match value.parse() {
        Ok(n) => Some(n),
        Err(_) => {
            plumbing::warn!("ignoring {var}={value:?}: not a whole number");
            None
        }
    }
}
