//! A stand-in for Honcho v3 (the API of plastic-labs/honcho 3.0.12), for loopd's reporter:
//! its unit tests and the end-to-end tests of the real loopd. It behaves as the server
//! does where loopd can tell, not as a kind one would:
//!
//! - **Concurrent.** A thread per connection, as uvicorn serves many requests at once; a
//!   create held open does not hold a list.
//! - **Commits after the client vanished.** A create can be made to commit late
//!   ([`Fault::LateCommit`]): it is stored whether or not the client still waits, and a
//!   list answered meanwhile does not see it (Honcho's list takes no lock), as a kill or a
//!   frozen server leaves it.
//! - **Tokens.** With [`State::tokens`] set, every route wants a bearer token; a refusal is
//!   401 with Honcho's own `{"detail": …}` ("No access token provided", "Invalid JWT",
//!   "JWT not permissioned for this resource"), never 403.
//! - **Validation.** Bodies it will not take get FastAPI's 422 `{"detail": [{"type", "loc",
//!   "msg", "input", "ctx"}]}`, `input` echoing what was sent, as the server's does.
//! - **What it stores.** NUL is stripped from contents and metadata; metadata of more than
//!   100 top-level keys or nested deeper than 5 is refused; `created_at` is kept and given
//!   back in UTC with six fraction digits (Pydantic's form; none when they are all zero).
//! - **Routes.** Matched by method (a wrong one is 405) and path; a path with a trailing
//!   slash is redirected (307) unless the route also takes it (the messages create does).
//! - **Peers.** Get-or-create answers 201 for a new peer and 200 for one it had; a
//!   configuration sent replaces the one held, none sent leaves it.
//! - **What Honcho derives.** Conclusions listed newest first (or oldest with `reverse`),
//!   each with its `level`, filtered by `session_id`, `observer_id`, `observed_id`; a
//!   delete is soft (the conclusion is kept, marked, until a reconciler would run); a
//!   session summary (`GET …/summaries`) and peer cards (`GET`/`PUT …/peers/{peer}/card`)
//!   a test can set and read.
//!
//! Tests can also make it answer with a status instead (429 with a `Retry-After`), store
//! and then answer with a status, or take it down (connections refused) and bring it up
//! again on the same address, as an outage would.

use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a test waits for something that should happen before calling it a hang. Not an
/// assertion on speed: a shared machine may be slow, so it is generous.
pub const HANG: Duration = Duration::from_secs(120);

/// Honcho's `_METADATA_MAX_KEYS`: top-level keys a message's metadata may have.
pub const METADATA_MAX_KEYS: usize = 100;

/// Honcho's `_METADATA_MAX_DEPTH`: how deep metadata objects may nest.
pub const METADATA_MAX_DEPTH: usize = 5;

/// A request body bigger than this is not read: the stand-in serves tests, and 100
/// messages of 25 000 characters of four bytes are 10 MB.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// A message as Honcho stored it.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    pub id: String,
    pub session: String,
    pub peer_id: String,
    pub content: String,
    /// As Honcho answers it: UTC, six fraction digits.
    pub created_at: String,
    pub metadata: Value,
}

/// A conclusion Honcho's deriver drew (a "document").
#[derive(Debug, Clone, PartialEq)]
pub struct Conclusion {
    pub id: String,
    /// `None` for one drawn across sessions (a dream).
    pub session: Option<String>,
    pub observer: String,
    pub observed: String,
    pub content: String,
    /// `explicit`, or `deductive` / `inductive` / `contradiction` from dreaming.
    pub level: String,
    /// When Honcho stored it: not when the message it came from was written.
    pub created_at: String,
    /// A soft delete: Honcho marks it and hides it from lists; its reconciler removes it
    /// later.
    pub deleted: bool,
}

