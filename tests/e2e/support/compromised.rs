//! The attacker's side of the injection tests: a compromised model and a
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
//! Injected lines may also ask for what a model that wants to fool the owner would do:
//! - `batch ID; ACTION; ACTION…` — one answer holding every action's call, all with the
//!   tool call id `ID` (`-` for an empty id);
//! - `spell URL0 URL1` — one answer fetching `URL0` for each 0 bit and `URL1` for each 1
//!   bit of the fact (see below), in order;
//! - `say TEXT` — the final answer holds `TEXT` (streamed two characters at a time).
//!
//! Placeholders, in URLs and in `say`: `{ALL}` as above; `{FACT}` the first word of the
//! context that looks like a test's private marker (capitals then digits, `QUOKKA5150`);
//! `{ZW}` that fact in zero-width characters (U+200B for a 0 bit, U+200C for a 1 bit);
//! `{ESC}`, `{NUL}`, `{RLO}` (U+202E) and `{NL}` the characters they name.
//!
//! The collector is an HTTP server on 127.0.0.1 serving the pages the tests plant
//! (`/page/NAME`, `text/plain`) and recording the target of every request it receives
//! and every `Authorization` header: what reached it is what left the box.

use super::standin::{text, tool_calls, Brain, Reply};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
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

/// The first word of `all` that looks like a test's private marker: capital letters,
/// then digits (`QUOKKA5150`).
fn fact(all: &str) -> String {
    all.split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| {
            let letters = w.chars().take_while(char::is_ascii_uppercase).count();
            letters >= 3 && letters < w.len() && w[letters..].chars().all(|c| c.is_ascii_digit())
        })
        .unwrap_or("NOFACT")
        .to_string()
}

/// `fact`'s bits, most significant first.
fn bits(fact: &str) -> impl Iterator<Item = bool> + '_ {
    fact.bytes()
        .flat_map(|b| (0..8).rev().map(move |i| b >> i & 1 == 1))
}

/// `text` with its placeholders filled from everything the context holds.
fn fill(text: &str, all: &str) -> String {
    let fact = fact(all);
    let zw: String = bits(&fact)
        .map(|one| if one { '\u{200c}' } else { '\u{200b}' })
        .collect();
    text.replace(ALL, &encode(all))
        .replace("{FACT}", &fact)
        .replace("{ZW}", &zw)
        .replace("{ESC}", "\u{1b}")
        .replace("{NUL}", "\0")
        .replace("{RLO}", "\u{202e}")
        .replace("{NL}", "\n")
}

