//! The reporter's test harness against the stand-in Honcho (`tests/standins`, a
//! dev-dependency): for this crate's own tests only, so that no library depends on a
//! crate under `tests/`. The rest of the harness, which loopd's tests share, is
//! `test_support`.
#![allow(clippy::unwrap_used)]

pub use crate::test_support::*;
use crate::Reporter;
use proto::config::Config;
use standins::honcho::{Standin, State};
use std::path::Path;

/// A configuration reporting to `server`.
pub fn config(state: &Path, server: &Standin) -> Config {
    config_at(state, &server.url())
}

/// What the stand-in holds, its times in loopd's form (milliseconds) again: Honcho gives a
/// time back with six fraction digits.
pub fn got(st: &State) -> Vec<Expected> {
    st.messages
        .iter()
        .map(|m| (m.peer_id.clone(), m.content.clone(), millis(&m.created_at)))
        .collect()
}

/// Pokes, waits until the stand-in holds `n` messages and then until the reporter has
/// finished a round after that, so a duplicate posted late would be seen too.
pub fn settle(reporter: &Reporter, server: &Standin, session: &str, n: usize) {
    reporter.poke(session);
    server.wait(|st| st.messages.len() >= n);
    round(reporter, session);
}
