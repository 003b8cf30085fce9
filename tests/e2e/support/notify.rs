//! A stand-in for systemd's notify socket: a datagram socket the daemon is pointed at with
//! `NOTIFY_SOCKET`, recording every message it sends.

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub struct NotifySocket {
    sock: UnixDatagram,
    pub path: PathBuf,
    /// Every message received so far, in order; each is one or more `KEY=VALUE` lines.
    pub seen: Vec<String>,
}

impl NotifySocket {
    pub fn bind(dir: &Path) -> NotifySocket {
        // One socket per daemon, so two daemons in one test never share or unlink one.
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("notify-{n}.sock"));
        let _ = std::fs::remove_file(&path);
        let sock = UnixDatagram::bind(&path).unwrap();
        NotifySocket {
            sock,
            path,
            seen: Vec::new(),
        }
    }

    /// Waits until a message holding the line `line` arrives, and returns that message.
    /// Messages already seen count, so a test cannot miss one that came early.
    pub fn wait_for(&mut self, line: &str, within: Duration) -> Result<String, String> {
        if let Some(m) = self.seen.iter().find(|m| m.lines().any(|l| l == line)) {
            return Ok(m.clone());
        }
        self.wait_for_new(line, within)
    }

    /// Waits until some message, seen before or arriving now, has a line matching `pred`.
    pub fn wait_line(
        &mut self,
        pred: impl Fn(&str) -> bool,
        within: Duration,
    ) -> Result<String, String> {
        let deadline = Instant::now() + within;
        let mut buf = [0u8; 4096];
        loop {
            if let Some(l) = self.seen.iter().flat_map(|m| m.lines()).find(|l| pred(l)) {
                return Ok(l.to_string());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!(
                    "no matching line within {within:?}; saw {:?}",
                    self.seen
                ));
            }
            self.sock.set_read_timeout(Some(left)).unwrap();
            match self.sock.recv(&mut buf) {
                Ok(n) => self
                    .seen
                    .push(String::from_utf8_lossy(&buf[..n]).into_owned()),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// Like `wait_for`, but only a message arriving from now on counts.
    pub fn wait_for_new(&mut self, line: &str, within: Duration) -> Result<String, String> {
        let deadline = Instant::now() + within;
        let mut buf = [0u8; 4096];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!(
                    "no {line:?} within {within:?}; saw {:?}",
                    self.seen
                ));
            }
            self.sock.set_read_timeout(Some(left)).unwrap();
            match self.sock.recv(&mut buf) {
                Ok(n) => {
                    let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
                    self.seen.push(msg.clone());
                    if msg.lines().any(|l| l == line) {
                        return Ok(msg);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}
