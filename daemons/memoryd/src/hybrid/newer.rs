//! Newer tellings first (docs/memoryd.md, "Newer tellings first"): the last stage of a
//! recall with vectors. When the question asks about the present in so many words
//! ("now", "currently", "these days", "at the moment", "in the end": `about_now`), a hit
//! that tells the same thing as a hit ranked above it, and was said later, supersedes
//! it and takes its place: "The dog answers to Otis now" goes ahead of "we're
//! calling him Biscuit" for "What do we call the pup now?".
//!
//! Two hits tell the same thing when the newer holds every word of the question the
//! older holds (the same subject: "Ledgerly's finish date" is not "Lantern's"), their word
//! pieces are alike (`alike` at least `Newer::same`), and the newer answers the question
//! about as well, piece by piece, as the older (its match at most `Newer::slack` below,
//! as late interaction scores a match). The two trade places, and the hit now in the
//! older's place is looked at again, as a third telling may supersede the second.
//!
//! Only the hits asked for trade places (`Newer::reach`): the stage changes their
//! order, never which come back. Nothing else moves. A hit without stored pieces (the
//! backfill has not reached it) supersedes nothing and is superseded by nothing.

use super::{Calibration, Request, Seen, CANDIDATES};
use crate::embed::bits::{distance, Bits};
use crate::embed::late::Question;
use crate::embed::table;
use crate::embed::DIM;
use crate::index::{said, Index, IndexError};
use crate::query::{self, time, time::Span};
use proto::label::DataClass;
use proto::memory::Hit;
use std::collections::HashMap;

/// The stage's setting: `NEWER` in every recall, another for measuring
/// (`scripts/bench recall --sweep`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Newer {
    /// How alike two hits' word pieces must be to tell the same thing (`alike`, 0 to 1).
    pub same: f32,
    /// How far below the older hit's match with the question the newer's may be.
    pub slack: f32,
    /// How deep in the ranking a newer telling is looked for; at most the hits asked
    /// for are reordered, the rest are not looked at (0: only those).
    pub reach: usize,
}

/// The setting every recall uses, measured on the synthetic year
/// (docs/measurements/memoryd.md, "Newer tellings first"). `same` 0.3: of sign-coded
/// pieces, unrelated turns stand at 0.1 to 0.2 and a turn naming the same friend at 0.25
/// to 0.35; a later telling of the same fact at 0.22 to 0.65 (the model's sentence
/// vectors do not tell the two apart better: a move and a lunch with the same friend are
/// about as near to where she lived). `slack` 0.05: a later telling says the new value in other words, so it
/// matches the question a little less well than the first telling ("moved to Bologna"
/// against "lives in Valencia" for "where does Farah live now"). `reach` 0: only the
/// hits asked for trade places, so the stage never changes which hits come back. Looking
/// 30 deep lost updates at 10 at both sizes: later chatter naming the same friend took
/// the latest telling's own place.
pub const NEWER: Newer = Newer {
    same: 0.3,
    slack: 0.05,
    reach: 0,
};

/// The stage left out: the ranking as late interaction left it.
pub const OFF: Newer = Newer {
    same: f32::INFINITY,
    slack: 0.0,
    reach: 0,
};

/// Words that ask about the present on their own.
const NOW: &[&str] = &[
    "now",
    "currently",
    "current",
    "nowadays",
    "presently",
    "latest",
    "anymore",
];

/// Runs of words that do. "in the end", not "the end": "towards the end of summer" names a
/// time, not the present.
const NOW_PHRASES: &[&[&str]] = &[
    &["these", "days"],
    &["at", "the", "moment"],
    &["at", "present"],
    &["in", "the", "end"],
    &["end", "up"],
    &["ended", "up"],
];

/// Runs of words that ask how long something has lasted: answered by the telling of when
/// it began, which a later telling of the same thing does not supersede ("How long has
/// Caroline had her current group of friends?").
const SINCE: &[&[&str]] = &[&["how", "long"], &["since", "when"]];

fn holds_run(words: &[String], runs: &[&[&str]]) -> bool {
    runs.iter().any(|run| {
        words
            .windows(run.len())
            .any(|w| w.iter().zip(*run).all(|(a, b)| a == b))
    })
}

/// Whether the question asks about the present in so many words (`NOW`, `NOW_PHRASES`),
/// not how long it has lasted (`SINCE`), and names no time (`span`): then of two tellings
/// of one thing, the later is the answer.
/// A question without such words may ask about any time ("Where did Ines settle?" is
/// answered by the telling, not by a later turn that names her), and the ranking stands.
pub fn about_now(query: &str, span: Option<&Span>) -> bool {
    if span.is_some() {
        return false;
    }
    let words = query::words(query);
    (words.iter().any(|w| NOW.contains(&w.as_str())) || holds_run(&words, NOW_PHRASES))
        && !holds_run(&words, SINCE)
}