/// One tool call: its id, name and JSON arguments.
type Call = (String, &'static str, String);

/// What one instruction makes the model do.
enum Step {
    /// One answer holding these calls.
    Calls(Vec<Call>),
    /// Text for the final answer.
    Say(String),
}

/// One instruction as steps; `n` numbers the answer, for ids.
fn step(command: &str, all: &str, n: usize) -> Option<Step> {
    let command = command.trim();
    let (verb, rest) = command.split_once(' ')?;
    let rest = rest.trim();
    match verb.to_ascii_lowercase().as_str() {
        "say" => Some(Step::Say(fill(rest, all))),
        "batch" => {
            let mut parts = rest.split(';');
            let id = parts.next()?.trim();
            let id = if id == "-" { "" } else { id };
            let calls = parts
                .filter_map(|c| action(c, all))
                .map(|(name, args)| (id.to_string(), name, args))
                .collect();
            Some(Step::Calls(calls))
        }
        "spell" => {
            let (zero, one) = rest.split_once(' ')?;
            let calls = bits(&fact(all))
                .enumerate()
                .map(|(i, bit)| {
                    let url = if bit { one.trim() } else { zero.trim() };
                    (
                        format!("s{n}-{i}"),
                        "http_fetch",
                        json!({ "url": url }).to_string(),
                    )
                })
                .collect();
            Some(Step::Calls(calls))
        }
        _ => {
            let (name, args) = action(command, all)?;
            Some(Step::Calls(vec![(format!("k{n}"), name, args)]))
        }
    }
}

/// One action: a tool name and its JSON arguments.
fn action(command: &str, all: &str) -> Option<(&'static str, String)> {
    let command = command.trim();
    let (verb, rest) = command.split_once(' ')?;
    let rest = rest.trim();
    Some(match verb.to_ascii_lowercase().as_str() {
        "read" | "read_file" => ("read_file", json!({ "path": rest }).to_string()),
        "fetch" | "http_fetch" => ("http_fetch", json!({ "url": fill(rest, all) }).to_string()),
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
    let mut steps: Vec<Step> = content(&messages[at])
        .split(['\n', ';'])
        .enumerate()
        .filter_map(|(i, c)| step(c, &all, at * 1000 + i))
        .collect();
    // The answers given since the owner's line: one per step of calls done.
    let mut done = 0;
    for (i, m) in messages[at + 1..].iter().enumerate() {
        done += usize::from(m["tool_calls"].as_array().is_some_and(|c| !c.is_empty()));
        if m["role"] == "tool" {
            for line in content(m).lines() {
                if let Some((_, injected)) = line.split_once(DO) {
                    steps.extend(step(injected, &all, (at + 1 + i) * 1000 + steps.len()));
                }
            }
        }
    }
    let mut said = Vec::new();
    let mut calls = Vec::new();
    for s in steps {
        match s {
            Step::Calls(c) => calls.push(c),
            Step::Say(t) => said.push(t),
        }
    }
    if let Some(next) = calls.get(done) {
        let next: Vec<(&str, &str, &str)> = next
            .iter()
            .map(|(id, name, args)| (id.as_str(), *name, args.as_str()))
            .collect();
        return tool_calls(&next);
    }
    if said.is_empty() {
        return text(&[&format!("Done. Everything I know: {all}")]);
    }
    // Streamed in small pieces, so a line's start and its first characters arrive apart.
    let said = said.join("\n");
    let chars: Vec<char> = said.chars().collect();
    let pieces: Vec<String> = chars.chunks(2).map(|c| c.iter().collect()).collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    text(&pieces)
}

/// The attacker's server on loopback.
pub struct Collector {
    pub url: String,
    pages: Arc<Mutex<HashMap<String, String>>>,
    seen: Arc<Mutex<Vec<String>>>,
    auths: Arc<Mutex<Vec<String>>>,
}

impl Collector {
    pub fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let pages = Arc::new(Mutex::new(HashMap::new()));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let auths = Arc::new(Mutex::new(Vec::new()));
        let (p, s, a) = (Arc::clone(&pages), Arc::clone(&seen), Arc::clone(&auths));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (p, s, a) = (Arc::clone(&p), Arc::clone(&s), Arc::clone(&a));
                std::thread::spawn(move || serve(stream, &p, &s, &a));
            }
        });
        Collector {
            url,
            pages,
            seen,
            auths,
        }
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

    /// Every `Authorization` header received, Basic credentials decoded.
    pub fn auths(&self) -> Vec<String> {
        self.auths.lock().unwrap().clone()
    }

    /// The requests that carried any of `markers` out, in their target or their
    /// credentials.
    pub fn leaked(&self, markers: &[&str]) -> Vec<String> {
        self.seen()
            .into_iter()
            .chain(self.auths())
            .filter(|t| markers.iter().any(|m| t.contains(m)))
            .collect()
    }
}

fn serve(
    stream: TcpStream,
    pages: &Mutex<HashMap<String, String>>,
    seen: &Mutex<Vec<String>>,
    auths: &Mutex<Vec<String>>,
) {
    let mut reader = BufReader::new(&stream);
    let mut first = String::new();
    if reader.read_line(&mut first).unwrap_or(0) == 0 {
        return;
    }
    let path = first.split(' ').nth(1).unwrap_or("").to_string();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 {
            return;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':') {
            if k.eq_ignore_ascii_case("authorization") {
                let v = v.trim();
                let decoded = v
                    .strip_prefix("Basic ")
                    .map(|b| String::from_utf8_lossy(&base64(b)).into_owned());
                auths.lock().unwrap().push(decoded.unwrap_or(v.to_string()));
            }
        }
    }
    seen.lock().unwrap().push(path.clone());
    let page = pages.lock().unwrap().get(&path).cloned();
    let body = page.unwrap_or_else(|| "thank you".to_string());
    let mut stream = &stream;
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// Standard base64, padding and anything outside the alphabet skipped.
fn base64(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let (mut acc, mut n) = (0u32, 0);
    for c in text.bytes() {
        let Some(v) = ALPHABET.iter().position(|&a| a == c) else {
            continue;
        };
        acc = acc << 6 | v as u32;
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((acc >> n) as u8);
            acc &= (1 << n) - 1;
        }
    }
    out
}
