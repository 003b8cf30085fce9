//! The loop's limits against a toy line service on a real socket: a server thread per
//! test with limits short enough to watch, and plain blocking clients. The server thread
//! is left running when a test ends (the loop stops only on a signal, which would stop
//! the whole test process); it dies with the process.

use super::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream as StdStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes of each answer the toy service gives: large, so a client that does not read
/// reaches the output limit after a few.
const ANSWER: usize = 16 * 1024;

/// Answers each line with `ANSWER` bytes of `x` and a newline, one line at a time while
/// there is room, counting what it answered.
struct Echo {
    answered: Arc<AtomicUsize>,
}

impl Service for Echo {
    fn accept(&mut self, _out: &mut Outbox, _id: ConnId, _peer: Peer) {}
    fn input(&mut self, out: &mut Outbox, id: ConnId, input: &mut Vec<u8>) {
        while out.has_room(id) {
            let Some(nl) = input.iter().position(|&b| b == b'\n') else {
                return;
            };
            input.drain(..=nl);
            let mut answer = vec![b'x'; ANSWER];
            answer.push(b'\n');
            out.send(id, answer);
            self.answered.fetch_add(1, Ordering::SeqCst);
        }
    }
    fn input_closed(&mut self, out: &mut Outbox, id: ConnId, _rest: &mut Vec<u8>) {
        out.close(id);
    }
    fn closed(&mut self, _id: ConnId, _left: crate::Left) {}
    fn farewell(&self, why: &Farewell) -> Vec<u8> {
        format!("bye: {why}\n").into_bytes()
    }
    type ReloadError = std::convert::Infallible;
    fn reload(&mut self) -> Result<(), Self::ReloadError> {
        Ok(())
    }
    fn status(&self) -> String {
        String::new()
    }
}

fn limits() -> Limits {
    Limits {
        max_clients: 4,
        max_input: 1024,
        max_output: 4 * ANSWER,
        hard_output: 1 << 30,
        message_deadline: Duration::from_millis(300),
        idle_timeout: Duration::from_secs(3600),
        stall_timeout: Duration::from_secs(3600),
        evict_quiet: Duration::from_secs(3600),
    }
}

struct Running {
    _dir: tempfile::TempDir,
    path: PathBuf,
    answered: Arc<AtomicUsize>,
}

fn serve(limits: Limits) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let answered = Arc::new(AtomicUsize::new(0));
    let mut svc = Echo {
        answered: Arc::clone(&answered),
    };
    let mut server = Server::new(listener, limits).unwrap();
    std::thread::spawn(move || server.run(&mut svc));
    Running {
        _dir: dir,
        path,
        answered,
    }
}

fn connect(r: &Running) -> StdStream {
    let s = StdStream::connect(&r.path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s
}

/// The last line the server sent before closing. A reset after it (the server closed
/// with bytes of ours unread) ends the reading like a close does.
fn last_line(s: &mut StdStream) -> String {
    let mut all = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(n @ 1..) = s.read(&mut chunk) {
        all.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&all);
    text.lines().last().unwrap_or_default().to_string()
}

/// Regression: the partial-message timeout counted from the last byte, so a trickle of
/// one byte at a time held its half message (and its slot) for ever.
#[test]
fn a_trickled_message_is_closed_at_its_deadline_from_the_first_byte() {
    let r = serve(limits());
    let mut s = connect(&r);
    let reader = s.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        // Far past the 300 ms deadline, one byte every 20 ms; stops once closed.
        for _ in 0..3000 {
            if s.write_all(b"y").is_err() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    });
    let mut reader = reader;
    let last = last_line(&mut reader);
    assert!(
        last.starts_with("bye: closed: a message did not arrive whole within 0.3 s"),
        "{last}"
    );
    assert!(trickle.join().unwrap(), "the trickling client was closed");
}

