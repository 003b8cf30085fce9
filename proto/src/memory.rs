//! memoryd's request and response messages, carried in frames (see `frame`), and the
//! rendering of recall hits that loopd's tool, its `/recall` command and `memoryd recall`
//! share so all three show the same text: the hits as text (`render`), a long record cut to
//! the passage around what matched (`passage`).

use crate::label::{DataClass, Label};
use serde::{Deserialize, Serialize};

mod choice;
pub use choice::{
    choose as choose_to_bring, choose_at as choose_to_bring_at, may_come, worth_bringing,
    RELEVANCE_FLOOR,
};
mod passage;
pub use passage::{clip_to_passage, passage, CUT};
mod render;
pub use render::{push_indented, render_hits, render_hits_for_person};

/// The most hits a recall may ask for. Each hit is at most a record's text, so this bounds
/// a response well under the frame limit for ordinary texts, and memoryd trims further
/// when the encoded answer would not fit.
pub const MAX_HITS: u32 = 50;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// Free-text search over everything indexed at or below `max_class`.
    Recall {
        query: String,
        max_class: DataClass,
        limit: u32,
    },
    /// loopd finished a turn in `session`: index what is new. Answered with `Status`.
    Nudge {
        session: String,
    },
    Status,
    /// loopd rewrote these epoch logs to forget records (docs/forgetting.md): re-read
    /// them now, drop every row and vector whose record is gone, and scrub the database
    /// files so no page still holds the text. Answered with `Forgot` once that is on disk.
    Forget {
        logs: Vec<LogRef>,
    },
}

/// One epoch log of one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRef {
    pub session: String,
    pub epoch: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    Hits(Vec<Hit>),
    Status(MemoryStatus),
    /// A `Forget` is done: `rows` rows were removed from the index (vectors with them).
    Forgot {
        rows: u64,
    },
    Error {
        message: String,
    },
}

/// `Hit::relevance` of a hit that holds every content word of the question.
pub const FULLY_RELEVANT: u16 = 1000;

/// One recalled record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hit {
    pub session: String,
    pub epoch: u64,
    pub time: String,
    /// `session` for owner and assistant text, `summary` for a tool summary.
    pub kind: String,
    /// `owner`, `assistant` or `summary`.
    pub role: String,
    pub label: Label,
    pub text: String,
    /// How much of the question the hit answers, in thousandths (`FULLY_RELEVANT` at
    /// most): the share of the question's content words the record holds, or, for a
    /// record found by meaning alone, its similarity to the question. loopd's memory in
    /// the turn and `/recall` leave out hits below a floor (docs/memoryd.md, "Recall").
    pub relevance: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MemoryStatus {
    /// Log files the index has read from.
    pub logs: u64,
    /// Rows in the full-text index.
    pub rows: u64,
    /// Size of the index database file in bytes.
    pub index_bytes: u64,
    /// Rows with a vector for recall by meaning; 0 without an embedding model.
    pub vectors: u64,
    /// Rows queued for the background backfill, how far it has to go: rows still waiting
    /// for their vector, rows that have one and wait for their word pieces (after an
    /// upgrade, or when their pieces were damaged), and rows set aside after failing
    /// (docs/memoryd.md, 'Vectors and the model').
    pub vectors_pending: u64,
}

/// The label of a set of hits: the join of each hit's label, public and trusted when empty.
pub fn hits_label(hits: &[Hit]) -> Label {
    hits.iter().fold(Label::PUBLIC, |acc, h| acc.join(h.label))
}

#[cfg(test)]
mod tests;
