//! The best passage of a long text in one pass (docs/memoryd.md, 'Relevance by the best
//! passage'): where each of the question's groups and neighbouring pairs matches is found
//! once over the whole text, and each window then only gathers the matches inside it.
//! Looking for every group again in every window cost a recall among pasted documents
//! most of its time (docs/measurements/memoryd.md, 'Long records').

use super::{
    base, for_each_word, is_stop_word, Coverage, Group, Passage, Query, LIST_STOP_SHARE,
    PASSAGE_WORDS,
};
use std::borrow::Cow;

/// One place a group, or a pair of neighbouring groups side by side, matches: tokens
/// `from..to` of the text, and which (bit `i` for group `i`, or for the pair `i, i + 1`).
#[derive(Debug, Clone, Copy)]
struct Match {
    from: usize,
    to: usize,
    bit: u32,
}

/// What the windows of `tokens` (longer than `PASSAGE_WORDS`) hold: the best window's
/// coverage and where it starts, chosen as `Query::passage_coverage` says.
pub(super) fn best_window(query: &Query, tokens: &[String]) -> (Coverage, usize) {
    let groups = query.groups.len();
    let mut held: Vec<Match> = Vec::new();
    let mut pairs: Vec<Match> = Vec::new();
    // A word group's base form, and each token's, made once (`Group::matches_at` makes
    // both for every token it is asked about).
    let bases: Vec<Option<Cow<'_, str>>> = query
        .groups
        .iter()
        .map(|g| match g {
            Group::Word { word, .. } => Some(base(word)),
            Group::Exact { .. } => None,
        })
        .collect();
    let matches_at = |i: usize, at: usize, token_base: &str| -> Option<usize> {
        match (&query.groups[i], &bases[i]) {
            (Group::Word { word, root }, Some(word_base)) => {
                let t = tokens.get(at)?;
                let hit = t == word
                    || token_base == word_base.as_ref()
                    || root.as_deref().is_some_and(|r| t.starts_with(r));
                hit.then_some(1)
            }
            (g, _) => g.matches_at(tokens, at),
        }
    };
    let token_bases: Vec<Cow<'_, str>> = tokens.iter().map(|t| base(t)).collect();
    let mut lens: Vec<Option<usize>> = vec![None; groups];
    for from in 0..tokens.len() {
        for (i, len) in lens.iter_mut().enumerate() {
            *len = matches_at(i, from, &token_bases[from]);
        }
        for (i, len) in lens.iter().enumerate() {
            let Some(len) = *len else {
                continue;
            };
            held.push(Match {
                from,
                to: from + len,
                bit: 1 << i,
            });
            if i + 1 < groups {
                let next_base = token_bases.get(from + len).map_or("", |b| b.as_ref());
                if let Some(len2) = matches_at(i + 1, from + len, next_base) {
                    pairs.push(Match {
                        from,
                        to: from + len + len2,
                        bit: 1 << i,
                    });
                }
            }
        }
    }
    let within = |ms: &[Match], at: usize, end: usize| -> u32 {
        let start = ms.partition_point(|m| m.from < at);
        ms[start..]
            .iter()
            .take_while(|m| m.from < end)
            .filter(|m| m.to <= end)
            .fold(0, |acc, m| acc | m.bit)
    };
    let step = PASSAGE_WORDS / 2;
    let mut best: Option<(Coverage, usize)> = None;
    let mut at = 0;
    loop {
        let end = (at + PASSAGE_WORDS).min(tokens.len());
        let bits = within(&held, at, end);
        let c = Coverage {
            matched: bits.count_ones() as usize,
            of: groups,
            held: bits,
            adjacent: within(&pairs, at, end).count_ones() as usize,
        };
        if best.is_none_or(|(b, _)| (c.matched, c.adjacent) > (b.matched, b.adjacent)) {
            best = Some((c, at));
        }
        if end == tokens.len() {
            break;
        }
        at += step;
    }
    best.unwrap_or((
        Coverage {
            matched: 0,
            of: groups,
            held: 0,
            adjacent: 0,
        },
        0,
    ))
}