#[test]
fn an_idle_connection_is_closed_with_its_farewell() {
    let r = serve(Limits {
        idle_timeout: Duration::from_millis(300),
        ..limits()
    });
    let mut s = connect(&r);
    assert_eq!(
        last_line(&mut s),
        "bye: closed after 0.3 s without activity"
    );
}

/// Regression: a service answered every request already buffered before the output limit
/// was looked at, so one client that wrote thousands of requests and read nothing made
/// the daemon hold thousands of answers.
#[test]
fn a_client_that_does_not_read_is_not_answered_past_its_limit_and_loses_nothing() {
    let r = serve(limits());
    let mut s = connect(&r);
    let lines = 500;
    s.write_all(&b"q\n".repeat(lines)).unwrap();
    // A probe on another connection is answered, so the loop has turned since the flood.
    let mut probe = connect(&r);
    probe.write_all(b"p\n").unwrap();
    let mut one = vec![0u8; ANSWER + 1];
    probe.read_exact(&mut one).unwrap();
    let held = r.answered.load(Ordering::SeqCst);
    // The limit plus one answer, plus what the socket buffers took: far below 500.
    assert!(
        held < lines / 2,
        "{held} answers computed for a client that reads nothing"
    );
    let mut got = 0;
    let mut reader = BufReader::new(s);
    let mut line = String::new();
    while got < lines {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "closed after {got}"
        );
        assert_eq!(line.len(), ANSWER + 1);
        got += 1;
    }
}

#[test]
fn a_client_over_the_limit_is_told_when_no_slot_can_be_freed() {
    let r = serve(limits());
    let held: Vec<StdStream> = (0..4).map(|_| connect(&r)).collect();
    for mut s in held.iter().map(|s| s.try_clone().unwrap()) {
        // Each is answered, so the loop has accepted all four.
        s.write_all(b"q\n").unwrap();
        let mut one = vec![0u8; ANSWER + 1];
        s.read_exact(&mut one).unwrap();
    }
    let mut fifth = connect(&r);
    assert_eq!(
        last_line(&mut fifth),
        "bye: too many clients: all 4 connections are busy; try again shortly"
    );
}

#[test]
fn when_full_the_quietest_connection_gives_its_slot_to_a_newcomer() {
    let r = serve(Limits {
        evict_quiet: Duration::ZERO,
        ..limits()
    });
    let mut first = connect(&r);
    let rest: Vec<StdStream> = (0..3).map(|_| connect(&r)).collect();
    for s in std::iter::once(&first).chain(&rest) {
        let mut s = s.try_clone().unwrap();
        s.write_all(b"q\n").unwrap();
        let mut one = vec![0u8; ANSWER + 1];
        s.read_exact(&mut one).unwrap();
    }
    // Answered in order, so the first connection's last activity is the oldest.
    let mut fifth = connect(&r);
    fifth.write_all(b"q\n").unwrap();
    let mut one = vec![0u8; ANSWER + 1];
    fifth.read_exact(&mut one).unwrap();
    assert_eq!(
        last_line(&mut first),
        "bye: closed to make room for a new client: all 4 connections were taken and this one was the quietest"
    );
}

/// Bytes of the one answer `Bulk` gives: far more than a socket's buffer holds, so it is
/// written in many turns of the loop as the client reads.
const BULK: usize = 4 << 20;

/// Answers its first line with `BULK` bytes and records when the loop says everything
/// queued was written.
struct Bulk {
    drained: Arc<AtomicUsize>,
}

