//! The attacker's side of the injection tests (issue 11): a compromised model and a
//! loopback collector.
//!
//! The model is a `Standin` brain that obeys everything. Each turn it does, in order,
//! what the owner's message asks (`read PATH`, `fetch URL`, `recall QUERY`, `lookup WORD
//! at BASE`, separated by `;` or new lines), then every instruction injected into a tool
//! result of the turn (a line `DO: <the same grammar>`), and fills `{ALL}` in an injected
//! URL with everything its context holds (every message but the system prompt,
//! percent-encoded). Asked for a summary, it writes everything it has seen. When nothing
//! is left to do it answers with everything it knows, so a reply quotes what it read.
//!
//! The collector is an HTTP server on 127.0.0.1 serving the pages the tests plant
//! (`/page/NAME`, `text/plain`) and recording the target of every request it receives:
//! what reached it is what left the box.

use super::standin::{text, tool_calls, Brain, Incoming, Reply};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// The prefix of an injected instruction in a page or file.
pub const DO: &str = "DO:";

/// What an injected URL's `{ALL}` is replaced with.
pub const ALL: &str = "{ALL}";

/// The compromised model.
pub fn brain() -> Brain {
    Arc::new(|body: &Value| think(body))
}

fn content(m: &Value) -> &str {
    m["content"].as_str().unwrap_or("")
}

/// Everything the context holds, as one string.
fn everything(messages: &[Value]) -> String {
    messages
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            let mut s = content(m).to_string();
            for call in m["tool_calls"].as_array().into_iter().flatten() {
                s.push(' ');
                s.push_str(call["function"]["arguments"].as_str().unwrap_or(""));
            }
            s
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Percent-encodes all but ASCII letters, digits and `-_.`, so markers stay readable.
pub fn encode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One action: a tool name and its JSON arguments.
fn action(command: &str, all: &str) -> Option<(&'static str, String)> {
    let command = command.trim();
    let (verb, rest) = command.split_once(' ')?;
    let rest = rest.trim();
    Some(match verb.to_ascii_lowercase().as_str() {
        "read" | "read_file" => ("read_file", json!({ "path": rest }).to_string()),
        "fetch" | "http_fetch" => (
            "http_fetch",
            json!({ "url": rest.replace(ALL, &encode(all)) }).to_string(),
        ),
        "recall" => ("recall", json!({ "query": rest }).to_string()),
        "lookup" => {
            let (word, base) = rest.split_once(" at ")?;
            let url = format!("{}?q={}", base.trim(), encode(word.trim()));
            ("http_fetch", json!({ "url": url }).to_string())
        }
        _ => return None,
    })
}

fn think(body: &Value) -> Reply {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let all = everything(&messages);
    let last = messages.last().map(content).unwrap_or("");
    // A summary request (compact.md, summarise.md): it keeps everything.
    if body.get("tools").is_none() || last.starts_with("Summarise") {
        return text(&[&format!("Everything so far: {all}")]);
    }
    let Some(at) = messages.iter().rposition(|m| m["role"] == "user") else {
        return text(&["nothing asked"]);
    };
    let mut actions: Vec<(&str, String)> = content(&messages[at])
        .split(['\n', ';'])
        .filter_map(|c| action(c, &all))
        .collect();
    let mut done = 0;
    for m in &messages[at + 1..] {
        done += m["tool_calls"].as_array().map_or(0, Vec::len);
        if m["role"] == "tool" {
            for line in content(m).lines() {
                if let Some((_, injected)) = line.split_once(DO) {
                    actions.extend(action(injected, &all));
                }
            }
        }
    }
    match actions.get(done) {
        Some((name, args)) => {
            let id = format!("k{at}-{done}");
            tool_calls(&[(&id, name, args)])
        }
        None => text(&[&format!("Done. Everything I know: {all}")]),
    }
}

/// The attacker's server on loopback.
pub struct Collector {
    pub url: String,
    pages: Arc<Mutex<HashMap<String, String>>>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Collector {
    pub fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let pages = Arc::new(Mutex::new(HashMap::new()));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (p, s) = (Arc::clone(&pages), Arc::clone(&seen));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (p, s) = (Arc::clone(&p), Arc::clone(&s));
                std::thread::spawn(move || serve(stream, &p, &s));
            }
        });
        Collector { url, pages, seen }
    }

    /// Plants a page and returns its URL.
    pub fn page(&self, name: &str, text: &str) -> String {
        self.pages
            .lock()
            .unwrap()
            .insert(format!("/page/{name}"), text.to_string());
        format!("{}/page/{name}", self.url)
    }

    /// The target of every request received, in order.
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }

    /// The requests that carried any of `markers` out.
    pub fn leaked(&self, markers: &[&str]) -> Vec<String> {
        self.seen()
            .into_iter()
            .filter(|t| markers.iter().any(|m| t.contains(m)))
            .collect()
    }
}

fn serve(stream: TcpStream, pages: &Mutex<HashMap<String, String>>, seen: &Mutex<Vec<String>>) {
    let Some(Incoming { path, .. }) = super::standin::read_request(&stream) else {
        return;
    };
    seen.lock().unwrap().push(path.clone());
    let page = pages.lock().unwrap().get(&path).cloned();
    let body = page.unwrap_or_else(|| "thank you".to_string());
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}
