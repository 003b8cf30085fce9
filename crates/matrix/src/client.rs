//! The calls loopd makes to its homeserver (the client-server API, `/_matrix/client/v3`),
//! each a blocking `ureq` request with a deadline and a bounded answer (docs/matrix.md,
//! 'The calls'). The client decides nothing: what to do with an answer is `decide`'s,
//! what to do about a failure is the caller's (see `Error::retryable`).

use crate::error::{Call, Error};
use crate::http::{seg, Http, Req};
use crate::sync::{filter, Page, Sync};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// How long an ordinary call may take in all. A homeserver answers these in milliseconds;
/// past this the outcome is unknown and a send is retried with the same transaction id.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(30);

/// How much longer than its long-poll `timeout` a sync may take: the homeserver answers
/// at the timeout with what it has, then the answer has to travel and be read.
pub const SYNC_MARGIN: Duration = Duration::from_secs(15);

/// The most of a sync answer that is read. The filter keeps an answer to messages,
/// membership and encryption, at most [`crate::sync::TIMELINE_LIMIT`] (50) timeline events a
/// room, each under 64 KiB (the homeserver's event size limit): a full timeline is at most
/// about 3.2 MiB a room. Thirty-two MiB holds ten such rooms with room to spare; a
/// personal account's few rooms never come near it. Past it `round::bounded_sync` asks again with
/// a timeline of one event a room and reads the rest as gaps
/// (docs/matrix.md, 'The limits').
pub const MAX_SYNC_BYTES: u64 = 32 * 1024 * 1024;

/// Events asked for per `/messages` page at first. A page answer too large is asked again
/// with half as many events, down to one (`round::read_needs`).
pub const MESSAGES_PAGE: u64 = 50;

/// The most of a `/messages` page that is read. An event is at most 64 KiB (the
/// homeserver's event size limit), but the homeserver serves it with its latest edit
/// bundled (`unsigned."m.relations"."m.replace"`, a whole second event), so one event on
/// a page can take about 130 KiB: [`MESSAGES_PAGE`] plain events fit, fifty edited ones
/// may not, and a page of one always does.
pub const MAX_PAGE_BYTES: u64 = 4 * 1024 * 1024;

/// The most of a small answer that is read (whoami, send, redact, join, a state event):
/// they hold a few ids, or one state event's content, itself under 64 KiB.
pub const MAX_SMALL_BYTES: u64 = 96 * 1024;

/// The most of a room's joined-members answer that is read: a member is a user id, a
/// display name and an avatar url, a few hundred bytes, so one MiB is thousands of members
/// (a room loopd serves holds two or three).
pub const MAX_MEMBERS_BYTES: u64 = 1024 * 1024;

/// An access token is a short line; a bigger file is the wrong file.
pub const MAX_TOKEN_BYTES: u64 = 4096;

/// The state event that turns URL previews off in a room for its members' clients.
pub const PREVIEW_URLS: &str = "org.matrix.room.preview_urls";

/// Who the token belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Whoami {
    pub user_id: String,
    pub device_id: Option<String>,
}

pub struct Client {
    http: Http,
    user_id: String,
    deadline: Duration,
}

/// Reads an access token from its file (`matrix.token_file`), bounded, trimmed.
pub fn read_token(path: &Path) -> Result<String, Error> {
    let text =
        plumbing::bounded::read_text(path, MAX_TOKEN_BYTES).map_err(|e| Error::TokenFile {
            detail: format!("cannot read {}: {e}", path.display()),
        })?;
    let token = text.trim();
    if token.is_empty() || token.contains(char::is_whitespace) {
        return Err(Error::TokenFile {
            detail: format!("{} does not hold one token on one line", path.display()),
        });
    }
    Ok(token.to_string())
}

const V3: &str = "/_matrix/client/v3";

impl Client {
    /// A client of `homeserver` (its base url, e.g. `http://127.0.0.1:8008`) as the
    /// account `user_id` with `token`. Nothing is sent until a call.
    pub fn new(homeserver: &str, user_id: &str, token: &str) -> Client {
        Client {
            http: Http::new(homeserver, token),
            user_id: user_id.to_string(),
            deadline: REQUEST_DEADLINE,
        }
    }

    /// The same client with every call but `sync` bounded by `deadline` instead of
    /// [`REQUEST_DEADLINE`] (tests make it short; a sync's deadline is its own timeout
    /// plus [`SYNC_MARGIN`]).
    pub fn with_deadline(mut self, deadline: Duration) -> Client {
        self.deadline = deadline;
        self
    }

    pub fn user_id(&self) -> &str {
        &self.user_id
    }

    pub fn homeserver(&self) -> &str {
        self.http.base()
    }

    fn small(
        &self,
        call: Call,
        method: &str,
        path: String,
        body: Option<Value>,
    ) -> Result<Value, Error> {
        self.http.json(Req {
            call,
            method,
            path,
            body,
            deadline: self.deadline,
            limit: MAX_SMALL_BYTES,
        })
    }

