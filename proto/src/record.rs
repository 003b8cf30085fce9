//! The session log's records: one JSON object per line, tagged by `"type"`.
//!
//! Writing goes through serde. Reading is done by hand over a `serde_json::Value` so that
//! every mistake in a log file on disk names the field that is wrong: serde's own messages
//! for internally tagged enums lose the field name, and a person repairing a log needs it
//! (`read`). This file holds the records, how they are written, and the labels they add.

mod read;
pub use read::RecordError;

use crate::label::{DataClass, Label};
use serde::Serialize;

/// Who started a turn: the owner on the channel socket, or loopd's own heartbeat timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    Owner,
    Heartbeat,
}

/// An owner's line that came from a Matrix room: the id of the event it was. Written as
/// `"via": "matrix", "event": "<id>"` beside the record's other fields, so a restart
/// finds the events already taken (docs/matrix.md, 'Exactly once in').
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FromMatrix {
    pub event: String,
}

/// The one value `via` takes.
pub const VIA_MATRIX: &str = "matrix";

impl Serialize for FromMatrix {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("via", VIA_MATRIX)?;
        map.serialize_entry("event", &self.event)?;
        map.end()
    }
}

/// One tool call as the model produced it. `arguments` stays the model's JSON text, not a
/// parsed value, so replay sends back exactly the bytes the model wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// llama.cpp's token counts of one completion, from its `timings` (docs/llama-api.md), as
/// a `usage` record carries them. The one type for them: the SSE reader fills it, a turn
/// writes it into its `usage` record, and `/status`, the turn's log line and compaction
/// read it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Tokens {
    /// Prompt tokens the slot's cache already held.
    pub cache_n: u64,
    /// Prompt tokens the server had to read.
    pub prompt_n: u64,
    /// Tokens generated.
    pub predicted_n: u64,
}

impl Tokens {
    /// Tokens the slot holds after the completion: the prompt and what was generated.
    pub fn context_used(&self) -> u64 {
        self.cache_n
            .saturating_add(self.prompt_n)
            .saturating_add(self.predicted_n)
    }
}

/// One line of `epoch-NNNNNN.jsonl`. Code that matches on records names every variant, so
/// adding one here is a compile error at each place that must decide what to do with it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    User {
        time: String,
        content: String,
        origin: Origin,
        /// The Matrix event an owner's line came from (`"via": "matrix"`, `"event"`),
        /// written only for such a line (docs/matrix.md, 'Exactly once in').
        #[serde(flatten, skip_serializing_if = "Option::is_none")]
        matrix: Option<FromMatrix>,
    },
    Assistant {
        time: String,
        content: Option<String>,
        tool_calls: Vec<ToolCall>,
        /// The server ended the answer at its token limit (`finish_reason` `length`).
        /// Written only when true, so older logs and plain answers read the same.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        cut: bool,
    },
    /// What loopd brought back from memory for the owner's line just before it
    /// (docs/turn.md, 'Memory in the turn'): the hits as rendered for the model, and the
    /// join of their labels.
    Memory {
        time: String,
        content: String,
        class: DataClass,
        untrusted: bool,
    },
    ToolResult {
        time: String,
        call: u64,
        tool_call_id: String,
        name: String,
        content: String,
        class: DataClass,
        untrusted: bool,
    },
    ToolSummary {
        time: String,
        call: u64,
        tool_call_id: String,
        content: String,
        class: DataClass,
        untrusted: bool,
    },
    Usage {
        time: String,
        slot: u32,
        /// Written inline: the line keeps the flat `cache_n`, `prompt_n`,
        /// `predicted_n` after `slot`.
        #[serde(flatten)]
        tokens: Tokens,
    },
    Note {
        time: String,
        text: String,
    },
    /// What stands where forgotten records stood (docs/forgetting.md, 'Labels'): how many
    /// records and characters went, never their text, and the join of the labels they
    /// carried and were read under, so a forget lowers no label. Not replayed.
    Forgotten {
        time: String,
        records: u64,
        chars: u64,
        class: DataClass,
        untrusted: bool,
        /// The largest call number the replaced records carried, so the session's next
        /// call number still goes past it (docs/forgetting.md, 'Call numbers'). Written
        /// only when they carried one.
        #[serde(skip_serializing_if = "Option::is_none")]
        call: Option<u64>,
    },
    /// A fetch the label policy refused (docs/labels.md, 'Refusals and `/allow N`'): the URL normalised and
    /// exactly as the owner's `· ` line showed it (empty when the call named none), why,
    /// and whether `/allow call` may fetch it. `/allow` reads this record, never a note's
    /// wording. Not replayed; carries no label.
    Refused {
        time: String,
        call: u64,
        url: String,
        reason: String,
        offered: bool,
    },
    /// The owner allowed refused call `call`; it is fetched once. Not replayed.
    Allowed {
        time: String,
        call: u64,
    },
}

