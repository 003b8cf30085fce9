//! A daemon under test: started with a notify socket, its stderr collected line by line,
//! killed on drop so a failing test leaves nothing running.

use super::{bin, Fixture, NotifySocket, HANG};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Daemon {
    pub child: Child,
    pub notify: NotifySocket,
    /// Lines the daemon wrote to stderr so far.
    pub log: Arc<Mutex<Vec<String>>>,
}

impl Daemon {
    /// A `Command` for `name` with `--config` pointing at the fixture.
    pub fn command(name: &str, fx: &Fixture) -> Command {
        Daemon::command_of(&bin(name), fx)
    }

    /// A `Command` for the binary at `path` (another build's, for a benchmark that runs
    /// two builds side by side) with `--config` pointing at the fixture.
    pub fn command_of(path: &std::path::Path, fx: &Fixture) -> Command {
        let mut cmd = Command::new(path);
        cmd.arg("--config")
            .arg(&fx.config)
            .env_remove("JOURNAL_STREAM")
            .env_remove("LISTEN_PID")
            .env_remove("LISTEN_FDS")
            .env_remove("WATCHDOG_USEC")
            .env_remove("WATCHDOG_PID");
        cmd
    }

    /// Starts `cmd` with a fresh notify socket, without waiting for readiness.
    pub fn spawn(cmd: Command, fx: &Fixture) -> Daemon {
        Daemon::spawn_with(cmd, NotifySocket::bind(&fx.path()))
    }

    /// Starts `cmd` pointed at `notify`, for wrappers that must name the socket themselves.
    pub fn spawn_with(mut cmd: Command, notify: NotifySocket) -> Daemon {
        cmd.env("NOTIFY_SOCKET", &notify.path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[daemon] {line}");
                sink.lock().unwrap().push(line);
            }
        });
        Daemon { child, notify, log }
    }

    /// Starts `name` on the fixture and waits for `READY=1`.
    pub fn start(name: &str, fx: &Fixture) -> Daemon {
        let mut d = Daemon::spawn(Daemon::command(name, fx), fx);
        d.ready();
        d
    }

    pub fn ready(&mut self) {
        if let Err(e) = self.notify.wait_for("READY=1", HANG) {
            let log = self.log_text();
            panic!("daemon never became ready: {e}\nits log:\n{log}");
        }
    }

    pub fn pid(&self) -> Pid {
        Pid::from_raw(self.child.id() as i32)
    }

    pub fn signal(&self, sig: Signal) {
        kill(self.pid(), sig).unwrap();
    }

    /// Waits for the process to exit, failing the test if it hangs.
    pub fn wait(&mut self) -> ExitStatus {
        self.wait_within(HANG)
    }

    /// `wait`, for a daemon whose exit waits on something slow (the real model's answer
    /// before a crash point).
    pub fn wait_within(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "daemon did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, then the exit status.
    pub fn stop(&mut self) -> ExitStatus {
        self.signal(Signal::SIGTERM);
        self.wait()
    }

    /// The daemon's peak resident set since it started (`VmHWM`), in KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        self.proc_status_kib("VmHWM:")
    }

    /// Its resident set now (`VmRSS`), in KiB (the benchmarks print it).
    #[cfg(feature = "bench")]
    pub fn rss_kib(&self) -> u64 {
        self.proc_status_kib("VmRSS:")
    }

    fn proc_status_kib(&self, field: &str) -> u64 {
        let path = format!("/proc/{}/status", self.child.id());
        let status = std::fs::read_to_string(path).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// Waits until a stderr line contains `needle`.
    pub fn wait_log(&self, needle: &str) -> String {
        let deadline = Instant::now() + HANG;
        loop {
            if let Some(l) = self.log.lock().unwrap().iter().find(|l| l.contains(needle)) {
                return l.clone();
            }
            assert!(
                Instant::now() < deadline,
                "no log line with {needle:?}; log:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
