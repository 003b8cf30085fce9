//! Memory in the turn (docs/turn.md, "Memory in the turn"): before a turn's first model
//! call, memoryd is asked with the owner's line, and the hits that are relevant enough
//! and not already in the epoch's prompt become one `memory` record right after the
//! `user` record. Small local models rarely call `recall` themselves; without this, what
//! compaction moved out of the prompt would never come back.
//!
//! The recall runs before the `user` record is written, so memoryd (which catches up on
//! the logs before every recall) cannot answer the owner's line with itself.

use crate::open_session::Session;
use crate::prompt::replay::CARRY_HEADING;
use crate::prompt::TurnCtx;
use llama::tokenize::{estimate_tokens, neutralise_for_model, tokens_of};
use proto::memory::{clip_to_passage, hits_label, may_come, render_hits, worth_bringing, Hit};
use proto::time::now_rfc3339;
use proto::Record;

/// Hits asked of memoryd per wanted hit: some come back already in the prompt, or
/// untrusted and below the floor, and are passed over.
const ASK_PER_HIT: u32 = 3;

/// The share of `expect.n_ctx` the whole memory record may take at most: memory is a
/// reminder beside the conversation, never the bulk of the prompt (docs/turn.md,
/// 'Memory in the turn').
pub(crate) const CONTEXT_SHARE: u64 = 8;

/// Tokens the chat template spends around the memory message (its role markers) and
/// its `From memory:` heading, plus one per join between hits, which a count of the
/// hits one by one does not see.
const MESSAGE_OVERHEAD: u64 = 16;

/// Tokens kept free for the model's answer when deciding whether the prompt with memory
/// still fits below the compaction threshold, as a share of `expect.n_ctx`: an answer
/// that would push the epoch over is the conversation's, not memory's.
const ANSWER_SHARE: u64 = 16;

/// What memory brought into a turn: the `memory` record and, for the owner's `· ` line,
/// where each hit came from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Recollection {
    pub record: Record,
    /// Each hit's session and day (`YYYY-MM-DD`), in the record's order.
    pub(crate) sources: Vec<(String, String)>,
}

impl Recollection {
    /// The owner's `· ` line (without the marker): `from memory: 2 passages, session main
    /// 2026-11-30, session trip 2026-10-02`; the same session and day once.
    pub fn line(&self) -> String {
        let n = self.sources.len();
        let mut seen: Vec<&(String, String)> = Vec::new();
        for s in &self.sources {
            if !seen.contains(&s) {
                seen.push(s);
            }
        }
        let places: Vec<String> = seen
            .iter()
            .map(|(session, day)| format!("session {session} {day}"))
            .collect();
        format!(
            "from memory: {n} passage{}, {}",
            if n == 1 { "" } else { "s" },
            places.join(", ")
        )
    }
}

/// What memory brought back for `line`, as the `memory` record to append after the
/// line's `user` record; `None` when nothing relevant and new was found, when memory in
/// the turn is off, when nothing found fits the prompt, or when memoryd could not be
/// asked (a `loopd:` warning; the turn goes on without it).
pub(crate) fn recollect(ctx: &TurnCtx<'_>, session: &Session, line: &str) -> Option<Recollection> {
    let cfg = &ctx.cfg.memory;
    if !cfg.auto_recall || cfg.auto_hits == 0 || line.trim().is_empty() {
        return None;
    }
    let hits =
        match crate::memory::recall_at_most(cfg, line, cfg.auto_hits.saturating_mul(ASK_PER_HIT)) {
            Ok(hits) => hits,
            Err(e) => {
                plumbing::warn!(
                    "session {}: memory in the turn: {e}; the turn goes on without it",
                    session.id()
                );
                return None;
            }
        };
    // The owner's line itself, said before (a line run again in a new epoch after the
    // context ran out, whose first `user` record memoryd has indexed by now, or the same
    // question asked again): the model reads it in the line already.
    let hits: Vec<Hit> = hits.into_iter().filter(|h| !is_the_line(h, line)).collect();
    let passage = |mut hit: Hit| {
        clip_to_passage(&mut hit, line, cfg.hit_chars as usize);
        let text = render_hits(std::slice::from_ref(&hit));
        (hit, text)
    };
    let for_model = |text: String| neutralise_for_model(ctx.client, &text);
    let fresh = choose_by(hits, session, cfg.auto_hits as usize, passage, for_model);
    if fresh.is_empty() {
        return None;
    }
    let budget = budget(ctx, session, line);
    let fitted = fit(ctx, fresh, budget);
    if fitted.is_empty() {
        plumbing::info!(
            "session {}: memory in the turn: relevant hits found, none fits the {budget} tokens the prompt has room for",
            session.id()
        );
        return None;
    }
    let hits: Vec<Hit> = fitted.iter().map(|(h, _)| h.clone()).collect();
    let label = hits_label(&hits);
    plumbing::info!(
        "session {}: memory in the turn: {} hit{} brought back",
        session.id(),
        hits.len(),
        if hits.len() == 1 { "" } else { "s" }
    );
    let content: Vec<String> = fitted.into_iter().map(|(_, text)| text).collect();
    Some(Recollection {
        record: Record::Memory {
            time: now_rfc3339(),
            content: content.join("\n"),
            class: label.class,
            untrusted: label.untrusted,
        },
        sources: hits
            .iter()
            .map(|h| (h.session.clone(), day_of(&h.time).to_string()))
            .collect(),
    })
}

