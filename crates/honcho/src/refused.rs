//! A message Honcho refused on its own (docs/honcho.md): what the refusal means — too
//! long (cut smaller and sent again), something in the message (passed over for good), or
//! not about the message at all (held) — and the log line naming it. The round that acts
//! on it is `sync`.

use super::message::{Outgoing, MIN_MESSAGE_CHARS};

/// Why Honcho refused one message on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// Too long: cut texts to at most this many characters and send it again.
    TooLong(usize),
    /// Something in the message itself: pass it over.
    Message,
    /// Not about the message (the refusal names no field of it): hold and retry, since
    /// passing over would drop every message after it as well.
    Request,
}

/// Sorts a 413 or 422 for one message of `len` characters. Honcho's 422 for a request body
/// is FastAPI's `{"detail": [{"type", "loc", "msg", …}]}`; a content over its
/// `MAX_MESSAGE_SIZE` has type `string_too_long` and says "at most N characters". Its own
/// validation errors (`{"detail": "…"}`, a string) concern names and peers, not one text.
pub fn sort_rejection(status: u16, body: &str, len: usize) -> Rejection {
    if status == 413 || body.contains("string_too_long") {
        let said = stated_limit(body).filter(|&n| n < len);
        let limit = said.unwrap_or(len / 2);
        return if limit >= MIN_MESSAGE_CHARS {
            Rejection::TooLong(limit)
        } else {
            Rejection::Message
        };
    }
    let compact: String = body
        .chars()
        .filter(|c| !c.is_whitespace())
        .take(16)
        .collect();
    if compact.starts_with("{\"detail\":[") {
        Rejection::Message
    } else {
        Rejection::Request
    }
}

/// The N of "at most N characters" in a validation answer.
fn stated_limit(body: &str) -> Option<usize> {
    let rest = &body[body.find("at most ")? + "at most ".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The log line for a message Honcho refused on its own. It names the message by its id
/// (session, epoch, byte offset of its record, side), so the owner can find it in the logs,
/// and Honcho's answer by its kind and length: the answer echoes the message's text.
pub fn rejection_line(session: &str, m: &Outgoing, status: u16, body: &str) -> String {
    format!(
        "honcho: session {session}: Honcho refused message {} with HTTP {status} ({}); it is passed over for good and the others go on",
        m.id,
        super::client::body_kind(body)
    )
}
