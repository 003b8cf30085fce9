//! A recall from both halves: the text index's ranking (bm25, see `index::recall`) and
//! the vector side's (cosine, see `embed`), fused by reciprocal rank fusion. Each list
//! gives a hit `weight / (RRF_K + rank)`; the sums decide, ties go to the newer record.
//! Rank fusion needs no calibration between bm25 and cosine, which have nothing in
//! common as numbers; the weights were chosen on `scripts/bench recall`'s sets.
//!
//! Exact tokens keep winning: when the query holds a token that reads as a code (a digit,
//! or `.`, `/`, `@`, `:`, `_`, `-` inside it: order numbers, addresses, file names, URLs),
//! the text hits that contain it come before everything else, in their own order, since
//! a vector of "ticket 4471" is near every ticket.

use crate::embed::store::Near;
use crate::embed::vectors::Vectors;
use crate::index::{class_rank, Index, IndexError};
use proto::label::DataClass;
use proto::memory::{Hit, MAX_HITS};
use std::collections::HashMap;

/// The rank offset of reciprocal rank fusion: 60, as in Cormack et al. and most
/// systems since; larger flattens the difference between the first ranks.
pub const RRF_K: f32 = 60.0;

/// How much a rank in the text list counts against the same rank in the vector list.
pub const LEXICAL_WEIGHT: f32 = 1.0;
pub const VECTOR_WEIGHT: f32 = 1.0;

/// Candidates taken from each half: enough that a hit ranked low by one half and high by
/// the other is still seen.
pub const CANDIDATES: u32 = MAX_HITS;

/// The best `limit` hits for `query`: both halves fused when the vector side is ready,
/// the text index alone otherwise.
pub fn recall(
    index: &Index,
    vectors: Option<&Vectors>,
    query: &str,
    max_class: DataClass,
    limit: u32,
) -> Result<Vec<Hit>, IndexError> {
    let Some(vectors) = vectors.filter(|v| v.ready()) else {
        return index.search(query, max_class, limit.min(MAX_HITS));
    };
    if limit == 0 || query.trim().is_empty() {
        return Ok(Vec::new());
    }
    let max_rank = u8::try_from(class_rank(max_class)).unwrap_or(0);
    let near = vectors.nearest(query, max_rank, CANDIDATES as usize);
    recall_with(index, &near, query, max_class, limit)
}

/// The fused recall given the vector side's rows nearest to `query` (best first).
pub fn recall_with(
    index: &Index,
    near: &[Near],
    query: &str,
    max_class: DataClass,
    limit: u32,
) -> Result<Vec<Hit>, IndexError> {
    let limit = limit.min(MAX_HITS);
    let lexical = index.search(query, max_class, CANDIDATES)?;
    let mut by_meaning = Vec::with_capacity(near.len());
    for n in near {
        // One row at a time (a cached statement), so each hit keeps its own similarity.
        for mut hit in index.hits_by_ids(&[n.id], max_class)? {
            hit.relevance = similarity(n.score);
            by_meaning.push(hit);
        }
    }
    Ok(fuse(query, lexical, by_meaning, limit as usize))
}

/// How the two rankings are weighed: `rrf_k` and each list's weight (see the constants).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    pub rrf_k: f32,
    pub lexical: f32,
    pub vector: f32,
}

/// The weights `Recall` uses.
pub const WEIGHTS: Weights = Weights {
    rrf_k: RRF_K,
    lexical: LEXICAL_WEIGHT,
    vector: VECTOR_WEIGHT,
};

/// Fuses two ranked lists of hits (best first) into at most `limit`, one hit per text.
pub fn fuse(query: &str, lexical: Vec<Hit>, by_meaning: Vec<Hit>, limit: usize) -> Vec<Hit> {
    fuse_with(WEIGHTS, query, lexical, by_meaning, limit)
}

