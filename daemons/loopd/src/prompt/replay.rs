//! The prompt of an epoch (SPEC §4): the head's system message; the carried summary as
//! one user message when the head has one (seed 002: not a record, not a turn); then the
//! epoch's records in order. Pure and deterministic: the same head and records always
//! give the same messages, so the prompt prefix llama.cpp has cached stays byte-stable.

use super::cap_chars;
use crate::llama::request::{Message, WireToolCall};
use proto::head::Head;
use proto::{neutralise, Record};

/// The heading in front of a carried summary, built from pieces so no source file holds
/// a line a template scanner could mistake for a tag.
pub const CARRY_HEADING: &str = concat!("Earlier ", "turns, summarised:");

/// The messages for `records` of the epoch whose head is `head`, with each tool result
/// capped to `cap` characters.
///
/// What a model wrote after untrusted text reached it may repeat that text, control tags
/// and all (an injected page can ask for exactly that), so from the first untrusted input
/// on — an untrusted carry, or an untrusted tool result — assistant text and tool-call
/// arguments are neutralised too. The taint is read from the records alone, so replay
/// stays a pure function of the head and records and the prompt stays byte-stable.
pub fn messages(head: &Head, records: &[Record], cap: usize) -> Vec<Message> {
    let mut out = Vec::with_capacity(records.len() + 2);
    out.push(Message::System {
        content: head.system.clone(),
    });
    let mut tainted = head.carry_label.untrusted;
    if let Some(carry) = &head.carry {
        let carry = if tainted {
            neutralise(carry)
        } else {
            carry.into()
        };
        out.push(Message::User {
            content: format!("{CARRY_HEADING}\n\n{carry}"),
        });
    }
    for record in records {
        // A tool result is judged by its own flag below; what follows it by this.
        if let Record::ToolResult {
            untrusted: true, ..
        } = record
        {
            tainted = true;
        }
        match record {
            Record::User { content, .. } => out.push(Message::User {
                content: content.clone(),
            }),
            Record::Assistant {
                content,
                tool_calls,
                ..
            } => out.push(Message::Assistant {
                // llama.cpp refuses an assistant message with neither content nor tool
                // calls, so an empty answer is replayed as an empty string.
                content: match content {
                    None if tool_calls.is_empty() => Some(String::new()),
                    Some(text) if tainted => Some(neutralise(text).into_owned()),
                    other => other.clone(),
                },
                tool_calls: tool_calls
                    .iter()
                    .map(|call| {
                        if tainted {
                            let mut call = call.clone();
                            call.arguments = neutralise(&call.arguments).into_owned();
                            WireToolCall::from_record(&call)
                        } else {
                            WireToolCall::from_record(call)
                        }
                    })
                    .collect(),
            }),
            Record::ToolResult {
                tool_call_id,
                content,
                untrusted,
                ..
            } => {
                // Capped first, then neutralised: the cap bounds what the tool said, and
                // breaking tags after the cut means a tag cut in half is still broken.
                let capped = cap_chars(content, cap);
                let content = if *untrusted {
                    neutralise(capped).into_owned()
                } else {
                    capped.to_string()
                };
                out.push(Message::Tool {
                    tool_call_id: tool_call_id.clone(),
                    content,
                });
            }
            Record::ToolSummary { .. } | Record::Usage { .. } | Record::Note { .. } => {}
        }
    }
    out
}

#[cfg(test)]
mod tests;
