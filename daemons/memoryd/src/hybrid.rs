//! A recall from both halves: the text index's ranking (`index::recall`) and the vector
//! side's (cosine, see `embed`), merged so that meaning can add what words miss and never
//! push out what words found well.
//!
//! The words' hits keep their own order. A hit found by meaning goes ahead of the next
//! word hit only when it is stronger than that word hit: a word hit's strength is the
//! share of the question's groups it holds (0 to 1), each group weighed by how rare it is
//! in the index (`Calibration::rarity`), so a hit holding only the question's common
//! word counts less than one holding its rare word; a meaning hit's is how
//! far its cosine stands above the question's own *background*, the cosine of the
//! `background_rank`-th nearest record (`Calibration`). A cosine means little on its own:
//! in a long conversation on a few topics, dozens of records sit at 0.5 to 0.6 from any
//! question and the nearest is rarely the answer, while in a varied history a paraphrase
//! of what the owner said stands at 0.35 with nothing else near. Measured against the
//! background, the first counts for little and the second for much, which no fixed
//! cosine threshold could do (docs/measurements/memoryd.md, "Calibrating the fusion").
//! A meaning-only hit counts at most `cap`, below a word hit holding the whole question.
//!
//! Each hit says how relevant it is (`Hit::relevance`), comparable across questions: a
//! word hit the share of the question's groups it holds, a hit found by meaning only its
//! cosine, a hit found both ways the larger.
//!
//! Names and times weigh on the meaning side as on the words' (`index::rank`): a meaning
//! hit that names none of the people the question names counts less
//! (`Calibration::name_missing`), one from the time the question names more (`in_span`).
//!
//! Exact tokens keep winning: when the query holds a token that reads as a code (order
//! numbers, addresses, file names, URLs; `codes`), the text hits holding it come before
//! everything else, in their own order, since a vector of "ticket 4471" is near every
//! ticket.

use crate::embed::late::Question;
use crate::embed::store::Near;
use crate::embed::vectors::{Asker, Vectors, MIN_COSINE};
use crate::index::{class_rank, discount, said, Index, IndexError, Words, NEAR_WEIGHT};
use crate::query::{self, time};
pub use calibration::{Calibration, CALIBRATION};
use codes::{Codes, Pin};
pub use newer::{recall_newer, Newer, NEWER};
use proto::label::DataClass;
use proto::memory::{Hit, MAX_HITS};
use std::collections::{HashMap, HashSet};

/// Half of the question's groups: a word hit holding less is a partial match.
const HALF: f32 = 0.5;

/// Candidates taken from each half: enough that a hit ranked low by one half and high by
/// the other is still seen.
pub const CANDIDATES: u32 = MAX_HITS;

/// The best `limit` hits for `query`: both halves merged when the vector side is ready,
/// the text index alone otherwise. Time cues count from today.
pub fn recall(
    index: &Index,
    vectors: Option<&Vectors>,
    query: &str,
    max_class: DataClass,
    limit: u32,
) -> Result<Vec<Hit>, IndexError> {
    let ready = vectors.filter(|v| v.ready());
    let Some((vectors, asker)) = ready.and_then(|v| Some((v, v.asker()?))) else {
        return index.search(query, max_class, limit.min(MAX_HITS));
    };
    let request = Request {
        query,
        max_class,
        limit,
        now: time::today(),
    };
    recall_beside(index, asker, &|id| vectors.has_vector(id), request)
}

/// What a recall asks: the question, the most sensitive class it may see, how many hits,
/// and the day its time cues count from.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub query: &'a str,
    pub max_class: DataClass,
    pub limit: u32,
    pub now: time::Day,
}

/// The merged recall with the vector side asked on a thread of its own while this one
/// searches the words (`beside`): the question's embedding and the codes' scan take
/// about as long as the words' search at its slowest, so a recall waits for the slower
/// of the two rather than for both (docs/memoryd.md, "What a recall costs").
/// `embedded` says whether a row has its vector yet.
pub fn recall_beside(
    index: &Index,
    asker: Asker<'_>,
    embedded: &dyn Fn(i64) -> bool,
    request: Request<'_>,
) -> Result<Vec<Hit>, IndexError> {
    let (query, max_class) = (request.query, request.max_class);
    if request.limit == 0 || query.trim().is_empty() {
        return Ok(Vec::new());
    }
    let max_rank = u8::try_from(class_rank(max_class)).unwrap_or(0);
    let (asked, lexical) = beside::beside(
        || asker.ask_down_to(query, max_rank, CANDIDATES as usize, LITTLE_FLOOR),
        || index.search_words(query, max_class, CANDIDATES, request.now),
    );
    let Some(asked) = asked else {
        return index.search(query, max_class, request.limit.min(MAX_HITS));
    };
    let seen = Seen {
        near: &asked.near,
        pieces: Some(&asked.pieces),
        embedded,
    };
    fuse(CALIBRATION, NEWER, index, lexical?, seen, request)
}

