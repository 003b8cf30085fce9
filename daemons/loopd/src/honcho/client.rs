//! The calls the reporter makes to Honcho's v3 API, over blocking `ureq`:
//!
//! - `POST /v3/workspaces/{workspace}/sessions/{session}/messages` with
//!   `{"messages": [MessageCreate…]}` (1 to 100 messages; Honcho answers 201 with the
//!   created messages). Honcho gets-or-creates the workspace, the session and the peers
//!   named in the messages itself.
//! - `POST /v3/workspaces/{workspace}/sessions/{session}/messages/list?reverse=true&page=1&size=1`
//!   with `{"filters": {"metadata": {"boxmaker_session": …}}}`: the newest message of one
//!   boxmaker session, as a page `{"items": […], "total", "page", "size", "pages"}`.
//! - `POST /v3/workspaces/{workspace}/peers` with `{"id": peer, "configuration":
//!   {"observe_me": false}}`: gets or creates the assistant's peer and sets its peer-level
//!   configuration, so that Honcho's deriver does not spend model calls on the assistant's
//!   own words (Honcho replaces an existing peer's configuration with the one sent).
//!
//! Every failure is kept as it came: an HTTP status with the start of its body and any
//! `Retry-After`, or a transport error. What to do about it is the caller's (`sync`).

use super::message::{Held, Outgoing, ID_KEY, SESSION_KEY};
use proto::config::Honcho;
use serde_json::{json, Value};
use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

/// How long one request may take in all. Honcho embeds a batch's messages before it
/// answers, which takes seconds for 100 long messages; past this the outcome is unknown and
/// the reporter asks Honcho what it holds before posting again.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How long to wait for a connection. A server that is down refuses at once; one that is
/// unreachable should not hold the reporter for the whole request timeout.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The most of a successful answer that is read. A one-message page is a few dozen KiB at
/// most (25 000 characters of content plus fields).
pub const MAX_RESPONSE_BYTES: u64 = 1024 * 1024;

/// The most of an error answer kept for the log: enough for Honcho's `{"detail": …}`
/// validation messages, not enough to flood the journal.
pub const MAX_ERROR_BODY_BYTES: u64 = 2048;

/// Conclusions asked for per page: the most Honcho's pages hold.
pub const CONCLUSIONS_PAGE: u64 = 100;

/// A bearer token is a short line; a bigger file is the wrong file.
pub const MAX_TOKEN_BYTES: u64 = 4096;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// Honcho (or a proxy in front of it) answered with a status outside 2xx.
    Status {
        status: u16,
        /// The start of the answer's body, at most [`MAX_ERROR_BODY_BYTES`].
        body: String,
        /// The answer's `Retry-After`, when it gave one in seconds.
        retry_after: Option<Duration>,
    },
    /// No answer: no connection, a timeout, a token file that cannot be read, an answer
    /// that cannot be read or understood.
    Transport(String),
}

impl CallError {
    /// Whether Honcho may have stored what was sent: no answer, or a server error that
    /// may have come after the commit. A 4xx is answered before anything is stored.
    pub fn outcome_unknown(&self) -> bool {
        match self {
            CallError::Status { status, .. } => *status >= 500 || *status == 408,
            CallError::Transport(_) => true,
        }
    }

    /// A short name for the kind of failure (`HTTP 401`, `no answer`): the reporter logs
    /// a failure when this changes, not at every retry.
    pub fn kind(&self) -> String {
        match self {
            CallError::Status { status, .. } => format!("HTTP {status}"),
            CallError::Transport(_) => "no answer".into(),
        }
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Status { status, body, .. } => {
                write!(f, "honcho answered {status}: {body}")
            }
            CallError::Transport(m) => f.write_str(m),
        }
    }
}

pub struct Client {
    agent: ureq::Agent,
    base: String,
    workspace: String,
    token_file: PathBuf,
}

impl Client {
    pub fn new(cfg: &Honcho) -> Client {
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            // A redirect of a POST would be followed as a GET; Honcho never sends one, so a
            // redirect means a wrong url and is reported as such.
            .redirects(0)
            .build();
        Client {
            agent,
            base: cfg.url.trim_end_matches('/').to_string(),
            workspace: cfg.workspace.clone(),
            token_file: cfg.token_file.clone(),
        }
    }

    fn messages_url(&self, session: &str) -> String {
        format!(
            "{}/v3/workspaces/{}/sessions/{}/messages",
            self.base,
            encode(&self.workspace),
            encode(session)
        )
    }

