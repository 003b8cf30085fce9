//! Late interaction over the merged candidates (docs/memoryd.md, 'Late interaction'):
//! the last stage of a recall with vectors. The merge (`hybrid::merge`) orders every
//! candidate the two halves found; this stage scores each by how well the question's
//! pieces match the pieces of the candidate's turn and of the turns around it
//! (`embed::late`), and returns the best.
//!
//! A candidate's score is the sum of three parts:
//! - its *match*: for each question piece, the best cosine among the candidate's own
//!   pieces, or `NEIGHBOUR` times the best among its neighbouring turns' (`ANSWERED`
//!   times for the turn just before it: the answer "Yes! It was amazing" is matched
//!   through the question it answers), averaged over the question's pieces;
//! - its place: `FUSED / (FUSED_RANK + place)`, for the better of its place in the
//!   merge, so what words and meaning agreed on keeps a head start (names, time cues and
//!   rare words all weigh there), and its place among the vector side's own nearest
//!   (times `own_slots`: `hybrid::Calibration::own_slots` weighed by how common what
//!   the words' first hit holds is), so the words half cannot push the nearest in
//!   meaning back by filling the merge with records that share only a common word with
//!   the question;
//! - how far its sentence vector stands above the question's background, times
//!   `COSINE` (a paraphrase in a varied history);
//!
//! and the sum counts `IN_SPAN` times for a candidate from the time the question names,
//! and `QUESTION` of itself for a record that is only a question (asking again is not an
//! answer). When the words found little of the question in a history holding nothing
//! near it (`hybrid::Calibration::little`), the match counts nothing (`match_weight`)
//! and the places decide (docs/memoryd.md, "When the words found little").
//!
//! Exact codes keep winning: the candidates holding a code of the question (`codes`)
//! come first in the merge's order, as the merge puts them, those saying something
//! before an owner's earlier asking; then the words' first hit when it holds every
//! group of the question, which nothing found by meaning passes. When any candidate has
//! no pieces stored (the backfill has not reached it), the merge's order is kept: a row
//! without pieces cannot be weighed against rows with them.
//!
//! The last pick: a candidate saying what a better one already says, in nearly the same
//! words, goes after those saying something else (`distinct`; docs/memoryd.md, "Hits
//! that say something else").

use super::codes::Codes;
use super::distinct::{self, Distinct};
use crate::embed::bits::Bits;
use crate::embed::late::Question;
use crate::embed::table;
use crate::index::{said, Index, IndexError};
use crate::query::time::Span;
use proto::label::DataClass;
use proto::memory::Hit;
use std::collections::{HashMap, HashSet};

/// What a neighbouring turn's match counts beside the candidate's own: below one, so a
/// turn that holds what is asked ranks above the turn next to it. Measured on LoCoMo and
/// our sets (docs/measurements/memoryd.md, 'Late interaction'): 0.7 loses the answers a
/// neighbour's question finds; 0.9 for every neighbour lifts the turns around an answer
/// past it (the turn just before counts `ANSWERED`).
pub const NEIGHBOUR: f32 = 0.8;

/// What the turn just before a candidate counts instead: a reply answers the turn before
/// it ("Yes! It was amazing" after "How was the trip?"), where the turns after it and
/// two away only talk on. Still below one, so the question itself ranks above its
/// answer on the question's own pieces. Measured on LoCoMo and our sets
/// (docs/measurements/memoryd.md, 'Late interaction'): 0.85 and 0.875 leave LoCoMo's
/// adversarial questions behind fluctlightdb's, 0.95 costs multi-hop and open-domain.
pub const ANSWERED: f32 = 0.9;

/// What the score of a record that is only a question counts: an owner's earlier
/// question holds every piece of the question asked again, and is as near in meaning.
/// As the words' ranking counts it (`index::rank::QUESTION_WEIGHT`); 0.5 measured the
/// same on LoCoMo and on questions asked in sequence (docs/measurements/memoryd.md,
/// 'Late interaction').
pub const QUESTION: f32 = 0.2;

/// The weight of the merge's place, and the place it is counted from (reciprocal rank):
/// the first of the merge gains 1/11 of the weight, the tenth 1/20.
pub const FUSED: f32 = 1.0;
pub const FUSED_RANK: f32 = 11.0;

/// The weight of a sentence vector's cosine above the question's background.
pub const COSINE: f32 = 0.5;

/// What a candidate from the time the question names counts (times): as the merge weighs
/// a meaning hit from then (`hybrid::Calibration::in_span`).
pub const IN_SPAN: f32 = super::CALIBRATION.in_span;

/// Candidates matched: the merge's first `hybrid::CANDIDATES` and each half's own. Each
/// costs one read of its pieces and of its neighbours' (some 500 reads of at most 12 KiB
/// in all), so a recall's work is bounded whatever the index holds.
pub const MAX_CANDIDATES: usize = 150;