/// How near the vector side's rows a recall asks for may be: all of them (a cosine below
/// zero is no nearer than zero). Those below `MIN_COSINE` count only when the words found
/// little, and something (`Calibration::little`): a question about nothing in the history
/// recalls no noise.
pub const LITTLE_FLOOR: f32 = 0.0;

/// What the vector side saw of a question.
#[derive(Clone, Copy)]
pub struct Seen<'a> {
    /// The rows nearest to it, best first (those below `MIN_COSINE` count only when the
    /// words found little).
    pub near: &'a [Near],
    /// Its pieces for late interaction (`late`); `None`: the merge's order is final.
    pub pieces: Option<&'a Question>,
    /// Whether a row has its vector yet: a row still waiting for one was not seen, and
    /// its absence from `near` says nothing about it.
    pub embedded: &'a dyn Fn(i64) -> bool,
}

/// The merged recall given the vector side's rows nearest to `query` (best first), every
/// row having its vector, time cues counted from `now`.
pub fn recall_with(
    index: &Index,
    near: &[Near],
    query: &str,
    max_class: DataClass,
    limit: u32,
    now: time::Day,
) -> Result<Vec<Hit>, IndexError> {
    recall_seen(index, near, None, query, max_class, limit, now)
}

/// `recall_with` and late interaction over the candidates with the question's `pieces`
/// (`late`), every row having its vector and pieces.
pub fn recall_late(
    index: &Index,
    near: &[Near],
    pieces: &Question,
    query: &str,
    max_class: DataClass,
    limit: u32,
    now: time::Day,
) -> Result<Vec<Hit>, IndexError> {
    recall_seen(index, near, Some(pieces), query, max_class, limit, now)
}

/// The default calibration over `near`, every row counted as embedded.
fn recall_seen(
    index: &Index,
    near: &[Near],
    pieces: Option<&Question>,
    query: &str,
    max_class: DataClass,
    limit: u32,
    now: time::Day,
) -> Result<Vec<Hit>, IndexError> {
    let seen = Seen {
        near,
        pieces,
        embedded: &|_| true,
    };
    recall_calibrated(CALIBRATION, index, seen, query, max_class, limit, now)
}

/// `recall_with` under another calibration, for measuring (`scripts/bench recall --sweep`).
pub fn recall_calibrated(
    cal: Calibration,
    index: &Index,
    seen: Seen<'_>,
    query: &str,
    max_class: DataClass,
    limit: u32,
    now: time::Day,
) -> Result<Vec<Hit>, IndexError> {
    recall_newer(cal, NEWER, index, seen, query, max_class, limit, now)
}

