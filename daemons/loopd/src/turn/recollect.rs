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
use proto::config::Memory;
use proto::memory::{hits_label, render_hits, Hit};
use proto::time::now_rfc3339;
use proto::Record;

/// The least `Hit::relevance` (thousandths) a hit needs to join a turn unasked: at least
/// half of the line's content words (or, found by meaning, a cosine similarity of 0.5).
/// Below it, hits share a word or two with the line by chance, and a small model takes
/// whatever it is shown as the topic. Measured with `scripts/bench remember`.
pub const RELEVANCE_FLOOR: u16 = 500;

/// Hits asked of memoryd per wanted hit: some come back already in the prompt or below
/// the floor, and are passed over.
const ASK_PER_HIT: u32 = 3;

/// What memory brought back for `line`, as the `memory` record to append after the
/// line's `user` record; `None` when nothing relevant and new was found, when memory in
/// the turn is off, or when memoryd could not be asked (a `loopd:` warning; the turn goes
/// on without it).
pub fn recollect(cfg: &Memory, session: &Session, line: &str) -> Option<Record> {
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
    let fresh = choose(hits, session, cfg.auto_hits as usize);
    if fresh.is_empty() {
        return None;
    }
    let label = hits_label(&fresh);
    plumbing::info!(
        "session {}: memory in the turn: {} hit{} brought back",
        session.id(),
        fresh.len(),
        if fresh.len() == 1 { "" } else { "s" }
    );
    Some(Record::Memory {
        time: now_rfc3339(),
        content: render_hits(&fresh),
        class: label.class,
        untrusted: label.untrusted,
    })
}

/// The hits worth bringing: relevant enough, not already in the epoch's prompt, at most
/// `max`, in memoryd's order.
pub fn choose(hits: Vec<Hit>, session: &Session, max: usize) -> Vec<Hit> {
    let prompt = PromptText::of(session);
    hits.into_iter()
        .filter(|h| h.relevance >= RELEVANCE_FLOOR)
        .filter(|h| !prompt.holds(&h.text))
        .take(max)
        .collect()
}

/// The text the epoch's prompt already holds: the carried summary and every record the
/// replay sends, so a hit the model can already read is not sent twice.
struct PromptText<'a> {
    parts: Vec<&'a str>,
}

impl<'a> PromptText<'a> {
    fn of(session: &'a Session) -> PromptText<'a> {
        let mut parts: Vec<&str> = Vec::new();
        if let Some(carry) = session.carry() {
            parts.push(carry);
        }
        for record in session.records() {
            match record {
                Record::User { content, .. } | Record::Memory { content, .. } => {
                    parts.push(content)
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
                | Record::Forgotten { .. } => {}
            }
        }
        PromptText { parts }
    }

    fn holds(&self, text: &str) -> bool {
        let text = text.trim();
        // The heading never stands for a hit: a record may quote it.
        !text.is_empty()
            && text != CARRY_HEADING
            && self.parts.iter().any(|part| part.contains(text))
    }
}

#[cfg(test)]
mod tests;