/// What the question brings to the stage.
pub struct Asked<'a> {
    pub pieces: &'a Question,
    /// The cosine of each row the vector side found near.
    pub cosine: &'a HashMap<i64, f32>,
    /// The question's background cosine (`hybrid::Calibration`).
    pub background: f32,
    /// Each row's place among the vector side's nearest (from 0).
    pub near_place: &'a HashMap<i64, usize>,
    /// The head start a place there gives, as a share of the merge's
    /// (`hybrid::Calibration::own_slots`).
    pub own_slots: f32,
    /// What the match counts (times): 1, or 0 when the words found little
    /// (`hybrid::Calibration::little`) and the places alone decide.
    pub match_weight: f32,
    /// The question's exact codes.
    pub codes: &'a Codes,
    /// The words' first hit, when it holds every group of the question: it stays first
    /// (after the codes), as the merge keeps it (docs/memoryd.md, 'Vectors').
    pub first: Option<i64>,
    /// The time the question names: a candidate from then counts `IN_SPAN` times its
    /// score, as in the words' ranking and the merge (docs/memoryd.md, 'Time cues').
    pub span: Option<&'a Span>,
    pub max_class: DataClass,
    /// When a candidate says what a better one says (`distinct`).
    pub distinct: Distinct,
}

/// The best `limit` of the candidates: `fused` (the merge's order) then `others` (each
/// half's candidates the merge's depth left out), by the score in the module doc.
pub(super) fn rerank(
    index: &Index,
    asked: Asked<'_>,
    fused: Vec<(i64, Hit)>,
    others: Vec<(i64, Hit)>,
    limit: usize,
) -> Result<Vec<Hit>, IndexError> {
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut candidates: Vec<(i64, Hit, Option<usize>)> = Vec::new();
    for (place, (id, hit)) in fused.iter().cloned().enumerate() {
        if seen.insert(said(&hit)) {
            candidates.push((id, hit, Some(place)));
        }
    }
    for (id, hit) in others {
        if candidates.len() >= MAX_CANDIDATES {
            break;
        }
        if seen.insert(said(&hit)) {
            candidates.push((id, hit, None));
        }
    }
    let keep_merge =
        |fused: Vec<(i64, Hit)>| fused.into_iter().take(limit).map(|(_, h)| h).collect();
    let mut pieces = Pieces::new(index, asked.pieces);
    let mut scored: Vec<(f32, u8, usize, Hit)> = Vec::with_capacity(candidates.len());
    for (i, (id, hit, place)) in candidates.into_iter().enumerate() {
        let Some(own) = pieces.best(id)? else {
            return Ok(keep_merge(fused));
        };
        let mut best = own;
        for n in index.around(id, asked.max_class)? {
            let weight = if n.just_before { ANSWERED } else { NEIGHBOUR };
            if let Some(theirs) = pieces.best(n.id)? {
                for (b, t) in best.iter_mut().zip(theirs) {
                    *b = b.max(weight * t);
                }
            }
        }
        let mut score = if best.is_empty() {
            0.0
        } else {
            asked.match_weight * best.iter().sum::<f32>() / best.len() as f32
        };
        let merged = place.map_or(0.0, |p| FUSED / (FUSED_RANK + p as f32));
        let own = asked
            .near_place
            .get(&id)
            .map_or(0.0, |&p| asked.own_slots * FUSED / (FUSED_RANK + p as f32));
        score += merged.max(own);
        if let Some(&c) = asked.cosine.get(&id) {
            score += COSINE * (c - asked.background).max(0.0);
        }
        // The whole score: an earlier asking of the same question is as near in meaning
        // as it is in pieces, and the merge puts it high for that.
        if crate::index::is_question(&hit.text) {
            score *= QUESTION;
        }
        if asked.span.is_some_and(|s| s.holds(&hit.time)) {
            score *= IN_SPAN;
        }
        // Codes first (what says something about one, then an earlier asking of one), then
        // the words' whole-question first hit, then the rest by score.
        let tier = asked.codes.pin(&hit.text) as u8 * 2 + u8::from(asked.first == Some(id));
        scored.push((score, tier, i, hit));
    }
    // By tier; the codes in the merge's order, the rest by score, ties in the merge's
    // order.
    scored.sort_by(|a, b| {
        b.1.cmp(&a.1).then(if a.1 >= 2 && b.1 >= 2 {
            a.2.cmp(&b.2)
        } else {
            b.0.total_cmp(&a.0).then(a.2.cmp(&b.2))
        })
    });
    // Then a candidate saying what one before it says goes after those saying something
    // else; codes and the whole-question first hit stay where they are.
    let texts: Vec<&str> = scored.iter().map(|s| s.3.text.as_str()).collect();
    let places = distinct::order(asked.distinct, &texts, &|i| scored[i].1 > 0, limit);
    let mut scored: Vec<Option<Hit>> = scored.into_iter().map(|s| Some(s.3)).collect();
    Ok(places
        .into_iter()
        .take(limit)
        .filter_map(|i| scored[i].take())
        .collect())
}

/// Each row's best cosine per question piece, read and computed once a recall.
struct Pieces<'a> {
    index: &'a Index,
    question: &'a Question,
    best: HashMap<i64, Option<Vec<f32>>>,
}

impl<'a> Pieces<'a> {
    fn new(index: &'a Index, question: &'a Question) -> Pieces<'a> {
        Pieces {
            index,
            question,
            best: HashMap::new(),
        }
    }

    /// Row `id`'s best cosine for each question piece; `None` when it has no pieces.
    fn best(&mut self, id: i64) -> Result<Option<Vec<f32>>, IndexError> {
        if let Some(b) = self.best.get(&id) {
            return Ok(b.clone());
        }
        let stored: Option<Vec<Bits>> =
            table::pieces(self.index.conn(), id).map_err(|e| self.index.sql_error(e))?;
        let b = stored.map(|p| self.question.best(&p));
        self.best.insert(id, b.clone());
        Ok(b)
    }
}
#[cfg(test)]
mod tests;
