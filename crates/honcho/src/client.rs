//! The calls the reporter makes to Honcho's v3 API, over blocking `ureq`:
//!
//! - `POST /v3/workspaces/{workspace}/sessions/{session}/messages` with
//!   `{"messages": [MessageCreate…]}` (1 to 100 messages; Honcho answers 201 with the
//!   list of the messages it created, in order). Honcho gets-or-creates the workspace, the
//!   session and the peers named in the messages itself. Only that answer says the batch
//!   is stored; any other answer after the post went out leaves it unknown
//!   ([`CallError::Unconfirmed`]).
//! - `POST /v3/workspaces/{workspace}/sessions/{session}/messages/list?reverse=true&page=1&size=100`
//!   with `{"filters": {"metadata": {"boxmaker_session": …}}}`: the newest 100 messages of
//!   one boxmaker session, as a page `{"items": […], "total", "page", "size", "pages"}`,
//!   to see which of a batch whose outcome was unknown Honcho holds. Honcho answers a
//!   session or workspace it does not know with an empty page, never a 404, so a 404 is
//!   a failure (a proxy's, a wrong url), never "nothing there".
//! - `POST /v3/workspaces/{workspace}/peers` with `{"id": peer, "configuration":
//!   {"observe_me": false}}`: gets or creates the assistant's peer and sets its peer-level
//!   configuration, so that Honcho's deriver does not spend model calls on the assistant's
//!   own words (Honcho replaces an existing peer's configuration with the one sent).
//!
//! - For a forget: conclusions listed and deleted, the session summary read, the owner
//!   peer's card read and written (`GET`/`PUT …/peers/{peer}/card`).
//!
//! Every failure is kept as it came: an HTTP status with the start of its body and any
//! `Retry-After`, or a transport error. What to do about it is the caller's (`sync`). A
//! body is never shown or logged as it came: Honcho's 422s echo what was sent (FastAPI's
//! `input`), which is conversation text; `CallError`'s `Display` names its kind and length
//! (docs/honcho.md, "What Honcho's answers do").

mod answers;

pub use super::detail::body_kind;
use super::message::{Outgoing, RECORD_KEY, SESSION_KEY};
use answers::{created, field, judge, read_json, read_page};
use proto::config::Honcho;
use serde_json::{json, Value};
use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

/// How long one request may take in all. Honcho embeds a batch's messages before it
/// answers, which takes seconds for 100 long messages; past this the outcome is unknown and
/// the reporter asks Honcho what it holds before posting again.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a post's connection is kept open waiting for Honcho's answer. Honcho sets its
/// session up before its own lock timeout applies, so a create can wait there as long as
/// another transaction holds the session's peer rows; its answer (or the connection
/// closing without one) is the only sure sign it has ended. Bounded all the same, for a
/// server whose host vanished without closing the connection: after this long loopd
/// falls back to the fence and the commit window (`sync`).
pub const MAX_ANSWER_WAIT: Duration = Duration::from_secs(3600);

/// How long to wait for a connection. A server that is down refuses at once; one that is
/// unreachable should not hold the reporter for the whole request timeout.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The most of a successful answer that is read. A one-message page is a few dozen KiB at
/// most (25 000 characters of content plus fields).
pub const MAX_RESPONSE_BYTES: u64 = 1024 * 1024;

/// Honcho's status for a create that stored the batch (its messages router,
/// `status_code=201`): any other, 2xx or not, is not that answer.
pub const CREATED: u16 = 201;

/// How many times the size of what was sent a create's answer may be. Honcho echoes every
/// message it created, written as json the way loopd writes it (UTF-8, the same escapes),
/// so its answer is about the size sent; twice that leaves room for a server that escapes
/// more. An answer past the bound is not believed but settled as one whose outcome is not
/// known, so the bound can cost a wait, never a message.
pub const ANSWER_ECHO_FACTOR: u64 = 2;

/// What Honcho adds to each message it echoes in a create's answer, beyond what was sent:
/// its id (a 21-character nanoid), the session and workspace ids (at most 512 characters
/// each), `token_count`, `created_at` with six fraction digits, and the keys' names. 2 KiB
/// is more than all of it.
pub const ANSWER_BYTES_PER_MESSAGE: u64 = 2048;

/// The most of an error answer kept for the log: enough for Honcho's `{"detail": …}`
/// validation messages, not enough to flood the journal.
pub const MAX_ERROR_BODY_BYTES: u64 = 2048;

/// Conclusions asked for per page: the most Honcho's pages hold.
pub const CONCLUSIONS_PAGE: u64 = 100;

