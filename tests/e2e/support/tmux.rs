//! A real terminal for tests: a tmux server of the test's own (`-L`, so the owner's
//! sessions are never touched) running one command in one pane of a fixed size. Tests
//! type into it and read the screen as a person would; waits poll `capture-pane`,
//! bounded, and nothing sleeps to synchronise.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// How often a wait looks at the screen again.
const LOOK_EVERY: Duration = Duration::from_millis(100);

pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts `command` in a `width`×`height` pane of a new tmux server named after
    /// `name` and this test process. The pane stays after the command exits, so a
    /// failure shows why.
    pub fn start(name: &str, width: u16, height: u16, command: &str) -> Tmux {
        let tmux = Tmux {
            socket: format!("boxmaker-e2e-{name}-{}", std::process::id()),
        };
        let (w, h) = (width.to_string(), height.to_string());
        let started = tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "pane",
            "-x",
            &w,
            "-y",
            &h,
            command,
        ]);
        assert!(started.status.success(), "{started:?}");
        tmux.run(&["set-option", "-t", "pane", "remain-on-exit", "on"]);
        tmux
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .unwrap()
    }

    /// The pane as a person sees it, wrapped rows joined (`-J`), with 2000 rows of
    /// scrollback.
    pub fn screen(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-J", "-S", "-2000", "-t", "pane"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The pane's rows as the terminal draws them, each wrapped row on its own (no `-J`),
    /// with 2000 rows of scrollback: where a wrap puts a character at column 0, a row
    /// starts with it.
    pub fn rows(&self) -> Vec<String> {
        let out = self.run(&["capture-pane", "-p", "-S", "-2000", "-t", "pane"]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|row| row.trim_end_matches(' ').to_string())
            .collect()
    }

    /// Types `text` and Enter.
    pub fn keys(&self, text: &str) {
        assert!(self
            .run(&["send-keys", "-t", "pane", "-l", text])
            .status
            .success());
        assert!(self
            .run(&["send-keys", "-t", "pane", "Enter"])
            .status
            .success());
    }

    /// Polls the screen until `done` holds, for at most `within`; the screen it held on.
    pub fn wait(&self, within: Duration, what: &str, done: impl Fn(&str) -> bool) -> String {
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
            std::thread::sleep(LOOK_EVERY);
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}
