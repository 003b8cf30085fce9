//! One request to the homeserver: a deadline on the whole of it, the answer read within a
//! bound, and every failure turned into the library's one error (docs/matrix.md, 'Bodies
//! and errors'). Nothing here decides what to do about a failure.

use crate::error::{clean_errcode, Call, Error};
use serde_json::Value;
use std::io::Read;
use std::time::Duration;

/// The most of an error answer that is read. Matrix errors are `{"errcode", "error",
/// "retry_after_ms"}`, a few hundred bytes; the rest of a longer one (a proxy's HTML page)
/// is not needed to tell what happened.
pub const MAX_ERROR_BODY_BYTES: u64 = 4096;

/// How long a connection may take to open. A homeserver that is down refuses at once; one
/// that cannot be reached should not hold a call for its whole deadline.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest `retry_after_ms` believed: a homeserver asking for more is waited on this
/// long and asked again, so a wrong answer cannot park the channel for hours.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

pub struct Http {
    agent: ureq::Agent,
    base: String,
    token: String,
}

/// A request's shape: which call it is, how long it may take in all, how much of its
/// answer is read.
pub struct Req<'a> {
    pub call: Call,
    pub method: &'a str,
    /// From `/_matrix/…`, its segments already encoded (`seg`), with any query.
    pub path: String,
    pub body: Option<Value>,
    pub deadline: Duration,
    pub limit: u64,
}

impl Http {
    pub fn new(homeserver: &str, token: &str) -> Http {
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(CONNECT_TIMEOUT)
            // A redirect of a PUT would be followed as a GET; a homeserver's client API
            // never redirects, so one means a wrong url and fails as a status.
            .redirects(0)
            .build();
        Http {
            agent,
            base: homeserver.trim_end_matches('/').to_string(),
            token: token.to_string(),
        }
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// Sends `req` and reads its answer as JSON.
    pub fn json(&self, req: Req<'_>) -> Result<Value, Error> {
        let (call, limit, deadline) = (req.call, req.limit, req.deadline);
        let resp = self.send(req)?;
        let bytes = read_bounded(resp, call, limit, deadline)?;
        parse(call, &bytes)
    }

    fn send(&self, req: Req<'_>) -> Result<ureq::Response, Error> {
        let url = format!("{}{}", self.base, req.path);
        let mut r = self
            .agent
            .request(req.method, &url)
            .timeout(req.deadline)
            .set("Accept", "application/json");
        if !self.token.is_empty() {
            r = r.set("Authorization", &format!("Bearer {}", self.token));
        }
        let sent = match &req.body {
            Some(b) => r
                .set("Content-Type", "application/json")
                .send_string(&b.to_string()),
            None => r.call(),
        };
        match sent {
            Ok(resp) if (200..300).contains(&resp.status()) => Ok(resp),
            Ok(resp) => Err(judge(req.call, resp.status(), resp)),
            Err(ureq::Error::Status(status, resp)) => Err(judge(req.call, status, resp)),
            Err(ureq::Error::Transport(t)) => Err(transport(req.call, req.deadline, &t)),
        }
    }
}

/// A transport failure, told apart from a timeout by the I/O error under it.
fn transport(call: Call, deadline: Duration, t: &ureq::Transport) -> Error {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(t);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if matches!(
                io.kind(),
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
            ) {
                return Error::Timeout {
                    call,
                    after: deadline,
                };
            }
        }
        source = s.source();
    }
    Error::Transport {
        call,
        detail: t.to_string(),
    }
}

/// Reads an answer's body, at most `limit` bytes.
fn read_bounded(
    resp: ureq::Response,
    call: Call,
    limit: u64,
    deadline: Duration,
) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::new();
    resp.into_reader()
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => Error::Timeout {
                call,
                after: deadline,
            },
            _ => Error::Transport {
                call,
                detail: format!("reading the answer: {}", e.kind()),
            },
        })?;
    if bytes.len() as u64 > limit {
        return Err(Error::TooLarge { call, limit });
    }
    Ok(bytes)
}

/// The answer as JSON, or what was wrong with it in fixed words (serde's own messages
/// quote the values they refused, which may be the owner's text).
fn parse(call: Call, bytes: &[u8]) -> Result<Value, Error> {
    serde_json::from_slice(bytes).map_err(|e| Error::Malformed {
        call,
        len: bytes.len(),
        why: match e.classify() {
            serde_json::error::Category::Eof => "cut short",
            serde_json::error::Category::Syntax => "not json",
            serde_json::error::Category::Data => "unexpected json",
            serde_json::error::Category::Io => "unreadable",
        },
    })
}

/// A non-2xx answer as the library's error: its `errcode` (when a Matrix error body
/// carried a clean one) decides the kind; `retry_after_ms` (or a `Retry-After` in
/// seconds) is kept, bounded by [`MAX_RETRY_AFTER`].
fn judge(call: Call, status: u16, resp: ureq::Response) -> Error {
    let header_retry = resp
        .header("Retry-After")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let mut bytes = Vec::new();
    // A body that cannot be read leaves the status alone to say what happened.
    let _ = resp
        .into_reader()
        .take(MAX_ERROR_BODY_BYTES)
        .read_to_end(&mut bytes);
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let errcode = body
        .get("errcode")
        .and_then(Value::as_str)
        .and_then(clean_errcode);
    let retry_after = body
        .get("retry_after_ms")
        .and_then(Value::as_u64)
        .map(Duration::from_millis)
        .or(header_retry)
        .map(|d| d.min(MAX_RETRY_AFTER));
    match errcode.as_deref() {
        Some("M_UNKNOWN_TOKEN") | Some("M_MISSING_TOKEN") => Error::UnknownToken {
            call,
            soft_logout: body.get("soft_logout").and_then(Value::as_bool) == Some(true),
        },
        Some("M_LIMIT_EXCEEDED") => Error::LimitExceeded { call, retry_after },
        _ if status == 429 => Error::LimitExceeded { call, retry_after },
        Some("M_FORBIDDEN") => Error::Forbidden { call },
        _ => Error::Status {
            call,
            status,
            errcode,
            body_len: bytes.len(),
        },
    }
}

/// Percent-encodes one path segment or query value, keeping RFC 3986's unreserved
/// characters: room ids (`!a:b`), event ids (`$…`) and user ids (`@a:b`) hold `:`, `/`
/// and `+` that would otherwise change the path.
pub fn seg(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_encoded_as_one_segment() {
        assert_eq!(seg("!abc:example.org"), "%21abc%3Aexample.org");
        assert_eq!(seg("$a/b+c"), "%24a%2Fb%2Bc");
    }

    /// Regression guard: serde's message for a refused value quotes it.
    #[test]
    fn a_malformed_answer_is_named_by_kind_and_length_never_its_text() {
        let body = br#"{"user_id": ["my PIN is 4471"]"#;
        let e = parse(Call::Whoami, body)
            .err()
            .unwrap_or(Error::Forbidden { call: Call::Whoami });
        let shown = e.to_string();
        assert!(!shown.contains("4471"), "{shown}");
        assert!(shown.contains(&format!("{} bytes", body.len())), "{shown}");
    }
}