impl Conclusion {
    /// An explicit conclusion about `observed` drawn in `session` now.
    pub fn now(id: &str, session: Option<&str>, observed: &str, content: &str) -> Conclusion {
        Conclusion {
            id: id.into(),
            session: session.map(str::to_string),
            observer: observed.into(),
            observed: observed.into(),
            content: content.into(),
            level: "explicit".into(),
            created_at: now_utc(),
            deleted: false,
        }
    }
}

/// One request the stand-in answered, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub method: String,
    pub path: String,
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
    /// Hold the create this long, then commit it and answer, whether or not the client
    /// still waits; lists answered meanwhile do not see it.
    LateCommit(Duration),
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
    /// Peers got or created, with the configuration held.
    pub peers: Vec<(String, Value)>,
    /// Conclusions, soft-deleted ones included.
    pub conclusions: Vec<Conclusion>,
    /// Session summaries by Honcho session.
    pub summaries: BTreeMap<String, String>,
    /// Peer cards by peer.
    pub cards: BTreeMap<String, Vec<String>>,
    /// Auth on when not empty: each token and the one session it may use (`None`: all).
    pub tokens: Vec<(String, Option<String>)>,
    /// Creates received and not yet committed (held by a `LateCommit`).
    pub creating: usize,
    next_id: u64,
}

impl State {
    /// The create requests seen, in order.
    pub fn posts(&self) -> Vec<&Seen> {
        self.seen
            .iter()
            .filter(|s| !s.list && !s.peer && s.method == "POST")
            .collect()
    }