    /// The token, read at each call so that a rotated token file takes effect.
    fn token(&self) -> Result<Option<String>, CallError> {
        if self.token_file.as_os_str().is_empty() {
            return Ok(None);
        }
        let fail = |m: String| {
            CallError::Transport(format!(
                "cannot read honcho.token_file {}: {m}",
                self.token_file.display()
            ))
        };
        let text = plumbing::bounded::read_text(&self.token_file, MAX_TOKEN_BYTES)
            .map_err(|e| fail(e.to_string()))?;
        Ok(Some(text.trim().to_string()))
    }

    fn send(&self, url: &str, body: &Value) -> Result<ureq::Response, CallError> {
        let mut req = self.agent.post(url).set("Content-Type", "application/json");
        if let Some(token) = self.token()? {
            req = req.set("Authorization", &format!("Bearer {token}"));
        }
        match req.send_string(&body.to_string()) {
            Ok(resp) if (200..300).contains(&resp.status()) => Ok(resp),
            Ok(resp) => Err(judge(resp.status(), resp)),
            Err(ureq::Error::Status(status, resp)) => Err(judge(status, resp)),
            // The transport error names the url itself.
            Err(ureq::Error::Transport(t)) => Err(CallError::Transport(t.to_string())),
        }
    }

    /// Posts one batch (1 to 100 messages) to `session`.
    pub fn post(&self, session: &str, boxmaker: &str, batch: &[Outgoing]) -> Result<(), CallError> {
        let messages: Vec<Value> = batch.iter().map(|m| m.to_json(boxmaker)).collect();
        self.send(
            &self.messages_url(session),
            &json!({ "messages": messages }),
        )?;
        // The answer echoes every message; nothing in it is needed, so it is not read.
        Ok(())
    }

    /// Gets or creates `peer` with `observe_me: false`: Honcho then forms no representation
    /// of it (its deriver makes model calls for each observed peer's messages).
    pub fn unobserved_peer(&self, peer: &str) -> Result<(), CallError> {
        let url = format!(
            "{}/v3/workspaces/{}/peers",
            self.base,
            encode(&self.workspace)
        );
        let body = json!({ "id": peer, "configuration": { "observe_me": false } });
        self.send(&url, &body)?;
        Ok(())
    }

