//! Background tool summaries (docs/turn.md, 'Tool summaries'). After a turn, each `tool_result`
//! of the epoch whose tool is named in `compact.summarise` and that has no `tool_summary`
//! yet gets one no-tools completion on `slots.background`: the epoch's prompt plus one user
//! message, `summarise.md`, a blank line, the result. The answer becomes a `tool_summary`
//! carrying the result's call and labels; memoryd indexes it, the replay never shows it.
//!
//! The records on disk are the memory of what is done, so a result is never summarised
//! twice, not even across a restart; a failed call leaves no record, so the next turn's
//! finish tries that result again.

use crate::open_session::{Session, SessionError};
use crate::prompt::cap_chars;
use crate::prompt::{replay, TurnCtx, THINKING};
use llama::{ChatRequest, Message};
use proto::config::Config;
use proto::head::Head;
use proto::time::now_rfc3339;
use proto::{neutralise, DataClass, Record};
use std::borrow::Cow;
use std::collections::HashSet;

/// A tool result that wants a summary, copied out of the epoch so the session can be
/// appended to while the queue is worked through. Its label becomes the summary's, joined
/// with the context label by [`missing`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Unsummarised {
    pub call: u64,
    pub tool_call_id: String,
    pub name: String,
    pub content: String,
    pub class: DataClass,
    pub untrusted: bool,
}

/// What one round of summaries did, for the log.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Summarised {
    pub written: usize,
    pub skipped: usize,
}

/// The results of `records` whose tool is in `summarise` and that have no
/// `tool_summary` in `records`, in log order. A summary may sit anywhere after its
/// result, so the walk collects both before it filters.
pub(crate) fn pending(records: &[Record], summarise: &[String]) -> Vec<Unsummarised> {
    let mut done = HashSet::new();
    let mut queue = Vec::new();
    for record in records {
        match record {
            Record::ToolSummary { call, .. } => {
                done.insert(*call);
            }
            Record::ToolResult {
                call,
                tool_call_id,
                name,
                content,
                class,
                untrusted,
                ..
            } if summarise.iter().any(|n| n == name) => queue.push(Unsummarised {
                call: *call,
                tool_call_id: tool_call_id.clone(),
                name: name.clone(),
                content: content.clone(),
                class: *class,
                untrusted: *untrusted,
            }),
            Record::ToolResult { .. }
            | Record::User { .. }
            | Record::Assistant { .. }
            | Record::Usage { .. }
            | Record::Memory { .. }
            | Record::Note { .. }
            | Record::Forgotten { .. }
            | Record::Refused { .. }
            | Record::Allowed { .. } => {}
        }
    }
    queue.retain(|p| !done.contains(&p.call));
    queue
}

/// The summary request for `item`: `prefix` (the epoch's replayed prompt) plus one user
/// message, `prompt` + blank line + the result capped to `cap` characters. An untrusted
/// result is neutralised here as in the replay: it is tool text inside a user message,
/// and must not be able to close that message. No tools: the answer is prose.
pub(crate) fn request(
    prefix: &[Message],
    prompt: &str,
    item: &Unsummarised,
    cap: usize,
    slot: u32,
) -> ChatRequest {
    let result = cap_chars(&item.content, cap);
    let result = if item.untrusted {
        neutralise(result)
    } else {
        Cow::Borrowed(result)
    };
    let mut messages = prefix.to_vec();
    messages.push(Message::User {
        content: format!("{}\n\n{result}", prompt.trim_end()),
    });
    ChatRequest {
        slot,
        messages,
        tools: serde_json::Value::Null,
        thinking: THINKING,
    }
}

/// The `tool_summary` for `item` from the model's `answer`: trimmed, neutralised (the
/// model read untrusted text and may echo its tags), then capped to `summary_chars`.
/// Neutralising first keeps the cap a hard bound. `None` when nothing is left.
pub(crate) fn record(item: &Unsummarised, answer: &str, summary_chars: usize) -> Option<Record> {
    let text = neutralise(answer.trim());
    let text = cap_chars(&text, summary_chars);
    (!text.is_empty()).then(|| Record::ToolSummary {
        time: now_rfc3339(),
        call: item.call,
        tool_call_id: item.tool_call_id.clone(),
        content: text.to_string(),
        class: item.class,
        untrusted: item.untrusted,
    })
}

/// The slot summaries go to: `slots.background`, unless the compaction benchmark's
/// switch (a test hook, see `testhook`) says `main`.
pub fn slot(cfg: &Config) -> u32 {
    if crate::testhook::summaries_on_main() {
        cfg.slots.main
    } else {
        cfg.slots.background
    }
}

/// Makes the tool summary of every pending result of the session's epoch. A failed call
/// is logged and skipped; only a record that cannot be written is an error.
pub fn make(ctx: &TurnCtx<'_>, session: &mut Session) -> Result<Summarised, SessionError> {
    let queue = pending(session.records(), &ctx.cfg.compact.summarise);
    let mut out = Summarised::default();
    if queue.is_empty() {
        return Ok(out);
    }
    let prompt = match crate::prompts::read(ctx.cfg, crate::prompts::Prompt::Summarise) {
        Ok(p) => p,
        Err(e) => {
            plumbing::error!("session {}: tool summaries skipped: {e}", session.id());
            out.skipped = queue.len();
            return Ok(out);
        }
    };
    let prefix = prefix_of(session.head(), session.records(), ctx.cfg);
    let slot = slot(ctx.cfg);
    // The summary is written by a model that reads the whole epoch's prompt, not only the
    // result: it can repeat anything in it (an injected page can ask for exactly that).
    // So it carries the result's label joined with the context's, or a private fact
    // would come back out of memoryd as a public summary.
    let context = session.label(ctx.cfg.channel.owner_class);
    for mut item in queue {
        item.class = item.class.max(context.class);
        item.untrusted |= context.untrusted;
        let req = request(&prefix, &prompt, &item, ctx.cfg.turn.tool_result_cap, slot);
        let answer = match ctx.client.chat(&req, &mut |_| {}) {
            Ok(c) => {
                if let Some(t) = c.timings {
                    plumbing::info!(
                        "session {}: tool summary of call {} ({}) on slot {slot}: cache {} + prompt {} + predicted {} tokens",
                        session.id(),
                        item.call,
                        item.name,
                        t.cache_n,
                        t.prompt_n,
                        t.predicted_n
                    );
                }
                c.content.unwrap_or_default()
            }
            Err(e) => {
                plumbing::warn!(
                    "session {}: tool summary of call {} ({}) skipped: {e}",
                    session.id(),
                    item.call,
                    item.name
                );
                out.skipped += 1;
                continue;
            }
        };
        // Broken against the served model's own special tokens, not only the static
        // list: memoryd indexes the summary, and memory brings it into other sessions'
        // prompts (docs/turn.md, 'Memory in the turn').
        let answer = llama::tokenize::neutralise_for_model(ctx.client, &answer);
        match record(&item, &answer, ctx.cfg.compact.summary_chars) {
            Some(r) => {
                session.append(r)?;
                out.written += 1;
            }
            None => {
                plumbing::warn!(
                    "session {}: tool summary of call {} ({}) skipped: the model's answer was empty",
                    session.id(),
                    item.call,
                    item.name
                );
                out.skipped += 1;
            }
        }
    }
    Ok(out)
}

fn prefix_of(head: &Head, records: &[Record], cfg: &Config) -> Vec<Message> {
    replay::messages(head, records, cfg.turn.tool_result_cap)
}

#[cfg(test)]
mod tests;
