//! Re-ranking the lexical candidates (`recall`) by how much of the question each holds.
//!
//! bm25 over an OR of terms already prefers records with more and rarer terms, but only
//! softly: one rare word repeated can beat every word once. docs/memoryd.md (and the owner) want
//! a record holding all of the question's words, or holding them as the phrase asked,
//! above one holding a part, so the bm25 relevance is scaled by the share of the query's
//! groups a record holds, and again when it holds all of them or the phrase. The same
//! text said by the same speaker (a `SessionFull` rerun logs the owner's line twice) is
//! one hit: the best placed, which on a tie in score is the newest (`said`).

use crate::query::time::Span;
use crate::query::{Passage, Query};
use proto::memory::{Hit, FULLY_RELEVANT};
use std::collections::HashMap;

/// One row the full-text index found: what `recall`'s lexical step hands to the
/// re-ranking. It lives here, beside its reader, so `recall` uses `rank` and not the
/// other way round (the layering check found the cycle).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Candidate {
    pub rowid: i64,
    /// Found by the all-groups (AND) search: it holds every group of the query.
    pub all: bool,
    /// FTS5's `bm25()`: negative, smaller for a better match.
    pub bm25: f64,
    /// 0 for the best.
    pub rank: usize,
    /// Not found by the search: reached only as a candidate's neighbour (`near`).
    pub reached: bool,
    /// FTS5's `bm25()` of the row's neighbours' words (`near_field`), 0 when they do not
    /// match.
    pub near_bm25: f64,
    /// Found by the search of the neighbours' words only, not of the row's own.
    pub by_near: bool,
}

impl Candidate {
    /// A row reached only as a candidate's neighbour (`near`): no score of its own from
    /// the search, placed after every candidate.
    pub(crate) fn reached(rowid: i64, rank: usize) -> Candidate {
        Candidate {
            rowid,
            all: false,
            bm25: 0.0,
            rank,
            reached: true,
            near_bm25: 0.0,
            by_near: false,
        }
    }
}

/// How much the neighbours' field (`near_field`) weighs beside the row's own text in a
/// candidate's bm25: as the plain FTS5 table with a neighbours' column weighted 0.3
/// measured best on LoCoMo; 0.6 measured the same recall@5 and lower recall@1
/// (docs/measurements/memoryd.md, 'The neighbours' field').
pub(crate) const NEAR_FIELD: f64 = 0.3;

/// The share of a candidate's score each of its neighbouring turns (`near`) gains: well
/// below one, so a record holding the question's words itself ranks above one that only
/// sits next to it, while a turn that answers the question asked just before it rises
/// above turns elsewhere holding one of its words. Measured on LoCoMo (`scripts/bench
/// recall`; docs/memoryd.md, 'Neighbouring turns').
pub const NEAR_WEIGHT: f64 = 0.3;

/// How much of `NEAR_WEIGHT` a neighbour lends through groups the row holds itself: a
/// neighbour holding the row's own words says little new about it ("what time is
/// standup": a turn holding "times" beside one holding "time" must not pass the one
/// holding "standup"), one holding the words it lacks says the most. Measured on LoCoMo
/// and our set (docs/memoryd.md, 'Neighbouring turns'): 1 (every group alike) costs
/// our set a first hit and LoCoMo 0.014 recall@1; 0 (only new groups) costs LoCoMo
/// 0.009 recall@5 against 0.3.
pub(crate) const NEAR_SAME: f64 = 0.3;

/// What a record that is a question and nothing else (`is_question`) counts of its
/// score. An owner asking about something again and again, and replies that repeat the
/// question, hold the question's words better than the turn that answers it and would
/// fill the first hits (docs/memoryd.md, 'Questions are not answers'). Measured with
/// LoCoMo's questions asked in sequence (`scripts/bench recall --asked`): evidence in
/// the first 3 hits 0.381 after every earlier question against 0.511 before any; 0.2
/// with the wider search (`recall`) 0.505; 0.05 0.507, and the question the partner asked
/// (LoCoMo's evidence now and then) falls too far.
pub(crate) const QUESTION_WEIGHT: f64 = 0.2;

/// The bm25 given a candidate found unscored (every word of the query common, see
/// `common`): one unit of relevance, so the coverage and phrase factors alone order
/// such candidates, then recency.
pub(crate) const UNSCORED: f64 = -1.0;

/// How much a record's relevance grows from holding none to all of the query's groups.
/// Measured on the evaluation set (`scripts/bench recall`): 1 keeps bm25's view of
/// rarity while a record of two words out of two beats one of one out of two unless
/// that one is much rarer.
const COVERAGE_WEIGHT: f64 = 1.0;

/// The factor for holding every group of a query of two or more.
const ALL_WORDS: f64 = 1.5;