/// Whether `hit` is the owner's `line` itself, as said before.
fn is_the_line(hit: &Hit, line: &str) -> bool {
    hit.role == "owner" && hit.text.trim() == line.trim()
}

/// The date part of an RFC 3339 time, or the whole text when it has none.
fn day_of(time: &str) -> &str {
    time.get(..10).unwrap_or(time)
}

/// The tokens the memory record may take: an eighth of `expect.n_ctx`, and no more than
/// leaves the prompt (what the epoch holds, the owner's line, room for an answer) below
/// the compaction threshold, so memory never makes a turn compact or run out of context.
pub(crate) fn budget(ctx: &TurnCtx<'_>, session: &Session, line: &str) -> u64 {
    let n_ctx = ctx.cfg.expect.n_ctx;
    let share = n_ctx / CONTEXT_SHARE;
    let limit = (ctx.cfg.compact.threshold * n_ctx as f64).floor() as u64;
    let held = match session.last_usage() {
        Some(t) => t
            .cache_n
            .saturating_add(t.prompt_n)
            .saturating_add(t.predicted_n),
        // A fresh epoch: its head (system, tools, carry), counted at the safe rate.
        None => {
            let head = session.head();
            estimate_tokens(&head.system)
                .saturating_add(estimate_tokens(&head.tools.to_string()))
                .saturating_add(session.carry().map(estimate_tokens).unwrap_or(0))
        }
    };
    let used = held
        .saturating_add(estimate_tokens(line))
        .saturating_add(n_ctx / ANSWER_SHARE)
        .saturating_add(MESSAGE_OVERHEAD);
    share.min(limit.saturating_sub(used))
}

/// The chosen passages, in memoryd's order, kept while the total fits in `budget` tokens
/// (counted by the server, or at the safe rate when it cannot be asked); a passage that
/// does not fit is passed over for a smaller one after it.
fn fit(ctx: &TurnCtx<'_>, passages: Vec<(Hit, String)>, budget: u64) -> Vec<(Hit, String)> {
    let mut kept = Vec::new();
    let mut used = MESSAGE_OVERHEAD;
    for (hit, text) in passages {
        let tokens = tokens_of(ctx.client, &text).saturating_add(1);
        if used.saturating_add(tokens) <= budget {
            used += tokens;
            kept.push((hit, text));
        }
    }
    kept
}