impl Record {
    /// The record's `type` tag as written on disk.
    pub fn kind(&self) -> &'static str {
        match self {
            Record::User { .. } => "user",
            Record::Assistant { .. } => "assistant",
            Record::Memory { .. } => "memory",
            Record::ToolResult { .. } => "tool_result",
            Record::ToolSummary { .. } => "tool_summary",
            Record::Usage { .. } => "usage",
            Record::Note { .. } => "note",
            Record::Forgotten { .. } => "forgotten",
            Record::Refused { .. } => "refused",
            Record::Allowed { .. } => "allowed",
        }
    }

    pub fn time(&self) -> &str {
        match self {
            Record::User { time, .. }
            | Record::Assistant { time, .. }
            | Record::Memory { time, .. }
            | Record::ToolResult { time, .. }
            | Record::ToolSummary { time, .. }
            | Record::Usage { time, .. }
            | Record::Note { time, .. }
            | Record::Forgotten { time, .. }
            | Record::Refused { time, .. }
            | Record::Allowed { time, .. } => time,
        }
    }

    /// The call number this record carries, if any. A forgotten record carries the one of
    /// what it replaced, which may have been the newest (docs/forgetting.md, 'Call
    /// numbers'), so a session's next number is past every number this gives.
    pub fn call(&self) -> Option<u64> {
        match self {
            Record::ToolResult { call, .. }
            | Record::ToolSummary { call, .. }
            | Record::Refused { call, .. }
            | Record::Allowed { call, .. } => Some(*call),
            Record::Forgotten { call, .. } => *call,
            Record::User { .. }
            | Record::Assistant { .. }
            | Record::Memory { .. }
            | Record::Usage { .. }
            | Record::Note { .. } => None,
        }
    }

    /// The label this record adds to its epoch's context, if it carries one.
    pub fn label(&self) -> Option<Label> {
        match self {
            Record::ToolResult {
                class, untrusted, ..
            }
            | Record::ToolSummary {
                class, untrusted, ..
            }
            | Record::Memory {
                class, untrusted, ..
            }
            | Record::Forgotten {
                class, untrusted, ..
            } => Some(Label::new(*class, *untrusted)),
            // A forgetting note from before `forgotten` records carried a label: what it
            // replaced is unknown, so it counts as untrusted text (docs/forgetting.md,
            // 'Logs from before labelled forgetting').
            Record::Note { text, .. } if is_unlabelled_forget_note(text) => {
                Some(Label::new(DataClass::Public, true))
            }
            Record::User { .. }
            | Record::Assistant { .. }
            | Record::Usage { .. }
            | Record::Note { .. }
            | Record::Refused { .. }
            | Record::Allowed { .. } => None,
        }
    }

    /// Whether this record makes replay neutralise what the model wrote after it: an
    /// untrusted tool result, memory or forgotten record (what was forgotten may have
    /// steered the model), or an unlabelled forgetting note from an older log.
    pub fn taints(&self) -> bool {
        match self {
            Record::ToolResult { untrusted, .. }
            | Record::Memory { untrusted, .. }
            | Record::Forgotten { untrusted, .. } => *untrusted,
            Record::Note { text, .. } => is_unlabelled_forget_note(text),
            Record::User { .. }
            | Record::Assistant { .. }
            | Record::ToolSummary { .. }
            | Record::Usage { .. }
            | Record::Refused { .. }
            | Record::Allowed { .. } => false,
        }
    }

    /// The label this record adds to its epoch's context when what the owner says is
    /// `owner_class` (docs/labels.md): an owner `user` record carries that class, trusted; a
    /// heartbeat's text is loopd's own prompt and carries none; the rest as [`Record::label`].
    fn label_as(&self, owner_class: DataClass) -> Option<Label> {
        match self {
            Record::User {
                origin: Origin::Owner,
                ..
            } => Some(Label::new(owner_class, false)),
            Record::User {
                origin: Origin::Heartbeat,
                ..
            } => None,
            other => other.label(),
        }
    }

    /// The record as one line of JSON, newline included, ready for a single `write`.
    pub fn to_line(&self) -> String {
        // Serialising these plain structs cannot fail: every key is a string and every
        // value a string, number, bool, null or list of those.
        let mut line = serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"));
        line.push('\n');
        line
    }
}

/// Whether `text` is the note an older loopd put where a forgotten record stood ("forgotten
/// at TIME by the owner: a KIND record of N characters, written TIME"). Such a note carries
/// no label, so readers count it as untrusted (docs/forgetting.md, 'Logs from before
/// labelled forgetting'). Only loopd writes notes; a false match can only raise a label.
pub fn is_unlabelled_forget_note(text: &str) -> bool {
    text.starts_with("forgotten at ")
        && text.contains(" by the owner: a ")
        && text.contains(" record of ")
        && text.contains(" characters, written ")
}

/// The label of everything an epoch's context holds: its carry label joined with the
/// label of every record in it, the owner's words as `owner_class` (docs/labels.md). loopd keeps
/// it as the session's label, and a new epoch's `carry_label` is it, so a summary of
/// secret, private or tainted turns stays so.
pub fn context_label(carry_label: Label, records: &[Record], owner_class: DataClass) -> Label {
    records.iter().fold(carry_label, |label, record| {
        context_label_after(label, record, owner_class)
    })
}

/// The last `assistant` record in `records`: its time and its tool calls. A tool result
/// answers a call of the last answer before it, so whoever reads back what a result's
/// call asked for (the URL a fetch fetched, the reminder a held call wanted) reads it
/// here, from loopd's own record of the model's answer, never from the result's content.
pub fn last_answer(records: &[Record]) -> Option<(&str, &[ToolCall])> {
    records.iter().rev().find_map(|r| {
        let Record::Assistant {
            time, tool_calls, ..
        } = r
        else {
            return None;
        };
        Some((time.as_str(), tool_calls.as_slice()))
    })
}

/// One step of [`context_label`]: the context label once `record` follows a context
/// labelled `label`. Whoever reads an epoch record by record keeps its label with this —
/// loopd's open session, Honcho's reporter and memoryd's rolling label — so the rule
/// exists once.
pub fn context_label_after(label: Label, record: &Record, owner_class: DataClass) -> Label {
    match record.label_as(owner_class) {
        Some(l) => label.join(l),
        None => label,
    }
}

#[cfg(test)]
mod tests;
