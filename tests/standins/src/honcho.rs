//! A stand-in for Honcho's v3 messages API, for loopd's reporter: its unit tests and the
//! end-to-end test of the real loopd. One thread on 127.0.0.1, one request per connection.
//! It creates messages as Honcho does (1 to 100 per batch, content at most 25 000
//! characters unless told a lower limit, its own ids, insertion order), lists them with
//! `reverse`, `page`, `size` and metadata filters, gets or creates peers with their
//! configuration, lists and deletes conclusions, and records every request. Its 422s have Honcho's shapes: FastAPI's
//! `{"detail": [{"type", "loc", "msg", …}]}` for a message it will not take (too long, or
//! holding a text the test marked), `{"detail": "…"}` otherwise. Tests can make it answer
//! with a status instead (429 with a `Retry-After`), store and then answer with a status
//! (the outcome-unknown case), or take it down (connections refused) and bring it up again
//! on the same address, as an outage would.

use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a test waits for something that should happen before calling it a hang. Not an
/// assertion on speed: a shared machine may be slow, so it is generous.
pub const HANG: Duration = Duration::from_secs(120);

/// A message as Honcho stored it.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    pub id: String,
    pub session: String,
    pub peer_id: String,
    pub content: String,
    pub created_at: String,
    pub metadata: Value,
}

/// A conclusion Honcho's deriver drew.
#[derive(Debug, Clone, PartialEq)]
pub struct Conclusion {
    pub id: String,
    pub session: String,
    pub content: String,
    pub created_at: String,
}

/// One request the stand-in answered, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub list: bool,
    /// A get-or-create of a peer.
    pub peer: bool,
    pub authorization: Option<String>,
    /// Messages in a create request.
    pub count: usize,
    pub status: u16,
}

/// What to do with one request instead of answering it normally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    Status(u16),
    /// Store the messages, then answer with this status anyway.
    StoreThen(u16),
    /// 429 with `Retry-After` in seconds.
    Limited(u64),
}

/// Honcho's default `MAX_MESSAGE_SIZE`.
pub const HONCHO_MAX_MESSAGE_SIZE: usize = 25_000;

/// Everything the stand-in holds: what it stored, what it saw, the faults still to come.
#[derive(Debug, Default)]
pub struct State {
    pub messages: Vec<Stored>,
    pub seen: Vec<Seen>,
    pub post_faults: VecDeque<Fault>,
    pub list_faults: VecDeque<Fault>,
    pub peer_faults: VecDeque<Fault>,
    /// The server's `MAX_MESSAGE_SIZE`; `None` is Honcho's default.
    pub max_message_size: Option<usize>,
    /// A message whose content holds this is refused (422, naming the message).
    pub refuse_containing: Option<String>,
    /// Peers got or created, with the configuration last sent.
    pub peers: Vec<(String, Value)>,
    /// Conclusions, listed by session and deleted by id.
    pub conclusions: Vec<Conclusion>,
    next_id: u64,
}

impl State {
    /// The create requests seen, in order.
    pub fn posts(&self) -> Vec<&Seen> {
        self.seen.iter().filter(|s| !s.list && !s.peer).collect()
    }
}

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
                    handle(conn, &shared);
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

fn handle(mut conn: TcpStream, shared: &Shared) {
    conn.set_read_timeout(Some(HANG)).unwrap();
    let Some((target, auth, body)) = read_request(&mut conn) else {
        return;
    };
    let (status, answer, retry_after) = {
        let mut st = shared.0.lock().unwrap();
        let (status, answer, seen, retry_after) = route(&mut st, &target, auth, &body);
        st.seen.push(seen);
        (status, answer, retry_after)
    };
    // A 204 has no body.
    let text = if status == 204 {
        String::new()
    } else {
        answer.to_string()
    };
    let extra = retry_after.map_or(String::new(), |s| format!("Retry-After: {s}\r\n"));
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        text.len()
    );
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(text.as_bytes());
    let _ = conn.flush();
    drop(conn);
    // Waiters are woken only once the answer is out, so a test that sees a request also
    // knows the reporter has (or soon has) its answer.
    shared.1.notify_all();
}

/// Request target, `Authorization` header and body.
fn read_request(conn: &mut TcpStream) -> Option<(String, Option<String>, Vec<u8>)> {
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let target = line.split_whitespace().nth(1)?.to_string();
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
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((target, auth, body))
}

