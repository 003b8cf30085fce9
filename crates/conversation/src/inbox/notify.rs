//! `notify.command` (docs/reminders.md, "The notify command"): for an unasked message no
//! client received, loopd runs the configured program (argv, no shell) with the message
//! on its standard input. The poll loop starts it (so a message is marked handed over
//! only once a command was started with it) and a short thread of its own feeds and waits
//! for it, so neither the poll loop nor the turn worker waits on it. The command gets
//! `notify.timeout_s`; past that its whole process group is killed. Its output is
//! discarded (it could echo the message, and loopd's log never holds conversation text),
//! so it can neither fill a pipe nor the journal. A failure is a `loopd:` warning; the
//! message still waits in the inbox.
//!
//! What the command sees (docs/reminders.md, 'What the command sees'): standard input,
//! output and error and no other descriptor (every one loopd holds is close-on-exec), and
//! an environment of `PATH`, `LANG` and the names in `notify.env`, nothing else: loopd's
//! own variables (`CREDENTIALS_DIRECTORY`, `NOTIFY_SOCKET`, `LISTEN_*`) are not its.

use std::fmt;
use std::io::{self, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The variables every command gets, when loopd has them: where programs are, and the
/// language its messages are in.
pub(crate) const BASE_ENV: [&str; 2] = ["PATH", "LANG"];

/// How often the runner looks whether the command has exited. A tenth of a second is
/// nothing next to a push service's round trip, and costs nothing while it waits.
const POLL_EVERY: Duration = Duration::from_millis(100);

/// How a command run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    Done,
    Failed(String),
}

/// Why the notify command was not started; shown after the program's name, as in
/// "notify: PROGRAM could not be started: …".
#[derive(Debug)]
pub enum NotifyError {
    /// `notify.command` is empty.
    NotSet,
    Spawn(io::Error),
    /// The thread that feeds and waits for it could not be started.
    Thread(io::Error),
}

impl fmt::Display for NotifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotifyError::NotSet => f.write_str("is not set"),
            NotifyError::Spawn(e) => write!(f, "could not be started: {e}"),
            NotifyError::Thread(e) => {
                write!(f, "was not given the message: no thread to feed it: {e}")
            }
        }
    }
}

impl std::error::Error for NotifyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NotifyError::NotSet => None,
            NotifyError::Spawn(e) | NotifyError::Thread(e) => Some(e),
        }
    }
}

/// Counts the commands running and wakes the poll loop when one ends, so the next
/// message waiting its turn is started.
#[derive(Clone, Default)]
pub struct Runner {
    running: Arc<AtomicUsize>,
    wake: Option<Arc<mio::Waker>>,
}

impl Runner {
    pub fn new(wake: Option<Arc<mio::Waker>>) -> Runner {
        Runner {
            running: Arc::default(),
            wake,
        }
    }

    /// Commands running now.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }

    /// Starts `argv` with `text` on its standard input and `env` as its whole
    /// environment; a thread of its own feeds it and waits (so the poll loop never waits
    /// on a command that does not read), and `what` names the message in log lines (never
    /// its text), where the outcome is told. An error when it could not be started, or
    /// its thread could not: the message was not handed over.
    pub fn start(
        &self,
        argv: &[String],
        env: &[(String, String)],
        timeout: Duration,
        what: String,
        text: String,
    ) -> Result<(), NotifyError> {
        let child = spawn(argv, env)?;
        let pid = child.id();
        plumbing::info!(
            "notify: started {} for {what}",
            argv.first().map_or("", String::as_str)
        );
        self.running.fetch_add(1, Ordering::SeqCst);
        let running = Arc::clone(&self.running);
        let wake = self.wake.clone();
        let program = argv.first().cloned().unwrap_or_default();
        let feed = move || {
            let mut child = child;
            feed(&mut child, &text);
            match finish(child, timeout) {
                Outcome::Done => plumbing::info!("notify: {what} handed to {program}"),
                Outcome::Failed(why) => plumbing::warn!(
                    "notify: {program} {why} for {what}; the message waits in the inbox"
                ),
            }
            running.fetch_sub(1, Ordering::SeqCst);
            if let Some(wake) = wake {
                if let Err(e) = wake.wake() {
                    plumbing::error!("notify: waking the poll loop: {e}");
                }
            }
        };
        if let Err(e) = std::thread::Builder::new()
            .name("notify".into())
            .spawn(feed)
        {
            // Nothing would feed the command or wait for it: it is killed before it
            // reads anything, and the message was not handed over.
            self.running.fetch_sub(1, Ordering::SeqCst);
            kill_group(pid);
            if let Ok(pid) = i32::try_from(pid) {
                // SIGKILL ends it at once; reaped so no zombie is left.
                let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
            }
            return Err(NotifyError::Thread(e));
        }
        Ok(())
    }
}

