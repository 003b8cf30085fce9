//! The stand-in's replies, shaped as llama.cpp's own: SSE chunks of content and tool-call
//! fragments with `timings` on the last, and its JSON errors (docs/llama-api.md). The
//! server half (`super`) only sends what these build.

use super::Reply;
use serde_json::{json, Value};

pub fn error_json(kind: &str, message: &str) -> String {
    json!({"error": {"code": 500, "message": message, "type": kind}}).to_string()
}

fn chunk(delta: Value, finish: Option<&str>, timings: Option<(u64, u64, u64)>) -> String {
    let mut v = json!({"choices": [{"finish_reason": finish, "index": 0, "delta": delta}],
        "object": "chat.completion.chunk", "system_fingerprint": "stand-in"});
    if let Some((cache_n, prompt_n, predicted_n)) = timings {
        v["timings"] = json!({"cache_n": cache_n, "prompt_n": prompt_n, "prompt_ms": 1.0,
            "predicted_n": predicted_n, "predicted_ms": 1.0});
    }
    format!("data: {v}\n\n")
}

fn done() -> String {
    "data: [DONE]\n\n".into()
}

/// Counters the stand-in reports when a test does not care: cache, prompt, predicted.
pub const TIMINGS: (u64, u64, u64) = (10, 20, 5);

/// A streamed text answer in `pieces`, with `timings` on the final chunk.
pub fn text_with(pieces: &[&str], timings: (u64, u64, u64)) -> Reply {
    let mut events = vec![opening()];
    for p in pieces {
        events.push(chunk(json!({"content": p}), None, None));
    }
    events.push(chunk(json!({}), Some("stop"), Some(timings)));
    events.push(done());
    Reply::Sse(events)
}

pub fn text(pieces: &[&str]) -> Reply {
    text_with(pieces, TIMINGS)
}

/// An answer that calls tools: each `(id, name, arguments)`, the arguments sent in two
/// fragments the way llama.cpp streams them.
pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Reply {
    let mut events = vec![opening()];
    for (i, (id, name, args)) in calls.iter().enumerate() {
        let half = args
            .char_indices()
            .nth(args.chars().count() / 2)
            .map_or(0, |(b, _)| b);
        call_events(&mut events, i, id, name, &[&args[..half], &args[half..]]);
    }
    events.push(chunk(json!({}), Some("tool_calls"), Some(TIMINGS)));
    events.push(done());
    Reply::Sse(events)
}

/// One tool call whose `arguments` stream in pieces of at most `piece` bytes, as llama.cpp
/// streams them a token at a time (so no one SSE line is long, however long the whole).
/// Only the hostile-server benchmark sends one.
#[cfg(feature = "bench")]
pub fn tool_call_in_pieces(id: &str, name: &str, args: &str, piece: usize) -> Reply {
    let mut pieces = Vec::new();
    let mut rest = args;
    while !rest.is_empty() {
        let mut end = piece.min(rest.len());
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let (now, later) = rest.split_at(end.max(1));
        pieces.push(now);
        rest = later;
    }
    let mut events = vec![opening()];
    call_events(&mut events, 0, id, name, &pieces);
    events.push(chunk(json!({}), Some("tool_calls"), Some(TIMINGS)));
    events.push(done());
    Reply::Sse(events)
}

/// The first chunk of every answer: the role, no content yet.
fn opening() -> String {
    chunk(json!({"role": "assistant", "content": null}), None, None)
}

/// Tool call `index`: its first fragment with id and name, then `pieces` of arguments.
fn call_events(events: &mut Vec<String>, index: usize, id: &str, name: &str, pieces: &[&str]) {
    events.push(chunk(
        json!({"tool_calls": [{"index": index, "id": id, "type": "function",
            "function": {"name": name, "arguments": ""}}]}),
        None,
        None,
    ));
    for piece in pieces {
        events.push(chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
            None,
            None,
        ));
    }
}

/// llama.cpp's answer to a prompt that does not fit the slot.
pub fn context_full() -> Reply {
    Reply::Status(
        400,
        json!({"error": {"code": 400, "message": "request (3031 tokens) exceeds the available context size (2048 tokens), try increasing it",
            "type": "exceed_context_size_error", "n_prompt_tokens": 3031, "n_ctx": 2048}})
        .to_string(),
    )
}

pub fn unavailable() -> Reply {
    Reply::Status(
        503,
        json!({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}})
            .to_string(),
    )
}

/// A 200 stream holding only the role chunk and then `message` as a `server_error`, as
/// llama.cpp reports a task that failed after the stream started: today as a data chunk
/// `data: {"error": …}`.
pub fn error_chunk_in_stream(message: &str) -> Reply {
    Reply::Sse(vec![
        opening(),
        format!("data: {}\n\n", error_json("server_error", message)),
    ])
}

/// The same as `error_chunk_in_stream` in the form older llama.cpp wrote: an SSE field
/// `error: {…}` holding the bare error object.
pub fn error_field_in_stream(message: &str) -> Reply {
    let v: Value = serde_json::from_str(&error_json("server_error", message)).unwrap();
    Reply::Sse(vec![opening(), format!("error: {}\n\n", v["error"])])
}

/// A stream with a line that is not JSON in the middle of it.
pub fn malformed() -> Reply {
    Reply::Sse(vec![
        chunk(json!({"content": "Hi"}), None, None),
        "data: {this is not json\n\n".into(),
        chunk(json!({}), Some("stop"), Some(TIMINGS)),
        done(),
    ])
}

/// A stream that dies after `pieces`: no final chunk, no `[DONE]`.
pub fn cut(pieces: &[&str]) -> Reply {
    let mut events = vec![opening()];
    for p in pieces {
        events.push(chunk(json!({"content": p}), None, None));
    }
    Reply::Cut(events)
}

/// An answer the server stopped at its token limit (`finish_reason` `length`): `pieces`
/// of text, then each `(id, name, arguments)` call streamed as far as it got, then the
/// final chunk with `predicted` generated tokens.
pub fn length_cut(pieces: &[&str], calls: &[(&str, &str, &str)], predicted: u64) -> Reply {
    let mut events = vec![opening()];
    for p in pieces {
        events.push(chunk(json!({"content": p}), None, None));
    }
    for (i, (id, name, args)) in calls.iter().enumerate() {
        events.push(chunk(
            json!({"tool_calls": [{"index": i, "id": id, "type": "function",
                "function": {"name": name, "arguments": args}}]}),
            None,
            None,
        ));
    }
    events.push(chunk(
        json!({}),
        Some("length"),
        Some((TIMINGS.0, TIMINGS.1, predicted)),
    ));
    events.push(done());
    Reply::Sse(events)
}
