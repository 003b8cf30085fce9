//! The server: a listener on a loopback port, a thread per connection (as uvicorn serves
//! many requests at once), one request read and one answer written on each, and the
//! `Standin` handle a test drives it through.

use super::auth::authorized;
use super::fastapi::{detail, in_fastapi_order};
use super::routes::{create_session, route, setup_session};
use super::state::{Fault, State};
use super::HANG;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A request body bigger than this is not read: the stand-in serves tests, and 100
/// messages of 25 000 characters of four bytes are 10 MB.
const MAX_BODY: usize = 16 * 1024 * 1024;

type Shared = Arc<(Mutex<State>, Condvar)>;

/// The running stand-in; dropping it stops the server thread.
pub struct Standin {
    addr: SocketAddr,
    shared: Shared,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Standin {
    pub fn start() -> Standin {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut s = Standin {
            addr,
            shared: Arc::new((Mutex::new(State::default()), Condvar::new())),
            stop: Arc::new(AtomicBool::new(false)),
            thread: None,
        };
        s.serve(listener);
        s
    }

    fn serve(&mut self, listener: TcpListener) {
        let shared = Arc::clone(&self.shared);
        let stop = Arc::new(AtomicBool::new(false));
        self.stop = Arc::clone(&stop);
        self.thread = Some(std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                if let Ok(conn) = conn {
                    let shared = Arc::clone(&shared);
                    std::thread::spawn(move || handle(conn, &shared));
                }
            }
        }));
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Closes the listening socket: connections are refused until `up`.
    pub fn down(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // The accept loop only looks at the flag when a connection comes in.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }

    /// Listens on the same address again.
    pub fn up(&mut self) {
        let listener = TcpListener::bind(self.addr).unwrap();
        self.serve(listener);
    }

    pub fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.shared.0.lock().unwrap())
    }

    /// Waits until `done` holds; panics with the state after `HANG`.
    pub fn wait(&self, done: impl Fn(&State) -> bool) {
        let deadline = Instant::now() + HANG;
        let mut st = self.shared.0.lock().unwrap();
        while !done(&st) {
            let now = Instant::now();
            assert!(now < deadline, "stand-in: gave up waiting; state {st:#?}");
            st = self.shared.1.wait_timeout(st, deadline - now).unwrap().0;
        }
    }
}

impl Drop for Standin {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.down();
        }
    }
}

/// What a request came as.
pub(super) struct Request {
    pub(super) method: String,
    pub(super) target: String,
    pub(super) auth: Option<String>,
    pub(super) body: Vec<u8>,
}

fn handle(mut conn: TcpStream, shared: &Shared) {
    conn.set_read_timeout(Some(HANG)).unwrap();
    let Some(req) = read_request(&mut conn) else {
        return;
    };
    // A session set-up a test holds (`State::hold_setup`) is waited for here, outside the
    // lock: lists and other sessions go on.
    let held = stall_at_setup(&req, shared);
    // A create to commit late is held here, outside the lock: other requests go on.
    let (late, early) = {
        let mut st = shared.0.lock().unwrap();
        let is_create = req.method == "POST" && create_session(&req.target).is_some();
        let ok = is_create && authorized(&st, &req).is_ok();
        match st.post_faults.front().copied() {
            Some(Fault::LateCommit(d)) if ok => {
                st.post_faults.pop_front();
                st.creating += 1;
                (Some(d), None)
            }
            Some(Fault::AnswerThenCommit(status, answer, commit)) if ok => {
                st.post_faults.pop_front();
                st.creating += 1;
                (None, Some((status, answer, commit)))
            }
            _ => (None, None),
        }
    };
    shared.1.notify_all();
    if let Some((status, answer, commit)) = early {
        answer_then_commit(conn, &req, shared, status, answer, commit);
        return;
    }
    if let Some(d) = late {
        std::thread::sleep(d);
    }
    let answer = {
        let mut st = shared.0.lock().unwrap();
        st.creating -= usize::from(late.is_some()) + usize::from(held);
        let answer = route(&mut st, &req);
        st.seen.push(answer.seen.clone());
        answer
    };
    // A 204 has no body.
    let (text, kind) = match answer.page {
        Some(page) => (page.to_string(), "text/html"),
        None if answer.status == 204 => (String::new(), "application/json"),
        None => (in_fastapi_order(&answer.body), "application/json"),
    };
    let mut extra = String::new();
    if let Some(s) = answer.retry_after {
        extra.push_str(&format!("Retry-After: {s}\r\n"));
    }
    if let Some(l) = &answer.location {
        extra.push_str(&format!("Location: {l}\r\n"));
    }
    let head = format!(
        "HTTP/1.1 {} X\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        answer.status,
        text.len()
    );
    // The client may have gone (killed, timed out): what was committed stays committed.
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(text.as_bytes());
    let _ = conn.flush();
    drop(conn);
    // Waiters are woken only once the answer is out, so a test that sees a request also
    // knows the reporter has (or soon has) its answer.
    shared.1.notify_all();
}

/// A create answered with `status` after `answer` and committed after `commit` (both from
/// now): the client hears an end before the messages are stored.
fn answer_then_commit(
    mut conn: TcpStream,
    req: &Request,
    shared: &Shared,
    status: u16,
    answer: Duration,
    commit: Duration,
) {
    let start = Instant::now();
    std::thread::sleep(answer);
    let text = in_fastapi_order(&detail("stand-in: answered before the commit"));
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        text.len()
    );
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(text.as_bytes());
    let _ = conn.flush();
    drop(conn);
    std::thread::sleep(commit.saturating_sub(start.elapsed()));
    let mut st = shared.0.lock().unwrap();
    st.creating -= 1;
    let mut committed = route(&mut st, req);
    committed.seen.status = status;
    st.seen.push(committed.seen);
    drop(st);
    shared.1.notify_all();
}

/// Waits while the request's session set-up is held, counted in `State::stalled`
/// meanwhile; `true` for a create, which stays counted in `State::creating` until it has
/// committed.
fn stall_at_setup(req: &Request, shared: &Shared) -> bool {
    let Some(session) = setup_session(&req.method, &req.target, &req.body) else {
        return false;
    };
    let is_create = create_session(&req.target).is_some();
    let mut st = shared.0.lock().unwrap();
    let Some(until) = st.setup_held.get(&session).copied() else {
        return false;
    };
    if Instant::now() >= until || authorized(&st, req).is_err() {
        return false;
    }
    st.stalled += 1;
    if is_create {
        st.creating += 1;
    }
    shared.1.notify_all();
    loop {
        let now = Instant::now();
        if now >= until {
            break;
        }
        st = shared.1.wait_timeout(st, until - now).unwrap().0;
    }
    st.stalled -= 1;
    drop(st);
    shared.1.notify_all();
    is_create
}

fn read_request(conn: &mut TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut words = line.split_whitespace();
    let method = words.next()?.to_string();
    let target = words.next()?.to_string();
    let mut length = 0;
    let mut auth = None;
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':')?;
        match k.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = v.trim().parse().ok()?,
            "authorization" => auth = Some(v.trim().to_string()),
            _ => {}
        }
    }
    if length > MAX_BODY {
        return None;
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        target,
        auth,
        body,
    })
}
