//! The llama.cpp client: one streaming `POST /v1/chat/completions` per model call, with
//! retries for a server that is down or loading, `GET /slots` to check the context size
//! at start, `GET /props` to check that the served template can do tool calls, and
//! `GET /health` for `/status`. Blocking (ureq); it runs on the worker thread and on
//! `/status`'s short thread, never on the poll loop.
//!
//! The daemon has one [`Client`]: built at start, its clones share one connection pool,
//! the server's settings (`[llama]`, replaced in place on a reload) and what it has
//! learnt of the served model (`tokenize::Specials`). The engine holds it for every model
//! call; `/status` asks `/health` through a clone of it.
//!
//! Every call has one deadline, `llama.timeout_s` from its start: connecting, sending,
//! each read of the stream or of an error body, the backoff between retries. ureq sets
//! the socket's read timeout to the time left before each read, so a server trickling
//! one byte a second cannot stretch it, and nothing is read after `[DONE]`: the answer
//! is returned as soon as it is whole (docs/llama-api.md, 'Deadlines').

pub mod api;
pub mod body;
pub mod check;
pub mod probe;
pub mod request;
pub mod retry;
pub mod slots;
pub mod sse;
pub mod tokenize;

#[allow(unused_imports)] // for the start-up check's caller (`Client::tool_support`)
pub use api::ModelServer;
pub use probe::ProbeError;
pub use request::{ChatRequest, Message};
pub use slots::{SlotError, SlotInfo, SlotListError};
pub use sse::{Completion, Delta};

use std::fmt;
use std::io::BufReader;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long to wait for llama.cpp to accept a connection. It is on loopback or the LAN;
/// a connect that takes longer than this is a server that is not there.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Timeout for the small probes (`/slots`, `/health`, `/props`): they answer from
/// memory, so a slow probe means a server too busy or stuck to be called reachable.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// The most of an error response body read, to find the error's type and message.
pub const MAX_ERROR_BODY: u64 = 64 * 1024;

/// The most of a probe's answer read. `/slots` with its `params` is a few kilobytes per
/// slot and `/props` holds the chat template (tens of kilobytes for the largest); a
/// megabyte is a server gone wrong.
pub const MAX_PROBE_BODY: u64 = 1024 * 1024;

/// The longest deadline a call is given, whatever `llama.timeout_s` says: a clock plus a
/// huge duration overflows, and no call should outlive a day.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

#[derive(Debug)]
pub enum LlamaError {
    /// The prompt does not fit the slot: HTTP 400 `exceed_context_size_error`, or the
    /// same reported in the stream (docs/llama-api.md,
    /// 'Errors, and which ones the same request gets again').
    ContextFull(String),
    /// Retryable failures lasted past `llama.retries` (or past the deadline).
    GaveUp { attempts: u32, last: String },
    /// The server refused the request and would refuse it again (docs/llama-api.md,
    /// 'Errors, and which ones the same request gets again'): never retried. `message` is the server's own words.
    Refused { status: u16, message: String },
    /// A failure before any response that retrying will not fix (a bad URL).
    Transport(String),
    /// The answer started and then broke: cut short, malformed, an error in the stream.
    Stream(sse::StreamError),
    /// The call did not finish within `llama.timeout_s` (`secs`).
    Timeout { secs: u64 },
}

impl LlamaError {
    /// Whether the same request would fail the same way again, so that asking again
    /// (a retry, or the next turn with the same history) is pointless: context full, or
    /// a refusal. The caller tells the owner what to change (`/compact`).
    pub fn repeats(&self) -> bool {
        matches!(
            self,
            LlamaError::ContextFull(_) | LlamaError::Refused { .. }
        )
    }
}

impl fmt::Display for LlamaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LlamaError::ContextFull(m) => write!(f, "context full: {m}"),
            LlamaError::GaveUp { attempts, last } => {
                write!(f, "llama.cpp failed {attempts} times; last: {last}")
            }
            LlamaError::Refused { status, message } => {
                write!(f, "llama.cpp answered {status}: {}", described(message))
            }
            LlamaError::Transport(m) => write!(f, "llama.cpp: {m}"),
            LlamaError::Stream(e) => write!(f, "llama.cpp: {e}"),
            LlamaError::Timeout { secs } => write!(
                f,
                "llama.cpp: timed out: no complete answer within {secs} s (llama.timeout_s)"
            ),
        }
    }
}

impl std::error::Error for LlamaError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LlamaError::Stream(e) => Some(e),
            LlamaError::ContextFull(_)
            | LlamaError::GaveUp { .. }
            | LlamaError::Refused { .. }
            | LlamaError::Transport(_)
            | LlamaError::Timeout { .. } => None,
        }
    }
}

