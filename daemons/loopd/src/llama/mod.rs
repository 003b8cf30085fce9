//! The llama.cpp client: one streaming `POST /v1/chat/completions` per model call, with
//! retries for a server that is down or loading, `GET /slots` to check the context size
//! at start, and `GET /health` for `/status`. Blocking (ureq); it runs on the worker
//! thread, never on the poll loop.

pub mod check;
pub mod request;
pub mod retry;
pub mod slots;
pub mod sse;
pub mod tokenize;

pub use request::{ChatRequest, Message};
pub use sse::{Completion, Delta};

use std::fmt;
use std::io::{BufReader, Read};
use std::time::{Duration, Instant};

/// How long to wait for llama.cpp to accept a connection. It is on loopback or the LAN;
/// a connect that takes longer than this is a server that is not there.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Timeout for the small probes (`/slots`, `/health`): they answer from memory, so a slow
/// probe means a server too busy or stuck to be called reachable.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// The most of an error response body read, to find the error's type and message.
pub const MAX_ERROR_BODY: u64 = 64 * 1024;

/// The most of a probe's answer read. `/slots` with its `params` is a few kilobytes per
/// slot; a megabyte is a server gone wrong.
pub const MAX_PROBE_BODY: u64 = 1024 * 1024;

/// What is read after `[DONE]` so the connection can go back to the pool; llama.cpp
/// sends only the chunked-encoding trailer there.
const MAX_DRAIN: u64 = 4096;

#[derive(Debug)]
pub enum LlamaError {
    /// HTTP 400 `exceed_context_size_error`: the prompt does not fit the slot.
    ContextFull(String),
    /// Retryable failures lasted past `llama.retries`.
    GaveUp { attempts: u32, last: String },
    /// A status that retrying will not fix.
    Http { status: u16, message: String },
    /// A failure before any response that retrying will not fix (a read timeout).
    Transport(String),
    /// The answer started and then broke: cut short, malformed, timed out.
    Stream(String),
}

impl fmt::Display for LlamaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LlamaError::ContextFull(m) => write!(f, "context full: {m}"),
            LlamaError::GaveUp { attempts, last } => {
                write!(f, "llama.cpp failed {attempts} times; last: {last}")
            }
            LlamaError::Http { status, message } => {
                write!(f, "llama.cpp answered {status}: {message}")
            }
            LlamaError::Transport(m) => write!(f, "llama.cpp: {m}"),
            LlamaError::Stream(m) => write!(f, "llama.cpp: {m}"),
        }
    }
}

impl std::error::Error for LlamaError {}

impl LlamaError {
    /// Whether the same request would fail the same way again: the server refused what
    /// it was sent, so retrying, or sending the same history next turn, cannot help.
    pub fn repeats(&self) -> bool {
        matches!(self, LlamaError::Http { .. })
    }
}

/// A failed attempt, before any of the answer streamed.
enum Attempt {
    Retry(String),
    Fail(LlamaError),
}

#[derive(Clone)]
pub struct Client {
    base: String,
    agent: ureq::Agent,
    retries: u32,
    /// `llama.timeout_s` as a bound on one whole streamed answer, not only on each read.
    timeout: Duration,
}