    /// Every `boxmaker_record` held more than once, with how often.
    pub fn duplicates(&self) -> Vec<(String, usize)> {
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for m in &self.messages {
            let key = m.metadata["boxmaker_record"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            *count.entry(key).or_default() += 1;
        }
        count.into_iter().filter(|(_, n)| *n > 1).collect()
    }

    /// Conclusions not deleted.
    pub fn live_conclusions(&self) -> Vec<&Conclusion> {
        self.conclusions.iter().filter(|c| !c.deleted).collect()
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
struct Request {
    method: String,
    target: String,
    auth: Option<String>,
    body: Vec<u8>,
}

fn handle(mut conn: TcpStream, shared: &Shared) {
    conn.set_read_timeout(Some(HANG)).unwrap();
    let Some(req) = read_request(&mut conn) else {
        return;
    };
    // A create to commit late is held here, outside the lock: other requests go on.
    let late = {
        let mut st = shared.0.lock().unwrap();
        let is_create = req.method == "POST" && create_session(&req.target).is_some();
        match st.post_faults.front() {
            Some(Fault::LateCommit(d)) if is_create && authorized(&st, &req).is_ok() => {
                let d = *d;
                st.post_faults.pop_front();
                st.creating += 1;
                Some(d)
            }
            _ => None,
        }
    };
    shared.1.notify_all();
    if let Some(d) = late {
        std::thread::sleep(d);
    }
    let answer = {
        let mut st = shared.0.lock().unwrap();
        if late.is_some() {
            st.creating -= 1;
        }
        let answer = route(&mut st, &req);
        st.seen.push(answer.seen.clone());
        answer
    };
    // A 204 has no body.
    let text = if answer.status == 204 {
        String::new()
    } else {
        in_fastapi_order(&answer.body)
    };
    let mut extra = String::new();
    if let Some(s) = answer.retry_after {
        extra.push_str(&format!("Retry-After: {s}\r\n"));
    }
    if let Some(l) = &answer.location {
        extra.push_str(&format!("Location: {l}\r\n"));
    }
    let head = format!(
        "HTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
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

/// An answer as FastAPI writes it: a validation error's keys in Pydantic's order (`type`,
/// `loc`, `msg`, `input`, `ctx`), so the echoed `input` comes after the words that say
/// what was wrong, as a client reading only the start of a long body sees them.
fn in_fastapi_order(v: &Value) -> String {
    let Some(errors) = v.get("detail").and_then(Value::as_array) else {
        return v.to_string();
    };
    let order = ["type", "loc", "msg", "input", "ctx"];
    let items: Vec<String> = errors
        .iter()
        .map(|e| {
            let fields: Vec<String> = order
                .iter()
                .filter_map(|k| Some(format!("{}:{}", json!(k), e.get(*k)?)))
                .collect();
            format!("{{{}}}", fields.join(","))
        })
        .collect();
    format!("{{\"detail\":[{}]}}", items.join(","))
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

/// The Honcho session of a messages-create path (with or without its trailing slash).
fn create_session(target: &str) -> Option<String> {
    let path = target.split('?').next().unwrap_or(target);
    let parts: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    match parts.as_slice() {
        ["", "v3", "workspaces", _, "sessions", s, "messages"] => Some(s.to_string()),
        _ => None,
    }
}

fn detail(m: &str) -> Value {
    json!({ "detail": m })
}

/// FastAPI's answer for a request Pydantic refused, as Honcho sends it: `input` echoes
/// what was sent.
fn invalid(loc: Value, kind: &str, msg: &str, input: Value, ctx: Option<Value>) -> Value {
    let mut e = json!({ "type": kind, "loc": loc, "msg": msg, "input": input });
    if let Some(ctx) = ctx {
        e["ctx"] = ctx;
    }
    json!({ "detail": [e] })
}

/// Honcho's `RESOURCE_NAME_PATTERN` and 512-character limit.
fn good_name(name: &str) -> bool {
    (1..=512).contains(&name.chars().count())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// How a request is answered.
struct Answer {
    status: u16,
    body: Value,
    retry_after: Option<u64>,
    location: Option<String>,
    seen: Seen,
}

/// The routes, by method and path (segments; `*` is any one segment).
const ROUTES: &[(&str, &str)] = &[
    ("POST", "/v3/workspaces/*/sessions/*/messages"),
    ("POST", "/v3/workspaces/*/sessions/*/messages/"),
    ("POST", "/v3/workspaces/*/sessions/*/messages/list"),
    ("GET", "/v3/workspaces/*/sessions/*/summaries"),
    ("POST", "/v3/workspaces/*/peers"),
    ("GET", "/v3/workspaces/*/peers/*/card"),
    ("PUT", "/v3/workspaces/*/peers/*/card"),
    ("POST", "/v3/workspaces/*/conclusions/list"),
    ("DELETE", "/v3/workspaces/*/conclusions/*"),
];

fn matches(pattern: &str, path: &str) -> bool {
    let (p, q): (Vec<&str>, Vec<&str>) = (pattern.split('/').collect(), path.split('/').collect());
    p.len() == q.len() && p.iter().zip(&q).all(|(a, b)| *a == "*" || a == b)
}

/// Whether the request's token may use this path: `Err` with Honcho's 401 detail.
fn authorized(st: &State, req: &Request) -> Result<(), &'static str> {
    if st.tokens.is_empty() {
        return Ok(());
    }
    let Some(token) = req.auth.as_deref().and_then(|a| a.strip_prefix("Bearer ")) else {
        return Err("No access token provided");
    };
    let Some((_, scope)) = st.tokens.iter().find(|(t, _)| t == token) else {
        return Err("Invalid JWT");
    };
    match scope {
        None => Ok(()),
        Some(session) => match create_session(&req.target).or_else(|| {
            let path = req.target.split('?').next().unwrap_or(&req.target);
            let parts: Vec<&str> = path.split('/').collect();
            (parts.get(4) == Some(&"sessions"))
                .then(|| parts.get(5).map(|s| s.to_string()))
                .flatten()
        }) {
            Some(s) if &s == session => Ok(()),
            _ => Err("JWT not permissioned for this resource"),
        },
    }
}

fn route(st: &mut State, req: &Request) -> Answer {
    let (path, query) = req.target.split_once('?').unwrap_or((&req.target, ""));
    let mut seen = Seen {
        method: req.method.clone(),
        path: path.to_string(),
        list: false,
        peer: false,
        authorization: req.auth.clone(),
        count: 0,
        status: 0,
    };
    let answer = |status: u16, body: Value, seen: Seen| Answer {
        status,
        body,
        retry_after: None,
        location: None,
        seen: Seen { status, ..seen },
    };
    // Starlette: a path no route has, whatever the method, is 404; a trailing slash the
    // route does not take is redirected; another method than the route's is 405.
    let found: Vec<&(&str, &str)> = ROUTES.iter().filter(|(_, p)| matches(p, path)).collect();
    if found.is_empty() {
        let other = if let Some(p) = path.strip_suffix('/') {
            p.to_string()
        } else {
            format!("{path}/")
        };
        if ROUTES.iter().any(|(_, p)| matches(p, &other)) {
            let mut a = answer(307, Value::Null, seen);
            a.location = Some(other);
            return a;
        }
        return answer(404, detail("Not Found"), seen);
    }
    if !found.iter().any(|(m, _)| *m == req.method) {
        return answer(405, detail("Method Not Allowed"), seen);
    }
    if let Err(why) = authorized(st, req) {
        return answer(401, detail(why), seen);
    }
    let raw: Value = if req.body.is_empty() {
        Value::Null
    } else {
        match serde_json::from_slice(&req.body) {
            Ok(v) => v,
            Err(_) => {
                let body = invalid(
                    json!(["body", 0]),
                    "json_invalid",
                    "JSON decode error",
                    json!({}),
                    Some(json!({ "error": "Expecting value" })),
                );
                return answer(422, body, seen);
            }
        }
    };
    let parts: Vec<&str> = path.split('/').collect();
    let mut retry_after = None;
    let (status, body) = match (req.method.as_str(), &parts[3..]) {
        (
            "POST",
            [_, "sessions", session, "messages"] | [_, "sessions", session, "messages", ""],
        ) => {
            seen.count = raw["messages"].as_array().map_or(0, Vec::len);
            match st.post_faults.front() {
                Some(Fault::Status(_) | Fault::Limited(_)) => {
                    let (s, a, r) = fault_answer(st.post_faults.pop_front().unwrap());
                    retry_after = r;
                    (s, a)
                }
                _ => create(st, session, &raw),
            }
        }
        ("POST", [_, "sessions", session, "messages", "list"]) => {
            seen.list = true;
            match st.list_faults.pop_front() {
                Some(f) => {
                    let (s, a, r) = fault_answer(f);
                    retry_after = r;
                    (s, a)
                }
                None => list(st, session, query, &raw),
            }
        }
        ("GET", [_, "sessions", session, "summaries"]) => {
            let short = st.summaries.get(*session).map(|s| {
                json!({ "content": s, "message_id": "m", "summary_type": "short", "created_at": now_utc(), "token_count": 1 })
            });
            (
                200,
                json!({ "id": session, "short_summary": short, "long_summary": null }),
            )
        }
        ("POST", [_, "peers"]) => {
            seen.peer = true;
            match st.peer_faults.pop_front() {
                Some(f) => {
                    let (s, a, r) = fault_answer(f);
                    retry_after = r;
                    (s, a)
                }
                None => peer(st, &raw),
            }
        }
        ("GET", [_, "peers", p, "card"]) => (200, json!({ "peer_card": st.cards.get(*p) })),
        ("PUT", [_, "peers", p, "card"]) => match raw["peer_card"].as_array() {
            Some(lines) if lines.iter().all(Value::is_string) => {
                let lines: Vec<String> = lines
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|s| s.replace('\0', ""))
                    .collect();
                st.cards.insert(p.to_string(), lines.clone());
                (200, json!({ "peer_card": lines }))
            }
            _ => (
                422,
                invalid(
                    json!(["body", "peer_card"]),
                    "list_type",
                    "Input should be a valid list",
                    raw["peer_card"].clone(),
                    None,
                ),
            ),
        },
        ("POST", [_, "conclusions", "list"]) => {
            seen.list = true;
            conclusions(st, query, &raw)
        }
        ("DELETE", [_, "conclusions", id]) => {
            match st
                .conclusions
                .iter_mut()
                .find(|c| c.id == *id && !c.deleted)
            {
                Some(c) => {
                    c.deleted = true;
                    (204, Value::Null)
                }
                None => (
                    404,
                    detail(&format!(
                        "Document {id} not found or does not belong to workspace {}",
                        parts[3]
                    )),
                ),
            }
        }
        _ => (404, detail("Not Found")),
    };
    let mut a = answer(status, body, seen);
    a.retry_after = retry_after;
    a
}

/// The status and body of a fault, and its `Retry-After`.
fn fault_answer(f: Fault) -> (u16, Value, Option<u64>) {
    match f {
        Fault::Status(s) | Fault::StoreThen(s) => (s, detail("stand-in fault"), None),
        Fault::Limited(secs) => (429, detail("rate limited"), Some(secs)),
        Fault::LateCommit(_) => (500, detail("stand-in: a late commit as a fault"), None),
    }
}

/// Honcho's get-or-create of a peer: a new name must keep the rule; a configuration sent
/// replaces the one held, none sent leaves it.
fn peer(st: &mut State, body: &Value) -> (u16, Value) {
    let Some(name) = body["id"].as_str() else {
        return (
            422,
            invalid(
                json!(["body", "id"]),
                "missing",
                "Field required",
                body.clone(),
                None,
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
                json!(name),
                Some(json!({ "pattern": "^[a-zA-Z0-9_-]+$" })),
            ),
        );
    }
    let sent = body.get("configuration").filter(|c| !c.is_null()).cloned();
    let (status, config) = match st.peers.iter_mut().find(|(n, _)| n == name) {
        Some((_, held)) => {
            if let Some(c) = sent {
                *held = c;
            }
            (200, held.clone())
        }
        None => {
            let c = sent.unwrap_or(json!({}));
            st.peers.push((name.to_string(), c.clone()));
            (201, c)
        }
    };
    (
        status,
        json!({ "id": name, "workspace_id": "ws", "metadata": {}, "configuration": config, "created_at": now_utc() }),
    )
}

/// Honcho's metadata rule: the 422 message when `v` breaks it.
fn metadata_fault(v: &Map<String, Value>, depth: usize) -> Option<String> {
    if depth > METADATA_MAX_DEPTH {
        return Some(format!(
            "Value error, Metadata nesting exceeds maximum depth of {METADATA_MAX_DEPTH}"
        ));
    }
    if depth == 1 && v.len() > METADATA_MAX_KEYS {
        return Some(format!(
            "Value error, Metadata exceeds maximum of {METADATA_MAX_KEYS} top-level keys"
        ));
    }
    v.values()
        .filter_map(Value::as_object)
        .find_map(|o| metadata_fault(o, depth + 1))
}

/// `v` with NUL taken out of every string, keys too.
fn strip_nul(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace('\0', "")),
        Value::Array(a) => Value::Array(a.iter().map(strip_nul).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.replace('\0', ""), strip_nul(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn create(st: &mut State, session: &str, body: &Value) -> (u16, Value) {
    let fault = match st.post_faults.front() {
        Some(Fault::StoreThen(_)) => st.post_faults.pop_front(),
        _ => None,
    };
    let Some(batch) = body["messages"].as_array() else {
        return (
            422,
            invalid(
                json!(["body", "messages"]),
                "missing",
                "Field required",
                body.clone(),
                None,
            ),
        );
    };
    if batch.is_empty() || batch.len() > 100 {
        let (kind, msg) = if batch.is_empty() {
            (
                "too_short",
                "List should have at least 1 item after validation, not 0".to_string(),
            )
        } else {
            (
                "too_long",
                format!(
                    "List should have at most 100 items after validation, not {}",
                    batch.len()
                ),
            )
        };
        return (
            422,
            invalid(
                json!(["body", "messages"]),
                kind,
                &msg,
                Value::Array(batch.clone()),
                Some(json!({ "field_type": "List", "actual_length": batch.len() })),
            ),
        );
    }
    let mut new = Vec::new();
    let limit = st.max_message_size.unwrap_or(HONCHO_MAX_MESSAGE_SIZE);
    for (i, m) in batch.iter().enumerate() {
        let (Some(content), Some(peer)) = (m["content"].as_str(), m["peer_id"].as_str()) else {
            return (
                422,
                invalid(
                    json!(["body", "messages", i, "content"]),
                    "missing",
                    "Field required",
                    m.clone(),
                    None,
                ),
            );
        };
        if content.chars().count() > limit {
            return (
                422,
                invalid(
                    json!(["body", "messages", i, "content"]),
                    "string_too_long",
                    &format!("String should have at most {limit} characters"),
                    json!(content),
                    Some(json!({ "max_length": limit })),
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
                    json!(content),
                    Some(json!({ "error": {} })),
                ),
            );
        }
        let metadata = m.get("metadata").cloned().unwrap_or(json!({}));
        if let Some(msg) = metadata.as_object().and_then(|o| metadata_fault(o, 1)) {
            return (
                422,
                invalid(
                    json!(["body", "messages", i, "metadata"]),
                    "value_error",
                    &msg,
                    metadata.clone(),
                    Some(json!({ "error": {} })),
                ),
            );
        }
        let created_at = match m["created_at"].as_str() {
            None => now_utc(),
            Some(t) => match utc_micros(t) {
                Some(t) => t,
                None => {
                    return (
                        422,
                        invalid(
                            json!(["body", "messages", i, "created_at"]),
                            "datetime_from_date_parsing",
                            "Input should be a valid datetime or date",
                            json!(t),
                            None,
                        ),
                    )
                }
            },
        };
        st.next_id += 1;
        new.push(Stored {
            id: format!("msg{}", st.next_id),
            session: session.to_string(),
            peer_id: peer.to_string(),
            content: content.replace('\0', ""),
            created_at,
            metadata: strip_nul(&metadata),
        });
    }
    let answer: Vec<Value> = new.iter().map(to_json).collect();
    st.messages.extend(new);
    match fault {
        Some(Fault::StoreThen(s)) => (s, detail("stand-in fault after storing")),
        _ => (201, Value::Array(answer)),
    }
}

/// `page`, `size` and `reverse` of a list query, or the 422 FastAPI answers for bad ones.
fn paging(query: &str) -> Result<(usize, usize, bool), (u16, Value)> {
    let (mut page, mut size, mut reverse) = (1_i64, 50_i64, false);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("reverse", v)) => reverse = v == "true",
            Some(("page", v)) => page = v.parse().unwrap_or(0),
            Some(("size", v)) => size = v.parse().unwrap_or(0),
            _ => {}
        }
    }
    if page < 1 {
        return Err((
            422,
            invalid(
                json!(["query", "page"]),
                "greater_than_equal",
                "Input should be greater than or equal to 1",
                json!(page.to_string()),
                Some(json!({ "ge": 1 })),
            ),
        ));
    }
    if !(1..=100).contains(&size) {
        return Err((
            422,
            invalid(
                json!(["query", "size"]),
                if size < 1 {
                    "greater_than_equal"
                } else {
                    "less_than_equal"
                },
                "Input should be between 1 and 100",
                json!(size.to_string()),
                None,
            ),
        ));
    }
    Ok((page as usize, size as usize, reverse))
}

fn page_of(items: Vec<Value>, page: usize, size: usize) -> Value {
    let total = items.len();
    let chosen: Vec<Value> = items
        .into_iter()
        .skip((page - 1) * size)
        .take(size)
        .collect();
    json!({
        "items": chosen,
        "total": total,
        "page": page,
        "size": size,
        "pages": total.div_ceil(size),
    })
}

fn list(st: &mut State, session: &str, query: &str, body: &Value) -> (u16, Value) {
    let (page, size, reverse) = match paging(query) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let wanted = body["filters"]["metadata"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut items: Vec<Value> = st
        .messages
        .iter()
        .filter(|m| m.session == session)
        .filter(|m| wanted.iter().all(|(k, v)| m.metadata.get(k) == Some(v)))
        .map(to_json)
        .collect();
    if reverse {
        items.reverse();
    }
    (200, page_of(items, page, size))
}

fn conclusions(st: &State, query: &str, body: &Value) -> (u16, Value) {
    let (page, size, reverse) = match paging(query) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let f = &body["filters"];
    let want = |key: &str, have: Option<&str>| f[key].as_str().is_none_or(|w| have == Some(w));
    let mut items: Vec<&Conclusion> = st
        .conclusions
        .iter()
        .filter(|c| !c.deleted)
        .filter(|c| want("session_id", c.session.as_deref()))
        .filter(|c| want("observer_id", Some(&c.observer)))
        .filter(|c| want("observed_id", Some(&c.observed)))
        .collect();
    // Newest first unless `reverse`; the stand-in's times are all in one form.
    items.sort_by(|a, b| b.created_at.cmp(&a.created_at));
    if reverse {
        items.reverse();
    }
    let items = items
        .into_iter()
        .map(|c| {
            json!({
                "id": c.id,
                "content": c.content,
                "observer_id": c.observer,
                "observed_id": c.observed,
                "session_id": c.session,
                "level": c.level,
                "created_at": c.created_at,
            })
        })
        .collect();
    (200, page_of(items, page, size))
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

/// Now, as Honcho writes a time.
pub fn now_utc() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format_utc(d.as_secs() as i64, d.subsec_micros())
}

/// Seconds since the epoch and microseconds as Pydantic writes a UTC time: six fraction
/// digits, none when they are all zero.
fn format_utc(secs: i64, micros: u32) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (year, month, day) = proto::time::civil_from_days(days);
    let frac = if micros == 0 {
        String::new()
    } else {
        format!(".{micros:06}")
    };
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}{frac}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A sent `created_at` (`…Z` or `…+00:00`, any fraction) as Honcho gives it back: UTC
/// with six fraction digits. Another offset is kept as it came (loopd sends UTC only).
fn utc_micros(t: &str) -> Option<String> {
    let s = t.strip_suffix('Z').or_else(|| t.strip_suffix("+00:00"))?;
    if s.len() < 19 || !s.is_char_boundary(19) {
        return None;
    }
    let (whole, frac) = s.split_at(19);
    let b = whole.as_bytes();
    let ok = b.len() == 19
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':';
    if !ok {
        return None;
    }
    let digits = frac.strip_prefix('.').unwrap_or(frac);
    if !digits.bytes().all(|c| c.is_ascii_digit()) || (frac.starts_with('.') && digits.is_empty()) {
        return None;
    }
    let micros: String = format!("{digits:0<6}").chars().take(6).collect();
    Some(if micros == "000000" {
        format!("{whole}Z")
    } else {
        format!("{whole}.{micros}Z")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_come_back_as_pydantic_writes_them() {
        assert_eq!(
            utc_micros("2026-11-30T04:34:57.1Z").as_deref(),
            Some("2026-11-30T04:34:57.100000Z")
        );
        assert_eq!(
            utc_micros("2026-11-30T04:34:57.000Z").as_deref(),
            Some("2026-11-30T04:34:57Z")
        );
        assert_eq!(utc_micros("yesterday"), None);
        assert_eq!(format_utc(0, 5), "1970-01-01T00:00:00.000005Z");
        assert_eq!(format_utc(1_796_013_296, 0), "2026-11-30T04:34:56Z");
    }
}