impl LlamaError {
    /// The failure as the session's `note` tells it: a refusal with the server's own
    /// words, which may quote the conversation (llama.cpp's parse errors quote the text
    /// they failed on). The note is in the session log, where a forget reaches them; no
    /// log line and no `Display` of this error holds them (docs/forgetting.md, 'Log
    /// lines'), and the note does not say otherwise.
    pub fn for_session_log(&self) -> String {
        match self {
            LlamaError::Refused { status, message } => {
                format!("llama.cpp answered {status}; the server said: {message}")
            }
            LlamaError::ContextFull(_)
            | LlamaError::GaveUp { .. }
            | LlamaError::Transport(_)
            | LlamaError::Stream(_)
            | LlamaError::Timeout { .. } => self.to_string(),
        }
    }
}

/// A server's error message by its length only: its words may quote the conversation,
/// and what is displayed ends up in log lines, where forgetting cannot reach
/// (docs/forgetting.md, 'Log lines').
pub fn described(message: &str) -> String {
    format!(
        "a message of {} characters (its words are not repeated: they may quote the conversation)",
        message.chars().count()
    )
}

/// A transport failure in words, each part once and in lower case, without the URL
/// (every caller names what it asked): ureq's own text repeats the URL its caller
/// named, often its kind as its message (`Network Error: Network Error`), and quotes the
/// OS's error in title case. The parts: the kind, the message, then each underlying
/// error.
pub(crate) fn transport_words(t: &ureq::Transport) -> String {
    let mut parts: Vec<String> = vec![t.kind().to_string()];
    parts.extend(t.message().map(str::to_string));
    let mut source = std::error::Error::source(t);
    while let Some(e) = source {
        parts.push(e.to_string());
        source = e.source();
    }
    let mut out: Vec<String> = Vec::new();
    for part in parts {
        let part = lower_case_words(part.trim());
        if !part.is_empty() && !out.contains(&part) {
            out.push(part);
        }
    }
    out.join(": ")
}