/// The hits worth bringing, each as `passage` makes it (clipped to the passage around what
/// matched, rendered as the memory record will hold it) and `for_model` makes it ready for
/// the model (neutralised against the served model's own special tokens, which asks the
/// server): memoryd's first `max` hits that are neither the record nor that passage
/// already in the epoch's prompt and that may come (`proto::memory::may_come`: untrusted
/// text needs the floor on its own), when one of them reaches the relevance floor
/// (`proto::memory::worth_bringing`); none otherwise. memoryd's ranking says which, the
/// floor says whether (docs/turn.md, 'Memory in the turn'). The passage is checked as
/// rendered because that is the form an earlier memory record holds it in: a clipped or
/// multi-line hit never equals its record's whole text, so checking the text alone would
/// bring the same passage back on every turn that asks for it, growing the epoch until
/// memory itself made it compact.
///
/// `for_model` is asked only for a passage not already in an earlier memory record. A
/// passage inside one is ready as it is: that record was neutralised when it was
/// written, every span the server read as special in it broken, so a passage within it
/// holds none and `for_model` would hand it back unchanged, already in the prompt. Most
/// lines find the passages an earlier line brought, and asking the server about each was
/// most of what memory in the turn cost loopd (docs/turn.md, 'Memory in the turn').
pub fn choose_by(
    hits: Vec<Hit>,
    session: &Session,
    max: usize,
    mut passage: impl FnMut(Hit) -> (Hit, String),
    mut for_model: impl FnMut(String) -> String,
) -> Vec<(Hit, String)> {
    let prompt = PromptText::of(session);
    let chosen: Vec<(Hit, String)> = hits
        .into_iter()
        .filter(may_come)
        .filter(|h| !prompt.holds(&h.text))
        .filter_map(|h| {
            let (hit, text) = passage(h);
            if prompt.in_memory(&text) {
                return None;
            }
            let text = for_model(text);
            (!prompt.holds(&text)).then_some((hit, text))
        })
        .take(max)
        .collect();
    let hits: Vec<&Hit> = chosen.iter().map(|(h, _)| h).collect();
    if worth_bringing(&hits) {
        chosen
    } else {
        Vec::new()
    }
}

/// The text the epoch's prompt already holds: the carried summary and every record the
/// replay sends, so a hit the model can already read is not sent twice.
struct PromptText<'a> {
    parts: Vec<&'a str>,
    /// The contents of the epoch's `memory` records (also in `parts`).
    memory: Vec<&'a str>,
}

impl<'a> PromptText<'a> {
    fn of(session: &'a Session) -> PromptText<'a> {
        let mut parts: Vec<&str> = Vec::new();
        let mut memory: Vec<&str> = Vec::new();
        if let Some(carry) = session.carry() {
            parts.push(carry);
        }
        for record in session.records() {
            match record {
                Record::User { content, .. } => parts.push(content),
                Record::Memory { content, .. } => {
                    parts.push(content);
                    memory.push(content);
                }
                Record::Assistant {
                    content: Some(content),
                    ..
                } => parts.push(content),
                Record::ToolResult { content, .. } => parts.push(content),
                Record::Assistant { content: None, .. }
                | Record::ToolSummary { .. }
                | Record::Usage { .. }
                | Record::Note { .. }
                | Record::Forgotten { .. }
                | Record::Refused { .. }
                | Record::Allowed { .. } => {}
            }
        }
        PromptText { parts, memory }
    }

    fn holds(&self, text: &str) -> bool {
        held_in(&self.parts, text)
    }

    /// Whether an earlier `memory` record holds `text`.
    fn in_memory(&self, text: &str) -> bool {
        held_in(&self.memory, text)
    }
}

/// Whether one of `parts` holds `text` (trimmed).
fn held_in(parts: &[&str], text: &str) -> bool {
    let text = text.trim();
    // The heading never stands for a hit: a record may quote it.
    if text.is_empty() || text == CARRY_HEADING {
        return false;
    }
    // A part shorter than the text cannot hold it; asking each would set up a search
    // for the whole text every time, and a hit is up to a row's 32 KiB. Nor can a part
    // without the text's first bytes: a search for those is set up in a few steps, one
    // for the whole passage in as many as it has bytes, for every earlier memory record
    // (docs/turn.md, 'Memory in the turn').
    let head = &text[..floor_char_boundary(text, HEAD_BYTES)];
    parts
        .iter()
        .any(|part| part.len() >= text.len() && part.contains(head) && part.contains(text))
}

/// Bytes of a text looked for first in each part (`held_in`): a rendered hit's header
/// (`memory · session …` and its time, some 55 bytes) and the first of who said it,
/// which most records of other hits do not hold.
const HEAD_BYTES: usize = 64;

/// The largest character boundary of `text` at or below `at`.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests;