fn detail(m: &str) -> Value {
    json!({ "detail": m })
}

/// FastAPI's answer for a request body Pydantic refused, as Honcho sends it.
fn invalid(loc: Value, kind: &str, msg: &str, ctx: Value) -> Value {
    json!({ "detail": [{ "type": kind, "loc": loc, "msg": msg, "input": "…", "ctx": ctx }] })
}

/// Honcho's `RESOURCE_NAME_PATTERN` and 512-character limit.
fn good_name(name: &str) -> bool {
    (1..=512).contains(&name.chars().count())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The status and body of a fault, and its `Retry-After`.
fn fault_answer(f: Fault) -> (u16, Value, Option<u64>) {
    match f {
        Fault::Status(s) | Fault::StoreThen(s) => (s, detail("stand-in fault"), None),
        Fault::Limited(secs) => (429, detail("rate limited"), Some(secs)),
    }
}

fn route(
    st: &mut State,
    target: &str,
    auth: Option<String>,
    body: &[u8],
) -> (u16, Value, Seen, Option<u64>) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let parts: Vec<&str> = path.split('/').collect();
    let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let mut seen = Seen {
        list: false,
        peer: false,
        authorization: auth,
        count: 0,
        status: 0,
    };
    let mut retry_after = None;
    let (status, answer) = match parts.as_slice() {
        ["", "v3", "workspaces", _, "sessions", session, "messages"] => {
            seen.count = body["messages"].as_array().map_or(0, Vec::len);
            match st.post_faults.front() {
                Some(Fault::Status(_) | Fault::Limited(_)) => {
                    let (s, a, r) = fault_answer(st.post_faults.pop_front().unwrap());
                    retry_after = r;
                    (s, a)
                }
                _ => create(st, session, &body),
            }
        }
        ["", "v3", "workspaces", _, "sessions", session, "messages", "list"] => {
            seen.list = true;
            match st.list_faults.pop_front() {
                Some(f) => {
                    let (s, a, r) = fault_answer(f);
                    retry_after = r;
                    (s, a)
                }
                None => list(st, session, query, &body),
            }
        }
        ["", "v3", "workspaces", _, "peers"] => {
            seen.peer = true;
            match st.peer_faults.pop_front() {
                Some(f) => {
                    let (s, a, r) = fault_answer(f);
                    retry_after = r;
                    (s, a)
                }
                None => peer(st, &body),
            }
        }
        ["", "v3", "workspaces", _, "conclusions", "list"] => {
            seen.list = true;
            conclusions(st, query, &body)
        }
        ["", "v3", "workspaces", _, "conclusions", id] => {
            let before = st.conclusions.len();
            st.conclusions.retain(|c| c.id != *id);
            if st.conclusions.len() < before {
                (204, Value::Null)
            } else {
                (404, detail("Conclusion not found"))
            }
        }
        _ => (404, detail("not found")),
    };
    seen.status = status;
    (status, answer, seen, retry_after)
}

/// Honcho's get-or-create of a peer: a new name must keep the rule; a configuration sent
/// replaces the one held.
fn peer(st: &mut State, body: &Value) -> (u16, Value) {
    let Some(name) = body["id"].as_str() else {
        return (
            422,
            invalid(
                json!(["body", "id"]),
                "missing",
                "Field required",
                json!({}),
            ),
        );
    };
    if !good_name(name) {
        return (
            422,
            invalid(
                json!(["body", "id"]),
                "string_pattern_mismatch",
                "String should match pattern '^[a-zA-Z0-9_-]+$'",
                json!({ "pattern": "^[a-zA-Z0-9_-]+$" }),
            ),
        );
    }
    let config = body.get("configuration").cloned().unwrap_or(json!({}));
    match st.peers.iter_mut().find(|(n, _)| n == name) {
        Some((_, held)) => *held = config.clone(),
        None => st.peers.push((name.to_string(), config.clone())),
    }
    (
        201,
        json!({ "id": name, "workspace_id": "ws", "metadata": {}, "configuration": config }),
    )
}

