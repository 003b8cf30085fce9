//! Reading llama.cpp's streamed answer: Server-Sent Events of `data: <json>` lines,
//! ending with `data: [DONE]` (docs/llama-api.md). Each content delta and tool-call
//! fragment goes to a callback as it arrives; `timings` is taken from whichever chunk
//! carries it. A stream that ends before `[DONE]`, or holds a line that is not SSE or
//! not JSON, is an error — never a hang and never a silently short answer.
//!
//! `finish_reason` is not kept: nothing decides on it. A tool call is known by the calls
//! themselves, and an answer cut short because the slot filled (`"length"`; loopd sends no
//! `max_tokens`) shows in the `timings` counts against `expect.n_ctx`, which compaction
//! already reads (docs/llama-api.md).

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

/// The most text (content plus tool-call arguments) one completion may hold. Far above
/// any real answer; it bounds memory against a server that never stops.
///
/// Kept at an eighth of the session log's line limit, because JSON escaping can make a
/// record's line up to six times its text and the log must never hold a line it would
/// refuse to read back.
pub const MAX_COMPLETION_BYTES: usize = 8 * 1024 * 1024;

/// The most tool calls one completion may make; a larger `index` is a broken stream.
pub const MAX_TOOL_CALLS: usize = 64;

/// One piece of the answer as it streams in.
#[derive(Debug, PartialEq, Eq)]
pub enum Delta<'a> {
    Content(&'a str),
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
    /// The counts of llama.cpp's `timings` object, from whichever chunk carries it.
    pub timings: Option<Tokens>,
    /// The last `finish_reason` the server gave (`stop`, `tool_calls`, `length`).
    pub finish_reason: Option<String>,
}

impl Completion {
    /// Whether the server ended the answer at its token limit (`finish_reason` `length`).
    pub fn cut(&self) -> bool {
        self.finish_reason.as_deref() == Some("length")
    }
}

#[derive(Debug)]
pub enum StreamError {
    Io(io::Error),
    Malformed(String),
    /// The stream ended before `data: [DONE]`.
    Truncated,
    /// An `error` object in the stream, as llama.cpp sends when a task fails after
    /// the response has started.
    Server {
        kind: String,
        message: String,
    },
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::Io(e) if e.kind() == io::ErrorKind::TimedOut => {
                write!(f, "reading the stream timed out: {e}")
            }
            StreamError::Io(e) => write!(f, "the stream broke: {e}"),
            StreamError::Malformed(m) => write!(f, "malformed stream: {m}"),
            StreamError::Truncated => f.write_str("the stream ended before data: [DONE]"),
            StreamError::Server { kind, message } => write!(f, "server error {kind}: {message}"),
        }
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

/// Like `read_stream`, but gives up once `deadline` has passed. A per-read timeout alone
/// lets a server that sends keep-alives, empty deltas or endless reasoning hold the one
/// worker thread for ever; the deadline bounds the whole answer.
pub fn read_stream_until(
    mut r: impl BufRead,
    on_delta: &mut dyn FnMut(Delta<'_>),
    deadline: Option<Instant>,
) -> Result<Completion, StreamError> {
    let mut acc = Accumulator::default();
    let mut data = String::new();
    let mut line = Vec::new();
    loop {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(StreamError::Malformed(
                "the answer did not finish within llama.timeout_s".into(),
            ));
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
            if !data.is_empty() {
                acc.chunk(&data, on_delta)?;
                data.clear();
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
                if data.is_empty() && value == "[DONE]" {
                    return Ok(acc.finish());
                }
                if data.len() + value.len() + 1 > MAX_SSE_EVENT {
                    return Err(StreamError::Malformed(format!(
                        "an event's data is over {MAX_SSE_EVENT} bytes"
                    )));
                }
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(value);
            }
            "event" | "id" | "retry" => {}
            _ => {
                return Err(StreamError::Malformed(format!(
                    "unexpected line {:?}",
                    clip(text)
                )))
            }
        }
    }
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

#[derive(Default)]
struct Accumulator {
    content: Option<String>,
    calls: Vec<proto::ToolCall>,
    timings: Option<Tokens>,
    finish_reason: Option<String>,
    bytes: usize,
}

impl Accumulator {
    fn chunk(
        &mut self,
        data: &str,
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<(), StreamError> {
        let v: Value = serde_json::from_str(data)
            .map_err(|e| StreamError::Malformed(format!("{e} in {:?}", clip(data))))?;
        if let Some(err) = v.get("error") {
            return Err(StreamError::Server {
                kind: err["type"].as_str().unwrap_or("unknown").to_string(),
                message: err["message"].as_str().unwrap_or("no message").to_string(),
            });
        }
        if let Some(t) = v.get("timings").filter(|t| !t.is_null()) {
            self.timings = Some(timings(t)?);
        }
        let Some(choice) = v["choices"].as_array().and_then(|c| c.first()) else {
            return Ok(()); // the usage-only chunk has no choices
        };
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.finish_reason = Some(reason.to_string());
        }
        let delta = &choice["delta"];
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
        let id = call["id"].as_str();
        let name = call["function"]["name"].as_str();
        let arguments = call["function"]["arguments"].as_str().unwrap_or("");
        self.grow(arguments.len() + name.map_or(0, str::len) + id.map_or(0, str::len))?;
        let slot = &mut self.calls[index];
        if let Some(id) = id {
            slot.id = id.to_string();
        }
        if let Some(name) = name {
            slot.name.push_str(name);
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
            finish_reason: self.finish_reason,
        }
    }
}

fn timings(t: &Value) -> Result<Tokens, StreamError> {
    let field = |name: &str| {
        // llama.cpp writes these as integers; accept a whole float too, rather than
        // failing a turn over a formatting change.
        let v = &t[name];
        v.as_u64()
            .or_else(|| {
                v.as_f64()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                    .map(|f| f as u64)
            })
            .ok_or_else(|| StreamError::Malformed(format!("timings.{name} is {v}")))
    };
    Ok(Tokens {
        cache_n: field("cache_n")?,
        prompt_n: field("prompt_n")?,
        predicted_n: field("predicted_n")?,
    })
}

#[cfg(test)]
mod tests;
