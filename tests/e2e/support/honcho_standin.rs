//! A stand-in for Honcho's v3 messages API, for loopd's reporter end to end (its essentials
//! copied from loopd's own unit-test stand-in, `daemons/loopd/src/honcho/standin.rs`): one
//! thread on 127.0.0.1, one request per connection. It creates messages as Honcho does
//! (its own ids, insertion order), lists them with `reverse`, `page`, `size` and metadata
//! filters, and can be taken down (connections refused) and brought up again on the same
//! address, as an outage would.

use super::HANG;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// A message as Honcho stored it.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    pub id: String,
    pub session: String,
    pub peer_id: String,
    pub content: String,
    pub metadata: Value,
}

#[derive(Debug, Default)]
pub struct State {
    pub messages: Vec<Stored>,
    /// Create requests answered, with the number of messages in each.
    pub posts: Vec<usize>,
    next_id: u64,
}

type Shared = Arc<(Mutex<State>, Condvar)>;

pub struct Honcho {
    addr: SocketAddr,
    shared: Shared,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Honcho {
    pub fn start() -> Honcho {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut h = Honcho {
            addr: listener.local_addr().unwrap(),
            shared: Arc::new((Mutex::new(State::default()), Condvar::new())),
            stop: Arc::new(AtomicBool::new(false)),
            thread: None,
        };
        h.serve(listener);
        h
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
            assert!(
                now < deadline,
                "honcho stand-in: gave up waiting; state {st:#?}"
            );
            st = self.shared.1.wait_timeout(st, deadline - now).unwrap().0;
        }
    }
}

impl Drop for Honcho {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.down();
        }
    }
}

fn handle(mut conn: TcpStream, shared: &Shared) {
    conn.set_read_timeout(Some(HANG)).unwrap();
    let Some((target, body)) = read_request(&mut conn) else {
        return;
    };
    let (status, answer) = route(&mut shared.0.lock().unwrap(), &target, &body);
    let text = answer.to_string();
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        text.len()
    );
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(text.as_bytes());
    let _ = conn.flush();
    drop(conn);
    shared.1.notify_all();
}

fn read_request(conn: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let target = line.split_whitespace().nth(1)?.to_string();
    let mut length = 0;
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':')?;
        if k.trim().eq_ignore_ascii_case("content-length") {
            length = v.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((target, body))
}

fn detail(m: &str) -> Value {
    json!({ "detail": m })
}

fn route(st: &mut State, target: &str, body: &[u8]) -> (u16, Value) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let parts: Vec<&str> = path.split('/').collect();
    let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    match parts.as_slice() {
        ["", "v3", "workspaces", _, "sessions", session, "messages"] => create(st, session, &body),
        ["", "v3", "workspaces", _, "sessions", session, "messages", "list"] => {
            list(st, session, query, &body)
        }
        _ => (404, detail("not found")),
    }
}

fn create(st: &mut State, session: &str, body: &Value) -> (u16, Value) {
    let Some(batch) = body["messages"].as_array() else {
        return (422, detail("messages: field required"));
    };
    if batch.is_empty() || batch.len() > 100 {
        return (422, detail("messages: 1 to 100 items"));
    }
    let mut new = Vec::new();
    for m in batch {
        let (Some(content), Some(peer)) = (m["content"].as_str(), m["peer_id"].as_str()) else {
            return (422, detail("content and peer_id are required strings"));
        };
        st.next_id += 1;
        new.push(Stored {
            id: format!("msg{}", st.next_id),
            session: session.to_string(),
            peer_id: peer.to_string(),
            content: content.to_string(),
            metadata: m.get("metadata").cloned().unwrap_or(json!({})),
        });
    }
    let answer: Vec<Value> = new.iter().map(to_json).collect();
    st.posts.push(new.len());
    st.messages.extend(new);
    (201, Value::Array(answer))
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
    (
        200,
        json!({"items": chosen, "total": total, "page": page, "size": size,
            "pages": total.div_ceil(size)}),
    )
}

fn to_json(m: &Stored) -> Value {
    json!({
        "id": m.id,
        "content": m.content,
        "peer_id": m.peer_id,
        "session_id": m.session,
        "workspace_id": "boxmaker",
        "created_at": "2025-01-01T00:00:00Z",
        "token_count": 1,
        "metadata": m.metadata,
    })
}
