//! What the stand-in holds: the messages it stored, the requests it saw, peers,
//! conclusions, summaries and cards, and the faults and limits a test sets.

use super::time::now_utc;
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

/// Honcho's `_METADATA_MAX_KEYS`: top-level keys a message's metadata may have.
pub const METADATA_MAX_KEYS: usize = 100;

/// Honcho's `_METADATA_MAX_DEPTH`: how deep metadata objects may nest.
pub const METADATA_MAX_DEPTH: usize = 5;

/// A message as Honcho stored it.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    pub id: String,
    pub session: String,
    pub peer_id: String,
    pub content: String,
    /// As Honcho answers it: UTC, six fraction digits.
    pub created_at: String,
    pub metadata: Value,
}

/// A conclusion Honcho's deriver drew (a "document").
#[derive(Debug, Clone, PartialEq)]
pub struct Conclusion {
    pub id: String,
    /// `None` for one drawn across sessions (a dream).
    pub session: Option<String>,
    pub observer: String,
    pub observed: String,
    pub content: String,
    /// `explicit`, or `deductive` / `inductive` / `contradiction` from dreaming.
    pub level: String,
    /// When Honcho stored it: not when the message it came from was written.
    pub created_at: String,
    /// A soft delete: Honcho marks it and hides it from lists; its reconciler removes it
    /// later.
    pub deleted: bool,
}

impl Conclusion {
    /// An explicit conclusion about `observed` drawn in `session` now.
    pub fn now(id: &str, session: Option<&str>, observed: &str, content: &str) -> Conclusion {
        Conclusion {
            id: id.into(),
            session: session.map(str::to_string),
            observer: observed.into(),
            observed: observed.into(),
            content: content.into(),
            level: "explicit".into(),
            created_at: now_utc(),
            deleted: false,
        }
    }
}

/// One request the stand-in answered, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub list: bool,
    /// A get-or-create of a peer.
    pub peer: bool,
    /// A get-or-create of a session (`POST …/sessions`).
    pub session: bool,
    pub authorization: Option<String>,
    /// Messages in a create request.
    pub count: usize,
    pub status: u16,
}

/// What to do with one request instead of answering it normally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    Status(u16),
    /// Store the messages, then answer with this status anyway.
    StoreThen(u16),
    /// 429 with `Retry-After` in seconds.
    Limited(u64),
    /// Hold the create this long, then commit it and answer, whether or not the client
    /// still waits; lists answered meanwhile do not see it.
    LateCommit(Duration),
    /// Answer the create with this status after the first wait (a proxy's timeout, say),
    /// then commit it after the second (counted from the request), whether or not the
    /// client still waits; lists answered meanwhile do not see it.
    AnswerThenCommit(u16, Duration, Duration),
    /// Answer with this status and an HTML page ([`PAGE`]), storing nothing: a proxy in
    /// front of Honcho, its 404 for a route it does not pass on, or a maintenance page
    /// answered with 200.
    Page(u16),
    /// Store the messages, then answer with this status and an HTML page: a proxy whose
    /// page hides Honcho's answer to a create that went through.
    StoreThenPage(u16),
    /// Answer as the server does: a place in a queue of faults, so that a later request
    /// gets the next one.
    Pass,
}

/// The page [`Fault::Page`] answers with, as a proxy or a maintenance page would.
pub const PAGE: &str =
    "<html><head><title>Maintenance</title></head><body>Back soon.</body></html>";

/// tiktoken's special tokens in `o200k_base`, the encoding Honcho 3.0.12's `MessageCreate`
/// counts a message's tokens with, refusing any of them in the text (tiktoken's
/// default): FastAPI's 422 at the message. Built from pieces: no source file holds one
/// whole.
pub fn o200k_special_tokens() -> Vec<String> {
    special_tokens(&["endoftext", "endofprompt"])
}

/// tiktoken's special tokens in `cl100k_base`, the encoding of Honcho's default embedding
/// model (`text-embedding-3-small`), with which it chunks each message before the create
/// commits, refusing any of them too: an unhandled `ValueError`, so a 500 and nothing
/// stored.
pub fn cl100k_special_tokens() -> Vec<String> {
    special_tokens(&[
        "endoftext",
        "fim_prefix",
        "fim_middle",
        "fim_suffix",
        "endofprompt",
    ])
}

fn special_tokens(names: &[&str]) -> Vec<String> {
    names
        .iter()
        .map(|n| format!("{}{n}{}", "<|", "|>"))
        .collect()
}

/// Honcho's default `MAX_MESSAGE_SIZE`.
pub const HONCHO_MAX_MESSAGE_SIZE: usize = 25_000;

/// Everything the stand-in holds: what it stored, what it saw, the faults still to come.
#[derive(Debug, Default)]
pub struct State {
    pub messages: Vec<Stored>,
    pub seen: Vec<Seen>,
    pub post_faults: VecDeque<Fault>,
    pub list_faults: VecDeque<Fault>,
    pub peer_faults: VecDeque<Fault>,
    /// The server's `MAX_MESSAGE_SIZE`; `None` is Honcho's default.
    pub max_message_size: Option<usize>,
    /// A message whose content holds this is refused (422, naming the message).
    pub refuse_containing: Option<String>,
    /// Peers got or created, with the configuration held.
    pub peers: Vec<(String, Value)>,
    /// Conclusions, soft-deleted ones included.
    pub conclusions: Vec<Conclusion>,
    /// Session summaries by Honcho session.
    pub summaries: BTreeMap<String, String>,
    /// Peer cards by peer.
    pub cards: BTreeMap<String, Vec<String>>,
    /// Auth on when not empty: each token and the one session it may use (`None`: all).
    pub tokens: Vec<(String, Option<String>)>,
    /// Creates received and not yet committed (held by a `LateCommit` or a stalled
    /// session set-up).
    pub creating: usize,
    /// Sessions whose set-up is held until then, as another transaction holding the
    /// session's peer rows holds Honcho's (see [`State::hold_setup`]).
    pub setup_held: BTreeMap<String, Instant>,
    /// Requests waiting at a held session set-up now.
    pub stalled: usize,
    /// Sessions got or created through `POST …/sessions`, with the peers named.
    pub sessions: BTreeMap<String, Vec<String>>,
    pub(super) next_id: u64,
}

impl State {
    /// The create requests seen, in order.
    pub fn posts(&self) -> Vec<&Seen> {
        self.seen
            .iter()
            .filter(|s| !s.list && !s.peer && !s.session && s.method == "POST")
            .collect()
    }

    /// Every `boxmaker_record` held more than once, with how often.
    pub fn duplicates(&self) -> Vec<(String, usize)> {
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for m in &self.messages {
            let key = m.metadata["boxmaker_record"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            *count.entry(key).or_default() += 1;
        }
        count.into_iter().filter(|(_, n)| *n > 1).collect()
    }

    /// Holds `session`'s set-up for `d` from now: a create of its messages, and a
    /// get-or-create of it, wait that long before they go on, as behind another Honcho
    /// worker (or any transaction) holding the session's peer rows: Honcho's session
    /// set-up takes those locks before its `lock_timeout` applies, so nothing bounds the
    /// wait. Lists do not wait (Honcho's list takes no lock).
    pub fn hold_setup(&mut self, session: &str, d: Duration) {
        self.setup_held
            .insert(session.to_string(), Instant::now() + d);
    }

    /// Conclusions not deleted.
    pub fn live_conclusions(&self) -> Vec<&Conclusion> {
        self.conclusions.iter().filter(|c| !c.deleted).collect()
    }
}
