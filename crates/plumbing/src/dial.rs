//! A client's side of a one-shot exchange on a Unix socket: connect, send one request,
//! read one reply, on a fresh connection, each step bounded by the same timeout, so a
//! stuck server delays its caller by that timeout per step at most. What the bytes mean is the caller's:
//! it passes the send and receive steps, and says where an `io::Error` sits in their
//! error, so a step that ran out of time is told apart from one that failed.
//!
//! loopd's memoryd client (`crates/conversation/src/memory.rs`) and `memoryd recall`
//! (`daemons/memoryd/src/cli.rs`) are the two callers; each wraps `DialError` in its own.

use nix::sys::socket::{self, sockopt, AddressFamily, SockFlag, SockType, UnixAddr};
use nix::sys::time::{TimeVal, TimeValLike};
use std::fmt;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The step of an exchange that failed or ran out of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Connecting; it runs out of time only when the server's listen backlog is full.
    Connect,
    Send,
    Receive,
}

/// What the other side did not do, for a timeout in words rather than "Resource
/// temporarily unavailable (os error 11)".
impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::Connect => "accept the connection",
            Step::Send => "take the request",
            Step::Receive => "answer",
        })
    }
}

#[derive(Debug)]
pub enum DialError<E> {
    /// The socket could not be made or connected: no such path, nothing listening.
    Connect { path: PathBuf, source: nix::Error },
    /// `step` ran into the timeout. `error` is the step's own error for a send or a
    /// receive, and none for a connect.
    Timeout {
        step: Step,
        after: Duration,
        error: Option<E>,
    },
    /// The caller's send or receive failed for another reason than time.
    Failed { step: Step, error: E },
}

impl<E: fmt::Display> fmt::Display for DialError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DialError::Connect { path, source } => {
                write!(f, "connect {}: {}", path.display(), source.desc())
            }
            DialError::Timeout { step, after, .. } => {
                write!(
                    f,
                    "the other side did not {step} within {} s",
                    after.as_secs_f64()
                )
            }
            DialError::Failed { error, .. } => write!(f, "{error}"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for DialError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DialError::Connect { source, .. } => Some(source),
            DialError::Timeout { error, .. } => error.as_ref().map(|e| e as _),
            DialError::Failed { error, .. } => Some(error),
        }
    }
}

/// Connects to `path`, runs `send` then `receive` on the connection and returns what
/// `receive` read. `io_of` finds the `io::Error` inside a step's error, if any; a
/// would-block or timed-out one there means the step ran into `timeout`.
pub fn exchange<T, E>(
    path: &Path,
    timeout: Duration,
    send: impl FnOnce(&mut Timed) -> Result<(), E>,
    receive: impl FnOnce(&mut Timed) -> Result<T, E>,
    io_of: fn(&E) -> Option<&io::Error>,
) -> Result<T, DialError<E>> {
    let stream = connect(path, timeout)?;
    let step_error = |step, error: E| {
        if io_of(&error).is_some_and(timed_out) {
            DialError::Timeout {
                step,
                after: timeout,
                error: Some(error),
            }
        } else {
            DialError::Failed { step, error }
        }
    };
    let mut send_side = Timed::new(stream, timeout);
    send(&mut send_side).map_err(|e| step_error(Step::Send, e))?;
    let mut receive_side = Timed::new(send_side.stream, timeout);
    receive(&mut receive_side).map_err(|e| step_error(Step::Receive, e))
}

/// The connection as one step sees it: every read and write waits at most what is left of
/// the step's timeout. A socket timeout alone bounds each `read` call, so a server
/// trickling a byte just inside it could stretch a step without limit.
pub struct Timed {
    stream: UnixStream,
    deadline: Instant,
}

impl Timed {
    fn new(stream: UnixStream, timeout: Duration) -> Timed {
        Timed {
            stream,
            deadline: Instant::now() + timeout,
        }
    }

