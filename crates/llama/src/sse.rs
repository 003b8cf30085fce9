//! Reading llama.cpp's streamed answer: Server-Sent Events of `data: <json>` lines,
//! ending with `data: [DONE]` (docs/llama-api.md). Each content delta, reasoning delta and
//! tool-call fragment goes to a callback as it arrives. A stream that ends before
//! `[DONE]`, or whose data is not JSON, is an error — never a hang and never a silently
//! short answer.
//!
//! The SSE rules followed: a line is `field: value`; a blank line ends an event and its
//! `data` lines, joined by newlines, are its data; a line starting with `:` is a comment;
//! a field this reader does not know is ignored, as the SSE spec says, so a server that
//! adds `id:` or its own fields still streams. Errors arrive three ways, all read as the
//! server's error: a data chunk holding an `error` object (llama.cpp today), an `error:`
//! field (older llama.cpp wrote `error: {json}`), and an event named `error`.
//!
//! Token counts come from `timings` (llama.cpp's own); when a chunk has no `timings`, or
//! one without `cache_n` (other builds and servers), from the OpenAI `usage` object.

use proto::Tokens;
use serde_json::Value;
use std::fmt;
use std::io::{self, BufRead};
use std::time::Instant;

/// The longest SSE line accepted. A chunk is one token's delta plus a small envelope;
/// the final chunk with `timings` is well under a kilobyte. A line past this is a broken
/// or hostile server, and reading it whole would grow memory without bound.
pub const MAX_SSE_LINE: usize = 1024 * 1024;

/// The most data one event may gather over its `data:` lines before the blank line that
/// ends it. Each line is already capped; without this, a server sending `data:` lines
/// and never a blank line would grow one event without bound.
pub const MAX_SSE_EVENT: usize = MAX_SSE_LINE;

/// The most text (content, reasoning and tool-call arguments) one completion may hold.
/// Far above any real answer; it bounds memory against a server that never stops.
///
/// Kept at an eighth of the session log's line limit, because JSON escaping can make a
/// record's line up to six times its text and the log must never hold a line it would
/// refuse to read back.
pub const MAX_COMPLETION_BYTES: usize = 8 * 1024 * 1024;

/// The most tool calls one completion may make; a larger `index` is a broken stream.
pub const MAX_TOOL_CALLS: usize = 64;

/// The most bytes of arguments one tool call may have. Each tool takes one short
/// string (a path, a URL, a query): a few kilobytes at the very most. Arguments past
/// this are a broken or hostile server, and every byte would be logged and replayed
/// each round of the epoch; the answer is refused, saying so.
pub const MAX_TOOL_ARGUMENTS: usize = 64 * 1024;

/// The `finish_reason` of an answer the server cut at its token limit (`n_predict`,
/// `max_tokens`, or a full slot).
pub const FINISH_LENGTH: &str = "length";

/// One piece of the answer as it streams in.
#[derive(Debug, PartialEq, Eq)]
pub enum Delta<'a> {
    Content(&'a str),
    /// A thinking model's reasoning (`delta.reasoning_content`, where llama.cpp's default
    /// `reasoning_format` puts it): not part of the reply text and never replayed.
    Reasoning(&'a str),
    /// A fragment of tool call `index`. `id` and `name` are given once, with the first
    /// fragment that carries them; later fragments that repeat them give `None`.
    ToolCall {
        index: usize,
        id: Option<&'a str>,
        name: Option<&'a str>,
        arguments: &'a str,
    },
}

/// A whole streamed answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Completion {
    /// The text, or `None` when the model sent no content at all.
    pub content: Option<String>,
    /// Tool calls in `index` order; an `id` the server left out is empty.
    pub tool_calls: Vec<proto::ToolCall>,
    /// The token counts: `timings` when whole, else `usage` (see the module doc).
    pub timings: Option<Tokens>,
    /// The last `finish_reason` the stream gave (`stop`, `length`, `tool_calls`), or
    /// `None` when no chunk had one.
    pub finish: Option<String>,
}

impl Completion {
    /// Whether the server cut the answer at its token limit (`finish_reason` `length`):
    /// its text stops mid-way and its tool calls' arguments may be cut JSON.
    pub fn cut(&self) -> bool {
        self.finish.as_deref() == Some(FINISH_LENGTH)
    }
}

