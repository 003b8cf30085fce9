//! Hits that say something else first (docs/memoryd.md, "Hits that say something
//! else"): the last pick of late interaction. A candidate that says what a hit already
//! chosen says, in nearly the same words ("the build for Heron is broken" with another
//! greeting before it), goes after the candidates that say something else: a copy tells
//! the reader nothing the first did not, and in a long history of small talk the copies
//! of a few everyday remarks took every place the answer could have had.
//!
//! Two records say the same when the one with fewer content words (English function
//! words left out, word forms folded as the ranking folds them) has at least
//! `Distinct::share` of them in the other, they share at least `MIN_SHARED`, and neither
//! has more than twice the other's (a long record holding every word of a short one does not repeat
//! it). Only the order moves: which candidates there are, their scores and what stays
//! first (exact codes, the words' whole-question first hit) do not.

use crate::query;
use std::collections::HashSet;

/// The rule's setting: `DISTINCT` in every recall, another for measuring
/// (`scripts/bench recall --sweep`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Distinct {
    /// The share of the shorter record's content words the other must hold for the two
    /// to say the same thing (0 to 1; above 1 turns the rule off).
    pub share: f32,
}

/// The setting every recall uses, measured on the synthetic year and LoCoMo
/// (docs/measurements/memoryd.md, "Hits that say something else").
pub const DISTINCT: Distinct = Distinct { share: 0.8 };

/// The rule left out: the candidates in their score's order.
pub const OFF: Distinct = Distinct {
    share: f32::INFINITY,
};

/// Content words two records must share before they can say the same thing: "Noted."
/// and "Got it, noted." share one, and a reply that short says nothing either way.
pub const MIN_SHARED: usize = 3;

/// The longest record the rule compares, in bytes: a chat message or a paragraph. A
/// longer one (a pasted document) is kept where its score puts it and repeats nothing:
/// the rule is for everyday remarks said again, and cutting the 32 KiB records of a
/// history of pasted documents into words on every recall would cost more than the
/// whole rule does among chat lines (at most `late::MAX_CANDIDATES` records of this
/// size are cut a recall, some 300 KiB).
pub const MAX_BYTES: usize = 2048;

/// What a record says, as the rule compares it: its content words (its words as the
/// index cuts them, function words left out, each by its base form, `query::base_form`),
/// of those its names (`names`), and its first word when that may be its subject
/// (`subject`).
#[derive(Default)]
pub(crate) struct Said {
    words: HashSet<String>,
    names: HashSet<String>,
    subject: Option<String>,
}

pub(crate) fn content(text: &str) -> Said {
    let form = |w: &str| query::base_form(w).into_owned();
    Said {
        words: query::words(text)
            .into_iter()
            .filter(|w| !query::is_stop_word(w))
            .map(|w| form(&w))
            .collect(),
        names: names(text).iter().map(|w| form(w)).collect(),
        subject: subject(text).map(|w| form(&w)),
    }
}

/// The record's first word, lower-cased, when it may be who or what the record is about:
/// a content word standing alone ("Priya has a flat in Glasgow"), not a greeting or an
/// aside that punctuation sets off ("Morning!", "Hmm,", "Decided:"). `names` cannot tell
/// a name there from any other first word, as every first word has its capital.
fn subject(text: &str) -> Option<String> {
    let raw = text.split_whitespace().next()?;
    if !raw.chars().last().is_some_and(char::is_alphanumeric) {
        return None;
    }
    let mut words = query::words(raw);
    let word = words.pop().filter(|_| words.is_empty())?;
    (!query::is_stop_word(&word)).then_some(word)
}

/// The words of `text` written with a capital where a sentence does not start (not first,
/// not after `.`, `!` or `?`), lower-cased: "Quick note: Priya has a flat in Glasgow"
/// names Priya and Glasgow, "Morning! Mateo sent me a video" names no one, as its
/// greeting and its first word have their capitals from where they stand.
fn names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut starts = true;
    for raw in text.split_whitespace() {
        let word = raw.trim_matches(|c: char| !c.is_alphanumeric());
        let capital = word.chars().next().is_some_and(char::is_uppercase)
            && word.chars().skip(1).any(char::is_lowercase);
        if capital && !starts {
            out.extend(query::words(word));
        }
        starts = raw.ends_with(['.', '!', '?']);
    }
    out
}

/// Whether records saying `a` and `b` say the same thing under `d`: mostly the same
/// words, no name in one that the other lacks, and not each about a first word the other
/// lacks ("Priya has a flat in Glasgow" and "Zainab has a flat in Glasgow" are two facts,
/// whether their names stand first or later).
pub(crate) fn same(d: Distinct, a: &Said, b: &Said) -> bool {
    let (small, large) = if a.words.len() <= b.words.len() {
        (a, b)
    } else {
        (b, a)
    };
    if small.words.len() < MIN_SHARED || large.words.len() > 2 * small.words.len() {
        return false;
    }
    let shared = small.words.intersection(&large.words).count();
    shared >= MIN_SHARED
        && shared as f32 / small.words.len() as f32 >= d.share
        && a.names.iter().all(|n| b.words.contains(n))
        && b.names.iter().all(|n| a.words.contains(n))
        && !matches!((&a.subject, &b.subject), (Some(x), Some(y))
            if !b.words.contains(x) && !a.words.contains(y))
}

/// The places of `texts` (best first) in the order the rule gives: each text that says
/// what a text kept before it says goes after every text kept, in its own order among
/// them; `pinned(i)` texts are kept where they are whatever they say. Stops comparing
/// once `limit` texts are kept: the rest keep their order after them.
pub(crate) fn order(
    d: Distinct,
    texts: &[&str],
    pinned: &dyn Fn(usize) -> bool,
    limit: usize,
) -> Vec<usize> {
    if !d.share.is_finite() {
        return (0..texts.len()).collect();
    }
    let mut kept: Vec<usize> = Vec::with_capacity(limit);
    let mut kept_words: Vec<Said> = Vec::with_capacity(limit);
    let mut later: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < texts.len() && kept.len() < limit {
        let words = if texts[i].len() <= MAX_BYTES {
            content(texts[i])
        } else {
            Said::default()
        };
        if !pinned(i) && kept_words.iter().any(|k| same(d, k, &words)) {
            later.push(i);
        } else {
            kept.push(i);
            kept_words.push(words);
        }
        i += 1;
    }
    kept.extend(later);
    kept.extend(i..texts.len());
    kept
}

#[cfg(test)]
mod tests;
