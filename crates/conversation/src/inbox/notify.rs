//! `notify.command` (docs/reminders.md, "The notify command"): for an unasked message no
//! client received, loopd runs the configured program (argv, no shell) once with the
//! message on its standard input, on a short thread of its own, so neither the poll loop
//! nor the turn worker waits on it. The command gets `notify.timeout_s`; past that its
//! whole process group is killed. Its output is discarded (it could echo the message, and
//! loopd's log never holds conversation text), so it can neither fill a pipe nor the
//! journal. A failure is a `loopd:` warning; the message still waits in the inbox.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Commands running at once. A burst of messages (loopd starting after a long stop with
/// many reminders due) must not start a process per message; past this a message is not
/// handed over (a warning says so) and waits in the inbox like any other.
pub(crate) const MAX_RUNNING: usize = 4;

/// How often the runner looks whether the command has exited. A tenth of a second is
/// nothing next to a push service's round trip, and costs nothing while it waits.
const POLL_EVERY: Duration = Duration::from_millis(100);

/// How a command run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    Done,
    Failed(String),
}

/// Starts commands, at most `MAX_RUNNING` at once.
#[derive(Clone, Default)]
pub struct Runner {
    running: Arc<AtomicUsize>,
}

impl Runner {
    /// Runs `argv` with `text` on its standard input on a thread of its own; `what` names
    /// the message in log lines (never its text), where the outcome is told. Returns false,
    /// without running anything, when `MAX_RUNNING` already run.
    pub fn run(&self, argv: &[String], timeout: Duration, what: String, text: String) -> bool {
        if self.running.fetch_add(1, Ordering::SeqCst) >= MAX_RUNNING {
            self.running.fetch_sub(1, Ordering::SeqCst);
            plumbing::warn!(
                "notify: {MAX_RUNNING} commands are running already; {what} was not handed over and waits in the inbox"
            );
            return false;
        }
        let argv = argv.to_vec();
        let running = Arc::clone(&self.running);
        let spawned = std::thread::Builder::new()
            .name("notify".into())
            .spawn(move || {
                let outcome = run(&argv, timeout, &text);
                match &outcome {
                    Outcome::Done => plumbing::info!("notify: {what} handed to {}", argv[0]),
                    Outcome::Failed(why) => plumbing::warn!(
                        "notify: {} {why} for {what}; the message waits in the inbox",
                        argv[0]
                    ),
                }
                running.fetch_sub(1, Ordering::SeqCst);
            });
        if let Err(e) = spawned {
            self.running.fetch_sub(1, Ordering::SeqCst);
            plumbing::warn!("notify: cannot start a thread: {e}; the message waits in the inbox");
            return false;
        }
        true
    }
}

/// Runs one command to its end or its deadline.
pub(crate) fn run(argv: &[String], timeout: Duration, text: &str) -> Outcome {
    let Some((program, args)) = argv.split_first() else {
        return Outcome::Failed("is not set".into());
    };
    let mut child = match Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own process group, so a deadline kills what it started too.
        .process_group(0)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => return Outcome::Failed(format!("could not be started: {e}")),
    };
    if let Some(mut stdin) = child.stdin.take() {
        // The message is at most `inbox::MAX_MESSAGE_BYTES`, well under a pipe's buffer,
        // so this write never waits on the command reading. A command that exits without
        // reading makes it fail with a broken pipe, which is the command's business.
        let _ = stdin.write_all(text.as_bytes());
    }
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return ended(status),
            Ok(None) if Instant::now() >= deadline => {
                kill_group(child.id());
                let _ = child.kill();
                let _ = child.wait();
                return Outcome::Failed(format!(
                    "did not finish within notify.timeout_s ({} s) and was killed",
                    timeout.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(POLL_EVERY),
            Err(e) => {
                kill_group(child.id());
                let _ = child.wait();
                return Outcome::Failed(format!("could not be waited for: {e}"));
            }
        }
    }
}

fn ended(status: ExitStatus) -> Outcome {
    if status.success() {
        Outcome::Done
    } else {
        Outcome::Failed(format!("failed ({status})"))
    }
}

fn kill_group(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Vec<String> {
        vec!["/bin/sh".into(), "-c".into(), script.into()]
    }

    #[test]
    fn the_command_reads_the_message_on_its_standard_input() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("got");
        let argv = sh(&format!("cat > {}", out.display()));
        assert_eq!(run(&argv, Duration::from_secs(20), "tea\n"), Outcome::Done);
        assert_eq!(std::fs::read_to_string(out).unwrap(), "tea\n");
    }

    #[test]
    fn a_failing_missing_or_hanging_command_is_a_failure() {
        let failed = run(&sh("exit 3"), Duration::from_secs(20), "x");
        assert!(
            matches!(failed, Outcome::Failed(ref w) if w.contains("exit status: 3")),
            "{failed:?}"
        );
        let missing = run(&["/nonexistent/push".into()], Duration::from_secs(20), "x");
        assert!(matches!(missing, Outcome::Failed(ref w) if w.contains("started")));
        let hung = run(&sh("sleep 600"), Duration::from_secs(1), "x");
        assert!(
            matches!(hung, Outcome::Failed(ref w) if w.contains("killed")),
            "{hung:?}"
        );
    }
}