#[derive(Debug)]
pub enum StreamError {
    Io(io::Error),
    Malformed(String),
    /// The stream ended before `data: [DONE]`.
    Truncated,
    /// The deadline passed (between lines, or a read waited it out).
    TimedOut,
    /// The server reported an error in the stream (see the module doc for the forms).
    /// `code` is the error's own `code` (llama.cpp puts the HTTP status the error would
    /// have had there), when it has one that is an HTTP status.
    Server {
        code: Option<u16>,
        kind: String,
        message: String,
    },
}

impl StreamError {
    /// Whether reading gave up because the deadline passed: the socket's read timeout,
    /// set to the time left before each read, or the check between lines.
    pub fn is_timeout(&self) -> bool {
        match self {
            StreamError::TimedOut => true,
            StreamError::Io(e) => matches!(
                e.kind(),
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
            ),
            _ => false,
        }
    }
}

impl std::error::Error for StreamError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StreamError::Io(e) => Some(e),
            StreamError::Malformed(_)
            | StreamError::Truncated
            | StreamError::TimedOut
            | StreamError::Server { .. } => None,
        }
    }
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::Io(e) if self.is_timeout() => {
                write!(f, "reading the stream timed out: {e}")
            }
            StreamError::Io(e) => write!(f, "the stream broke: {e}"),
            StreamError::Malformed(m) => write!(f, "malformed stream: {m}"),
            StreamError::Truncated => f.write_str("the stream ended before data: [DONE]"),
            StreamError::TimedOut => f.write_str("the answer did not finish in time"),
            StreamError::Server { kind, message, .. } => {
                write!(f, "server error {kind}: {}", super::described(message))
            }
        }
    }
}

/// What kind of JSON error `e` is, without serde_json's message (which can quote input).
fn json_error_kind(e: &serde_json::Error) -> &'static str {
    match e.classify() {
        serde_json::error::Category::Io => "an i/o error",
        serde_json::error::Category::Syntax => "not valid json",
        serde_json::error::Category::Data => "unexpected json",
        serde_json::error::Category::Eof => "json cut short",
    }
}