/// A bearer token is a short line; a bigger file is the wrong file.
pub const MAX_TOKEN_BYTES: u64 = 4096;

/// Messages asked for when loopd does not know whether Honcho took a batch: the newest
/// this many of the boxmaker session. The cursor is stored after every batch Honcho takes,
/// so Honcho is never more than one batch (at most 100 messages) ahead of it; Honcho's
/// pages hold at most 100.
pub const RECENT_PAGE: u64 = 100;

/// The longest peer card loopd reads for a forget: Honcho's cards are a few dozen short
/// facts; this is generous and keeps a hostile answer bounded (the answer cap applies too).
pub const MAX_CARD_LINES: usize = 10_000;

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
    /// No answer after the request may have gone out: a timeout, a connection closed, an
    /// answer that cannot be read or understood.
    Transport(String),
    /// Nothing was sent: no connection could be made (refused, no such host, connect
    /// timed out), or the token file cannot be read. Honcho cannot have stored anything.
    Unsent(String),
    /// A create was answered with a 2xx that is not Honcho's success (its 201 with the
    /// list of the messages it created): a proxy's page, a maintenance page, a body that
    /// is not that list. Whether Honcho stored the batch is not known.
    Unconfirmed {
        status: u16,
        /// What the answer was instead, in words that never quote it.
        why: String,
    },
}

impl CallError {
    /// Whether Honcho may have stored what was sent: no answer, or a server error that
    /// may have come after the commit. A 4xx is answered before anything is stored.
    pub fn outcome_unknown(&self) -> bool {
        match self {
            CallError::Status { status, .. } => *status >= 500 || *status == 408,
            CallError::Transport(_) | CallError::Unconfirmed { .. } => true,
            CallError::Unsent(_) => false,
        }
    }

    /// A short name for the kind of failure (`HTTP 401`, `no answer`): the reporter logs
    /// a failure when this changes, not at every retry.
    pub fn kind(&self) -> String {
        match self {
            CallError::Status { status, .. } => format!("HTTP {status}"),
            CallError::Transport(_) => "no answer".into(),
            CallError::Unsent(_) => "no connection".into(),
            CallError::Unconfirmed { status, .. } => format!("HTTP {status} unconfirmed"),
        }
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Status { status, body, .. } => {
                write!(f, "honcho answered {status} ({})", body_kind(body))
            }
            CallError::Transport(m) | CallError::Unsent(m) => f.write_str(m),
            CallError::Unconfirmed { status, why } => write!(
                f,
                "honcho answered {status} with {why}, not the list of the messages it created; whether it stored them is not known"
            ),
        }
    }
}

/// What Honcho said it holds of a boxmaker session's recent messages: per message, its
/// `boxmaker_record` and Honcho's id.
pub type Recent = Vec<(String, String)>;

/// Cheap to clone (the agents share their connection pools): a post waited on past
/// [`REQUEST_TIMEOUT`] runs on a thread of its own with a clone (`flight`).
#[derive(Clone)]
pub struct Client {
    agent: ureq::Agent,
    /// For posts: waits for an answer up to [`MAX_ANSWER_WAIT`], never giving up on a
    /// create Honcho may still be working on (docs/honcho.md, 'Nothing lost, nothing
    /// twice').
    patient: ureq::Agent,
    base: String,
    workspace: String,
    token_file: PathBuf,
}

impl Client {
    pub fn new(cfg: &Honcho) -> Client {
        Client::with_timeout(cfg, REQUEST_TIMEOUT)
    }

    /// A client whose requests may take `timeout` in all (tests make it short).
    pub fn with_timeout(cfg: &Honcho, timeout: Duration) -> Client {
        let build = |total: Duration| {
            ureq::AgentBuilder::new()
                .timeout_connect(CONNECT_TIMEOUT.min(timeout))
                .timeout(total)
                // A redirect of a POST would be followed as a GET; Honcho never sends one,
                // so a redirect means a wrong url and is reported as such.
                .redirects(0)
                .build()
        };
        Client {
            agent: build(timeout),
            patient: build(MAX_ANSWER_WAIT.max(timeout)),
            base: cfg.url.trim_end_matches('/').to_string(),
            workspace: cfg.workspace.clone(),
            token_file: cfg.token_file.clone(),
        }
    }

    /// The server's url, without a trailing slash.
    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn workspace(&self) -> &str {
        &self.workspace
    }

    fn messages_url(&self, session: &str) -> String {
        format!(
            "{}/v3/workspaces/{}/sessions/{}/messages",
            self.base,
            encode(&self.workspace),
            encode(session)
        )
    }