/// A word group as `mask_of` tries it: the word, its base form and its root.
type WordGroup<'q> = (&'q str, Cow<'q, str>, Option<&'q str>);

/// The query's groups when every one is a word (no exact token of several parts): each
/// word, its base form and its root; `None` otherwise.
fn word_groups(query: &Query) -> Option<Vec<WordGroup<'_>>> {
    let mut words = Vec::with_capacity(query.groups.len());
    for g in &query.groups {
        match g {
            Group::Word { word, root } => words.push((word.as_str(), base(word), root.as_deref())),
            Group::Exact { .. } => return None,
        }
    }
    Some(words)
}

/// Which of `words` (`word_groups`) the text's word `t` matches, a bit each.
fn mask_of(words: &[WordGroup<'_>], t: &str) -> u32 {
    let token_base = base(t);
    words
        .iter()
        .enumerate()
        .filter(|(_, (word, word_base, root))| {
            t == *word || token_base == *word_base || root.is_some_and(|r| t.starts_with(r))
        })
        .fold(0u32, |acc, (i, _)| acc | 1 << i)
}

/// The best window of a text of more than `PASSAGE_WORDS` words, each word given as the
/// groups it matches (`masks`): its coverage of `groups` groups and its place, chosen as
/// `Query::passage_coverage` says. A window holds the groups of its words and the pairs
/// of a word matching group `i` followed by one matching group `i + 1`.
fn best_of_masks(masks: &[u32], groups: usize) -> Option<(Coverage, usize, usize)> {
    let n = masks.len();
    // Pair `i` starts at a word matching group `i` when the next word matches `i + 1`.
    let pairs: Vec<u32> = masks
        .iter()
        .zip(masks.iter().skip(1))
        .map(|(&here, &next)| here & (next >> 1))
        .collect();
    let step = PASSAGE_WORDS / 2;
    let mut best: Option<(Coverage, usize)> = None;
    let mut at = 0;
    loop {
        let end = (at + PASSAGE_WORDS).min(n);
        let held = masks[at..end].iter().fold(0, |acc, m| acc | m);
        // A pair is inside when both its words are: it starts before `end - 1`.
        let adjacent = pairs[at..end - 1].iter().fold(0u32, |acc, m| acc | m);
        let c = Coverage {
            matched: held.count_ones() as usize,
            of: groups,
            held,
            adjacent: adjacent.count_ones() as usize,
        };
        if best.is_none_or(|(b, _)| (c.matched, c.adjacent) > (b.matched, b.adjacent)) {
            best = Some((c, at));
        }
        if end == n {
            break;
        }
        at += step;
    }
    best.map(|(c, at)| (c, at, (at + PASSAGE_WORDS).min(n)))
}

/// `Query::passage_coverage` of a long `text` when every group of the query is a word
/// (no exact token of several parts), reading the text's words as they are cut, never
/// holding them: each word is only which groups it matches (a bit each). `None` for a
/// query with an exact token, or a text of at most `PASSAGE_WORDS` words (its own
/// passage; `passage_coverage` reads it whole).
pub(super) fn of_words_only(query: &Query, text: &str) -> Option<Passage> {
    let words = word_groups(query)?;
    let mut masks: Vec<u32> = Vec::with_capacity(text.len() / 6);
    let n = for_each_word(text, |_, t| {
        masks.push(mask_of(&words, t));
        true
    });
    if n <= PASSAGE_WORDS {
        return None;
    }
    let (cover, at, end) = best_of_masks(&masks, words.len())?;
    let mut stops = 0usize;
    for_each_word(text, |i, t| {
        if (at..end).contains(&i) && is_stop_word(t) {
            stops += 1;
        }
        i + 1 < end
    });
    Some(Passage {
        cover,
        long: true,
        list: (stops as f64) < LIST_STOP_SHARE * (end - at) as f64,
        insists: false,
    })
}

/// A long text's words as `for_each_word` cuts them, kept to be searched again
/// (`index::text_words`): each distinct word once, whether it is a stop word, and the
/// text as places in that list. A question then matches each distinct word once, not
/// each of the text's thousands of words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TextWords {
    distinct: Vec<Box<str>>,
    stop: Vec<bool>,
    places: Vec<u32>,
}

