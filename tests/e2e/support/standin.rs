//! A scripted stand-in for llama.cpp: a tiny HTTP/1.1 server on 127.0.0.1:0, one thread
//! per connection, answering each `POST /v1/chat/completions` with the next scripted
//! reply — an SSE stream (content and tool-call deltas, `timings`), a JSON error, a
//! stream cut short — and `GET /slots` / `GET /health` from its settings. Every request
//! is recorded with its body and timestamps for the test to assert on.

mod replies;
pub use replies::*;

use super::HANG;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// A reply computed from a chat request's JSON body.
pub type Brain = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

/// A latch a scripted reply can wait on, so a test can act while a turn is in flight.
#[derive(Clone, Default)]
pub struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    pub fn new() -> Gate {
        Gate::default()
    }

    pub fn open(&self) {
        *self.0 .0.lock().unwrap() = true;
        self.0 .1.notify_all();
    }

    fn wait(&self) {
        let guard = self.0 .0.lock().unwrap();
        let (_g, timeout) = self
            .0
             .1
            .wait_timeout_while(guard, HANG, |open| !*open)
            .unwrap();
        assert!(!timeout.timed_out(), "a held reply was never released");
    }
}

#[derive(Clone)]
pub enum Reply {
    /// A 200 event stream: each string is one SSE event, sent as one HTTP chunk.
    Sse(Vec<String>),
    /// A status with a JSON body.
    Status(u16, String),
    /// These events, then the connection closes without finishing the stream.
    Cut(Vec<String>),
    /// Waits for the gate to open, then sends the inner reply.
    Held(Gate, Box<Reply>),
}

/// One request as the stand-in received it.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub body: String,
    /// When the first byte of the request arrived.
    pub first_byte: Instant,
    /// When the last byte of the reply was written.
    pub done: Option<Instant>,
}

impl Request {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }

    /// The content of the last message sent.
    pub fn last(&self) -> String {
        last_content(self.body.as_bytes())
    }
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Reply>>,
    /// Replies for the first request whose last message holds the key, before the script.
    keyed: Mutex<Vec<(String, Reply)>>,
    fallback: Mutex<Option<Reply>>,
    /// Computes the reply from the request body when nothing keyed or scripted is left
    /// (a model with a mind of its own: `support::compromised`).
    brain: Mutex<Option<Brain>>,
    requests: Mutex<Vec<Request>>,
    arrived: Condvar,
    n_ctx: Mutex<u64>,
    slots: Mutex<Slots>,
}

/// The stand-in's slot save path, as llama.cpp's `--slot-save-path` behaves
/// (docs/llama-api.md): off (501) unless a test turns it on.
#[derive(Default)]
struct Slots {
    save_path: bool,
    /// Slot 0 has run a task since the (pretend) server start: `/slots` shows `id_task`.
    main_used: bool,
    /// Saved files and the tokens each holds.
    files: std::collections::HashMap<String, u64>,
}

/// Tokens a save of slot 0 holds in the stand-in; a save of any other slot holds none
/// (loopd saves the background slot only right after erasing it).
pub const SAVED_TOKENS: u64 = 100;

pub struct Standin {
    pub url: String,
    shared: Arc<Shared>,
}