/// The merge of the words' candidates (`lexical`) with what the vector side saw, and
/// late interaction over them when it gave the question's pieces.
fn fuse(
    cal: Calibration,
    newer: Newer,
    index: &Index,
    lexical: Words,
    seen: Seen<'_>,
    request: Request<'_>,
) -> Result<Vec<Hit>, IndexError> {
    let Request {
        query,
        max_class,
        limit,
        now,
    } = request;
    let limit = limit.min(MAX_HITS);
    // The rows near enough to be recalled by meaning (best first, so a prefix); the
    // rest count only when the words found little.
    let near_all = seen.near;
    let near = &near_all[..near_all.partition_point(|n| n.score >= MIN_COSINE)];
    let ids: Vec<i64> = near_all.iter().map(|n| n.id).collect();
    // Rows gone or above the class are left out: each hit comes back with its id.
    let cosine_all: HashMap<i64, f32> = near_all.iter().map(|n| (n.id, n.score)).collect();
    let by_meaning_all: Vec<(i64, Hit, f32)> = index
        .hits_by_ids(&ids, max_class)?
        .into_iter()
        .filter_map(|(id, hit)| cosine_all.get(&id).map(|&c| (id, hit, c)))
        .collect();
    let by_meaning: Vec<(i64, Hit, f32)> = by_meaning_all
        .iter()
        .filter(|(_, _, c)| *c >= MIN_COSINE)
        .cloned()
        .collect();
    // Fewer than asked for: the vector side returned every record it found near, of
    // those with a vector.
    let exhaustive = near.len() < CANDIDATES as usize;
    let absent_means_unrelated = |id: i64| exhaustive && (seen.embedded)(id);
    // Read once, for the merge and for late interaction.
    let cues = Cues {
        codes: Codes::of(query),
        span: time::cue(query, now),
        background: background(cal, &by_meaning),
    };
    // The words found little of the question, in a history holding nothing near it:
    // late interaction goes by the places, the vector side's nearest all counted.
    let little = found_little(cal, &lexical, cues.background);
    // Below the floor only beside what the words found: a question about nothing in the
    // history still recalls no noise.
    let (near, by_meaning_late) = if little && !lexical.hits.is_empty() {
        (near_all, by_meaning_all)
    } else {
        (near, by_meaning.clone())
    };
    let cosine: HashMap<i64, f32> = near.iter().map(|n| (n.id, n.score)).collect();
    // How much of its head start the vector side's own places give: in full when the
    // words' first hit holds only what too many rows hold for the words half to list.
    let own_slots = if little {
        cal.little_own
    } else if cal.own_when_common {
        cal.own_slots * common_share(&lexical)
    } else {
        cal.own_slots
    };
    // Each row's place among the vector side's nearest, for late interaction's head start.
    let near_place: HashMap<i64, usize> = near
        .iter()
        .enumerate()
        .rev()
        .map(|(i, n)| (n.id, i))
        .collect();
    // With the question's pieces, the merge orders every candidate and late interaction
    // (`late`) chooses the hits from them; without, the merge's first hits are the hits.
    let pieces = seen.pieces.filter(|p| !p.is_empty());
    let depth = if pieces.is_some() {
        CANDIDATES as usize
    } else {
        limit as usize
    };
    // Each half's own candidates, for the stage to reach past the merge's depth.
    let others: Vec<(i64, Hit)> = match pieces {
        Some(_) => lexical
            .hits
            .iter()
            .map(|r| (r.rowid, r.hit.clone()))
            .chain(by_meaning_late.into_iter().map(|(id, h, _)| (id, h)))
            .collect(),
        None => Vec::new(),
    };
    // The words' first hit holding every group of the question stays first (`late`).
    let first = lexical
        .hits
        .first()
        .filter(|r| r.relevance >= 1.0)
        .map(|r| r.rowid);
    let fused = merge(
        cal,
        query,
        lexical,
        by_meaning,
        Verdicts {
            exhaustive,
            unrelated_if_absent: &absent_means_unrelated,
            insists: &|id, hit| index.insists(id, hit),
        },
        &cues,
        depth,
    );
    // Each candidate's row id, for the last stage (`newer`).
    let ids = newer::Ids::new(&fused, &others);
    match pieces {
        Some(pieces) => late::rerank(
            index,
            late::Asked {
                pieces,
                cosine: &cosine,
                background: cues.background,
                near_place: &near_place,
                own_slots,
                match_weight: if little { 0.0 } else { 1.0 },
                codes: &cues.codes,
                first,
                span: cues.span.as_ref(),
                max_class,
                distinct: cal.distinct,
            },
            fused,
            others,
            newer.reach.max(limit as usize),
        )
        .and_then(|ranked| {
            let (ranked, span) = (ids.of(ranked), cues.span.as_ref());
            newer::newer_first(newer, index, pieces, query, span, ranked, limit as usize)
        }),
        None => Ok(fused.into_iter().map(|(_, h)| h).collect()),
    }
}

/// What a question says beside its words: its exact codes, the time it names, and its
/// background among the meaning hits (`background`).
struct Cues {
    codes: Codes,
    span: Option<time::Span>,
    background: f32,
}

/// A word hit as the merge weighs it.
struct WordHit {
    /// What it is worth against the meaning hits (`f32::INFINITY` for an exact code).
    strength: f32,
    /// The share of the question's groups it holds, as the index ranked it.
    relevance: f32,
    /// Meaning saw every record near the question, this one among them (it has its
    /// vector), and did not find it near.
    unrelated: bool,
    rowid: i64,
    hit: Hit,
}