    /// Honcho's id and `created_at` of the message whose metadata `key` is `value`
    /// (`boxmaker_id` or `boxmaker_record`), if it holds one.
    pub fn message_by(
        &self,
        session: &str,
        key: &str,
        value: &str,
    ) -> Result<Option<(String, String)>, CallError> {
        let url = format!("{}/list?page=1&size=1", self.messages_url(session));
        let body = json!({ "filters": { "metadata": { key: value } } });
        let resp = match self.send(&url, &body) {
            Ok(r) => r,
            Err(CallError::Status { status: 404, .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let (items, _) = read_page(resp, &url)?;
        Ok(items.first().and_then(id_and_time))
    }

    /// Page `page` (from 1) of the conclusions Honcho drew in `session`, as (id,
    /// `created_at`), and how many pages there are.
    pub fn conclusions(
        &self,
        session: &str,
        page: u64,
    ) -> Result<(Vec<(String, String)>, u64), CallError> {
        let url = format!(
            "{}/v3/workspaces/{}/conclusions/list?page={page}&size={CONCLUSIONS_PAGE}",
            self.base,
            encode(&self.workspace)
        );
        let body = json!({ "filters": { "session_id": session } });
        let resp = self.send(&url, &body)?;
        let (items, pages) = read_page(resp, &url)?;
        Ok((items.iter().filter_map(id_and_time).collect(), pages))
    }

    /// Deletes one conclusion (`DELETE …/conclusions/{id}`, 204). One already gone counts
    /// as deleted.
    pub fn delete_conclusion(&self, id: &str) -> Result<(), CallError> {
        let url = format!(
            "{}/v3/workspaces/{}/conclusions/{}",
            self.base,
            encode(&self.workspace),
            encode(id)
        );
        let mut req = self.agent.delete(&url);
        if let Some(token) = self.token()? {
            req = req.set("Authorization", &format!("Bearer {token}"));
        }
        match req.call() {
            Ok(resp) if (200..300).contains(&resp.status()) => Ok(()),
            Ok(resp) => Err(judge(resp.status(), resp)),
            Err(ureq::Error::Status(404, _)) => Ok(()),
            Err(ureq::Error::Status(status, resp)) => Err(judge(status, resp)),
            Err(ureq::Error::Transport(t)) => Err(CallError::Transport(t.to_string())),
        }
    }

    /// The newest message Honcho holds for boxmaker session `boxmaker`, if any.
    pub fn newest(&self, session: &str, boxmaker: &str) -> Result<Option<Held>, CallError> {
        let url = format!(
            "{}/list?reverse=true&page=1&size=1",
            self.messages_url(session)
        );
        let body = json!({ "filters": { "metadata": { SESSION_KEY: boxmaker } } });
        let resp = match self.send(&url, &body) {
            Ok(r) => r,
            // A session Honcho has never seen holds no messages.
            Err(CallError::Status { status: 404, .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let (items, _) = read_page(resp, &url)?;
        let Some(item) = items.first() else {
            return Ok(None);
        };
        let field = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        match (
            field(item.get("metadata").and_then(|m| m.get(ID_KEY))),
            field(item.get("content")),
        ) {
            (Some(id), Some(content)) => Ok(Some(Held {
                id,
                content,
                created_at: field(item.get("created_at")),
            })),
            // A message without our id is not one of ours, whatever the filter said.
            _ => Ok(None),
        }
    }
}

/// The `items` of a page answer, and its `pages`, read within [`MAX_RESPONSE_BYTES`].
fn read_page(resp: ureq::Response, url: &str) -> Result<(Vec<Value>, u64), CallError> {
    let mut text = String::new();
    resp.into_reader()
        .take(MAX_RESPONSE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| CallError::Transport(format!("{url}: reading the answer: {e}")))?;
    if text.len() as u64 > MAX_RESPONSE_BYTES {
        return Err(CallError::Transport(format!(
            "{url}: answer longer than {MAX_RESPONSE_BYTES} bytes"
        )));
    }
    let mut page: Value = serde_json::from_str(&text)
        .map_err(|e| CallError::Transport(format!("{url}: answer is not json: {e}")))?;
    let pages = page.get("pages").and_then(Value::as_u64).unwrap_or(1);
    match page.get_mut("items").map(Value::take) {
        Some(Value::Array(items)) => Ok((items, pages)),
        _ => Err(CallError::Transport(format!(
            "{url}: answer has no `items` list"
        ))),
    }
}

/// An item's `id` and `created_at`.
fn id_and_time(item: &Value) -> Option<(String, String)> {
    Some((
        item.get("id")?.as_str()?.to_string(),
        item.get("created_at")?.as_str()?.to_string(),
    ))
}

/// Keeps a non-2xx answer's status, `Retry-After` and the start of its body.
fn judge(status: u16, resp: ureq::Response) -> CallError {
    let retry_after = resp.header("Retry-After").and_then(retry_after);
    let mut bytes = Vec::new();
    // A body that cannot be read leaves the status alone to tell what happened.
    let _ = resp
        .into_reader()
        .take(MAX_ERROR_BODY_BYTES)
        .read_to_end(&mut bytes);
    CallError::Status {
        status,
        body: String::from_utf8_lossy(&bytes).into_owned(),
        retry_after,
    }
}

/// A `Retry-After` in seconds. The HTTP-date form is not read: the backoff covers it.
pub fn retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// Percent-encodes one path segment, keeping RFC 3986's unreserved characters.
fn encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
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
    fn retry_after_is_read_in_seconds_only() {
        assert_eq!(retry_after(" 7 "), Some(Duration::from_secs(7)));
        assert_eq!(retry_after("Wed, 21 Oct 2026 07:28:00 GMT"), None);
    }

    #[test]
    fn only_server_errors_and_silence_leave_the_outcome_unknown() {
        let status = |s| CallError::Status {
            status: s,
            body: String::new(),
            retry_after: None,
        };
        for s in [400, 401, 403, 409, 413, 422, 429] {
            assert!(!status(s).outcome_unknown(), "{s}");
        }
        for s in [408, 500, 502, 503] {
            assert!(status(s).outcome_unknown(), "{s}");
        }
        assert!(CallError::Transport("refused".into()).outcome_unknown());
    }

    #[test]
    fn path_segments_are_encoded() {
        assert_eq!(encode("main-1_x"), "main-1_x");
        assert_eq!(encode("a b/c"), "a%20b%2Fc");
    }
}
