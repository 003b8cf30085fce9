//! An epoch's head file, `epoch-NNNNNN.head.json`: what is frozen for the epoch (system
//! prompt, tool schemas) and what it carries over from the one before.

use crate::label::Label;
use serde::{Deserialize, Serialize};

/// Why an epoch began.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    Threshold,
    ContextFull,
    Manual,
    Start,
}

/// Where the carried summary came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SummarySource {
    Model,
    Fallback,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Head {
    pub epoch: u64,
    pub started: String,
    /// The system prompt text, frozen so the prompt prefix stays byte-stable.
    pub system: String,
    /// The tool schemas, frozen for the same reason.
    pub tools: serde_json::Value,
    /// The summary of the epoch before; `None` for epoch 0.
    pub carry: Option<String>,
    pub carry_label: Label,
    pub reason: Reason,
    pub summary_source: SummarySource,
}

/// The largest head file either daemon reads back. A head holds the frozen system prompt,
/// the tool schemas and the carried summary (`compact.summary_chars` is bounded so it
/// fits), each far below this; a larger one is damage and must not cost unbounded memory.
pub const MAX_HEAD_BYTES: u64 = 4 * 1024 * 1024;

/// Epoch numbers have six digits in file names; past that names would stop sorting.
pub const MAX_EPOCH: u64 = 999_999;

/// The name of an epoch's head file. Parsing names back, and listing epochs, is the
/// `sessions` crate's (`sessions::epochs`), so the rule exists once.
pub fn head_file_name(epoch: u64) -> String {
    format!("epoch-{epoch:06}.head.json")
}

pub fn log_file_name(epoch: u64) -> String {
    format!("epoch-{epoch:06}.jsonl")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DataClass;

    #[test]
    fn names_have_six_digits() {
        assert_eq!(head_file_name(3), "epoch-000003.head.json");
        assert_eq!(log_file_name(12), "epoch-000012.jsonl");
    }

    #[test]
    fn a_head_has_the_specs_fields() {
        let head = Head {
            epoch: 1,
            started: "2026-11-30T06:00:00.000Z".into(),
            system: "s".into(),
            tools: serde_json::json!([]),
            carry: Some("c".into()),
            carry_label: Label::new(DataClass::Secret, true),
            reason: Reason::ContextFull,
            summary_source: SummarySource::Fallback,
        };
        let v = serde_json::to_value(&head).unwrap();
        assert_eq!(v["reason"], "context_full");
        assert_eq!(v["summary_source"], "fallback");
        assert_eq!(v["carry_label"]["class"], "secret");
        assert_eq!(v["carry_label"]["untrusted"], true);
        let back: Head = serde_json::from_value(v).unwrap();
        assert_eq!(back, head);
    }
}