/// What the merge may conclude from the vector side's list.
struct Verdicts<'a> {
    /// The meaning side returned every record it found near, fewer than it asked for.
    exhaustive: bool,
    /// Whether a word hit's row, absent from the list, was seen and found unrelated (the
    /// list is exhaustive and the row has its vector).
    unrelated_if_absent: &'a dyn Fn(i64) -> bool,
    /// Whether a row is untrusted text repeating a sentence throughout
    /// (`Index::insists`), decided once a row while its words are kept.
    insists: &'a dyn Fn(i64, &Hit) -> bool,
}

/// Merges the words' hits (in their order) with the meaning hits (best cosine first),
/// each with its row id.
fn merge(
    cal: Calibration,
    query: &str,
    lexical: Words,
    by_meaning: Vec<(i64, Hit, f32)>,
    verdicts: Verdicts<'_>,
    cues: &Cues,
    limit: usize,
) -> Vec<(i64, Hit)> {
    let Cues {
        codes,
        span,
        background,
    } = cues;
    let parsed = query::parse(query);
    let strength = |hit: &Hit, cosine: f32| -> f32 {
        let mut s = (cosine - background - cal.margin_floor) / (cal.margin_full - cal.margin_floor);
        // The factors scale what a hit is worth; they must not lift one worth less than
        // nothing.
        if s > 0.0 && parsed.as_ref().is_some_and(|q| !q.holds_names(&hit.text)) {
            s *= cal.name_missing;
        }
        if s > 0.0 && span.as_ref().is_some_and(|sp| sp.holds(&hit.time)) {
            s *= cal.in_span;
        }
        s.min(cal.cap)
    };
    // The same text logged twice is near twice: keep its best cosine (the first), where
    // collecting would keep the last.
    let mut meaning_of: HashMap<&str, f32> = HashMap::with_capacity(by_meaning.len());
    for (_, h, c) in &by_meaning {
        meaning_of.entry(h.text.as_str()).or_insert(*c);
    }
    // The word hits' strengths: exact codes above everything; a hit meaning found too
    // is as strong as the better of the two, and more; one meaning calls unrelated less.
    let rarity = lexical.rarity;
    let words: Vec<WordHit> = lexical
        .hits
        .into_iter()
        .map(|r| {
            let mut hit = r.hit;
            let share = |held: u32| {
                if cal.rarity == 0.0 {
                    r.relevance
                } else {
                    rarity.share(held, cal.rarity)
                }
            };
            // A hit its neighbouring turns lift (`index::near`) is as strong as what it
            // holds with them, at the weight the words' ranking lends them.
            let near = NEAR_WEIGHT as f32 * share(r.held | r.near_held);
            let mut strength_now = share(r.held).max(near);
            let mut unrelated = false;
            if codes.pin(&hit.text) != Pin::None {
                strength_now = f32::INFINITY;
            } else if let Some(&c) = meaning_of.get(hit.text.as_str()) {
                let m = strength(&hit, c);
                let bonus = if verdicts.exhaustive {
                    cal.both.min(m.max(0.0))
                } else {
                    cal.both
                };
                strength_now = strength_now.max(m) + bonus;
                // Found both ways: as relevant as the better of the two says.
                let insists = (verdicts.insists)(r.rowid, &hit);
                hit.relevance = hit.relevance.max(meaning_relevance(insists, c));
            } else if cal.unrelated < 1.0
                && r.relevance < HALF
                && (verdicts.unrelated_if_absent)(r.rowid)
            {
                strength_now *= cal.unrelated;
                unrelated = true;
            }
            WordHit {
                strength: strength_now,
                relevance: r.relevance,
                unrelated,
                rowid: r.rowid,
                hit,
            }
        })
        .collect();
    let words = unrelated_last(words);
    let word_said: HashSet<(String, String)> = words.iter().map(|w| said(&w.hit)).collect();
    let mut meaning: Vec<(f32, (i64, Hit))> = by_meaning
        .into_iter()
        .filter(|(_, h, _)| !word_said.contains(&said(h)))
        .map(|(id, mut h, c)| {
            h.relevance = meaning_relevance((verdicts.insists)(id, &h), c);
            (strength(&h, c), (id, h))
        })
        .collect();
    // Stable: equal strengths keep the cosine order.
    meaning.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut out: Vec<(i64, Hit)> = Vec::with_capacity(limit);
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let (mut w, mut m) = (words.into_iter().peekable(), meaning.into_iter().peekable());
    while out.len() < limit {
        let take_meaning = match (w.peek(), m.peek()) {
            (None, None) => break,
            (None, Some(_)) => true,
            (Some(_), None) => false,
            (Some(wh), Some((ms, _))) => {
                *ms > wh.strength && (wh.relevance <= cal.majority || *ms >= cal.cap)
            }
        };
        let hit = if take_meaning {
            m.next().map(|(_, h)| h)
        } else {
            w.next().map(|wh| (wh.rowid, wh.hit))
        };
        if let Some(hit) = hit {
            if seen.insert(said(&hit.1)) {
                out.push(hit);
            }
        }
    }
    out
}

