//! Reminders, the inbox and the notify command end to end (docs/reminders.md): the real
//! loopd on a real socket, a scripted llama.cpp stand-in, and the reminders' clock moved
//! by the test hook (`/testclock S`, `BOXMAKER_TEST_CLOCK_OFFSET_S`) instead of waiting.
//! Tests synchronise on reply blocks and loopd's log lines, never on sleeps.

mod asked;
mod burst;
mod deliver;
pub(crate) mod held;
mod notify;
mod push;
mod tool;

use crate::loopd::{write_config, Loopd, N_CTX};
use crate::support::standin::Standin;
use crate::support::{Daemon, Fixture};

/// loopd with `extra` config tables, started with its reminders' clock `offset_s` ahead.
pub fn start(extra: &str, offset_s: i64) -> Loopd {
    let fx = Fixture::new("");
    let llama = Standin::start(N_CTX);
    write_config(&fx, &llama.url, "retries = 2", "", extra);
    let daemon = spawn(&fx, offset_s);
    Loopd { fx, llama, daemon }
}

/// Starts loopd on `fx` with its reminders' clock `offset_s` ahead; waits for READY=1.
pub fn spawn(fx: &Fixture, offset_s: i64) -> Daemon {
    let mut cmd = Daemon::command("loopd", fx);
    cmd.env("BOXMAKER_TEST_CLOCK_OFFSET_S", offset_s.to_string());
    let mut daemon = Daemon::spawn(cmd, fx);
    daemon.ready();
    daemon
}

/// A `[notify]` table whose command appends what it reads, and a `---` line, to `file`.
pub fn notify_to(file: &std::path::Path) -> String {
    format!(
        "[notify]\ncommand = [\"/bin/sh\", \"-c\", \"cat >> '{}'; echo --- >> '{}'\"]\ntimeout_s = 20\n",
        file.display(),
        file.display()
    )
}

/// The `note` texts of `session`'s epoch 0.
pub fn notes(lp: &Loopd, session: &str) -> Vec<String> {
    lp.records(session)
        .iter()
        .filter(|r| r["type"] == "note")
        .map(|r| r["text"].as_str().unwrap().to_string())
        .collect()
}