/// How much relevance grows from holding none to all of the query's neighbouring pairs
/// side by side (the whole query as a phrase).
const PHRASE: f64 = 1.0;

/// How much less a record counts when the question names someone or somewhere and the
/// record names none of them: "what did Caroline paint" is not answered by Melanie's
/// painting however many other words the two share.
pub(crate) const NAME_MISSING: f64 = 0.5;

/// How much more a record counts when the question names a time and the record is from
/// then (`query::time`).
pub(crate) const IN_SPAN: f64 = 1.5;

/// What a long record's passage that is a list of words (`Passage::list`), or an untrusted
/// record's that repeats a sentence throughout (`Passage::insists`), counts of its share,
/// as a fraction: two fifths, so such a text holding every word of a question is 400,
/// below memory in the turn's floor (half) and above `/recall`'s (a third): a person
/// searching still sees it; it never joins a turn unasked on its words alone.
const LIST_SHARE: (u64, u64) = (2, 5);

/// A hit with how relevant it is: the share of the question's groups its text holds
/// (0 to 1), comparable across questions, unlike the score that ordered it.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    pub hit: Hit,
    pub relevance: f32,
    /// The record's row, for what the vector side knows of it.
    pub rowid: i64,
    /// Which of the question's groups its text holds: bit `i` for group `i`, the order
    /// of `Rarity`.
    pub held: u32,
    /// Which groups its neighbouring turns hold (`near`), as `held`.
    pub near_held: u32,
}

/// The word-hit rows a question found, best first, and how rare each of its groups is.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Words {
    pub hits: Vec<Ranked>,
    pub rarity: Rarity,
}

/// How rare each of a question's groups is in the index: its inverse document
/// frequency against `RARITY_SCALE` rows, `ln(1 + RARITY_SCALE / rows matching)`, the
/// rows counted up to `COMMON_ROWS + 1` (`Index::frequency`). A group no row holds
/// counts as one held by a single row: the rarest there can be.
///
/// Measured against a fixed scale, not the index's size: the counts are the ones the
/// index makes anyway to tell common words (a total would be a query more per recall),
/// and a word in `COMMON_ROWS` rows says almost nothing whatever the index holds
/// besides. In a history of a few hundred records every count is small and the groups
/// weigh nearly alike; in one of thousands, a word in a hundred turns weighs half of
/// one in a single turn.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rarity {
    idf: Vec<f32>,
    /// Each group's matching rows as counted (up to `COMMON_ROWS + 1`).
    rows: Vec<u32>,
}

/// The rows a rarity is measured against (see `Rarity`).
const RARITY_SCALE: f64 = super::common_words::COMMON_ROWS as f64;

impl Rarity {
    /// From each group's matching rows, in the query's order.
    pub(crate) fn of(frequencies: &[u32]) -> Rarity {
        Rarity {
            idf: frequencies
                .iter()
                .map(|&df| (1.0 + RARITY_SCALE / f64::from(df.max(1))).ln() as f32)
                .collect(),
            rows: frequencies.to_vec(),
        }
    }

    /// The most rows that can hold every group of `held`: the count of its rarest group
    /// (a group no row holds counts as one row). `None` when `held` names no group.
    pub fn rows_holding(&self, held: u32) -> Option<u32> {
        self.rows
            .iter()
            .enumerate()
            .filter(|(i, _)| held & (1 << i) != 0)
            .map(|(_, &n)| n.max(1))
            .min()
    }

    /// The share of the question a text holding the groups `held` holds, each group
    /// weighed by its rarity raised to `power`: 0 weighs every group alike (the share of
    /// `Ranked::relevance`), 1 by its rarity, more sharpens the difference. With no
    /// rarities known (a question of no groups), 0.
    pub fn share(&self, held: u32, power: f32) -> f32 {
        let weight = |idf: f32| if power == 0.0 { 1.0 } else { idf.powf(power) };
        let total: f32 = self.idf.iter().map(|&i| weight(i)).sum();
        if total <= 0.0 {
            return 0.0;
        }
        let got: f32 = self
            .idf
            .iter()
            .enumerate()
            .filter(|(i, _)| held & (1 << i) != 0)
            .map(|(_, &i)| weight(i))
            .sum();
        got / total
    }
}

