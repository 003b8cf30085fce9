//! Heartbeats and Honcho reporting end to end (docs/honcho.md): the real loopd with a one-second
//! heartbeat, a scripted llama.cpp stand-in and, for Honcho, a stand-in of its messages
//! API. Tests tell heartbeat requests from owner turns by their last message (the
//! heartbeat's text), and synchronise on requests reaching a stand-in, on reply blocks and
//! on loopd's log lines, never on sleeps.

mod delivery;
mod flood;
mod honcho;
mod idle;
mod prompt;
mod reload;

use crate::loopd::{write_config, Loopd, N_CTX};
use crate::support::standin::{Request, Standin};
use crate::support::{Daemon, Fixture};
use std::process::Command;

/// The heartbeat period the tests run with: the shortest the config allows.
pub const EVERY: &str = "[heartbeat]\nevery_s = 1\n";

/// loopd with `heartbeat` as its `[heartbeat]` table and `tables` after it, its llama.cpp
/// stand-in set up by `setup` before loopd starts (so the first beat finds it ready).
pub fn start(heartbeat: &str, tables: &str, setup: impl FnOnce(&Standin)) -> Loopd {
    start_with(heartbeat, tables, setup, |_| {})
}

/// `start`, with `command` changing loopd's command line or environment first.
pub fn start_with(
    heartbeat: &str,
    tables: &str,
    setup: impl FnOnce(&Standin),
    command: impl FnOnce(&mut Command),
) -> Loopd {
    let fx = Fixture::new("");
    let llama = Standin::start(N_CTX);
    setup(&llama);
    write_config(
        &fx,
        &llama.url,
        "retries = 2",
        "",
        &format!("{heartbeat}\n{tables}"),
    );
    let mut cmd = Daemon::command("loopd", &fx);
    command(&mut cmd);
    let mut daemon = Daemon::spawn(cmd, &fx);
    daemon.ready();
    Loopd { fx, llama, daemon }
}

/// The text of the fixture's `heartbeat.md`, as loopd sends it.
pub fn beat_text(lp: &Loopd) -> String {
    std::fs::read_to_string(lp.fx.prompts.join("heartbeat.md"))
        .unwrap()
        .trim_end()
        .to_string()
}

/// True when `r` is a heartbeat's request.
pub fn is_beat(lp: &Loopd, r: &Request) -> bool {
    r.last() == beat_text(lp)
}