/// Reads the stream to `[DONE]`, handing each delta to `on_delta`.
#[cfg(test)]
pub fn read_stream(
    r: impl BufRead,
    on_delta: &mut dyn FnMut(Delta<'_>),
) -> Result<Completion, StreamError> {
    read_stream_until(r, on_delta, None)
}

/// Like `read_stream`, but gives up once `deadline` has passed. The reader under it is
/// expected to bound each read by the same deadline (the client sets the socket's read
/// timeout to the time left before every read); this check between lines catches a
/// server that keeps sending keep-alives, empty deltas or endless reasoning.
pub fn read_stream_until(
    mut r: impl BufRead,
    on_delta: &mut dyn FnMut(Delta<'_>),
    deadline: Option<Instant>,
) -> Result<Completion, StreamError> {
    let mut acc = Accumulator::default();
    let mut event = Event::default();
    let mut line = Vec::new();
    loop {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(StreamError::TimedOut);
        }
        line.clear();
        if !read_line(&mut r, &mut line)? {
            return Err(StreamError::Truncated);
        }
        let text = std::str::from_utf8(&line)
            .map_err(|_| StreamError::Malformed("a line is not utf-8".into()))?;
        let text = text.strip_suffix('\n').unwrap_or(text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        if text.is_empty() {
            // A blank line ends an event; its data lines together are one JSON chunk.
            let ended = std::mem::take(&mut event);
            if !ended.data.is_empty() {
                if ended.name == "error" {
                    return Err(server_error(&ended.data));
                }
                acc.chunk(&ended.data, on_delta)?;
            }
            continue;
        }
        if text.starts_with(':') {
            continue; // an SSE comment (a keep-alive)
        }
        let (field, value) = text.split_once(':').unwrap_or((text, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "data" => {
                if event.data.is_empty() && value == "[DONE]" {
                    return Ok(acc.finish());
                }
                if event.data.len() + value.len() + 1 > MAX_SSE_EVENT {
                    return Err(StreamError::Malformed(format!(
                        "an event's data is over {MAX_SSE_EVENT} bytes"
                    )));
                }
                if !event.data.is_empty() {
                    event.data.push('\n');
                }
                event.data.push_str(value);
            }
            "event" => event.name = clip(value),
            // Older llama.cpp reported a failed task as `error: {json}`.
            "error" => return Err(server_error(value)),
            // `id`, `retry` and any field this reader does not know: ignored (SSE spec).
            _ => {}
        }
    }
}

/// The SSE event being gathered: its `event` name and its `data` so far.
#[derive(Default)]
struct Event {
    name: String,
    data: String,
}

/// Reads one line into `buf`, bounded by `MAX_SSE_LINE`. False at a clean end of input.
fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>) -> Result<bool, StreamError> {
    loop {
        let available = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(StreamError::Io(e)),
        };
        if available.is_empty() {
            // A last line without its newline is still part of a stream cut short.
            return Ok(false);
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        if buf.len() + take > MAX_SSE_LINE {
            return Err(StreamError::Malformed(format!(
                "a line is over {MAX_SSE_LINE} bytes"
            )));
        }
        buf.extend_from_slice(&available[..take]);
        r.consume(take);
        if done {
            return Ok(true);
        }
    }
}

fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}

/// The server's error from an error's JSON text: `{"error": {...}}` or the bare
/// `{"code", "message", "type"}` object; text that is not JSON is the message itself.
fn server_error(text: &str) -> StreamError {
    match serde_json::from_str::<Value>(text) {
        Ok(v) => error_object(v.get("error").unwrap_or(&v)),
        Err(_) => StreamError::Server {
            code: None,
            kind: "unknown".into(),
            message: text.chars().take(500).collect(),
        },
    }
}

fn error_object(err: &Value) -> StreamError {
    let message = match &err["message"] {
        Value::String(m) => m.clone(),
        Value::Null => match err.as_str() {
            Some(s) => s.to_string(),
            None => "no message".into(),
        },
        other => other.to_string(),
    };
    StreamError::Server {
        code: err["code"]
            .as_u64()
            .and_then(|c| u16::try_from(c).ok())
            .filter(|c| (100..=599).contains(c)),
        kind: super::error_kind(err["type"].as_str().unwrap_or("")),
        message,
    }
}

#[derive(Default)]
struct Accumulator {
    content: Option<String>,
    calls: Vec<proto::ToolCall>,
    timings: Option<Tokens>,
    finish: Option<String>,
    bytes: usize,
}

impl Accumulator {
    fn chunk(
        &mut self,
        data: &str,
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<(), StreamError> {
        let v: Value = serde_json::from_str(data)
            // Named by where it broke and its length, not quoted: the data is the
            // model's words (docs/forgetting.md, 'Log lines').
            .map_err(|e| {
                StreamError::Malformed(format!(
                    "{} at line {} column {} of an event of {} bytes",
                    json_error_kind(&e),
                    e.line(),
                    e.column(),
                    data.len()
                ))
            })?;
        if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
            return Err(error_object(err));
        }
        if let Some(tokens) = counts(&v) {
            self.timings = Some(tokens);
        }
        let Some(choice) = v["choices"].as_array().and_then(|c| c.first()) else {
            return Ok(()); // the usage-only chunk has no choices
        };
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.finish = Some(clip(reason));
        }
        let delta = &choice["delta"];
        if let Some(text) = delta["reasoning_content"].as_str() {
            self.grow(text.len())?;
            on_delta(Delta::Reasoning(text));
        }
        if let Some(text) = delta["content"].as_str() {
            self.grow(text.len())?;
            self.content.get_or_insert_with(String::new).push_str(text);
            on_delta(Delta::Content(text));
        }
        if let Some(calls) = delta["tool_calls"].as_array() {
            for call in calls {
                self.tool_call(call, on_delta)?;
            }
        }
        Ok(())
    }

    fn tool_call(
        &mut self,
        call: &Value,
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<(), StreamError> {
        let index = match call.get("index") {
            None => 0,
            Some(i) => i
                .as_u64()
                .and_then(|i| usize::try_from(i).ok())
                .filter(|&i| i < MAX_TOOL_CALLS)
                .ok_or_else(|| StreamError::Malformed(format!("tool call index {i}")))?,
        };
        while self.calls.len() <= index {
            self.calls.push(proto::ToolCall {
                id: String::new(),
                name: String::new(),
                arguments: String::new(),
            });
        }
        let arguments = call["function"]["arguments"].as_str().unwrap_or("");
        // The name and id are the first fragment's: a server that repeats them on later
        // fragments (or sends them again empty) must not make `read_fileread_file`.
        let slot = &self.calls[index];
        let id = call["id"]
            .as_str()
            .filter(|s| !s.is_empty() && slot.id.is_empty());
        let name = call["function"]["name"]
            .as_str()
            .filter(|s| !s.is_empty() && slot.name.is_empty());
        self.grow(arguments.len() + name.map_or(0, str::len) + id.map_or(0, str::len))?;
        let slot = &mut self.calls[index];
        if let Some(id) = id {
            slot.id = id.to_string();
        }
        if let Some(name) = name {
            slot.name = name.to_string();
        }
        if slot.arguments.len() + arguments.len() > MAX_TOOL_ARGUMENTS {
            return Err(StreamError::Malformed(format!(
                "tool call {index}'s arguments are over {MAX_TOOL_ARGUMENTS} bytes"
            )));
        }
        slot.arguments.push_str(arguments);
        on_delta(Delta::ToolCall {
            index,
            id,
            name,
            arguments,
        });
        Ok(())
    }

    fn grow(&mut self, n: usize) -> Result<(), StreamError> {
        self.bytes += n;
        if self.bytes > MAX_COMPLETION_BYTES {
            return Err(StreamError::Malformed(format!(
                "the answer is over {MAX_COMPLETION_BYTES} bytes"
            )));
        }
        Ok(())
    }

    fn finish(self) -> Completion {
        Completion {
            content: self.content,
            tool_calls: self.calls,
            timings: self.timings,
            finish: self.finish,
        }
    }
}

/// A count as a whole number: llama.cpp writes integers; a whole float is accepted too,
/// rather than failing a turn over a formatting change.
fn whole(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < u64::MAX as f64)
            .map(|f| f as u64)
    })
}