impl Standin {
    /// Starts a stand-in whose `/slots` reports two slots of `n_ctx`.
    pub fn start(n_ctx: u64) -> Standin {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared::default());
        *shared.n_ctx.lock().unwrap() = n_ctx;
        let s = Arc::clone(&shared);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let s = Arc::clone(&s);
                std::thread::spawn(move || serve(stream, &s));
            }
        });
        Standin {
            url: format!("http://127.0.0.1:{port}"),
            shared,
        }
    }

    pub fn push(&self, reply: Reply) {
        self.shared.script.lock().unwrap().push_back(reply);
    }

    /// The reply for the first chat request whose last message's content contains
    /// `needle`, whatever its place: for tests where heartbeats and owner turns interleave.
    pub fn push_for(&self, needle: &str, reply: Reply) {
        self.shared
            .keyed
            .lock()
            .unwrap()
            .push((needle.to_string(), reply));
    }

    /// Every chat request past the script is answered by `brain` from its body.
    pub fn set_brain(&self, brain: Brain) {
        *self.shared.brain.lock().unwrap() = Some(brain);
    }

    /// The reply every chat request gets once the script is empty.
    /// Answers `POST /slots/{id}?action=…` as a server with `--slot-save-path` does.
    pub fn set_save_path(&self) {
        self.shared.slots.lock().unwrap().save_path = true;
    }

    /// As after a server restart: slot 0 has run no task. Saved files stay.
    pub fn restart_slots(&self) {
        self.shared.slots.lock().unwrap().main_used = false;
    }

    /// Changes saved file `name` behind loopd's back: `Some(n)` makes it hold `n` tokens
    /// (0: an empty slot's file), `None` deletes it.
    pub fn replace_slot_file(&self, name: &str, tokens: Option<u64>) {
        let files = &mut self.shared.slots.lock().unwrap().files;
        match tokens {
            Some(n) => files.insert(name.to_string(), n),
            None => files.remove(name),
        };
    }

    /// The tokens in saved file `name`, if it exists.
    pub fn slot_file(&self, name: &str) -> Option<u64> {
        self.shared.slots.lock().unwrap().files.get(name).copied()
    }

    pub fn set_fallback(&self, reply: Reply) {
        *self.shared.fallback.lock().unwrap() = Some(reply);
    }

    pub fn requests(&self) -> Vec<Request> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The chat completion requests so far.
    pub fn chats(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.path == "/v1/chat/completions")
            .collect()
    }

    /// Waits until `n` chat requests have arrived.
    pub fn wait_chats(&self, n: usize) -> Vec<Request> {
        let deadline = Instant::now() + HANG;
        let mut guard = self.shared.requests.lock().unwrap();
        loop {
            let chats: Vec<Request> = guard
                .iter()
                .filter(|r| r.path == "/v1/chat/completions")
                .cloned()
                .collect();
            if chats.len() >= n {
                return chats;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "only {} of {n} chat requests arrived",
                chats.len()
            );
            guard = self.shared.arrived.wait_timeout(guard, left).unwrap().0;
        }
    }
}