impl Client {
    pub fn new(cfg: &proto::config::Llama) -> Client {
        let timeout = Duration::from_secs(cfg.timeout_s);
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(CONNECT_TIMEOUT)
            .timeout_read(timeout)
            .timeout_write(timeout)
            .build();
        Client {
            base: cfg.url.trim_end_matches('/').to_string(),
            agent,
            retries: cfg.retries,
            timeout,
        }
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// One completion, streamed: each delta goes to `on_delta` as it arrives. Failures
    /// before the answer starts are retried up to `llama.retries` times.
    pub fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<Completion, LlamaError> {
        self.chat_body(&req.body(), on_delta)
    }

    /// `chat` with the body already built, for callers that keep the bytes (tests, bench).
    pub fn chat_body(
        &self,
        body: &str,
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<Completion, LlamaError> {
        let url = format!("{}/v1/chat/completions", self.base);
        let mut failures = 0u32;
        loop {
            let outcome = self
                .agent
                .post(&url)
                .set("Content-Type", "application/json")
                .send_string(body);
            let why = match classify(outcome) {
                Ok(response) => return read_answer(response, on_delta, self.timeout),
                Err(Attempt::Fail(e)) => return Err(e),
                Err(Attempt::Retry(why)) => why,
            };
            failures += 1;
            if failures > self.retries {
                return Err(LlamaError::GaveUp {
                    attempts: failures,
                    last: why,
                });
            }
            let wait = retry::delay(failures);
            plumbing::warn!(
                "llama.cpp at {}: {why}; retry {failures} of {} in {} ms",
                self.base,
                self.retries,
                wait.as_millis()
            );
            std::thread::sleep(wait);
        }
    }

    /// `(id, n_ctx)` of each slot, from `GET /slots`.
    pub fn slots(&self) -> Result<Vec<(u64, u64)>, String> {
        Ok(self.slot_list()?.iter().map(|s| (s.id, s.n_ctx)).collect())
    }

    /// Whether `GET /health` answers 200.
    pub fn health(&self) -> Result<(), String> {
        probe::<serde_json::Value>(&format!("{}/health", self.base)).map(|_| ())
    }
}

fn probe<T: serde::de::DeserializeOwned>(url: &str) -> Result<T, String> {
    let agent = ureq::AgentBuilder::new().timeout(PROBE_TIMEOUT).build();
    match agent.get(url).call() {
        Ok(r) => serde_json::from_reader(r.into_reader().take(MAX_PROBE_BODY))
            .map_err(|e| format!("GET {url}: bad json: {e}")),
        Err(ureq::Error::Status(s, r)) => Err(format!("GET {url}: {s}: {}", error_message(r))),
        Err(ureq::Error::Transport(t)) => Err(format!("GET {url}: {t}")),
    }
}

/// Sorts the outcome of sending the request: an answer to stream, a retry, or a failure.
fn classify(outcome: Result<ureq::Response, ureq::Error>) -> Result<ureq::Response, Attempt> {
    match outcome {
        Ok(response) => Ok(response),
        Err(ureq::Error::Status(status, response)) => {
            let (kind, message) = error_body(response);
            if status == 400 && kind == "exceed_context_size_error" {
                Err(Attempt::Fail(LlamaError::ContextFull(message)))
            } else if retry::status_is_retryable(status) {
                Err(Attempt::Retry(format!("HTTP {status}: {message}")))
            } else {
                Err(Attempt::Fail(LlamaError::Http { status, message }))
            }
        }
        Err(ureq::Error::Transport(t)) => {
            if retry::transport_is_retryable(&t) {
                Err(Attempt::Retry(t.to_string()))
            } else {
                Err(Attempt::Fail(LlamaError::Transport(t.to_string())))
            }
        }
    }
}

/// `error.type` and `error.message` of an error response, as far as it has them.
fn error_body(response: ureq::Response) -> (String, String) {
    let mut text = String::new();
    let _ = response
        .into_reader()
        .take(MAX_ERROR_BODY)
        .read_to_string(&mut text);
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(v) => (
            v["error"]["type"].as_str().unwrap_or("").to_string(),
            v["error"]["message"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| clip(&text)),
        ),
        Err(_) => (String::new(), clip(&text)),
    }
}

fn error_message(response: ureq::Response) -> String {
    error_body(response).1
}

fn clip(s: &str) -> String {
    let s = s.trim();
    if s.is_empty() {
        return "(no body)".into();
    }
    s.chars().take(200).collect()
}

fn read_answer(
    response: ureq::Response,
    on_delta: &mut dyn FnMut(Delta<'_>),
    timeout: Duration,
) -> Result<Completion, LlamaError> {
    let deadline = Instant::now().checked_add(timeout);
    let mut reader = BufReader::new(response.into_reader());
    let completion =
        sse::read_stream_until(&mut reader, on_delta, deadline).map_err(|e| match e {
            sse::StreamError::Server { kind, message } if kind == "exceed_context_size_error" => {
                LlamaError::ContextFull(message)
            }
            other => LlamaError::Stream(other.to_string()),
        })?;
    // Read the little that follows [DONE] so the connection is reusable; a failure here
    // does not matter, the answer is whole.
    let _ = std::io::copy(&mut reader.take(MAX_DRAIN), &mut std::io::sink());
    Ok(completion)
}