fn create(st: &mut State, session: &str, body: &Value) -> (u16, Value) {
    let fault = st.post_faults.pop_front();
    let Some(batch) = body["messages"].as_array() else {
        return (422, detail("messages: field required"));
    };
    if batch.is_empty() || batch.len() > 100 {
        return (422, detail("messages: 1 to 100 items"));
    }
    let mut new = Vec::new();
    let limit = st.max_message_size.unwrap_or(HONCHO_MAX_MESSAGE_SIZE);
    for (i, m) in batch.iter().enumerate() {
        let (Some(content), Some(peer)) = (m["content"].as_str(), m["peer_id"].as_str()) else {
            return (422, detail("content and peer_id are required strings"));
        };
        if content.chars().count() > limit {
            return (
                422,
                invalid(
                    json!(["body", "messages", i, "content"]),
                    "string_too_long",
                    &format!("String should have at most {limit} characters"),
                    json!({ "max_length": limit }),
                ),
            );
        }
        if st
            .refuse_containing
            .as_deref()
            .is_some_and(|bad| content.contains(bad))
        {
            return (
                422,
                invalid(
                    json!(["body", "messages", i, "content"]),
                    "value_error",
                    "Value error, refused by the stand-in",
                    json!({}),
                ),
            );
        }
        st.next_id += 1;
        new.push(Stored {
            id: format!("msg{}", st.next_id),
            session: session.to_string(),
            peer_id: peer.to_string(),
            content: content.to_string(),
            created_at: m["created_at"].as_str().unwrap_or("now").to_string(),
            metadata: m.get("metadata").cloned().unwrap_or(json!({})),
        });
    }
    let answer: Vec<Value> = new.iter().map(to_json).collect();
    st.messages.extend(new);
    match fault {
        Some(Fault::StoreThen(s)) => (s, detail("stand-in fault after storing")),
        _ => (201, Value::Array(answer)),
    }
}

fn list(st: &mut State, session: &str, query: &str, body: &Value) -> (u16, Value) {
    let mut reverse = false;
    let (mut page, mut size) = (1_usize, 50_usize);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("reverse", v)) => reverse = v == "true",
            Some(("page", v)) => page = v.parse().unwrap_or(0),
            Some(("size", v)) => size = v.parse().unwrap_or(0),
            _ => {}
        }
    }
    if page < 1 || !(1..=100).contains(&size) {
        return (422, detail("page >= 1 and 1 <= size <= 100"));
    }
    let wanted = body["filters"]["metadata"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut items: Vec<&Stored> = st
        .messages
        .iter()
        .filter(|m| m.session == session)
        .filter(|m| wanted.iter().all(|(k, v)| m.metadata.get(k) == Some(v)))
        .collect();
    if reverse {
        items.reverse();
    }
    let total = items.len();
    let chosen: Vec<Value> = items
        .into_iter()
        .skip((page - 1) * size)
        .take(size)
        .map(to_json)
        .collect();
    let page_json = json!({
        "items": chosen,
        "total": total,
        "page": page,
        "size": size,
        "pages": total.div_ceil(size),
    });
    (200, page_json)
}

/// `page` and `size` of a list query, or the 422 Honcho answers for bad ones.
fn paging(query: &str) -> Result<(usize, usize), (u16, Value)> {
    let (mut page, mut size) = (1_usize, 50_usize);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("page", v)) => page = v.parse().unwrap_or(0),
            Some(("size", v)) => size = v.parse().unwrap_or(0),
            _ => {}
        }
    }
    if page < 1 || !(1..=100).contains(&size) {
        return Err((422, detail("page >= 1 and 1 <= size <= 100")));
    }
    Ok((page, size))
}

fn conclusions(st: &State, query: &str, body: &Value) -> (u16, Value) {
    let (page, size) = match paging(query) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let session = body["filters"]["session_id"].as_str();
    let items: Vec<&Conclusion> = st
        .conclusions
        .iter()
        .filter(|c| session.is_none_or(|s| c.session == s))
        .collect();
    let total = items.len();
    let chosen: Vec<Value> = items
        .into_iter()
        .skip((page - 1) * size)
        .take(size)
        .map(|c| {
            json!({
                "id": c.id,
                "content": c.content,
                "observer_id": "owner",
                "observed_id": "owner",
                "session_id": c.session,
                "created_at": c.created_at,
            })
        })
        .collect();
    (
        200,
        json!({ "items": chosen, "total": total, "page": page, "size": size, "pages": total.div_ceil(size) }),
    )
}

fn to_json(m: &Stored) -> Value {
    json!({
        "id": m.id,
        "content": m.content,
        "peer_id": m.peer_id,
        "session_id": m.session,
        "workspace_id": "ws",
        "created_at": m.created_at,
        "token_count": 1,
        "metadata": m.metadata,
    })
}