/// The first `limit` of `rows` (candidates in bm25 order, with their rows) in final
/// order, duplicates gone; `span` is the time the question names, if any; `known` the
/// best passages of rows already found (by row id), with whether each row insists,
/// which are not looked for again.
pub(super) fn rerank(
    query: &Query,
    span: Option<&Span>,
    rows: Vec<(Candidate, Hit)>,
    links: &[(i64, i64)],
    known: &HashMap<i64, Passage>,
    limit: usize,
) -> Vec<Ranked> {
    let mut scored: Vec<Scored> = rows
        .into_iter()
        .filter_map(|(c, mut hit)| {
            // A long record counts by its best passage (`Query::passage_coverage`); an
            // untrusted one repeating a sentence throughout counts as a list does
            // (`query::insist`).
            let passage = known.get(&c.rowid).copied().unwrap_or_else(|| Passage {
                insists: insists(&hit),
                ..query.passage_coverage(&hit.text)
            });
            let (cover, long) = (passage.cover, passage.long);
            // The neighbours' field adds to the row's own bm25 before the factors of what
            // the row holds: a turn holding part of the question, its neighbours the
            // rest, is scored as one (docs/memoryd.md, 'The neighbours' field').
            let (s, relevance) = score(passage, c.bm25 + NEAR_FIELD * c.near_bm25);
            let (own, _) = score(passage, c.bm25);
            hit.relevance = thousandths(passage);
            let (mut s, mut own) = (s, own);
            if !query.holds_names(&hit.text) {
                s *= NAME_MISSING;
                own *= NAME_MISSING;
            }
            if span.is_some_and(|sp| sp.holds(&hit.time)) {
                s *= IN_SPAN;
                own *= IN_SPAN;
            }
            // FTS5's all-words verdict is about the whole record; a long one holds them
            // all only when one passage does.
            let all = c.all && (!long || cover.all());
            // A row that holds none of the question's words is never a hit on its
            // neighbours' alone: a search for one word brings the records holding it,
            // not the turns around them (docs/memoryd.md, 'Neighbouring turns').
            if (c.reached || c.by_near) && cover.held == 0 {
                return None;
            }
            Some(Scored {
                all,
                score: s,
                own,
                rowid: c.rowid,
                relevance,
                held: cover.held,
                whole: cover.all() && !c.reached,
                near_held: 0,
                hit,
            })
        })
        .collect();
    lend(&mut scored, links);
    // A question is not an answer: it ranks by a part of its score and never with the
    // all-words matches (it lent its whole score to its neighbours above, where the
    // answer to it is).
    for r in &mut scored {
        if is_question(&r.hit.text) {
            r.score *= QUESTION_WEIGHT;
            r.all = false;
        }
    }
    // All-words matches first (FTS5's own verdict), then the better score (its own and
    // what its neighbours lend); on a tie the newer record (larger rowid, see `rowid`).
    scored.sort_by(|a, b| {
        b.all
            .cmp(&a.all)
            .then(b.score.total_cmp(&a.score))
            .then(b.rowid.cmp(&a.rowid))
    });
    // Duplicates are who said what, compared with the hits kept so far (at most `limit`,
    // itself at most `MAX_HITS`), the texts' lengths first: hashing every candidate's
    // whole text, 32 KiB for a pasted document, was a thirtieth of a recall among such
    // records, and copying them for a set a tenth.
    let mut keep = vec![false; scored.len()];
    let mut kept: Vec<(&str, &str)> = Vec::with_capacity(limit);
    for (k, r) in keep.iter_mut().zip(&scored) {
        if kept.len() == limit {
            break;
        }
        let said = (r.hit.role.as_str(), r.hit.text.as_str());
        let again = kept
            .iter()
            .any(|&(role, text)| text.len() == said.1.len() && role == said.0 && text == said.1);
        if !again {
            kept.push(said);
            *k = true;
        }
    }
    drop(kept);
    scored
        .into_iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(r, _)| r)
        .map(|r| Ranked {
            held: r.held,
            near_held: r.near_held,
            hit: r.hit,
            relevance: r.relevance,
            rowid: r.rowid,
        })
        .collect()
}

/// Whether `hit` is untrusted text saying one sentence again and again (`query::insist`):
/// text a fetched page wrote that wants to be read whatever passage of it is shown.
fn insists(hit: &Hit) -> bool {
    hit.label.untrusted && crate::query::insist::insists(&hit.text)
}

/// `relevance` (thousandths) as a discounted passage counts it (`LIST_SHARE`): for a
/// relevance found another way (by meaning) of a text that insists.
pub(crate) fn discount(relevance: u16) -> u16 {
    u16::try_from(u64::from(relevance) * LIST_SHARE.0 / LIST_SHARE.1).unwrap_or(relevance)
}

/// What makes two hits one (docs/memoryd.md, "Recall"): who said it and what was said.
/// The owner's line and the assistant's reply repeating it word for word are two facts
/// about the conversation, and the owner's is the one memory is for, so they stay two;
/// the same line logged again by a rerun, or said again in another session, is one.
pub(crate) fn said(hit: &Hit) -> (String, String) {
    (hit.role.clone(), hit.text.clone())
}

/// Whether `text` is a question and nothing else: one sentence ending in a question
/// mark ("what was the name of the cat?", "You asked: who is Priya?").
pub(crate) fn is_question(text: &str) -> bool {
    let t = text.trim_end();
    let Some(body) = t.strip_suffix('?') else {
        return false;
    };
    !body.contains(['.', '!', '?', '\n'])
}

