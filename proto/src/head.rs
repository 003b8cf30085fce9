//! An epoch's head file, `epoch-NNNNNN.head.json`: what loopd froze when the epoch began
//! (system prompt, tool schemas), the summary carried over from the epoch before and that
//! summary's label. loopd writes it before the epoch's first record; memoryd reads
//! `carry_label` from it to start the rolling label of the epoch's log.

use crate::label::Label;
use serde::{Deserialize, Serialize};

/// Why an epoch began.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The last usage crossed `compact.threshold` of the context.
    Threshold,
    /// The model answered that the context is full.
    ContextFull,
    /// The owner asked with `/compact`.
    Manual,
    /// The session's first epoch.
    Start,
}

/// Where the carried summary came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SummarySource {
    /// The model wrote it from `compact.md`.
    Model,
    /// The summary call was itself context-full; the owner's texts were joined instead.
    Fallback,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Head {
    pub epoch: u64,
    /// RFC 3339 UTC.
    pub started: String,
    /// The system prompt text, frozen for the epoch.
    pub system: String,
    /// The tool schemas, frozen for the epoch.
    pub tools: serde_json::Value,
    /// `None` for epoch 0, else the summary of the epoch before.
    pub carry: Option<String>,
    pub carry_label: Label,
    pub reason: Reason,
    pub summary_source: SummarySource,
}

/// `epoch-000042.head.json`: six digits, so names sort in epoch order.
pub fn head_file_name(epoch: u64) -> String {
    format!("epoch-{epoch:06}.head.json")
}

/// `epoch-000042.jsonl`, the epoch's records.
pub fn log_file_name(epoch: u64) -> String {
    format!("epoch-{epoch:06}.jsonl")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::label::DataClass;

    #[test]
    fn file_names_have_six_digits() {
        assert_eq!(head_file_name(0), "epoch-000000.head.json");
        assert_eq!(log_file_name(42), "epoch-000042.jsonl");
    }

    #[test]
    fn a_head_reads_the_specs_field_names() {
        let text = r#"{"epoch":1,"started":"2026-11-30T06:00:00.000Z","system":"s","tools":[],
            "carry":"earlier","carry_label":{"class":"secret","untrusted":true},
            "reason":"context_full","summary_source":"fallback"}"#;
        let head: Head = serde_json::from_str(text).unwrap();
        assert_eq!(head.carry_label, Label::new(DataClass::Secret, true));
        assert_eq!(head.reason, Reason::ContextFull);
        assert_eq!(head.summary_source, SummarySource::Fallback);
        let back: Head = serde_json::from_str(&serde_json::to_string(&head).unwrap()).unwrap();
        assert_eq!(back, head);
    }
}
