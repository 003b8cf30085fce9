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
pub(crate) const CARRY_HEADING: &str = concat!("Earlier ", "turns, summarised:");

/// The heading in front of what memory brought back for the owner's line.
pub(crate) const MEMORY_HEADING: &str = "From memory:";

/// Whether a tool call's arguments may be sent back to the server: a JSON object, as
/// every tool takes. llama.cpp parses the arguments of each call in the history and
/// refuses the whole request when one does not parse, so a call cut off mid-arguments
/// would make every later request of the epoch fail (docs/turn.md, "A cut answer").
pub(crate) fn replayable(call: &proto::ToolCall) -> bool {
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
    let mut replay = Replay::start(head, records.len(), cap);
    for record in records {
        replay.record(record);
    }
    replay.out
}

/// A replay under way: the messages so far, and what the records before decide about
/// the next ones.
struct Replay<'a> {
    out: Vec<Message>,
    /// Untrusted input has reached the model: what it wrote from here on is neutralised.
    tainted: bool,
    /// Ids of the calls of the last assistant record that are sent: only their results
    /// are, so no tool message answers a call the server never saw (a call left out, or
    /// an assistant record a forget replaced by a note).
    sent: Vec<&'a str>,
    /// Characters of a tool result sent.
    cap: usize,
}

impl<'a> Replay<'a> {
    /// The head's system message, then its carried summary when it has one.
    fn start(head: &Head, records: usize, cap: usize) -> Replay<'a> {
        let mut out = Vec::with_capacity(records + 2);
        out.push(Message::System {
            content: head.system.clone(),
        });
        let tainted = head.carry_label.untrusted;
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
        Replay {
            out,
            tainted,
            sent: Vec::new(),
            cap,
        }
    }

    fn record(&mut self, record: &'a Record) {
        // A tool result is judged by its own flag (`tool_result`); what follows it by
        // this. A forgotten record counts as what it replaced did (docs/forgetting.md,
        // 'Labels').
        if record.taints() {
            self.tainted = true;
        }
        match record {
            Record::User { content, .. } => self.out.push(Message::User {
                content: content.clone(),
            }),
            Record::Memory { content, .. } => self.memory(content),
            Record::Assistant {
                content,
                tool_calls,
                cut,
                ..
            } => self.assistant(content.as_deref(), tool_calls, *cut),
            Record::ToolResult {
                tool_call_id,
                content,
                untrusted,
                ..
            } => self.tool_result(tool_call_id, content, *untrusted),
            Record::ToolSummary { .. }
            | Record::Usage { .. }
            | Record::Note { .. }
            | Record::Forgotten { .. }
            | Record::Refused { .. }
            | Record::Allowed { .. } => {}
        }
    }

    /// What memory brought back, rendered by `proto::memory::render_hits`, which already
    /// neutralised every untrusted hit. Sent just before the owner's line it was recalled
    /// for (the record right before it), so the line is what the model answers, as a
    /// small model takes the last message for the question.
    fn memory(&mut self, content: &str) {
        let memory = Message::User {
            content: format!("{MEMORY_HEADING}\n\n{content}"),
        };
        let at = match self.out.last() {
            Some(Message::User { .. }) => self.out.len() - 1,
            _ => self.out.len(),
        };
        self.out.insert(at, memory);
    }

    fn assistant(&mut self, content: Option<&str>, tool_calls: &'a [proto::ToolCall], cut: bool) {
        // A cut answer's calls were never run: its text alone is sent.
        let calls: Vec<&proto::ToolCall> = tool_calls
            .iter()
            .filter(|c| !cut && replayable(c))
            .collect();
        self.sent = calls.iter().map(|c| c.id.as_str()).collect();
        let tainted = self.tainted;
        self.out.push(Message::Assistant {
            // llama.cpp refuses an assistant message with neither content nor tool
            // calls, so an empty answer is replayed as an empty string.
            content: match content {
                None if calls.is_empty() => Some(String::new()),
                Some(text) if tainted => Some(neutralise(text).into_owned()),
                other => other.map(str::to_string),
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

    /// A tool's result, when its call was sent: capped first, then neutralised when
    /// untrusted. The cap bounds what the tool said, and breaking tags after the cut
    /// means a tag cut in half is still broken.
    fn tool_result(&mut self, tool_call_id: &str, content: &str, untrusted: bool) {
        if !self.sent.contains(&tool_call_id) {
            return;
        }
        let capped = cap_chars(content, self.cap);
        let content = if untrusted {
            neutralise(capped).into_owned()
        } else {
            capped.to_string()
        };
        self.out.push(Message::Tool {
            tool_call_id: tool_call_id.to_string(),
            content,
        });
    }
}

#[cfg(test)]
mod tests;