    fn room(room: &str) -> String {
        format!("{V3}/rooms/{}", seg(room))
    }

    /// The spec versions the homeserver speaks (`/_matrix/client/versions`, no token):
    /// whether anything answers at the url.
    pub fn versions(&self) -> Result<Vec<String>, Error> {
        let v = self.small(
            Call::Versions,
            "GET",
            "/_matrix/client/versions".into(),
            None,
        )?;
        let list = v
            .get("versions")
            .and_then(Value::as_array)
            .ok_or(Error::Malformed {
                call: Call::Versions,
                len: 0,
                why: "no versions list",
            })?;
        Ok(list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect())
    }

    /// Who the token belongs to. loopd checks it is `matrix.user_id` at start.
    pub fn whoami(&self) -> Result<Whoami, Error> {
        let v = self.small(Call::Whoami, "GET", format!("{V3}/account/whoami"), None)?;
        let user_id = v
            .get("user_id")
            .and_then(Value::as_str)
            .ok_or(Error::Malformed {
                call: Call::Whoami,
                len: 0,
                why: "no user_id",
            })?;
        Ok(Whoami {
            user_id: user_id.to_string(),
            device_id: v
                .get("device_id")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }

    /// One sync from `since` (none: the first), waiting up to `timeout` for something new,
    /// with at most `timeline_limit` timeline events a room. The whole call has a deadline
    /// of `timeout` plus [`SYNC_MARGIN`].
    pub fn sync(
        &self,
        since: Option<&str>,
        timeout: Duration,
        timeline_limit: u64,
    ) -> Result<Sync, Error> {
        let mut path = format!(
            "{V3}/sync?timeout={}&filter={}",
            timeout.as_millis(),
            seg(&filter(timeline_limit).to_string())
        );
        if let Some(s) = since {
            path.push_str(&format!("&since={}", seg(s)));
        }
        let v = self.http.json(Req {
            call: Call::Sync,
            method: "GET",
            path,
            body: None,
            deadline: timeout + SYNC_MARGIN,
            limit: MAX_SYNC_BYTES,
        })?;
        Sync::parse(&v, &self.user_id).ok_or(Error::Malformed {
            call: Call::Sync,
            len: 0,
            why: "no next_batch",
        })
    }

    /// A page of at most `limit` of `room`'s events read backwards from `from` (a
    /// `prev_batch`, or the previous page's `end`), stopping at `to` (the sync position the
    /// gap began at), newest first. Only the types a decision reads are asked for.
    pub fn messages_back(
        &self,
        room: &str,
        from: &str,
        to: Option<&str>,
        limit: u64,
    ) -> Result<Page, Error> {
        let types = seg(&json!({ "types": crate::sync::EVENT_TYPES }).to_string());
        let mut path = format!(
            "{}/messages?dir=b&limit={limit}&from={}&filter={types}",
            Client::room(room),
            seg(from)
        );
        if let Some(t) = to {
            path.push_str(&format!("&to={}", seg(t)));
        }
        let v = self.http.json(Req {
            call: Call::Messages,
            method: "GET",
            path,
            body: None,
            deadline: self.deadline,
            limit: MAX_PAGE_BYTES,
        })?;
        Ok(Page::parse(&v))
    }

    /// Sends one `m.room.message` with `content` under the transaction id `txn` and
    /// returns its event id. The same `txn` from the same device into the same room is the
    /// same event: the homeserver answers a repeat with the first event's id
    /// (docs/matrix.md, 'Exactly once out').
    pub fn send(&self, room: &str, txn: &str, content: &Value) -> Result<String, Error> {
        let path = format!("{}/send/m.room.message/{}", Client::room(room), seg(txn));
        let v = self.small(Call::Send, "PUT", path, Some(content.clone()))?;
        event_id(Call::Send, &v)
    }

    /// Redacts `event` under its own transaction id; returns the redaction's event id.
    pub fn redact(&self, room: &str, event: &str, txn: &str) -> Result<String, Error> {
        let path = format!("{}/redact/{}/{}", Client::room(room), seg(event), seg(txn));
        let v = self.small(Call::Redact, "PUT", path, Some(json!({})))?;
        event_id(Call::Redact, &v)
    }

    /// Joins `room` (accepts an invite).
    pub fn join(&self, room: &str) -> Result<(), Error> {
        self.small(
            Call::Join,
            "POST",
            format!("{}/join", Client::room(room)),
            Some(json!({})),
        )?;
        Ok(())
    }

    /// Leaves `room`, or rejects an invite to it.
    pub fn leave(&self, room: &str) -> Result<(), Error> {
        self.small(
            Call::Leave,
            "POST",
            format!("{}/leave", Client::room(room)),
            Some(json!({})),
        )?;
        Ok(())
    }

    /// Starts (for `timeout`) or stops loopd's typing notice in `room`.
    pub fn typing(&self, room: &str, on: Option<Duration>) -> Result<(), Error> {
        let body = match on {
            Some(t) => json!({ "typing": true, "timeout": t.as_millis() as u64 }),
            None => json!({ "typing": false }),
        };
        let path = format!("{}/typing/{}", Client::room(room), seg(&self.user_id));
        self.small(Call::Typing, "PUT", path, Some(body))?;
        Ok(())
    }

    /// Sets a state event; returns its event id.
    pub fn set_state(
        &self,
        room: &str,
        kind: &str,
        key: &str,
        content: &Value,
    ) -> Result<String, Error> {
        let path = format!("{}/state/{}/{}", Client::room(room), seg(kind), seg(key));
        let v = self.small(Call::State, "PUT", path, Some(content.clone()))?;
        event_id(Call::State, &v)
    }

    /// A state event's content, `None` when the room has none of it.
    pub fn state(&self, room: &str, kind: &str, key: &str) -> Result<Option<Value>, Error> {
        let path = format!("{}/state/{}/{}", Client::room(room), seg(kind), seg(key));
        match self.small(Call::State, "GET", path, None) {
            Ok(v) => Ok(Some(v)),
            Err(Error::Status { status: 404, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Turns URL previews off for the room (`org.matrix.room.preview_urls`, `disable`):
    /// a client or homeserver that previews a URL fetches it. `Error::Forbidden` when
    /// loopd lacks the power to set it.
    pub fn disable_previews(&self, room: &str) -> Result<String, Error> {
        self.set_state(room, PREVIEW_URLS, "", &json!({ "disable": true }))
    }

    /// Whether the room is encrypted (it has an `m.room.encryption` state event).
    pub fn encrypted(&self, room: &str) -> Result<bool, Error> {
        Ok(self.state(room, "m.room.encryption", "")?.is_some())
    }

    /// The room's joined members' user ids, sorted.
    pub fn joined_members(&self, room: &str) -> Result<Vec<String>, Error> {
        let v = self.http.json(Req {
            call: Call::Members,
            method: "GET",
            path: format!("{}/joined_members", Client::room(room)),
            body: None,
            deadline: self.deadline,
            limit: MAX_MEMBERS_BYTES,
        })?;
        let joined = v
            .get("joined")
            .and_then(Value::as_object)
            .ok_or(Error::Malformed {
                call: Call::Members,
                len: 0,
                why: "no joined map",
            })?;
        let mut ids: Vec<String> = joined.keys().cloned().collect();
        ids.sort();
        Ok(ids)
    }

    /// Ends this token's session on the homeserver.
    pub fn logout(&self) -> Result<(), Error> {
        self.small(
            Call::Logout,
            "POST",
            format!("{V3}/logout"),
            Some(json!({})),
        )?;
        Ok(())
    }
}

fn event_id(call: Call, v: &Value) -> Result<String, Error> {
    v.get("event_id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or(Error::Malformed {
            call,
            len: 0,
            why: "no event_id",
        })
}

/// Runs `f` until it succeeds, fails with anything but a rate limit, or `deadline` passes:
/// each `M_LIMIT_EXCEEDED` is waited out for its `retry_after_ms` (bounded by
/// `http::MAX_RETRY_AFTER`; [`DEFAULT_RETRY`] when the homeserver did not say), and for
/// at least [`MIN_RETRY`], doubled on each rate limit in a row up to [`DEFAULT_RETRY`]. The wait
/// never runs past the deadline; the last rate limit is returned then.
pub fn honouring_rate_limits<T>(
    deadline: Instant,
    mut f: impl FnMut() -> Result<T, Error>,
) -> Result<T, Error> {
    let mut floor = MIN_RETRY;
    loop {
        match f() {
            Err(Error::LimitExceeded { call, retry_after }) => {
                let wait = retry_after.unwrap_or(DEFAULT_RETRY).max(floor);
                floor = (floor * 2).min(DEFAULT_RETRY);
                let now = Instant::now();
                if now + wait > deadline {
                    return Err(Error::LimitExceeded { call, retry_after });
                }
                std::thread::sleep(wait);
            }
            other => return other,
        }
    }
}

/// The wait after a rate limit that named no time: Synapse always names one; a homeserver
/// that does not is asked again after a second, not at once.
pub const DEFAULT_RETRY: Duration = Duration::from_secs(1);

/// The least wait after a rate limit, whatever it named: a `retry_after_ms` of 0 (or a
/// proxy's `Retry-After: 0`) asked again at once would be a tight loop of requests
/// against a homeserver asking loopd to slow down, for as long as the caller's deadline.
/// A quarter of a second is nothing to a person waiting for a reply, and it doubles on
/// each rate limit in a row up to [`DEFAULT_RETRY`].
pub const MIN_RETRY: Duration = Duration::from_millis(250);