/// The environment the command gets: `BASE_ENV` and `names`, each as loopd has it (one
/// loopd has not is left out).
pub fn environment(names: &[String]) -> Vec<(String, String)> {
    BASE_ENV
        .iter()
        .map(|n| (*n).to_string())
        .chain(names.iter().cloned())
        .filter_map(|name| std::env::var(&name).ok().map(|value| (name, value)))
        .collect()
}

fn spawn(argv: &[String], env: &[(String, String)]) -> Result<Child, NotifyError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(NotifyError::NotSet);
    };
    Command::new(program)
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own process group, so a deadline kills what it started too.
        .process_group(0)
        .spawn()
        .map_err(NotifyError::Spawn)
}

/// Writes `text` to a started command's standard input and closes it. The message is at
/// most `inbox::MAX_MESSAGE_BYTES`, well under a pipe's buffer, so the write never waits
/// on the command reading; one that exits without reading makes it fail with a broken
/// pipe, which is the command's business.
fn feed(child: &mut Child, text: &str) {
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(text.as_bytes());
    }
}

/// Waits for a started command's end or its deadline.
fn finish(mut child: Child, timeout: Duration) -> Outcome {
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

/// Runs one command to its end or its deadline, on the calling thread.
#[cfg(test)]
fn run(argv: &[String], env: &[(String, String)], timeout: Duration, text: &str) -> Outcome {
    match spawn(argv, env) {
        Ok(mut child) => {
            feed(&mut child, text);
            finish(child, timeout)
        }
        Err(why) => Outcome::Failed(why.to_string()),
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
        let env = environment(&[]);
        assert_eq!(
            run(&argv, &env, Duration::from_secs(20), "tea\n"),
            Outcome::Done
        );
        assert_eq!(std::fs::read_to_string(out).unwrap(), "tea\n");
    }

    #[test]
    fn the_command_gets_path_lang_and_the_named_variables_only() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("env");
        let argv = sh(&format!("env > {}", out.display()));
        let env = vec![
            ("PATH".to_string(), "/usr/bin:/bin".to_string()),
            ("NTFY_TOPIC".to_string(), "t".to_string()),
        ];
        assert_eq!(run(&argv, &env, Duration::from_secs(20), ""), Outcome::Done);
        let mut seen: Vec<String> = std::fs::read_to_string(out)
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, _)| k.to_string()))
            // The shell sets these itself.
            .filter(|k| !["PWD", "SHLVL", "_", "OLDPWD"].contains(&k.as_str()))
            .collect();
        seen.sort();
        assert_eq!(seen, ["NTFY_TOPIC", "PATH"]);
    }

    #[test]
    fn a_failing_missing_or_hanging_command_is_a_failure() {
        let env = environment(&[]);
        let failed = run(&sh("exit 3"), &env, Duration::from_secs(20), "x");
        assert!(
            matches!(failed, Outcome::Failed(ref w) if w.contains("exit status: 3")),
            "{failed:?}"
        );
        let missing = run(
            &["/nonexistent/push".into()],
            &env,
            Duration::from_secs(20),
            "x",
        );
        assert!(matches!(missing, Outcome::Failed(ref w) if w.contains("started")));
        let hung = run(&sh("sleep 600"), &env, Duration::from_secs(1), "x");
        assert!(
            matches!(hung, Outcome::Failed(ref w) if w.contains("killed")),
            "{hung:?}"
        );
    }
}