    /// The token, read at each call so that a rotated token file takes effect (under
    /// systemd the file is loopd's credential copy, made at its start: there a new
    /// token takes a restart, docs/honcho.md).
    fn token(&self) -> Result<Option<String>, CallError> {
        if self.token_file.as_os_str().is_empty() {
            return Ok(None);
        }
        let fail = |m: String| {
            CallError::Unsent(format!(
                "cannot read honcho.token_file {}: {m}",
                self.token_file.display()
            ))
        };
        let text = plumbing::bounded::read_text(&self.token_file, MAX_TOKEN_BYTES)
            .map_err(|e| fail(e.to_string()))?;
        Ok(Some(text.trim().to_string()))
    }

    fn send(&self, url: &str, body: &Value) -> Result<ureq::Response, CallError> {
        self.send_as("POST", url, Some(body))
    }

    fn send_as(
        &self,
        method: &str,
        url: &str,
        body: Option<&Value>,
    ) -> Result<ureq::Response, CallError> {
        self.send_with(&self.agent, method, url, body)
    }

    fn send_with(
        &self,
        agent: &ureq::Agent,
        method: &str,
        url: &str,
        body: Option<&Value>,
    ) -> Result<ureq::Response, CallError> {
        let mut req = agent.request(method, url);
        if let Some(token) = self.token()? {
            req = req.set("Authorization", &format!("Bearer {token}"));
        }
        let sent = match body {
            Some(b) => req
                .set("Content-Type", "application/json")
                .send_string(&b.to_string()),
            None => req.call(),
        };
        match sent {
            Ok(resp) if (200..300).contains(&resp.status()) => Ok(resp),
            Ok(resp) => Err(judge(resp.status(), resp)),
            Err(ureq::Error::Status(status, resp)) => Err(judge(status, resp)),
            // The transport error names the url itself. A connection never made sent
            // nothing; anything later may have reached Honcho.
            Err(ureq::Error::Transport(t)) => Err(match t.kind() {
                ureq::ErrorKind::ConnectionFailed | ureq::ErrorKind::Dns => {
                    CallError::Unsent(t.to_string())
                }
                _ => CallError::Transport(t.to_string()),
            }),
        }
    }

    /// Posts one batch (1 to 100 messages) to `session`, waiting for the answer up to
    /// [`MAX_ANSWER_WAIT`]: the caller (`flight`) runs it on a thread of its own and stops
    /// waiting for it sooner, but the connection stays open, so that Honcho's answer, or
    /// the connection closing without one, says when the create has ended.
    ///
    /// `Ok` only for Honcho's own success: 201 and the list of the messages it created,
    /// one per message sent, in order. Anything else that came after the post went out (a
    /// 200 maintenance page from a proxy, an answer cut short) is
    /// [`CallError::Unconfirmed`]: the batch may or may not be stored, and the reporter
    /// finds out as after a timeout (docs/honcho.md, 'What Honcho's answers do').
    pub fn post(&self, session: &str, boxmaker: &str, batch: &[Outgoing]) -> Result<(), CallError> {
        let messages: Vec<Value> = batch.iter().map(|m| m.to_json(boxmaker)).collect();
        let body = json!({ "messages": messages });
        // Honcho's answer echoes every message sent, so it is bounded by what was sent.
        let limit = ANSWER_ECHO_FACTOR * body.to_string().len() as u64
            + ANSWER_BYTES_PER_MESSAGE * batch.len() as u64;
        let url = self.messages_url(session);
        let resp = self.send_with(&self.patient, "POST", &url, Some(&body))?;
        created(resp, &url, batch, limit)
    }

