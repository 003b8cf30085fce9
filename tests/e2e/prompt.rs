//! The prompt `scripts/run-local` gives at a terminal (`scripts/channel_prompt.py`) in a
//! tmux pane, a real tty, against loopd and the scripted stand-in: a line past what a
//! terminal passes is not sent cut, and loopd going away unasked is said, not taken for
//! `/quit` (docs/running.md, 'The prompt and socat's `-t`'). Waits poll the screen,
//! bounded; nothing sleeps to synchronise.

use crate::loopd::Loopd;
use crate::support::prereq::tool;
use crate::support::standin::text;
use crate::support::tmux::Tmux;
use crate::support::HANG;
use std::path::PathBuf;

/// The prompt on `lp`'s socket in a pane, with its exit status printed when it ends.
fn prompt(lp: &Loopd, name: &str) -> Tmux {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("scripts/channel_prompt.py");
    let command = format!(
        "python3 {script:?} {:?}; echo prompt exited $?; sleep 600",
        lp.fx.loopd_sock
    );
    let tmux = Tmux::start(name, 120, 40, &command);
    tmux.wait(HANG, "the prompt", |s| s.contains("you> "));
    tmux
}

/// Regression: a pasted line longer than the terminal's 4095 bytes reached loopd, and
/// the model, cut there, without a word.
#[test]
fn a_line_past_the_terminals_limit_is_not_sent_cut_and_says_so() {
    if !tool("tmux") {
        return;
    }
    let lp = Loopd::start("");
    let tmux = prompt(&lp, "prompt-long");
    tmux.keys(&"x".repeat(5000));
    let screen = tmux.wait(HANG, "the refusal", |s| s.contains("was not sent"));
    assert!(screen.contains("cut at 4095 bytes"), "{screen}");
    lp.llama.push(text(&["hi there"]));
    tmux.keys("hello");
    tmux.wait(HANG, "the reply", |s| s.contains("hi there"));
    let chats = lp.llama.chats();
    assert_eq!(chats.len(), 1, "only the short line reached the model");
    assert!(!chats[0].json().to_string().contains("xxxx"));
}

/// Regression: loopd stopping or crashing closed the prompt as `/quit` does, status 0
/// and no word, so a line sent meanwhile was lost unseen.
#[test]
fn loopd_going_away_unasked_is_said_and_quit_is_not() {
    if !tool("tmux") {
        return;
    }
    let mut lp = Loopd::start("");
    let tmux = prompt(&lp, "prompt-gone");
    let _ = lp.daemon.child.kill();
    let _ = lp.daemon.child.wait();
    let screen = tmux.wait(HANG, "the prompt's end", |s| s.contains("prompt exited"));
    assert!(
        screen.contains("loopd closed the connection without being asked"),
        "{screen}"
    );
    assert!(screen.contains("prompt exited 1"), "{screen}");

    let lp = Loopd::start("");
    let tmux = prompt(&lp, "prompt-quit");
    // loopd reads a command's first word: `/quit now` quits as `/quit` does.
    tmux.keys("/quit now");
    let screen = tmux.wait(HANG, "the prompt's end", |s| s.contains("prompt exited"));
    assert!(screen.contains("prompt exited 0"), "{screen}");
    assert!(!screen.contains("without being asked"), "{screen}");
}
