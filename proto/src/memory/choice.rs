//! Which recalled hits memory in the turn brings unasked (docs/turn.md, 'Memory in the
//! turn'): loopd's choice, here so that `scripts/bench recall --asked` measures the very
//! rule loopd runs.
//!
//! memoryd's ranking says *which* hits and in what order; the relevance floor says
//! *whether* the line is about something memory holds. So the turn brings memoryd's first
//! hits (those not already in the prompt) when at least one of them reaches the floor,
//! and nothing otherwise. A hit below the floor rides along with one above it: a turn
//! that answers a question is often one that shares few of its words ("we painted a
//! sunset" for "what did Mel and her kids paint in their latest project?"), and
//! memoryd ranked it there for the words around it, its meaning, its time. Untrusted
//! text is the exception: what a fetched page wrote joins a turn only on its own
//! relevance, never riding along with the owner's.

use super::Hit;

/// The least `Hit::relevance` (thousandths) that makes a line about something memory
/// holds: at least half of the line's content words (or, found by meaning, a cosine
/// similarity of 0.5) in one of the hits brought. Below it, hits share a word or two with
/// the line by chance, and a small model takes whatever it is shown as the topic.
/// Measured with `scripts/bench remember`.
pub const RELEVANCE_FLOOR: u16 = 500;

/// Whether `hit` may be brought at all: trusted, or relevant enough on its own.
pub fn may_come(hit: &Hit) -> bool {
    !hit.label.untrusted || hit.relevance >= RELEVANCE_FLOOR
}

/// Whether hits chosen in memoryd's order are worth bringing together: one of them
/// reaches the floor.
pub fn worth_bringing(chosen: &[&Hit]) -> bool {
    chosen.iter().any(|h| h.relevance >= RELEVANCE_FLOOR)
}

/// The places in `hits` (memoryd's order, none already in the prompt) of the hits memory
/// in the turn brings, at most `max`: the first that may come, when they are worth
/// bringing.
pub fn choose(hits: &[Hit], max: usize) -> Vec<usize> {
    choose_at(hits, max, RELEVANCE_FLOOR)
}

/// `choose` with `floor` in the place of `RELEVANCE_FLOOR` for the set, untrusted hits
/// still needing `RELEVANCE_FLOOR` on their own: how `scripts/bench recall --asked`
/// weighs what another floor would bring against what it would bring by chance.
pub fn choose_at(hits: &[Hit], max: usize, floor: u16) -> Vec<usize> {
    let chosen: Vec<usize> = hits
        .iter()
        .enumerate()
        .filter(|(_, h)| may_come(h))
        .map(|(i, _)| i)
        .take(max)
        .collect();
    if chosen.iter().any(|&i| hits[i].relevance >= floor) {
        chosen
    } else {
        Vec::new()
    }
}