impl TextWords {
    /// The words of `text`, when it has more than `PASSAGE_WORDS` (a shorter text is its
    /// own passage, read whole).
    pub(crate) fn of(text: &str) -> Option<TextWords> {
        let mut seen: std::collections::HashMap<Box<str>, u32> = std::collections::HashMap::new();
        let mut out = TextWords {
            distinct: Vec::new(),
            stop: Vec::new(),
            places: Vec::with_capacity(text.len() / 6),
        };
        for_each_word(text, |_, t| {
            let place = match seen.get(t) {
                Some(&p) => p,
                None => {
                    let p = u32::try_from(out.distinct.len()).unwrap_or(u32::MAX);
                    seen.insert(t.into(), p);
                    out.distinct.push(t.into());
                    out.stop.push(is_stop_word(t));
                    p
                }
            };
            out.places.push(place);
            true
        });
        (out.places.len() > PASSAGE_WORDS).then_some(out)
    }

    /// Bytes held, about: what a cache of them counts against its bound.
    pub(crate) fn size(&self) -> usize {
        let words: usize = self.distinct.iter().map(|w| w.len() + 16).sum();
        words + self.stop.len() + 4 * self.places.len()
    }
}

/// `of_words_only` from a text's words kept (`TextWords`): the same passage, `None` for a
/// query with an exact token.
pub(super) fn of_text_words(query: &Query, text: &TextWords) -> Option<Passage> {
    let words = word_groups(query)?;
    let distinct: Vec<u32> = text.distinct.iter().map(|t| mask_of(&words, t)).collect();
    let masks: Vec<u32> = text
        .places
        .iter()
        .map(|&p| distinct.get(p as usize).copied().unwrap_or(0))
        .collect();
    let (cover, at, end) = best_of_masks(&masks, words.len())?;
    let stops = text.places[at..end]
        .iter()
        .filter(|&&p| text.stop.get(p as usize).copied().unwrap_or(false))
        .count();
    Some(Passage {
        cover,
        long: true,
        list: (stops as f64) < LIST_STOP_SHARE * (end - at) as f64,
        insists: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::{parse, words};

    /// Each window looked at on its own, as the passages were found before: the reference
    /// the one pass must equal.
    fn by_windows(query: &Query, tokens: &[String]) -> (Coverage, usize) {
        let step = PASSAGE_WORDS / 2;
        let mut best: Option<(Coverage, usize)> = None;
        let mut at = 0;
        loop {
            let end = (at + PASSAGE_WORDS).min(tokens.len());
            let c = query.coverage_of(&tokens[at..end]);
            if best.is_none_or(|(b, _)| (c.matched, c.adjacent) > (b.matched, b.adjacent)) {
                best = Some((c, at));
            }
            if end == tokens.len() {
                break;
            }
            at += step;
        }
        best.unwrap()
    }

    #[test]
    fn reading_words_as_they_come_finds_what_the_words_held_find() {
        let vocabulary = [
            "The",
            "wifi",
            "PASSWORD",
            "is",
            "rent,",
            "month.",
            "dentist",
            "appointments",
            "on",
            "Thursday",
            "park",
            "car",
            "cooking",
            "dinner",
            "a",
            "of",
            "kids",
            "school",
            "picked",
            "bills",
            "électricité",
            "électricity",
            "Zoë",
            "x-ray",
            "and",
        ];
        let questions = [
            "what is the wifi password?",
            "when is my dentist appointment on thursday?",
            "who picks the kids from school after cooking dinner?",
            "did I pay the electricity bill",
            "zoe x ray",
        ];
        let mut seed: u64 = 0x9876_5432;
        for round in 0..40 {
            let n = 100 + round * 41;
            let text: Vec<&str> = (0..n)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    vocabulary[(seed >> 33) as usize % vocabulary.len()]
                })
                .collect();
            let text = text.join(" ");
            let tokens = words(&text);
            for q in questions {
                let query = parse(q).unwrap();
                let fast = of_words_only(&query, &text);
                if tokens.len() <= PASSAGE_WORDS {
                    assert!(fast.is_none());
                    continue;
                }
                let (cover, at) = best_window(&query, &tokens);
                let window = &tokens[at..(at + PASSAGE_WORDS).min(tokens.len())];
                let stops = window.iter().filter(|w| is_stop_word(w)).count();
                let slow = Passage {
                    cover,
                    long: true,
                    list: (stops as f64) < LIST_STOP_SHARE * window.len() as f64,
                    insists: false,
                };
                assert_eq!(fast, Some(slow), "{q} in round {round}");
            }
        }
    }

    #[test]
    fn a_texts_words_kept_find_the_passage_the_text_finds() {
        let vocabulary = [
            "The",
            "wifi",
            "PASSWORD",
            "is",
            "rent,",
            "month.",
            "dentist",
            "appointments",
            "on",
            "Thursday",
            "park",
            "car",
            "cooking",
            "dinner",
            "a",
            "of",
            "kids",
            "school",
            "picked",
            "bills",
            "électricité",
            "électricity",
            "Zoë",
            "x-ray",
            "and",
            "the",
        ];
        let questions = [
            "what is the wifi password?",
            "when is my dentist appointment on thursday?",
            "who picks the kids from school after cooking dinner?",
            "did I pay the electricity bill",
            "the park and the car",
            "zoe x ray",
        ];
        let mut seed: u64 = 0x5151_2727;
        let mut long = 0;
        for round in 0..40 {
            let n = 100 + round * 41;
            let text: Vec<&str> = (0..n)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    vocabulary[(seed >> 33) as usize % vocabulary.len()]
                })
                .collect();
            let text = text.join(" ");
            let kept = TextWords::of(&text);
            assert_eq!(kept.is_some(), words(&text).len() > PASSAGE_WORDS);
            for q in questions {
                let query = parse(q).unwrap();
                let from_kept = kept.as_ref().and_then(|k| of_text_words(&query, k));
                if word_groups(&query).is_some() && kept.is_some() {
                    long += 1;
                    assert!(from_kept.is_some(), "{q} in round {round}");
                }
                if let Some(p) = from_kept {
                    assert_eq!(p, query.passage_coverage(&text), "{q} in round {round}");
                }
            }
        }
        assert!(long > 100, "{long}");
    }

    #[test]
    fn one_pass_finds_the_window_each_window_on_its_own_finds() {
        let vocabulary = [
            "the",
            "wifi",
            "password",
            "is",
            "rent",
            "month",
            "dentist",
            "appointment",
            "maria.santos@example.com",
            "on",
            "thursday",
            "park",
            "car",
            "cooking",
            "dinner",
            "a",
            "of",
            "kids",
            "school",
            "picked",
            "bills",
            "electricity",
        ];
        let questions = [
            "what is the wifi password?",
            "when is my dentist appointment on thursday?",
            "mail maria.santos@example.com about the rent this month",
            "who picks the kids from school after cooking dinner?",
            "did I pay the electricity bill",
        ];
        let mut seed: u64 = 0x1234_5678;
        for round in 0..40 {
            let n = 151 + round * 37;
            let text: Vec<&str> = (0..n)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    vocabulary[(seed >> 33) as usize % vocabulary.len()]
                })
                .collect();
            let tokens = words(&text.join(" "));
            for q in questions {
                let query = parse(q).unwrap();
                assert_eq!(
                    best_window(&query, &tokens),
                    by_windows(&query, &tokens),
                    "{q}"
                );
            }
        }
    }
}
