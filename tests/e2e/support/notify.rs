//! A stand-in for systemd's notify socket: a datagram socket the daemon is pointed at with
//! `NOTIFY_SOCKET`, recording every message it sends.
//!
//! Like systemd, it reads all the time, on a thread of its own. A reader that only read
//! while a test waited would let the socket's queue fill (`net.unix.max_dgram_qlen` is
//! often 10), and the daemon's next `STATUS=` would then block its poll loop: a long
//! conversation in a test would hang after ten status changes.

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

/// How often the reader thread looks up from `recv` to see whether its socket is still
/// wanted; it ends once the `NotifySocket` is dropped.
const POLL: Duration = Duration::from_millis(200);

type Inbox = (Mutex<Vec<String>>, Condvar);

pub struct NotifySocket {
    pub path: PathBuf,
    inbox: Arc<Inbox>,
    /// Messages a wait has looked at: those up to the last match, or all at a timeout.
    /// `wait_for_new` looks only past them, so a message that came while the test was
    /// busy (a `RELOADING=1` right after its SIGHUP) is still new to it.
    looked: usize,
}

impl NotifySocket {
    pub fn bind(dir: &Path) -> NotifySocket {
        // One socket per daemon, so two daemons in one test never share or unlink one.
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("notify-{n}.sock"));
        let _ = std::fs::remove_file(&path);
        let sock = UnixDatagram::bind(&path).unwrap();
        sock.set_read_timeout(Some(POLL)).unwrap();
        let inbox: Arc<Inbox> = Arc::default();
        let weak = Arc::downgrade(&inbox);
        std::thread::spawn(move || read_all(&sock, &weak));
        NotifySocket {
            path,
            inbox,
            looked: 0,
        }
    }

    /// Every message received so far, in order; each is one or more `KEY=VALUE` lines.
    pub fn seen(&self) -> Vec<String> {
        self.inbox.0.lock().unwrap().clone()
    }

    /// Waits until a message holding the line `line` arrives, and returns that message.
    /// Messages already seen count, so a test cannot miss one that came early.
    pub fn wait_for(&mut self, line: &str, within: Duration) -> Result<String, String> {
        self.wait_from(0, line, within)
    }

    /// Like `wait_for`, but only a message no earlier wait has looked at counts.
    pub fn wait_for_new(&mut self, line: &str, within: Duration) -> Result<String, String> {
        self.wait_from(self.looked, line, within)
    }

    /// Waits until some message, seen before or arriving now, has a line matching `pred`,
    /// and returns that line.
    pub fn wait_line(
        &mut self,
        pred: impl Fn(&str) -> bool,
        within: Duration,
    ) -> Result<String, String> {
        let deadline = Instant::now() + within;
        let (lock, arrived) = &*self.inbox;
        let mut seen = lock.lock().unwrap();
        loop {
            if let Some(l) = seen.iter().flat_map(|m| m.lines()).find(|l| pred(l)) {
                return Ok(l.to_string());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!(
                    "no matching line within {within:?}; saw {:?}",
                    *seen
                ));
            }
            seen = arrived.wait_timeout(seen, left).unwrap().0;
        }
    }

    fn wait_from(&mut self, from: usize, line: &str, within: Duration) -> Result<String, String> {
        let deadline = Instant::now() + within;
        let (lock, arrived) = &*self.inbox;
        let mut seen = lock.lock().unwrap();
        loop {
            let found = seen[from..]
                .iter()
                .position(|m| m.lines().any(|l| l == line));
            if let Some(i) = found {
                self.looked = self.looked.max(from + i + 1);
                return Ok(seen[from + i].clone());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                self.looked = seen.len();
                return Err(format!("no {line:?} within {within:?}; saw {:?}", *seen));
            }
            seen = arrived.wait_timeout(seen, left).unwrap().0;
        }
    }
}

fn read_all(sock: &UnixDatagram, inbox: &Weak<Inbox>) {
    let mut buf = [0u8; 4096];
    loop {
        let got = sock.recv(&mut buf);
        let Some(inbox) = inbox.upgrade() else {
            return;
        };
        match got {
            Ok(n) => {
                let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
                inbox.0.lock().unwrap().push(msg);
                inbox.1.notify_all();
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => {
                eprintln!("[notify] reading the notify socket: {e}; no more messages");
                return;
            }
        }
    }
}