    /// Gets or creates the Honcho session with both peers in it
    /// (`POST /v3/workspaces/{workspace}/sessions`): a write that goes through the same
    /// session set-up as a create of messages, locking the same session and peer rows, so
    /// its answer comes only after a create stalled there got past it (docs/honcho.md,
    /// 'Nothing lost, nothing twice').
    pub fn fence(&self, session: &str, peers: [&str; 2]) -> Result<(), CallError> {
        let url = format!(
            "{}/v3/workspaces/{}/sessions",
            self.base,
            encode(&self.workspace)
        );
        let body = json!({ "id": session, "peers": { peers[0]: {}, peers[1]: {} } });
        self.send(&url, &body)?;
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

    /// Honcho's id of every message whose metadata `key` is `value` (`boxmaker_id` or
    /// `boxmaker_record`): more than one when a duplicate was stored.
    pub fn messages_by(
        &self,
        session: &str,
        key: &str,
        value: &str,
    ) -> Result<Vec<String>, CallError> {
        let url = format!(
            "{}/list?page=1&size={RECENT_PAGE}",
            self.messages_url(session)
        );
        let body = json!({ "filters": { "metadata": { key: value } } });
        // A 404 is a failure, never "none": Honcho lists a session it does not know as an
        // empty page (docs/honcho.md, 'What Honcho's answers do').
        let resp = self.send(&url, &body)?;
        let (items, _) = read_page(resp, &url)?;
        Ok(items.iter().filter_map(|i| field(i, "id")).collect())
    }

    /// The newest [`RECENT_PAGE`] messages Honcho holds of boxmaker session `boxmaker`, as
    /// (`boxmaker_record`, Honcho id), newest first. Messages without a record key (sent
    /// by an older loopd, or not by loopd) are left out.
    pub fn recent(&self, session: &str, boxmaker: &str) -> Result<Recent, CallError> {
        let url = format!(
            "{}/list?reverse=true&page=1&size={RECENT_PAGE}",
            self.messages_url(session)
        );
        let body = json!({ "filters": { "metadata": { SESSION_KEY: boxmaker } } });
        // Honcho lists a session it has never seen as an empty page, so a 404 is not
        // Honcho's answer (a proxy's, a wrong url): read as "nothing there" after a create
        // that may have committed, it would have the batch posted again (docs/honcho.md,
        // 'What Honcho's answers do').
        let resp = self.send(&url, &body)?;
        let (items, _) = read_page(resp, &url)?;
        Ok(items
            .iter()
            .filter_map(|i| {
                let record = i.get("metadata")?.get(RECORD_KEY)?.as_str()?.to_string();
                Some((record, field(i, "id")?))
            })
            .collect())
    }

    /// Page `page` (from 1) of the conclusions matching `filters` (`session_id`,
    /// `observed_id`), as (id, content), and how many pages there are.
    pub fn conclusions(
        &self,
        filters: &Value,
        page: u64,
    ) -> Result<(Vec<(String, String)>, u64), CallError> {
        let url = format!(
            "{}/v3/workspaces/{}/conclusions/list?page={page}&size={CONCLUSIONS_PAGE}",
            self.base,
            encode(&self.workspace)
        );
        let body = json!({ "filters": filters });
        let resp = self.send(&url, &body)?;
        let (items, pages) = read_page(resp, &url)?;
        Ok((
            items
                .iter()
                .filter_map(|i| Some((field(i, "id")?, field(i, "content")?)))
                .collect(),
            pages,
        ))
    }

    /// Deletes one conclusion (`DELETE …/conclusions/{id}`, 204; Honcho only marks it
    /// deleted until its reconciler runs). One already gone counts as deleted.
    pub fn delete_conclusion(&self, id: &str) -> Result<(), CallError> {
        let url = format!(
            "{}/v3/workspaces/{}/conclusions/{}",
            self.base,
            encode(&self.workspace),
            encode(id)
        );
        match self.send_as("DELETE", &url, None) {
            Ok(_) | Err(CallError::Status { status: 404, .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The text of the session's short and long summaries, when Honcho made them.
    pub fn summaries(&self, session: &str) -> Result<Vec<String>, CallError> {
        let url = format!(
            "{}/v3/workspaces/{}/sessions/{}/summaries",
            self.base,
            encode(&self.workspace),
            encode(session)
        );
        // Honcho answers a session without summaries (or unknown) with 200 and nulls, so
        // a 404 is not "none": it comes from something in front of Honcho, and the
        // summaries could not be asked (docs/honcho.md, 'What Honcho's answers do').
        let resp = self.send_as("GET", &url, None)?;
        let v = read_json(resp, &url)?;
        Ok(["short_summary", "long_summary"]
            .iter()
            .filter_map(|k| field(v.get(k)?, "content"))
            .collect())
    }

    fn card_url(&self, peer: &str) -> String {
        format!(
            "{}/v3/workspaces/{}/peers/{}/card",
            self.base,
            encode(&self.workspace),
            encode(peer)
        )
    }

    /// The peer's own card (a list of short facts), empty when it has none.
    pub fn card(&self, peer: &str) -> Result<Vec<String>, CallError> {
        let url = self.card_url(peer);
        let resp = match self.send_as("GET", &url, None) {
            Ok(r) => r,
            Err(CallError::Status { status: 404, .. }) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let v = read_json(resp, &url)?;
        Ok(v.get("peer_card")
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .take(MAX_CARD_LINES)
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Replaces the peer's own card.
    pub fn set_card(&self, peer: &str, lines: &[String]) -> Result<(), CallError> {
        self.send_as(
            "PUT",
            &self.card_url(peer),
            Some(&json!({ "peer_card": lines })),
        )?;
        Ok(())
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
mod tests;