/// `text` with each word written in title case (`Connection Failed`) in lower case;
/// acronyms (`DNS`, `TLS`) and names in other cases are left as they are.
fn lower_case_words(text: &str) -> String {
    text.split(' ')
        .map(|w| {
            let mut chars = w.chars();
            match chars.next() {
                Some(first) if first.is_uppercase() && chars.all(|c| !c.is_uppercase()) => {
                    w.to_lowercase()
                }
                _ => w.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Characters a server's error kind (`error.type`) may have to be quoted: llama.cpp's are
/// a word or two (`server_error`, `invalid_request_error`), and the kind stands inside
/// loopd's own one-line `error:` (docs/llama-api.md, 'Errors, and which ones the same request
/// gets again').
const MAX_KIND_CHARS: usize = 40;

/// A server's `error.type` as loopd quotes it: a short word of letters, digits, `_`, `-`
/// or `.`; anything else (a newline that would start a line of its own inside loopd's
/// error, a page of text) is `unknown`. The server's text, not loopd's, must never make
/// a line of loopd's reply.
pub(crate) fn error_kind(kind: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if !kind.is_empty() && kind.chars().count() <= MAX_KIND_CHARS && kind.chars().all(plain) {
        kind.to_string()
    } else {
        "unknown".to_string()
    }
}

/// A failed attempt, before any of the answer streamed.
enum Attempt {
    Retry(String),
    Fail(LlamaError),
}

/// The end of one call: `llama.timeout_s` from its start.
#[derive(Clone, Copy)]
pub struct Deadline {
    at: Instant,
    secs: u64,
}

impl Deadline {
    pub fn start(timeout: Duration) -> Deadline {
        let timeout = timeout.min(MAX_TIMEOUT);
        let now = Instant::now();
        Deadline {
            at: now.checked_add(timeout).unwrap_or(now),
            secs: timeout.as_secs(),
        }
    }

    /// The time left, or `None` once it has passed.
    pub fn left(&self) -> Option<Duration> {
        self.at
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
    }

    pub fn error(&self) -> LlamaError {
        LlamaError::Timeout { secs: self.secs }
    }
}

/// The llama.cpp client. A clone is the same client: same connections, settings and
/// caches.
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
}

struct Shared {
    agent: ureq::Agent,
    /// Swapped whole on a reload; each call reads it once at its start, so a call never
    /// mixes two servers' settings.
    settings: Mutex<Arc<Settings>>,
    /// The served model's special tokens, as far as the server said.
    specials: tokenize::Specials,
}

/// What `[llama]` says about the server.
struct Settings {
    base: String,
    retries: u32,
    /// `llama.timeout_s`: the deadline of each whole call, not of each read.
    timeout: Duration,
}

impl Settings {
    fn of(cfg: &proto::config::Llama) -> Arc<Settings> {
        Arc::new(Settings {
            base: cfg.url.trim_end_matches('/').to_string(),
            retries: cfg.retries,
            timeout: Duration::from_secs(cfg.timeout_s),
        })
    }
}

impl Client {
    pub fn new(cfg: &proto::config::Llama) -> Client {
        // No read or write timeout on the agent: each request is given the time left
        // before its deadline, which ureq applies to every read and write.
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(CONNECT_TIMEOUT)
            .build();
        Client {
            shared: Arc::new(Shared {
                agent,
                settings: Mutex::new(Settings::of(cfg)),
                specials: tokenize::Specials::default(),
            }),
        }
    }

    /// A reloaded `[llama]`, for every clone from its next call on. What was learnt of
    /// the served model stays: it is remembered per model, not per server address.
    pub fn reload(&self, cfg: &proto::config::Llama) {
        let fresh = Settings::of(cfg);
        *self
            .shared
            .settings
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = fresh;
    }

    fn settings(&self) -> Arc<Settings> {
        // A panic elsewhere while holding the lock cannot leave a half-written `Arc`.
        Arc::clone(
            &self
                .shared
                .settings
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        )
    }

    fn agent(&self) -> &ureq::Agent {
        &self.shared.agent
    }

    pub fn base_url(&self) -> String {
        self.settings().base.clone()
    }

    /// The served model's special tokens learnt so far.
    pub fn specials(&self) -> &tokenize::Specials {
        &self.shared.specials
    }

    /// One completion, streamed: each delta goes to `on_delta` as it arrives. Failures
    /// before the answer starts that the same request may not meet again are retried up
    /// to `llama.retries` times; all within `llama.timeout_s`.
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
        let settings = self.settings();
        let url = format!("{}/v1/chat/completions", settings.base);
        let deadline = Deadline::start(settings.timeout);
        let mut failures = 0u32;
        loop {
            let left = deadline.left().ok_or_else(|| deadline.error())?;
            let outcome = self
                .agent()
                .post(&url)
                .timeout(left)
                .set("Content-Type", "application/json")
                .send_string(body);
            let why = match classify(outcome, &deadline) {
                Ok(response) => {
                    // Nothing is retried once any of the answer reached the caller; a
                    // stream that broke or ended before that is a connection error, and
                    // an error the server put in the stream before that is taken as the
                    // same error answered before the stream.
                    let mut started = false;
                    let mut tracked = |d: Delta<'_>| {
                        started |= !delta_is_empty(&d);
                        on_delta(d);
                    };
                    match read_answer(response, &mut tracked, &deadline) {
                        Err(LlamaError::Stream(
                            e @ (sse::StreamError::Io(_) | sse::StreamError::Truncated),
                        )) if !started => format!("{e}, before any of the answer"),
                        Err(LlamaError::Stream(sse::StreamError::Server {
                            code,
                            kind,
                            message,
                        })) if !started => {
                            let status = code
                                .filter(|c| (400..=599).contains(c))
                                .unwrap_or(STREAM_ERROR_STATUS);
                            let said = format!(
                                "an error in the stream before any of the answer, code {status}: "
                            );
                            match by_status(status, kind, message, said) {
                                Attempt::Retry(why) => why,
                                Attempt::Fail(e) => return Err(e),
                            }
                        }
                        other => return other,
                    }
                }
                Err(Attempt::Fail(e)) => return Err(e),
                Err(Attempt::Retry(why)) => why,
            };
            failures += 1;
            if failures > settings.retries {
                return Err(LlamaError::GaveUp {
                    attempts: failures,
                    last: why,
                });
            }
            let wait = retry::delay(failures);
            if deadline.left().is_none_or(|left| left <= wait) {
                return Err(LlamaError::GaveUp {
                    attempts: failures,
                    last: format!(
                        "{why}; no time is left for another try within llama.timeout_s ({} s)",
                        deadline.secs
                    ),
                });
            }
            plumbing::warn!(
                "llama.cpp at {}: {why}; retry {failures} of {} in {} ms",
                settings.base,
                settings.retries,
                wait.as_millis()
            );
            std::thread::sleep(wait);
        }
    }

    /// Whether `GET /health` answers 200.
    pub fn health(&self) -> Result<(), ProbeError> {
        let url = format!("{}/health", self.settings().base);
        probe::get::<serde_json::Value>(self.agent(), &url).map(|_| ())
    }

    /// `GET /props`: the served model, its chat template and what the template can do.
    pub fn props(&self) -> Result<serde_json::Value, ProbeError> {
        probe::get(self.agent(), &format!("{}/props", self.settings().base))
    }
}

/// Whether `d` carries nothing of the answer (llama.cpp's first chunk may hold an empty
/// `content`).
fn delta_is_empty(d: &Delta<'_>) -> bool {
    match d {
        Delta::Content(t) | Delta::Reasoning(t) => t.is_empty(),
        Delta::ToolCall { .. } => false,
    }
}

/// Whether the server's error says the prompt does not fit the slot: today's
/// `exceed_context_size_error`, and the messages older llama.cpp sent for the same.
fn is_context_full(kind: &str, message: &str) -> bool {
    kind == "exceed_context_size_error"
        || message.contains("exceeds the available context size")
        || message.contains("Input prompt is too big compared to KV size")
        || message.contains("context shift is disabled")
}

/// Sorts the outcome of sending the request: an answer to stream, a retry, or a failure.
fn classify(
    outcome: Result<ureq::Response, ureq::Error>,
    deadline: &Deadline,
) -> Result<ureq::Response, Attempt> {
    match outcome {
        Ok(response) => Ok(response),
        Err(ureq::Error::Status(status, response)) => {
            let (kind, message) = match error_body(response) {
                Ok(found) => found,
                Err(body::BodyError::TimedOut) => return Err(Attempt::Fail(deadline.error())),
                Err(e) => (String::new(), e.to_string()),
            };
            Err(by_status(status, kind, message, format!("HTTP {status}: ")))
        }
        Err(ureq::Error::Transport(t)) => {
            let said = match t.url() {
                Some(url) => format!("{url}: {}", transport_words(&t)),
                None => transport_words(&t),
            };
            if retry::transport_is_retryable(&t) {
                Err(Attempt::Retry(said))
            } else if retry::is_timeout(&t) {
                Err(Attempt::Fail(deadline.error()))
            } else {
                Err(Attempt::Fail(LlamaError::Transport(said)))
            }
        }
    }
}

/// The status an error inside a 200 stream is taken to have when its `code` is missing
/// or not an error status: an error after the stream started is the task's own failure,
/// which llama.cpp reports as a 500 `server_error` unless it knows better.
const STREAM_ERROR_STATUS: u16 = 500;

/// What a server's error with `status` means for the call: context full or an error the
/// same request gets again fail at once, anything else is worth another try (`retry`'s
/// rules). `said` opens the retry's reason: how and where the server said it.
fn by_status(status: u16, kind: String, message: String, said: String) -> Attempt {
    if is_context_full(&kind, &message) {
        Attempt::Fail(LlamaError::ContextFull(message))
    } else if retry::status_repeats(status, &message) {
        Attempt::Fail(LlamaError::Refused { status, message })
    } else {
        Attempt::Retry(format!(
            "{said}{}{}",
            if kind.is_empty() {
                String::new()
            } else {
                format!("{kind}, ")
            },
            described(&message)
        ))
    }
}

/// `error.type` and `error.message` of an error response, as far as it has them, read
/// within the call's deadline and `MAX_ERROR_BODY` bytes.
fn error_body(response: ureq::Response) -> Result<(String, String), body::BodyError> {
    let bytes = body::read_prefix(response.into_reader(), MAX_ERROR_BODY)?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(v) => (
            v["error"]["type"]
                .as_str()
                .map(error_kind)
                .unwrap_or_default(),
            v["error"]["message"]
                .as_str()
                .map(|m| m.chars().take(MAX_MESSAGE_CHARS).collect())
                .unwrap_or_else(|| clip(&text)),
        ),
        Err(_) => (String::new(), clip(&text)),
    })
}

