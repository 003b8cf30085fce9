//! The summary a new epoch carries (docs/turn.md, 'Compaction'): one completion on `slots.main` of
//! the epoch's prompt plus `compact.md`, or, when that call is itself context-full, the
//! fallback of the epoch's user texts.
//!
//! The request sends the epoch's frozen tool schemas, exactly as the epoch's turns did.
//! llama.cpp caches the *rendered* prompt, and a chat template that supports tools
//! renders them near the top (inside or right after the system message); leaving them out
//! would change the prefix and make the server re-read the whole epoch. With them, the
//! summary call re-reads only `compact.md`. The model may in principle answer with a
//! tool call; its calls are ignored and only its text is the summary.

use super::policy::{fallback_summary, keeping_carry, repeats};
use super::CompactError;
use crate::open_session::Session;
use crate::prompt::{cap_chars, cap_chars_from_end};
use crate::prompt::{replay, TurnCtx, THINKING};
use llama::{ChatRequest, LlamaError, Message};
use proto::head::{Head, Reason, SummarySource};
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
pub(crate) fn carry_text(answer: &str, summary_chars: usize) -> String {
    cap_chars(&neutralise(answer.trim()), summary_chars).to_string()
}

/// Makes the carry: the summary of the session's epoch, where it came from, and, when
/// the fallback stands in for the model's summary, why (for the epoch's `note`).
/// `reason` decides what a server refusal does (below).
pub fn make(
    ctx: &TurnCtx<'_>,
    session: &Session,
    reason: Reason,
) -> Result<(String, SummarySource, Option<String>), CompactError> {
    let prompt = crate::prompts::read(ctx.cfg, crate::prompts::Prompt::Compact).map_err(
        |crate::prompts::PromptError { path, source }| CompactError::Prompt { path, source },
    )?;
    let cfg = ctx.cfg;
    let req = request(
        session.head(),
        session.records(),
        cfg.turn.tool_result_cap,
        &prompt,
        cfg.slots.main,
    );
    // `keep_carry`: the epoch's own carry stays, whole, before the owner's lines
    // (`policy::keeping_carry`).
    let fallback = |why: String, keep_carry: bool| {
        plumbing::warn!(
            "session {}: {why}; epoch {} carries the owner's messages instead",
            session.id(),
            session.epoch()
        );
        // The owner's own lines, but a carry all the same: replayed at the head of every
        // prompt of the next epoch, so broken against special tokens as a model summary
        // is (docs/turn.md, 'Compaction'), then cut again from the start, keeping the
        // newest, since breaking a token lengthens the text. A kept carry was broken
        // when it was made.
        let lines = fallback_summary(session.records(), cfg.compact.summary_chars);
        let lines = llama::tokenize::neutralise_for_model(ctx.client, &neutralise(&lines));
        let text = match session.carry().filter(|_| keep_carry) {
            Some(carry) => keeping_carry(carry, &lines, cfg.compact.summary_chars),
            None => cap_chars_from_end(&lines, cfg.compact.summary_chars).to_string(),
        };
        (text, SummarySource::Fallback, Some(why))
    };
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
            let answer = c.content.as_deref().unwrap_or("");
            // A summary that stopped at the token limit or loops lost the conversation;
            // carrying it would lose the owner's facts for good.
            if c.cut() {
                return Ok(fallback(
                    "the model's summary was cut at the server's token limit".into(),
                    false,
                ));
            }
            if repeats(answer) {
                return Ok(fallback("the model's summary repeats itself".into(), false));
            }
            // Broken against the served model's own special tokens too: the carry is
            // replayed at the head of every prompt of the next epoch (docs/turn.md).
            let answer = llama::tokenize::neutralise_for_model(ctx.client, answer);
            let text = carry_text(&answer, cfg.compact.summary_chars);
            if text.is_empty() {
                // The owner's `/compact` is the way out of a wedged session, so it always
                // makes an epoch: a model that answers the summary request with a tool
                // call only, or with blanks, would otherwise refuse it every time. A
                // compaction loopd started itself fails, and the next turn tries again.
                if reason == Reason::Manual {
                    return Ok(fallback("the model's summary was empty".into(), true));
                }
                return Err(CompactError::EmptySummary);
            }
            Ok((text, SummarySource::Model, None))
        }
        Err(LlamaError::ContextFull(m)) => Ok(fallback(
            format!("the summary call is context-full ({m})"),
            false,
        )),
        // The owner's `/compact` on a history the server cannot take (llama.cpp answers
        // 500 when rendering or parsing it fails): asking again would fail the same way,
        // and a fresh epoch is the owner's way out of a wedged session, so the summary is
        // made without the model. A compaction loopd started itself fails instead (a
        // note, an error line, no new epoch; the next turn tries again), and the failed
        // turns tell the owner to `/compact`. A 4xx is a request the server calls
        // malformed: a failure, as any other.
        Err(e @ LlamaError::Refused { status: 500.., .. }) if reason == Reason::Manual => Ok(
            fallback(format!("the server refused the summary call: {e}"), true),
        ),
        Err(e) => Err(CompactError::Summary(e)),
    }
}

#[cfg(test)]
mod tests;