    /// What is left of the step, or a timed-out error when nothing is.
    fn left(&self) -> io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the step's time ran out",
            ));
        }
        Ok(left)
    }
}

impl io::Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.set_read_timeout(Some(self.left()?))?;
        self.stream.read(buf)
    }
}

impl io::Write for Timed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stream.set_write_timeout(Some(self.left()?))?;
        self.stream.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

/// Whether an I/O error is a socket timeout running out (`SO_SNDTIMEO`/`SO_RCVTIMEO`
/// report it as `EAGAIN`).
fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Connects with the send and receive timeouts already set; on a Unix socket the send
/// timeout also bounds the `connect` itself (a full backlog would otherwise block it).
fn connect<E>(path: &Path, timeout: Duration) -> Result<UnixStream, DialError<E>> {
    let err = |source| DialError::Connect {
        path: path.to_path_buf(),
        source,
    };
    let fd = socket::socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(err)?;
    let tv = TimeVal::milliseconds(i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX));
    // Bounds `connect` on a full listen backlog; each read sets its own receive timeout.
    socket::setsockopt(&fd, sockopt::SendTimeout, &tv).map_err(err)?;
    let addr = UnixAddr::new(path).map_err(err)?;
    match socket::connect(fd.as_raw_fd(), &addr) {
        // A full listen backlog: the send timeout ran out while connect waited.
        Err(nix::Error::EAGAIN) => Err(DialError::Timeout {
            step: Step::Connect,
            after: timeout,
            error: None,
        }),
        Err(e) => Err(err(e)),
        Ok(()) => Ok(UnixStream::from(fd)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixListener;

    fn io_of(e: &io::Error) -> Option<&io::Error> {
        Some(e)
    }

    #[test]
    fn a_server_that_never_answers_is_a_receive_timeout_not_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let listener = UnixListener::bind(&path).unwrap();
        let got = exchange(
            &path,
            Duration::from_millis(50),
            |s| s.write_all(b"ping"),
            |s| s.read_exact(&mut [0u8; 4]),
            io_of,
        );
        drop(listener);
        match got {
            Err(DialError::Timeout {
                step: Step::Receive,
                error: Some(_),
                ..
            }) => {}
            other => panic!("expected a receive timeout, got {other:?}"),
        }
    }

    #[test]
    fn a_missing_socket_is_a_connect_error_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("absent");
        let got = exchange(&path, Duration::from_secs(1), |_| Ok(()), |_| Ok(()), io_of);
        let e = got.expect_err("nothing listens there");
        assert!(matches!(e, DialError::Connect { .. }), "{e:?}");
        assert!(e.to_string().contains("absent"), "{e}");
    }

    #[test]
    fn a_step_failing_for_another_reason_is_passed_through() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let _listener = UnixListener::bind(&path).unwrap();
        let got: Result<(), _> = exchange(
            &path,
            Duration::from_secs(5),
            |_| Err(io::Error::other("no")),
            |_| Ok(()),
            io_of,
        );
        assert!(matches!(
            got,
            Err(DialError::Failed {
                step: Step::Send,
                ..
            })
        ));
    }

    #[test]
    fn a_server_trickling_its_answer_inside_each_socket_timeout_still_runs_out_of_time() {
        // Regression: each read waited up to the timeout afresh, so a byte every 30 ms
        // against a 100 ms timeout kept the receive going as long as the server liked.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let listener = UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            let (mut c, _) = listener.accept().unwrap();
            for _ in 0..40 {
                if c.write_all(b"x").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(30));
            }
        });
        let got = exchange(
            &path,
            Duration::from_millis(100),
            |_| Ok(()),
            |s| s.read_exact(&mut [0u8; 40]),
            io_of,
        );
        server.join().unwrap();
        match got {
            Err(DialError::Timeout {
                step: Step::Receive,
                ..
            }) => {}
            other => panic!("expected a receive timeout, got {other:?}"),
        }
    }
}
