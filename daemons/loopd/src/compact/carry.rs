//! The summary a new epoch carries (SPEC §4 step 2): one completion on `slots.main` of
//! the epoch's prompt plus `compact.md`, or, when that call is itself context-full, the
//! fallback of the epoch's user texts.
//!
//! The request sends the epoch's frozen tool schemas, exactly as the epoch's turns did.
//! llama.cpp caches the *rendered* prompt, and a chat template that supports tools
//! renders them near the top (inside or right after the system message); leaving them out
//! would change the prefix and make the server re-read the whole epoch. With them, the
//! summary call re-reads only `compact.md`. The model may in principle answer with a
//! tool call; its calls are ignored and only its text is the summary.

use super::policy::fallback_summary;
use super::CompactError;
use crate::llama::{ChatRequest, LlamaError, Message};
use crate::prompt::cap_chars;
use crate::prompt::{replay, TurnCtx, THINKING};
use crate::session::Session;
use proto::head::{Head, SummarySource};
use proto::{neutralise, Record};

/// The summary request: the replayed epoch plus one user message holding `prompt`.
pub fn request(
    head: &Head,
    records: &[Record],
    cap: usize,
    prompt: &str,
    slot: u32,
) -> ChatRequest {
    let mut messages = replay::messages(head, records, cap);
    messages.push(Message::User {
        content: prompt.trim_end().to_string(),
    });
    ChatRequest {
        slot,
        messages,
        tools: head.tools.clone(),
        thinking: THINKING,
    }
}

/// The carry from the model's answer: trimmed, neutralised (it may quote tool output),
/// then capped to `summary_chars`, so the cap is a hard bound on what the head holds.
pub fn carry_text(answer: &str, summary_chars: usize) -> String {
    cap_chars(&neutralise(answer.trim()), summary_chars).to_string()
}

/// Makes the carry: the summary of the session's epoch, and where it came from.
pub fn make(ctx: &TurnCtx<'_>, session: &Session) -> Result<(String, SummarySource), CompactError> {
    let path = ctx.cfg.prompt_path("compact.md");
    let prompt = plumbing::bounded::read_text(&path, crate::MAX_PROMPT_BYTES)
        .map_err(|source| CompactError::Prompt { path, source })?;
    let cfg = ctx.cfg;
    let req = request(
        session.head(),
        session.records(),
        cfg.turn.tool_result_cap,
        &prompt,
        cfg.slots.main,
    );
    match ctx.client.chat(&req, &mut |_| {}) {
        Ok(c) => {
            if let Some(t) = c.timings {
                plumbing::info!(
                    "session {}: summary of epoch {} on slot {}: cache {} + prompt {} + predicted {} tokens",
                    session.id(),
                    session.epoch(),
                    cfg.slots.main,
                    t.cache_n,
                    t.prompt_n,
                    t.predicted_n
                );
            }
            let text = carry_text(
                c.content.as_deref().unwrap_or(""),
                cfg.compact.summary_chars,
            );
            if text.is_empty() {
                return Err(CompactError::EmptySummary);
            }
            Ok((text, SummarySource::Model))
        }
        Err(LlamaError::ContextFull(m)) => {
            plumbing::info!(
                "session {}: the summary call for epoch {} is context-full ({m}); carrying the owner's messages instead",
                session.id(),
                session.epoch()
            );
            let text = fallback_summary(session.records(), cfg.compact.summary_chars);
            Ok((text, SummarySource::Fallback))
        }
        Err(e) => Err(CompactError::Summary(e)),
    }
}

#[cfg(test)]
mod tests;