/// How common what the words' first hit holds is, 0 to 1: 0 when its rarest group is
/// in at most `CANDIDATES` rows (the words half can list every row holding it, so its
/// order says something), `(1 - CANDIDATES / rows)²` beyond (a name said in 150 messages
/// of small talk: 0.44; squared, LoCoMo keeps a multi-hop answer at 5 that the plain
/// ratio lost, docs/measurements/memoryd.md, "The vector side's own places"), 1 when the
/// words found nothing.
fn common_share(lexical: &Words) -> f32 {
    lexical
        .hits
        .first()
        .map_or(Some(u32::MAX), |r| lexical.rarity.rows_holding(r.held))
        .map_or(0.0, |rows| {
            (1.0 - (CANDIDATES as f32 / rows.max(1) as f32).min(1.0)).powi(2)
        })
}

/// Whether the words found little of the question: their first hit holds at most
/// `Calibration::little` of its groups (or there is none), and its `background` is at
/// most `Calibration::sparse`, so nothing in the history is about what it asks.
fn found_little(cal: Calibration, lexical: &Words, background: f32) -> bool {
    cal.little >= 0.0
        && background <= cal.sparse
        && lexical
            .hits
            .first()
            .is_none_or(|r| r.relevance <= cal.little)
}

/// The word hits in their order, except that within a run of equally relevant hits the
/// ones meaning calls unrelated go last: the index could not tell them apart by the
/// question's words, and the model can.
fn unrelated_last(words: Vec<WordHit>) -> Vec<WordHit> {
    let mut out = Vec::with_capacity(words.len());
    let mut run: Vec<WordHit> = Vec::new();
    let flush = |run: &mut Vec<WordHit>, out: &mut Vec<WordHit>| {
        let (related, unrelated): (Vec<_>, Vec<_>) = run.drain(..).partition(|w| !w.unrelated);
        out.extend(related);
        out.extend(unrelated);
    };
    for w in words {
        if run.first().is_some_and(|r| r.relevance != w.relevance) {
            flush(&mut run, &mut out);
        }
        run.push(w);
    }
    flush(&mut run, &mut out);
    out
}

/// The question's background: the cosine of its `background_rank`-th nearest record, or
/// `MIN_COSINE` when fewer were near enough to be candidates.
fn background(cal: Calibration, by_meaning: &[(i64, Hit, f32)]) -> f32 {
    by_meaning
        .get(cal.background_rank.saturating_sub(1))
        .map_or(MIN_COSINE, |(_, _, c)| c.max(MIN_COSINE))
}

/// A meaning hit's `Hit::relevance`: its similarity, discounted as its words are when
/// it `insists`, untrusted text repeating a sentence throughout (`Index::insists`), so a
/// refrain cannot reach memory in the turn's floor by meaning where its words do not.
fn meaning_relevance(insists: bool, cosine: f32) -> u16 {
    let s = similarity(cosine);
    if insists {
        discount(s)
    } else {
        s
    }
}

/// A cosine similarity as `Hit::relevance` (thousandths; nothing below zero).
fn similarity(cosine: f32) -> u16 {
    (cosine.clamp(0.0, 1.0) * f32::from(proto::memory::FULLY_RELEVANT)).round() as u16
}

mod beside;
mod calibration;
mod codes;
pub mod distinct;
mod late;
pub mod newer;
#[cfg(test)]
mod tests;
