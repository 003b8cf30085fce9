//! A relay in front of the real llama.cpp server, for tests that need a real model and
//! a conversation it cannot make by itself. SmolLM2 never emits tool calls
//! (docs/llama-api.md), so a `Rule` may answer a chat request with a scripted reply — a
//! tool call — instead; every other request goes to the real server byte for byte, and
//! its answer comes back byte for byte (after the whole of it arrived). Every chat request
//! is recorded with its body, whether it was forwarded, and the `timings` of the answer,
//! so a test sees what the server re-processed on which slot.

use super::standin::{read_request, send, Incoming, Reply};
use super::HANG;
use proto::Tokens;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// Decides whether a chat request gets a scripted reply (`Some`) or goes to the server.
pub type Rule = Box<dyn Fn(&Value) -> Option<Reply> + Send + Sync>;

/// One chat request as the relay saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    /// The body loopd sent (before `extra` was merged in).
    pub body: Value,
    pub forwarded: bool,
    pub status: u16,
    /// llama.cpp's counters for the forwarded completion.
    pub timings: Option<Tokens>,
    /// The streamed answer's text.
    pub content: String,
}

impl Seen {
    pub fn slot(&self) -> u64 {
        self.body["id_slot"].as_u64().unwrap()
    }

    /// The content of the last message: what this request asks.
    pub fn last_text(&self) -> &str {
        let messages = self.body["messages"].as_array().unwrap();
        messages.last().unwrap()["content"].as_str().unwrap_or("")
    }
}

struct Shared {
    upstream: String,
    rule: Rule,
    extra: Value,
    tools_extra: Value,
    seen: Mutex<Vec<Seen>>,
}

pub struct Relay {
    pub url: String,
    shared: Arc<Shared>,
}

impl Relay {
    /// A relay to `upstream` (`http://host:port`). `extra` is a JSON object whose fields
    /// are set on every forwarded chat body (sampling settings for a repeatable run);
    /// `tools_extra`'s only on bodies that have `tools`.
    pub fn start(upstream: &str, rule: Rule, extra: Value, tools_extra: Value) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared {
            upstream: upstream.strip_prefix("http://").unwrap().to_string(),
            rule,
            extra,
            tools_extra,
            seen: Mutex::new(Vec::new()),
        });
        let s = Arc::clone(&shared);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let s = Arc::clone(&s);
                std::thread::spawn(move || serve(stream, &s));
            }
        });
        Relay {
            url: format!("http://127.0.0.1:{port}"),
            shared,
        }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }
}

fn serve(mut stream: TcpStream, shared: &Shared) {
    stream.set_read_timeout(Some(HANG)).unwrap();
    let Some(Incoming {
        method, path, body, ..
    }) = read_request(&stream)
    else {
        return;
    };
    if method != "POST" || path != "/v1/chat/completions" {
        let raw = forward(&shared.upstream, &method, &path, &body);
        let _ = stream.write_all(&raw);
        return;
    }
    let sent: Value = serde_json::from_slice(&body).unwrap();
    let what = format!(
        "slot {} asking {:?}",
        sent["id_slot"],
        sent["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .map(|c| c.chars().take(40).collect::<String>())
    );
    if let Some(reply) = (shared.rule)(&sent) {
        eprintln!("[relay] scripted reply to {what}");
        shared.seen.lock().unwrap().push(Seen {
            body: sent,
            forwarded: false,
            status: 200,
            timings: None,
            content: String::new(),
        });
        send(&mut stream, reply);
        return;
    }
    let mut out = sent.clone();
    let has_tools = sent.get("tools").is_some();
    for (extra, wanted) in [(&shared.extra, true), (&shared.tools_extra, has_tools)] {
        if let (Some(o), Some(extra), true) = (out.as_object_mut(), extra.as_object(), wanted) {
            for (k, v) in extra {
                o.insert(k.clone(), v.clone());
            }
        }
    }
    eprintln!("[relay] forwarding {what}");
    let raw = forward(
        &shared.upstream,
        &method,
        &path,
        serde_json::to_string(&out).unwrap().as_bytes(),
    );
    let (status, timings, content) = read_answer(&raw);
    eprintln!("[relay] {status} from llama.cpp to {what}: {timings:?}");
    shared.seen.lock().unwrap().push(Seen {
        body: sent,
        forwarded: true,
        status,
        timings,
        content,
    });
    let _ = stream.write_all(&raw);
}

/// Sends one request upstream (`host:port`) on a fresh connection and returns the raw
/// response.
pub fn forward(upstream: &str, method: &str, path: &str, body: &[u8]) -> Vec<u8> {
    let mut up = TcpStream::connect(upstream).unwrap();
    up.set_read_timeout(Some(HANG * 5)).unwrap();
    write!(
        up,
        "{method} {path} HTTP/1.1\r\nHost: {upstream}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    up.write_all(body).unwrap();
    let mut raw = Vec::new();
    up.read_to_end(&mut raw).unwrap();
    raw
}

/// The status, the final `timings` and the streamed text of a raw chat response.
fn read_answer(raw: &[u8]) -> (u16, Option<Tokens>, String) {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(raw.len(), |i| i + 4);
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = if head.contains("transfer-encoding: chunked") {
        dechunk(&raw[split..])
    } else {
        raw[split..].to_vec()
    };
    let mut timings = None;
    let mut content = String::new();
    for line in String::from_utf8_lossy(&body).lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        if let Some(piece) = v["choices"][0]["delta"]["content"].as_str() {
            content.push_str(piece);
        }
        if let Some(t) = v.get("timings") {
            timings = Some(Tokens {
                cache_n: t["cache_n"].as_u64().unwrap_or(0),
                prompt_n: t["prompt_n"].as_u64().unwrap_or(0),
                predicted_n: t["predicted_n"].as_u64().unwrap_or(0),
            });
        }
    }
    (status, timings, content)
}

/// The body of a chunked transfer: each `size\r\n data \r\n` until the zero chunk.
fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = body.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&body[..eol]).unwrap_or("").trim();
        let Ok(n) = usize::from_str_radix(size, 16) else {
            break;
        };
        let rest = &body[eol + 2..];
        if n == 0 || rest.len() < n {
            break;
        }
        out.extend_from_slice(&rest[..n]);
        body = rest[n..].strip_prefix(b"\r\n").unwrap_or(&rest[n..]);
    }
    out
}
