//! Compaction end to end (docs/sessions.md, docs/turn.md): loopd on a real socket with
//! the scripted llama.cpp stand-in, asserting on the requests it sends (slot, tools, the
//! carried summary), the reply blocks, and the epoch files on disk. `real` runs a whole
//! conversation against the real server.

mod after;
#[cfg(feature = "bench")]
mod bench;
mod crash;
mod full;
mod manual;
mod real;
mod summaries;
mod threshold;

use crate::loopd::{records_in, Loopd};
use serde_json::Value;

/// Counters just over `0.85 × 4096 = 3481.6`: the turn that reports them is due.
pub const OVER: (u64, u64, u64) = (3000, 482, 10);

/// Counters just under it.
pub const UNDER: (u64, u64, u64) = (3000, 481, 10);

/// The fixture's prompts, as the requests must carry them.
pub const SYSTEM: &str = "You are a helpful assistant.";
pub const COMPACT: &str = "Summarise the conversation so far.";
pub const SUMMARISE: &str = "Summarise this tool output.";

/// The carried summary as the first user message of an epoch's prompt.
pub fn carried(summary: &str) -> String {
    format!("Earlier turns, summarised:\n\n{summary}")
}

pub fn epoch_records(l: &Loopd, epoch: u64) -> Vec<Value> {
    l.settle();
    records_in(
        &l.session_dir("main")
            .join(format!("epoch-{epoch:06}.jsonl")),
    )
}

pub fn epoch_kinds(l: &Loopd, epoch: u64) -> Vec<String> {
    epoch_records(l, epoch)
        .iter()
        .map(|r| r["type"].as_str().unwrap().to_string())
        .collect()
}

/// A reply block without the `· ` lines saying what the line waited for (docs/turn.md): a
/// line sent right after a turn's `.` may or may not find the after-turn work running.
pub fn answer(block: Vec<String>) -> Vec<String> {
    block
        .into_iter()
        .filter(|l| !(l.starts_with("· compacting ") || l.starts_with("· summarising ")))
        .collect()
}

/// The head of `epoch`, or `None` when it has none.
pub fn head(l: &Loopd, epoch: u64) -> Option<Value> {
    l.settle();
    let path = l
        .session_dir("main")
        .join(format!("epoch-{epoch:06}.head.json"));
    std::fs::read(path)
        .ok()
        .map(|b| serde_json::from_slice(&b).unwrap())
}

/// `(role, content)` of each message of a request body, content `""` when null.
pub fn roles(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

pub fn pair(role: &str, content: &str) -> (String, String) {
    (role.to_string(), content.to_string())
}