/// `recall_calibrated` with newer tellings first as `newer` says, for measuring the
/// stage (`scripts/bench recall --sweep`).
#[allow(clippy::too_many_arguments)]
pub fn recall_newer(
    cal: Calibration,
    newer: Newer,
    index: &Index,
    seen: Seen<'_>,
    query: &str,
    max_class: DataClass,
    limit: u32,
    now: time::Day,
) -> Result<Vec<Hit>, IndexError> {
    let lexical = index.search_words(query, max_class, CANDIDATES, now)?;
    let request = Request {
        query,
        max_class,
        limit,
        now,
    };
    super::fuse(cal, newer, index, lexical, seen, request)
}

/// Each candidate's row id by what it says, as late interaction returns hits without
/// their ids.
pub(super) struct Ids(HashMap<(String, String), i64>);

impl Ids {
    /// The ids of the merge's candidates and each half's own.
    pub(super) fn new(fused: &[(i64, Hit)], others: &[(i64, Hit)]) -> Ids {
        Ids(fused
            .iter()
            .chain(others)
            .map(|(id, h)| (said(h), *id))
            .collect())
    }

    /// `hits` with their ids (every candidate has one).
    pub(super) fn of(&self, hits: Vec<Hit>) -> Vec<(i64, Hit)> {
        hits.into_iter()
            .filter_map(|h| self.0.get(&said(&h)).map(|&id| (id, h)))
            .collect()
    }
}

/// What the stage knows of one hit: its time, the question's groups it holds, its pieces
/// and their match with the question.
struct Told {
    when: i64,
    held: u32,
    pieces: Vec<Bits>,
    matched: f32,
}

/// The first `limit` of `ranked` (best first, each with its row id), each later telling
/// in the place of the earlier one it supersedes.
pub(super) fn newer_first(
    newer: Newer,
    index: &Index,
    question: &Question,
    query: &str,
    span: Option<&Span>,
    mut ranked: Vec<(i64, Hit)>,
    limit: usize,
) -> Result<Vec<Hit>, IndexError> {
    let parsed = query::parse(query);
    if !newer.same.is_finite() || question.is_empty() || !about_now(query, span) {
        ranked.truncate(limit);
        return Ok(ranked.into_iter().map(|(_, h)| h).collect());
    }
    let Some(parsed) = parsed else {
        ranked.truncate(limit);
        return Ok(ranked.into_iter().map(|(_, h)| h).collect());
    };
    ranked.truncate(newer.reach.max(limit));
    let mut told: HashMap<i64, Option<Told>> = HashMap::new();
    for (id, hit) in &ranked {
        let t = match (
            proto::time::unix_millis(&hit.time),
            table::pieces(index.conn(), *id).map_err(|e| index.sql_error(e))?,
        ) {
            (Some(when), Some(pieces)) if !pieces.is_empty() => {
                let best = question.best(&pieces);
                Some(Told {
                    when,
                    held: parsed.coverage_of(&query::words(&hit.text)).held,
                    matched: best.iter().sum::<f32>() / best.len().max(1) as f32,
                    pieces,
                })
            }
            _ => None,
        };
        told.insert(*id, t);
    }
    // Each pair's likeness is counted once: a place is looked at again after each swap,
    // and the same later hits are weighed against the same earlier ones.
    let mut likeness: HashMap<(i64, i64), f32> = HashMap::new();
    let mut supersedes = |old_id: i64, old: &Told, new_id: i64, new: &Told| {
        new.when > old.when
            && new.held & old.held == old.held
            && new.matched >= old.matched - newer.slack
            && *likeness
                .entry((old_id, new_id))
                .or_insert_with(|| alike(&old.pieces, &new.pieces))
                >= newer.same
    };
    let mut at = 0;
    while at < limit.min(ranked.len()) {
        let old_id = ranked[at].0;
        let Some(Some(old)) = told.get(&old_id) else {
            at += 1;
            continue;
        };
        // The latest of the later hits superseding this one takes its place; then look
        // again from there.
        let latest = ranked
            .iter()
            .enumerate()
            .skip(at + 1)
            .filter_map(|(j, (id, _))| match told.get(id) {
                Some(Some(new)) if supersedes(old_id, old, *id, new) => Some((j, new.when)),
                _ => None,
            })
            .max_by_key(|&(j, when)| (when, std::cmp::Reverse(j)));
        match latest {
            Some((j, _)) => ranked.swap(at, j),
            None => at += 1,
        }
    }
    ranked.truncate(limit);
    Ok(ranked.into_iter().map(|(_, h)| h).collect())
}

/// How alike two records' pieces are, 0 to 1: each piece's best match among the other's
/// (the cosine of their signs), averaged over its record, the two directions' harmonic
/// mean, as late interaction matches a question's pieces against a record's.
pub fn alike(a: &[Bits], b: &[Bits]) -> f32 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let one_way = |x: &[Bits], y: &[Bits]| -> f32 {
        let sum: f32 = x
            .iter()
            .map(|p| {
                let d = y.iter().map(|q| distance(p, q)).min().unwrap_or(DIM as u32);
                1.0 - 2.0 * d as f32 / DIM as f32
            })
            .sum();
        sum / x.len() as f32
    };
    let (p, r) = (one_way(a, b), one_way(b, a));
    if p + r <= 0.0 {
        0.0
    } else {
        2.0 * p * r / (p + r)
    }
}

#[cfg(test)]
mod tests;