/// `fuse` with other weights, for measuring them (`scripts/bench recall --sweep`).
pub fn fuse_with(
    w: Weights,
    query: &str,
    lexical: Vec<Hit>,
    by_meaning: Vec<Hit>,
    limit: usize,
) -> Vec<Hit> {
    let codes = code_tokens(query);
    // text -> (exact, score, hit, order first seen: text hits before meaning hits, each in
    // rank order, so equal scores and times still sort the same way every run)
    let mut fused: HashMap<String, (bool, f32, Hit, usize)> = HashMap::new();
    for (weight, list, from_text) in [(w.lexical, lexical, true), (w.vector, by_meaning, false)] {
        for (rank, hit) in list.into_iter().enumerate() {
            let score = weight / (w.rrf_k + rank as f32 + 1.0);
            let exact = from_text && contains_any(&hit.text, &codes);
            match fused.get_mut(&hit.text) {
                Some(entry) => {
                    entry.0 |= exact;
                    entry.1 += score;
                    entry.2.relevance = entry.2.relevance.max(hit.relevance);
                    // The same text logged twice is one hit: the newer one stands for it.
                    if hit.time > entry.2.time {
                        let relevance = entry.2.relevance;
                        entry.2 = hit;
                        entry.2.relevance = relevance;
                    }
                }
                None => {
                    let seen = fused.len();
                    fused.insert(hit.text.clone(), (exact, score, hit, seen));
                }
            }
        }
    }
    let mut out: Vec<(bool, f32, Hit, usize)> = fused.into_values().collect();
    out.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(b.1.total_cmp(&a.1))
            .then_with(|| b.2.time.cmp(&a.2.time))
            .then(a.3.cmp(&b.3))
    });
    out.into_iter().take(limit).map(|(_, _, h, _)| h).collect()
}

/// A cosine similarity as `Hit::relevance` (thousandths; nothing below zero).
fn similarity(cosine: f32) -> u16 {
    (cosine.clamp(0.0, 1.0) * f32::from(proto::memory::FULLY_RELEVANT)).round() as u16
}

/// The query's tokens that read as codes, lower-cased.
fn code_tokens(query: &str) -> Vec<String> {
    query
        .split_whitespace()
        .map(|t| t.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|t| {
            t.chars().any(|c| c.is_ascii_digit())
                || t.chars()
                    .any(|c| matches!(c, '.' | '/' | '@' | ':' | '_' | '-'))
        })
        .filter(|t| t.chars().any(char::is_alphanumeric))
        .map(str::to_lowercase)
        .collect()
}

fn contains_any(text: &str, codes: &[String]) -> bool {
    if codes.is_empty() {
        return false;
    }
    let text = text.to_lowercase();
    codes.iter().any(|c| text.contains(c.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::label::Label;

    fn hit(text: &str, time: &str) -> Hit {
        Hit {
            session: "main".into(),
            epoch: 0,
            time: time.into(),
            kind: "session".into(),
            role: "owner".into(),
            label: Label::new(DataClass::Private, false),
            text: text.into(),
            relevance: 0,
        }
    }

    fn texts(h: &[Hit]) -> Vec<&str> {
        h.iter().map(|h| h.text.as_str()).collect()
    }

    #[test]
    fn a_hit_both_halves_rank_beats_one_found_by_one_half() {
        let lex = vec![hit("a", "1"), hit("b", "1")];
        let vec = vec![hit("c", "1"), hit("b", "1")];
        assert_eq!(texts(&fuse("q", lex, vec, 3)), vec!["b", "a", "c"]);
    }

    #[test]
    fn exact_codes_from_the_text_side_come_first() {
        let lex = vec![hit("other ticket", "1"), hit("ticket 4471 is open", "1")];
        let vec = vec![hit("ticket 9 closed", "1"), hit("other ticket", "1")];
        let out = fuse("ticket 4471?", lex, vec, 3);
        assert_eq!(out[0].text, "ticket 4471 is open");
    }

    #[test]
    fn ties_go_to_the_newer_record_and_duplicates_are_one_hit() {
        let lex = vec![hit("old", "2026-01-01"), hit("dup", "2026-01-01")];
        let vec = vec![hit("new", "2026-02-01"), hit("dup", "2026-03-01")];
        let out = fuse("q", lex, vec, 5);
        assert_eq!(texts(&out), vec!["dup", "new", "old"]);
        assert_eq!(out[0].time, "2026-03-01");
    }
}