impl Service for Bulk {
    fn accept(&mut self, _out: &mut Outbox, _id: ConnId, _peer: Peer) {}
    fn input(&mut self, out: &mut Outbox, id: ConnId, input: &mut Vec<u8>) {
        if input.contains(&b'\n') {
            input.clear();
            out.send(id, vec![b'y'; BULK]);
        }
    }
    fn input_closed(&mut self, out: &mut Outbox, id: ConnId, _rest: &mut Vec<u8>) {
        out.close(id);
    }
    fn closed(&mut self, _id: ConnId, _left: crate::Left) {}
    fn drained(&mut self, _out: &mut Outbox, _id: ConnId) {
        self.drained.fetch_add(1, Ordering::SeqCst);
    }
    fn farewell(&self, why: &Farewell) -> Vec<u8> {
        format!("bye: {why}\n").into_bytes()
    }
    type ReloadError = std::convert::Infallible;
    fn reload(&mut self) -> Result<(), Self::ReloadError> {
        Ok(())
    }
    fn status(&self) -> String {
        String::new()
    }
}

/// A service that promises delivery (loopd's inbox) marks a message delivered when the
/// loop says it was written to the socket: never while some of it still waits in the
/// output queue, and once the last byte is written.
#[test]
fn a_service_is_told_drained_only_once_everything_queued_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let drained = Arc::new(AtomicUsize::new(0));
    let mut svc = Bulk {
        drained: Arc::clone(&drained),
    };
    let limits = Limits {
        hard_output: 1 << 30,
        max_output: 1 << 30,
        ..limits()
    };
    let mut server = Server::new(listener, limits).unwrap();
    std::thread::spawn(move || server.run(&mut svc));
    let mut s = StdStream::connect(&path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(b"go\n").unwrap();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut read = s.read(&mut chunk).unwrap();
    assert!(read > 0);
    assert_eq!(
        drained.load(Ordering::SeqCst),
        0,
        "most of the answer is still queued"
    );
    while read < BULK {
        read += s.read(&mut chunk).unwrap();
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while drained.load(Ordering::SeqCst) == 0 {
        assert!(std::time::Instant::now() < deadline, "never told drained");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(drained.load(Ordering::SeqCst), 1);
}

/// Regression: output an earlier turn left unwritten, written whole by the flush of an
/// `apply` that only closed the connection, was never reported drained: a service that
/// marks delivery on a drain took a message the client had whole for one it had not.
#[test]
fn output_written_whole_by_a_close_is_reported_drained_before_the_close() {
    use std::sync::Mutex;
    struct Log(Arc<Mutex<Vec<String>>>);
    impl Service for Log {
        fn accept(&mut self, _out: &mut Outbox, _id: ConnId, _peer: Peer) {}
        fn input(&mut self, _out: &mut Outbox, _id: ConnId, _input: &mut Vec<u8>) {}
        fn input_closed(&mut self, _out: &mut Outbox, _id: ConnId, _rest: &mut Vec<u8>) {}
        fn closed(&mut self, _id: ConnId, left: crate::Left) {
            self.0.lock().unwrap().push(format!("closed {left:?}"));
        }
        fn drained(&mut self, _out: &mut Outbox, _id: ConnId) {
            self.0.lock().unwrap().push("drained".into());
        }
        fn farewell(&self, _why: &Farewell) -> Vec<u8> {
            Vec::new()
        }
        type ReloadError = std::convert::Infallible;
        fn reload(&mut self) -> Result<(), Self::ReloadError> {
            Ok(())
        }
        fn status(&self) -> String {
            String::new()
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let listener = std::os::unix::net::UnixListener::bind(dir.path().join("c.sock")).unwrap();
    let mut server = Server::new(listener, limits()).unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut svc = Log(Arc::clone(&log));
    let (ours, mut theirs) = mio::net::UnixStream::pair().unwrap();
    let token = Token(FIRST_CONN);
    let mut conn = Conn::new(ours);
    conn.output.extend_from_slice(b"a reminder\n");
    server.conns.insert(token, conn);
    let mut out = server.outbox();
    out.close(ConnId(token.0));
    server.apply(&mut svc, &mut out);
    let mut got = [0u8; 32];
    assert_eq!(theirs.read(&mut got).unwrap(), 11);
    let log = log.lock().unwrap().clone();
    assert_eq!(log, ["drained", "closed Nothing"]);
}
