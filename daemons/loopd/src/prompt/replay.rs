//! The prompt of an epoch (docs/turn.md): the head's system message; the carried summary as
//! one user message when the head has one (not a record, not a turn); then the
//! epoch's records in order. Pure and deterministic: the same head and records always
//! give the same messages, so the prompt prefix llama.cpp has cached stays byte-stable.

use super::cap_chars;
use llama::request::{Message, WireToolCall};
use proto::head::Head;
use proto::{neutralise, Record};

/// The heading in front of a carried summary, built from pieces so no source file holds
/// a line a template scanner could mistake for a tag.
pub const CARRY_HEADING: &str = concat!("Earlier ", "turns, summarised:");

/// The heading in front of what memory brought back for the owner's line.
pub const MEMORY_HEADING: &str = "From memory:";

/// Whether a tool call's arguments may be sent back to the server: a JSON object, as
/// every tool takes. llama.cpp parses the arguments of each call in the history and
/// refuses the whole request when one does not parse, so a call cut off mid-arguments
/// would make every later request of the epoch fail (docs/turn.md, "A cut answer").
pub fn replayable(call: &proto::ToolCall) -> bool {
    matches!(
        serde_json::from_str::<serde_json::Value>(&call.arguments),
        Ok(serde_json::Value::Object(_))
    )
}

/// The messages for `records` of the epoch whose head is `head`, with each tool result
/// capped to `cap` characters.
///
/// What a model wrote after untrusted text reached it may repeat that text, control tags
/// and all (an injected page can ask for exactly that), so from the first untrusted input
/// on — an untrusted carry, tool result, memory or forgotten record — assistant text and tool-call
/// arguments are neutralised too. The taint is read from the records alone, so replay
/// stays a pure function of the head and records and the prompt stays byte-stable.
pub fn messages(head: &Head, records: &[Record], cap: usize) -> Vec<Message> {
    let mut out = Vec::with_capacity(records.len() + 2);
    out.push(Message::System {
        content: head.system.clone(),
    });
    let mut tainted = head.carry_label.untrusted;
    // Ids of the calls of the last assistant record that are sent: only their results
    // are, so no tool message answers a call the server never saw (a call left out, or
    // an assistant record a forget replaced by a note).
    let mut sent: Vec<&str> = Vec::new();
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
        // A tool result is judged by its own flag below; what follows it by this. A
        // forgotten record counts as what it replaced did (docs/forgetting.md, 'Labels').
        if record.taints() {
            tainted = true;
        }
        match record {
            Record::User { content, .. } => out.push(Message::User {
                content: content.clone(),
            }),
            Record::Memory { content, .. } => {
                // Rendered by `proto::memory::render_hits`, which already neutralised
                // every untrusted hit. Sent just before the owner's line it was recalled
                // for (the record right before it), so the line is what the model
                // answers, as a small model takes the last message for the question.
                let memory = Message::User {
                    content: format!("{MEMORY_HEADING}\n\n{content}"),
                };
                let at = match out.last() {
                    Some(Message::User { .. }) => out.len() - 1,
                    _ => out.len(),
                };
                out.insert(at, memory);
            }
            Record::Assistant {
                content,
                tool_calls,
                cut,
                ..
            } => {
                // A cut answer's calls were never run: its text alone is sent.
                let keep = |c: &proto::ToolCall| !*cut && replayable(c);
                sent = tool_calls
                    .iter()
                    .filter(|c| keep(c))
                    .map(|c| c.id.as_str())
                    .collect();
                let calls: Vec<&proto::ToolCall> = tool_calls.iter().filter(|c| keep(c)).collect();
                out.push(Message::Assistant {
                    // llama.cpp refuses an assistant message with neither content nor tool
                    // calls, so an empty answer is replayed as an empty string.
                    content: match content {
                        None if calls.is_empty() => Some(String::new()),
                        Some(text) if tainted => Some(neutralise(text).into_owned()),
                        other => other.clone(),
                    },
                    tool_calls: calls
                        .into_iter()
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
                })
            }
            Record::ToolResult { tool_call_id, .. } if !sent.contains(&tool_call_id.as_str()) => {}
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
            Record::ToolSummary { .. }
            | Record::Usage { .. }
            | Record::Note { .. }
            | Record::Forgotten { .. }
            | Record::Refused { .. }
            | Record::Allowed { .. } => {}
        }
    }
    out
}

#[cfg(test)]
mod tests;