impl Standin {
    /// Waits until a chat request for which `want` holds has arrived, and returns it.
    pub fn wait_chat(&self, want: impl Fn(&Request) -> bool) -> Request {
        let deadline = Instant::now() + HANG;
        let mut guard = self.shared.requests.lock().unwrap();
        loop {
            let found = guard
                .iter()
                .filter(|r| r.path == "/v1/chat/completions")
                .find(|r| want(r));
            if let Some(r) = found {
                return r.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no such chat request arrived");
            guard = self.shared.arrived.wait_timeout(guard, left).unwrap().0;
        }
    }
}

/// One HTTP/1.1 request as a stand-in reads it.
pub struct Incoming {
    pub method: String,
    pub path: String,
    pub body: Vec<u8>,
    /// When its first line arrived.
    pub first_byte: Instant,
}

/// Reads one request (request line, headers, a `Content-Length` body) from `stream`, or
/// `None` when the peer closed first.
pub fn read_request(stream: &TcpStream) -> Option<Incoming> {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    let first_byte = Instant::now();
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    Some(Incoming {
        method,
        path,
        body,
        first_byte,
    })
}

fn serve(stream: TcpStream, shared: &Shared) {
    let Some(Incoming {
        method,
        path,
        body,
        first_byte,
    }) = read_request(&stream)
    else {
        return;
    };
    let index = {
        let mut requests = shared.requests.lock().unwrap();
        requests.push(Request {
            method: method.clone(),
            path: path.clone(),
            body: String::from_utf8_lossy(&body).into_owned(),
            first_byte,
            done: None,
        });
        shared.arrived.notify_all();
        requests.len() - 1
    };
    let reply = match (method.as_str(), path.as_str()) {
        ("GET", "/slots") => {
            let n = *shared.n_ctx.lock().unwrap();
            let mut main = json!({"id": 0, "n_ctx": n});
            if shared.slots.lock().unwrap().main_used {
                main["id_task"] = json!(1);
            }
            Reply::Status(200, json!([main, {"id": 1, "n_ctx": n}]).to_string())
        }
        ("POST", p) if p.starts_with("/slots/") => slot_action(p, &body, shared),
        ("GET", "/health") => Reply::Status(200, r#"{"status":"ok"}"#.into()),
        ("POST", "/v1/chat/completions") => {
            // Parsed once: the body is the whole prompt, and a stand-in that parsed it
            // again for each question it asks would spend the machine's time that the
            // benchmarks measure the daemons by.
            let parsed: Option<Value> = serde_json::from_slice(&body).ok();
            let v = parsed.as_ref().unwrap_or(&Value::Null);
            if v["id_slot"] == 0 {
                shared.slots.lock().unwrap().main_used = true;
            }
            let last = last_content_of(v);
            let keyed = {
                let mut keyed = shared.keyed.lock().unwrap();
                let at = keyed.iter().position(|(k, _)| last.contains(k.as_str()));
                at.map(|i| keyed.remove(i).1)
            };
            let next = keyed.or_else(|| shared.script.lock().unwrap().pop_front());
            let brain = shared.brain.lock().unwrap().clone();
            let next = next.or_else(|| Some(brain?(parsed.as_ref()?)));
            next.or_else(|| shared.fallback.lock().unwrap().clone())
                .unwrap_or_else(|| {
                    Reply::Status(
                        500,
                        error_json("server_error", "the stand-in's script is empty"),
                    )
                })
        }
        _ => Reply::Status(404, error_json("not_found", "no such endpoint")),
    };
    let mut stream = stream;
    send(&mut stream, reply);
    shared.requests.lock().unwrap()[index].done = Some(Instant::now());
}

fn slot_action(path: &str, body: &[u8], shared: &Shared) -> Reply {
    let mut slots = shared.slots.lock().unwrap();
    if !slots.save_path {
        return Reply::Status(
            501,
            error_json(
                "not_supported_error",
                "This server does not support slots action. Start it with `--slot-save-path`",
            ),
        );
    }
    let rest = path.trim_start_matches("/slots/");
    let (id, action) = rest.split_once("?action=").unwrap_or((rest, ""));
    let id: u64 = id.parse().unwrap_or(99);
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let name = v["filename"].as_str().unwrap_or("").to_string();
    match action {
        "save" => {
            let n = if id == 0 { SAVED_TOKENS } else { 0 };
            slots.files.insert(name.clone(), n);
            Reply::Status(200, json!({"id_slot": id, "filename": name, "n_saved": n, "n_written": n * 10}).to_string())
        }
        "restore" => match slots.files.get(&name) {
            Some(&n) => Reply::Status(200, json!({"id_slot": id, "filename": name, "n_restored": n, "n_read": n * 10}).to_string()),
            None => Reply::Status(
                400,
                error_json("invalid_request_error", "Unable to restore slot: No available space in KV cache or invalid slot save file"),
            ),
        },
        "erase" => Reply::Status(200, json!({"id_slot": id, "n_erased": 0}).to_string()),
        _ => Reply::Status(400, error_json("invalid_request_error", "Invalid action")),
    }
}

/// The content of a chat request's last message, or "" when there is none.
pub fn last_content(body: &[u8]) -> String {
    last_content_of(&serde_json::from_slice(body).unwrap_or(Value::Null))
}

/// `last_content` of a body already parsed.
fn last_content_of(v: &Value) -> String {
    v["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string()
}

/// Writes `reply` as the whole HTTP response on `stream`.
pub fn send(stream: &mut TcpStream, reply: Reply) {
    match reply {
        Reply::Held(gate, inner) => {
            gate.wait();
            send(stream, *inner);
        }
        Reply::Status(code, body) => {
            let reason = match code {
                200 => "OK",
                400 => "Bad Request",
                503 => "Service Unavailable",
                _ => "Error",
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {code} {reason}\r\nContent-Type: application/json; charset=utf-8\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.flush();
        }
        Reply::Sse(events) => {
            stream_events(stream, &events);
            let _ = stream.write_all(b"0\r\n\r\n");
            let _ = stream.flush();
        }
        Reply::Cut(events) => {
            stream_events(stream, &events);
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }
}

fn stream_events(stream: &mut TcpStream, events: &[String]) {
    let _ = stream.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\
          Connection: close\r\n\r\n",
    );
    for e in events {
        let _ = write!(stream, "{:x}\r\n{e}\r\n", e.len());
        let _ = stream.flush();
    }
}