/// The most of a server's error message kept: enough for llama.cpp's longest (a JSON
/// parse error quoting the text it failed on), short enough for a reply line and a note.
const MAX_MESSAGE_CHARS: usize = 1000;

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
    deadline: &Deadline,
) -> Result<Completion, LlamaError> {
    let reader = BufReader::new(response.into_reader());
    // Nothing is read after `[DONE]`: a server that holds the connection open (or
    // trickles a trailer) would keep the answer from the owner. The connection is
    // closed, not pooled; on loopback a new one costs well under a millisecond.
    sse::read_stream_until(reader, on_delta, Some(deadline.at)).map_err(|e| match e {
        e if e.is_timeout() => deadline.error(),
        sse::StreamError::Server { kind, message, .. } if is_context_full(&kind, &message) => {
            LlamaError::ContextFull(message)
        }
        other => LlamaError::Stream(other),
    })
}

#[cfg(test)]
mod hostile;

#[cfg(test)]
mod typed {
    use super::sse::StreamError;
    use super::LlamaError;

    /// Regression: a broken stream reached the turn as a string, so nothing above the
    /// client could tell a truncated answer from a malformed one.
    #[test]
    fn a_broken_stream_keeps_its_stream_error_as_the_source() {
        let e = LlamaError::Stream(StreamError::Truncated);
        let source = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<StreamError>());
        assert!(matches!(source, Some(StreamError::Truncated)), "{source:?}");
        assert_eq!(
            e.to_string(),
            "llama.cpp: the stream ended before data: [DONE]"
        );
    }
}
