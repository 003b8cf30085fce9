//! The first hour at a real terminal: `scripts/run-local` in a tmux pane (a real tty, so
//! it takes its interactive path: rlwrap around `socat -`, no READLINE address), typing
//! `/help`, a fact, a question about it and `/quit` as a person would and reading the
//! replies off the screen; then nothing run-local started may still run. SmolLM2 serves:
//! this checks the plumbing, not the answers (`scripts/bench first-hour` weighs those).
//! Waits poll `capture-pane`, bounded; nothing sleeps to synchronise.

use crate::support::prereq::{self, tool};
use crate::support::tmux::Tmux;
use crate::support::{bin, HANG};
use std::path::PathBuf;
use std::time::Duration;

/// The real model answering at a terminal on a shared 2-core machine: a guard against a
/// hang, not a speed assertion.
const ANSWER_WITHIN: Duration = Duration::from_secs(600);

/// run-local's own bound on llama.cpp's start is 600 s; this covers it and loopd's start.
const PROMPT_WITHIN: Duration = Duration::from_secs(900);

/// The lines after the last line that is exactly `typed` (rlwrap echoes it), when they
/// hold a whole reply block: some text, then a line holding only `.`.
fn reply_after(screen: &str, typed: &str) -> Option<Vec<String>> {
    let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
    let at = lines.iter().rposition(|l| l.ends_with(typed))?;
    let rest = &lines[at + 1..];
    let end = rest.iter().position(|l| *l == ".")?;
    (end > 0).then(|| rest[..end].iter().map(|l| l.to_string()).collect())
}

/// Processes whose command line names `dir`: run-local puts its whole run there (the
/// daemons' config, llama.cpp's slot directory), so anything it left behind names it.
fn processes_naming(dir: &str) -> Vec<String> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter(|p| {
            p.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|p| std::fs::read(p.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(dir))
        .collect()
}

/// The run's directory, from run-local's `ready` line (`… logs in DIR`).
fn run_dir(screen: &str) -> Option<String> {
    let line = screen.lines().find(|l| l.contains("run-local: ready in"))?;
    let dir = line.split(" logs in ").nth(1)?.trim();
    dir.starts_with("/tmp/boxmaker-local.")
        .then(|| dir.to_string())
}

#[test]
fn run_local_at_a_terminal_answers_help_a_fact_and_a_question_and_quit_stops_everything() {
    if !tool("tmux") || !tool("socat") {
        return;
    }
    let Some(venv) = prereq::venv() else { return };
    let Some(model) = prereq::smollm2(&venv) else {
        return;
    };
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
    let command = format!(
        "env BOXMAKER_VENV={venv:?} BOXMAKER_BIN_DIR={bins:?} BOXMAKER_LLAMA_PORT={port} \
         BOXMAKER_CTX_PER_SLOT=2048 BOXMAKER_N_PREDICT=48 {:?} --model {model:?}; \
         echo run-local exited $?",
        repo.join("scripts/run-local")
    );
    let tmux = Tmux::start("run-local", 160, 50, &command);
    let screen = tmux.wait(PROMPT_WITHIN, "prompt", |s| {
        s.contains("/quit or Ctrl-D leaves") || s.contains("run-local exited")
    });
    let dir = run_dir(&screen).unwrap_or_else(|| panic!("no ready line:\n{screen}"));
    // Each step is named, and nothing printed an error of its own on the way.
    for step in ["[1/5]", "[2/5]", "[3/5]", "[4/5]", "[5/5]"] {
        assert!(screen.contains(step), "no step {step}:\n{screen}");
    }
    assert!(!screen.contains("No such file"), "{screen}");

    tmux.keys("/help");
    let screen = tmux.wait(HANG, "/help reply", |s| reply_after(s, "/help").is_some());
    let help = reply_after(&screen, "/help").unwrap();
    assert!(
        help.iter()
            .any(|l| l.contains("Lines starting with / are commands")),
        "{screen}"
    );
    assert!(!screen.contains("unknown device/address"), "{screen}");
    // The prompt is visible: it follows each reply, ready for the next line.
    assert!(screen.contains("you> "), "{screen}");

    for line in [
        "my dentist appointment is on Thursday at 3pm with Dr. Alvarez",
        "When is my dentist appointment?",
    ] {
        tmux.keys(line);
        let screen = tmux.wait(ANSWER_WITHIN, "answer", |s| reply_after(s, line).is_some());
        let answer = reply_after(&screen, line).unwrap();
        assert!(!answer.iter().any(|l| l.starts_with("error:")), "{screen}");
    }

    // /quit ends run-local at once (socat does not wait on its input once loopd has
    // closed), and run-local stops everything it started.
    tmux.keys("/quit");
    let screen = tmux.wait(HANG, "exit", |s| s.contains("run-local exited"));
    assert!(screen.contains("run-local exited 0"), "{screen}");
    assert!(!screen.contains("Broken pipe"), "{screen}");
    let left = processes_naming(&dir);
    assert!(left.is_empty(), "still running after /quit: {left:#?}");
}
