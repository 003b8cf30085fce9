//! The first hour at a real terminal: `scripts/run-local` in a tmux pane (a real tty, so
//! it takes its interactive path: rlwrap around `socat -`, no READLINE address), typing
//! `/help` and a message as a person would and reading both replies off the screen.
//! Waits poll `capture-pane`, bounded; nothing sleeps to synchronise.

use crate::support::{bin, HANG};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The real model answering at a terminal on a shared 2-core machine: a guard against a
/// hang, not a speed assertion.
const ANSWER_WITHIN: Duration = Duration::from_secs(600);

/// One tmux server of this test's own (`-L`), so the owner's sessions are never touched.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .unwrap()
    }

    fn screen(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-J", "-S", "-2000", "-t", "run"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, text: &str) {
        assert!(self
            .run(&["send-keys", "-t", "run", "-l", text])
            .status
            .success());
        assert!(self
            .run(&["send-keys", "-t", "run", "Enter"])
            .status
            .success());
    }

    /// Polls the screen until `done` holds, for at most `within`.
    fn wait(&self, within: Duration, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + within;
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "no {what} on the terminal; it shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// The lines after the last line that is exactly `typed` (rlwrap echoes it), when they
/// hold a whole reply block: some text, then a line holding only `.`.
fn reply_after(screen: &str, typed: &str) -> Option<Vec<String>> {
    let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
    let at = lines.iter().rposition(|l| l.ends_with(typed))?;
    let rest = &lines[at + 1..];
    let end = rest.iter().position(|l| *l == ".")?;
    (end > 0).then(|| rest[..end].iter().map(|l| l.to_string()).collect())
}

fn have(tool: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("SKIPPED: {tool} is not installed (.ci/run installs it)");
    }
    found
}

fn venv() -> Option<PathBuf> {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()?
        .to_path_buf();
    let venv = std::env::var_os("BOXMAKER_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo.join(".venv"));
    if venv.join("bin/python").exists() {
        Some(venv)
    } else {
        eprintln!(
            "SKIPPED: no venv at {} (scripts/setup-python)",
            venv.display()
        );
        None
    }
}

#[test]
fn run_local_at_a_terminal_answers_help_and_a_message() {
    if !have("tmux") || !have("socat") {
        return;
    }
    let Some(venv) = venv() else { return };
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let bins = bin("loopd").parent().unwrap().to_path_buf();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let tmux = Tmux {
        socket: format!("boxmaker-e2e-{}", std::process::id()),
    };
    let command = format!(
        "env BOXMAKER_VENV={venv:?} BOXMAKER_BIN_DIR={bins:?} BOXMAKER_LLAMA_PORT={port} \
         BOXMAKER_CTX_PER_SLOT=2048 BOXMAKER_N_PREDICT=48 {:?}; echo run-local exited $?",
        repo.join("scripts/run-local")
    );
    let started = tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "run",
        "-x",
        "160",
        "-y",
        "50",
        &command,
    ]);
    assert!(started.status.success(), "{started:?}");
    // Keep the pane after run-local exits, so a failure shows why.
    tmux.run(&["set-option", "-t", "run", "remain-on-exit", "on"]);
    tmux.wait(ANSWER_WITHIN, "prompt", |s| {
        s.contains("run-local: talking to loopd")
    });

    tmux.keys("/help");
    let screen = tmux.wait(HANG, "/help reply", |s| reply_after(s, "/help").is_some());
    let help = reply_after(&screen, "/help").unwrap();
    assert!(
        help.iter()
            .any(|l| l.contains("Lines starting with / are commands")),
        "{screen}"
    );
    assert!(!screen.contains("unknown device/address"), "{screen}");

    tmux.keys("Say hello.");
    let screen = tmux.wait(ANSWER_WITHIN, "answer", |s| {
        reply_after(s, "Say hello.").is_some()
    });
    let answer = reply_after(&screen, "Say hello.").unwrap();
    assert!(!answer.iter().any(|l| l.starts_with("error:")), "{screen}");

    // Ctrl-D leaves the prompt, and run-local stops everything it started.
    tmux.run(&["send-keys", "-t", "run", "C-d"]);
    tmux.wait(HANG, "exit", |s| s.contains("run-local exited 0"));
}
