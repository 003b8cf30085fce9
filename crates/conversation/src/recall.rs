//! The model's `recall` tool: its arguments checked, memoryd asked through the client in
//! `memory`, each hit cut to the passage around what matched (`memory.hit_chars`), the
//! hits rendered as the tool's output with the join of their labels. The tool loop
//! neutralises the output against the served model's special tokens, as every tool's.

use crate::memory::{recall, render};
use proto::config::Memory;
use proto::memory::hits_label;
use proto::Label;
use tools::ToolOutput;

/// The `recall {query}` tool. Its label is the join of the hits' labels.
pub fn run(cfg: &Memory, arguments: &str) -> ToolOutput {
    let args: serde_json::Value = match serde_json::from_str(arguments) {
        Ok(v) => v,
        Err(e) => {
            return ToolOutput::error(
                format_args!("arguments are not valid json: {e}"),
                Label::PUBLIC,
            )
        }
    };
    let Some(query) = args.get("query").and_then(|q| q.as_str()) else {
        return ToolOutput::error("recall needs a \"query\" string", Label::PUBLIC);
    };
    match recall(cfg, query) {
        Ok(mut hits) => {
            // Passages, as memory in the turn brings (docs/turn.md): one long record
            // must not fill the model's context through the tool either.
            for hit in &mut hits {
                proto::memory::clip_to_passage(hit, query, cfg.hit_chars as usize);
            }
            ToolOutput::done(render(&hits), hits_label(&hits))
        }
        // Worded as before (not `error: `): the model reads it as it always did, and the
        // field says it failed.
        Err(e) => ToolOutput {
            content: format!("memory unavailable: {e}"),
            label: Label::PUBLIC,
            failed: true,
        },
    }
}