/// The token counts of one chunk, if it has any: `timings` when it has all three
/// counts; otherwise `usage` (`prompt_tokens` is the whole prompt, cached part
/// included, as llama.cpp counts it: docs/llama-api.md), with whatever `timings` does
/// have filling in; a chunk with neither gives `None`.
fn counts(v: &Value) -> Option<Tokens> {
    let t = v.get("timings").filter(|t| t.is_object());
    let from_t = |name: &str| t.and_then(|t| whole(&t[name]));
    if let (Some(cache_n), Some(prompt_n), Some(predicted_n)) =
        (from_t("cache_n"), from_t("prompt_n"), from_t("predicted_n"))
    {
        return Some(Tokens {
            cache_n,
            prompt_n,
            predicted_n,
        });
    }
    let u = v.get("usage").filter(|u| u.is_object());
    let from_u = |name: &str| u.and_then(|u| whole(&u[name]));
    let cached = u.and_then(|u| whole(&u["prompt_tokens_details"]["cached_tokens"]));
    if u.is_none() && t.is_none() {
        return None;
    }
    let cache_n = from_t("cache_n").or(cached).unwrap_or(0);
    let prompt_n = match (from_u("prompt_tokens"), from_t("prompt_n")) {
        (Some(all), _) => all.saturating_sub(cache_n),
        (None, Some(p)) => p,
        (None, None) => 0,
    };
    let predicted_n = from_u("completion_tokens")
        .or(from_t("predicted_n"))
        .unwrap_or(0);
    if (cache_n, prompt_n, predicted_n) == (0, 0, 0) && from_u("prompt_tokens").is_none() {
        // An empty `usage: {}` or `timings: {}` says nothing; keep what came before.
        return None;
    }
    Some(Tokens {
        cache_n,
        prompt_n,
        predicted_n,
    })
}

#[cfg(test)]
mod tests;