/// A row on its way through `rerank`.
struct Scored {
    all: bool,
    score: f64,
    /// The score without the neighbours' field: what the row lends (`lend`), so a
    /// neighbour's words never travel further than its own neighbours.
    own: f64,
    rowid: i64,
    relevance: f32,
    held: u32,
    /// Holds every group of the question itself (its best passage, for a long record),
    /// so its neighbours lend it nothing (`lend`). A row only reached as a neighbour has
    /// no score of its own and keeps what it is lent.
    whole: bool,
    near_held: u32,
    hit: Hit,
}

/// The neighbourhood's part (`near`; docs/memoryd.md, 'Neighbouring turns'): each link
/// (candidate, neighbour) lends the neighbour `NEAR_WEIGHT` of the candidate's own score
/// and the groups the candidate holds. Only a candidate's own score is lent, never what
/// it was lent, so relevance travels at most `near::NEAR_TURNS` turns. The all-words
/// matches stay first: a row holding one common word between two that hold the rare
/// ones is not an all-words match (treating it as one was measured: +0.014 recall@5 on
/// LoCoMo, and such rows first).
fn lend(scored: &mut [Scored], links: &[(i64, i64)]) {
    if links.is_empty() {
        return;
    }
    let own: HashMap<i64, (f64, u32)> = scored.iter().map(|r| (r.rowid, (r.own, r.held))).collect();
    let mut lent: HashMap<i64, (f64, u32)> = HashMap::new();
    for (from, to) in links {
        let Some(&(s, held)) = own.get(from) else {
            continue;
        };
        let mine = own.get(to).map_or(0, |o| o.1);
        // The groups the neighbour holds and this row lacks say the most: a run of
        // turns on the same words must not lift each other over a rarer match.
        let new = f64::from((held & !mine).count_ones()) / f64::from(held.count_ones().max(1));
        let share = NEAR_SAME + (1.0 - NEAR_SAME) * new;
        let e = lent.entry(*to).or_default();
        e.0 += NEAR_WEIGHT * s * share;
        e.1 |= held;
    }
    for r in scored.iter_mut() {
        if let Some(&(s, held)) = lent.get(&r.rowid) {
            // A row holding every group itself has nothing its neighbours could add, as
            // with the neighbours' field: lending to it would only sort equally relevant
            // rows by how many relevant turns sit around them, and the newest turns of a
            // log, which have fewer, would fall behind older ties ('Ranking is relevance
            // first, then recency').
            if !r.whole {
                r.score += s;
            }
            r.near_held = held;
        }
    }
}

/// `Hit::relevance` of a passage holding `c` (see `score` for `long`): the share of the
/// query's groups, in thousandths, counted in integers so that a share is the same
/// thousandths on every machine.
fn thousandths(p: Passage) -> u16 {
    let (c, long) = (p.cover, p.long);
    if c.of == 0 {
        return 0;
    }
    let (m, of) = (c.matched.min(c.of) as u64, c.of as u64);
    let (num, den) = if long && !c.all() {
        (m * m, of * of)
    } else {
        (m, of)
    };
    let (num, den) = if p.discounted() {
        (num * LIST_SHARE.0, den * LIST_SHARE.1)
    } else {
        (num, den)
    };
    u16::try_from(num * u64::from(FULLY_RELEVANT) / den).unwrap_or(FULLY_RELEVANT)
}

/// The final score of a record (larger is better) and its relevance, from what its best
/// passage holds (`c`) and whether it is longer than one passage (`long`). A long
/// record that holds only part of the question counts at its share squared: a text of
/// many passages holds one everyday word or another by chance, so a part of a question
/// found there says less than the same part in a message of a few lines.
fn score(p: Passage, bm25: f64) -> (f64, f32) {
    let (c, long) = (p.cover, p.long);
    // bm25() is negative for a match; its magnitude is the relevance.
    let mut s = (-bm25).max(0.0);
    if c.of > 0 {
        s *= 1.0 + COVERAGE_WEIGHT * c.matched as f64 / c.of as f64;
    }
    if c.of > 1 && c.all() {
        s *= ALL_WORDS;
    }
    if c.of > 1 {
        s *= 1.0 + PHRASE * c.adjacent as f64 / (c.of - 1) as f64;
    }
    let share = if c.of == 0 {
        0.0
    } else {
        c.matched as f32 / c.of as f32
    };
    let mut relevance = if long && !c.all() {
        share * share
    } else {
        share
    };
    if p.discounted() {
        let factor = LIST_SHARE.0 as f32 / LIST_SHARE.1 as f32;
        relevance *= factor;
        s *= f64::from(factor);
    }
    (s, relevance)
}
