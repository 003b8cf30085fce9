//! Turning free text (a person's or the model's question) into a search (docs/memoryd.md): the
//! words that carry meaning, each an FTS5 term, OR-ed together, so a record needs only
//! some of them to be found and bm25 ranks the ones with more and rarer words first.
//!
//! - A word is a run of letters and digits, lower-cased, as FTS5's `unicode61` tokenizer
//!   cuts text. Stop words (`stop`) are dropped; the index's `porter` tokenizer stems the
//!   rest on both sides, so "meetings" finds "meeting".
//! - A word with an English suffix porter does not undo ("allergic" is `allerg`,
//!   "allergy" is `allergi`) also searches its root as a prefix (`"allerg"*`), so the two
//!   forms find each other.
//! - A token with letters or digits joined by punctuation (an e-mail address, a URL, a
//!   file name, a date, `A-113`) is an exact phrase of its parts, matched in order.
//! - Every term is a quoted FTS5 string, so operators in the input (`NEAR(`, `*`, `OR`,
//!   `-`, quotes) are plain text: no input is a syntax error. Nothing left to search for
//!   (empty, punctuation, stop words only) is `None`: no hits, not every row.
//!
//! `Query::coverage` tells the ranking (`index::recall`) which of the query's groups a
//! candidate text contains and whether it holds them as a phrase; it approximates the
//! tokenizer in Rust, which is enough for ordering a few dozen candidates.

pub(crate) mod hashed;
pub(crate) mod insist;
pub(crate) mod names;
mod passages;
pub(crate) mod stop;
pub mod time;

use std::borrow::Cow;

pub(crate) use passages::TextWords;
pub(crate) use stop::{is_stop_word, is_stop_word_in};

/// Input words looked at. A question is a handful of words; a longer input is pasted
/// text, and hundreds of terms would only make one recall slow for the same answer.
pub(crate) const MAX_QUERY_TOKENS: usize = 64;

/// Distinct terms kept from those words: each costs a doclist walk per recall.
pub(crate) const MAX_QUERY_GROUPS: usize = 24;

// `Coverage::held` is one bit per group.
const _: () = assert!(MAX_QUERY_GROUPS <= u32::BITS as usize);

/// Words in one passage of a record, the unit a long record is scored by (see
/// `Query::passage_coverage`): a paragraph. A record is about what its sentences say
/// together, not about every word it holds somewhere: scored whole, a long text of
/// everyday words held some of the words of any question (docs/memoryd.md). Chat
/// messages are shorter than this and are scored whole, as before: at 50 words, LoCoMo's
/// longer turns were cut into passages and its recall@1 fell by up to 0.010.
pub(crate) const PASSAGE_WORDS: usize = 150;

/// Shortest root searched as a prefix: shorter ones ("meet*", "sist*") match unrelated
/// words, and porter already joins the common forms of short words.
const MIN_ROOT: usize = 5;

/// Shortest word whose suffix is stripped for a prefix search.
const MIN_ROOT_WORD: usize = 6;

/// English suffixes porter leaves apart from their siblings, longest first; the first
/// that matches is stripped, and only when `MIN_ROOT` letters remain.
const SUFFIXES: &[&str] = &[
    "ations", "ation", "ments", "ment", "ings", "ing", "ies", "ied", "ers", "er", "ed", "es", "ic",
    "y", "s",
];

/// One thing the query looks for; a record matches it or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Group {
    /// A word, and the root its other forms share when it has one worth searching.
    Word { word: String, root: Option<String> },
    /// An exact token of several parts (`maria.santos@example.com`), matched in order.
    Exact { parts: Vec<String> },
}

/// A parsed question: what is searched for, in the order it was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    groups: Vec<Group>,
    /// The people and places the question names (`names`), lower-cased.
    names: Vec<String>,
}

/// What the best passage of a text holds of a query (`Query::passage_coverage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Passage {
    pub cover: Coverage,
    /// The text is longer than one passage.
    pub long: bool,
    /// The passage of a long text is a list of words rather than sentences: fewer than
    /// `LIST_STOP_SHARE` of its words are stop words.
    pub list: bool,
    /// The text is untrusted and says one sentence again and again (`insist`): set by
    /// the ranking, which knows the record's label.
    pub insists: bool,
}

impl Passage {
    /// The passage's words say less than their share: a list of words, or a refrain
    /// placed to be read whatever passage is shown. Either counts `LIST_SHARE` of it
    /// (`index::rank`).
    pub(crate) fn discounted(&self) -> bool {
        self.list || self.insists
    }
}

/// The share of stop words below which a passage of a long record is a list of words,
/// not sentences: English prose runs at 40 to 60 % ("the", "is", "of", "and"); a page's
/// summary stuffed with everyday words to match every question runs near none.
pub(crate) const LIST_STOP_SHARE: f64 = 0.15;

/// What a candidate text holds of a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Coverage {
    /// Groups found in the text.
    pub matched: usize,
    /// Groups in the query.
    pub of: usize,
    /// Which groups were found: bit `i` for group `i` (at most `MAX_QUERY_GROUPS`, so
    /// they fit), for weighing a hit by which of the question's words it holds.
    pub held: u32,
    /// Pairs of the query's neighbouring groups that the text holds side by side, in
    /// the query's order ("wifi password" in "the wifi password is…"); `of - 1` is the
    /// whole query as a phrase.
    pub adjacent: usize,
}

impl Coverage {
    pub fn all(&self) -> bool {
        self.matched == self.of
    }

    /// The text holds the whole query (of two groups or more) as a phrase.
    #[cfg(test)]
    pub(crate) fn phrase(&self) -> bool {
        self.of > 1 && self.adjacent == self.of - 1
    }
}

/// The search for `text`, or `None` when nothing in it can match.
pub fn parse(text: &str) -> Option<Query> {
    let mut groups: Vec<Group> = Vec::new();
    let question = words(text);
    for raw in text.split_whitespace().take(MAX_QUERY_TOKENS) {
        let Some(group) = group_of(raw, &question) else {
            continue;
        };
        if !groups.contains(&group) && groups.len() < MAX_QUERY_GROUPS {
            groups.push(group);
        }
    }
    (!groups.is_empty()).then(|| Query {
        groups,
        names: names::names(text),
    })
}

/// The FTS5 expression for `text` (see `parse`), or `None` when nothing in it can match.
#[cfg(test)]
pub(crate) fn fts_query(text: &str) -> Option<String> {
    parse(text).map(|q| q.expression())
}

impl Query {
    /// The names the question holds (see `names`).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Whether `text` is about someone or somewhere the question names: true when it
    /// names none.
    pub fn holds_names(&self, text: &str) -> bool {
        names::holds_any(text, &self.names)
    }

    pub(crate) fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// The FTS5 MATCH expression: every group's terms OR-ed. Terms are quoted strings of
    /// letters and digits only, so the expression is always valid.
    pub fn expression(&self) -> String {
        let mut terms: Vec<String> = Vec::new();
        for g in &self.groups {
            g.terms(&mut terms);
        }
        terms.join(" OR ")
    }

    /// The FTS5 expression of group `i` alone (its terms OR-ed), or `None` past the end.
    pub(crate) fn group_expression(&self, i: usize) -> Option<String> {
        let mut terms = Vec::new();
        self.groups.get(i)?.terms(&mut terms);
        Some(terms.join(" OR "))
    }

    /// `expression` over only the groups `keep` says yes to (by position); `None` when
    /// it keeps none.
    pub(crate) fn expression_of(&self, keep: impl Fn(usize) -> bool) -> Option<String> {
        let mut terms: Vec<String> = Vec::new();
        for (i, g) in self.groups.iter().enumerate() {
            if keep(i) {
                g.terms(&mut terms);
            }
        }
        (!terms.is_empty()).then(|| terms.join(" OR "))
    }

    /// The FTS5 expression of a record holding every group (each group's terms OR-ed in
    /// parentheses, the groups AND-ed); `None` for a query of one group, where it is
    /// `expression` itself. FTS5 walks an AND by its rarest term, so this is cheap even
    /// when the words are common, which the OR of them is not.
    pub fn all_expression(&self) -> Option<String> {
        if self.groups.len() < 2 {
            return None;
        }
        self.all_expression_of(|_| true)
    }

    /// The AND of only the groups `keep` says yes to (by position), each its terms
    /// OR-ed; `None` when it keeps none.
    pub(crate) fn all_expression_of(&self, keep: impl Fn(usize) -> bool) -> Option<String> {
        let groups: Vec<String> = self
            .groups
            .iter()
            .enumerate()
            .filter(|(i, _)| keep(*i))
            .map(|(_, g)| {
                let mut terms = Vec::new();
                g.terms(&mut terms);
                format!("({})", terms.join(" OR "))
            })
            .collect();
        (!groups.is_empty()).then(|| groups.join(" AND "))
    }

    /// Which groups `text` holds, and whether as a phrase.
    #[cfg(test)]
    pub(crate) fn coverage(&self, text: &str) -> Coverage {
        self.coverage_of(&words(text))
    }

    /// `passage_coverage` of a long text from its words kept (`TextWords`): the same
    /// passage. `None` for a query with an exact token, whose passages are found from the
    /// text itself.
    pub(crate) fn passage_of_words(&self, words: &TextWords) -> Option<Passage> {
        passages::of_text_words(self, words)
    }

    /// What the best passage of `text` holds (docs/memoryd.md, 'Relevance by the best
    /// passage'): a text of at most `PASSAGE_WORDS` words is its own passage; a longer one
    /// is cut into windows of that many words, each overlapping the next by half, and
    /// the window holding the most groups (then the most neighbouring pairs, then the
    /// earliest) stands for it.
    pub(crate) fn passage_coverage(&self, text: &str) -> Passage {
        if let Some(p) = passages::of_words_only(self, text) {
            return p;
        }
        let tokens = words(text);
        if tokens.len() <= PASSAGE_WORDS {
            return Passage {
                cover: self.coverage_of(&tokens),
                long: false,
                list: false,
                insists: false,
            };
        }
        let (cover, at) = passages::best_window(self, &tokens);
        let window = &tokens[at..(at + PASSAGE_WORDS).min(tokens.len())];
        let stops = window.iter().filter(|w| is_stop_word(w)).count();
        Passage {
            cover,
            long: true,
            list: (stops as f64) < LIST_STOP_SHARE * window.len() as f64,
            insists: false,
        }
    }

    /// Which groups the words `tokens` hold, and whether as a phrase.
    pub(crate) fn coverage_of(&self, tokens: &[String]) -> Coverage {
        let found: Vec<Option<usize>> = self.groups.iter().map(|g| find(g, tokens)).collect();
        let matched = found.iter().filter(|f| f.is_some()).count();
        let held = found
            .iter()
            .enumerate()
            .filter(|(_, f)| f.is_some())
            .fold(0u32, |acc, (i, _)| acc | 1 << i);
        let adjacent = self
            .groups
            .windows(2)
            .filter(|pair| {
                (0..tokens.len()).any(|at| {
                    pair[0]
                        .matches_at(tokens, at)
                        .is_some_and(|len| pair[1].matches_at(tokens, at + len).is_some())
                })
            })
            .count();
        Coverage {
            matched,
            of: self.groups.len(),
            held,
            adjacent,
        }
    }
}

impl Group {
    /// This group's FTS5 terms, quoted.
    fn terms(&self, out: &mut Vec<String>) {
        match self {
            Group::Word { word, root } => {
                out.push(format!("\"{word}\""));
                if let Some(r) = root {
                    out.push(format!("\"{r}\"*"));
                }
            }
            Group::Exact { parts } => out.push(format!("\"{}\"", parts.join(" "))),
        }
    }

    /// How many tokens from `at` this group matches, if it matches there.
    fn matches_at(&self, tokens: &[String], at: usize) -> Option<usize> {
        match self {
            Group::Word { word, root } => {
                let t = tokens.get(at)?;
                let hit = t == word
                    || base(t) == base(word)
                    || root.as_deref().is_some_and(|r| t.starts_with(r));
                hit.then_some(1)
            }
            Group::Exact { parts } => {
                let window = tokens.get(at..at + parts.len())?;
                (window == parts.as_slice()).then_some(parts.len())
            }
        }
    }
}

/// The first token position where `group` matches.
fn find(group: &Group, tokens: &[String]) -> Option<usize> {
    (0..tokens.len()).find(|&at| group.matches_at(tokens, at).is_some())
}

/// The group one whitespace-separated input token stands for, if any.
/// `question` is the whole question's words, which tell whether a function word of
/// another language is one here (`stop::is_stop_word_in`).
fn group_of(raw: &str, question: &[String]) -> Option<Group> {
    // Punctuation around a token is the sentence's ("appointment?", "(feedback.xlsx)"),
    // not the token's.
    let core = raw.trim_matches(|c: char| !c.is_alphanumeric());
    // A contraction or possessive is its first word: "maria's" is "maria", "I'm" is "i".
    let core = match core.split_once(['\'', '’']) {
        Some((head, tail)) if tail.chars().all(char::is_alphabetic) && tail.len() <= 2 => head,
        _ => core,
    };
    let mut parts = words(core);
    match parts.len() {
        0 => None,
        1 => {
            let word = parts.pop()?;
            if is_stop_word_in(&word, question) {
                return None;
            }
            let root = root_of(&word);
            Some(Group::Word { word, root })
        }
        _ => Some(Group::Exact { parts }),
    }
}

/// The root of an English word worth searching as a prefix, when stripping a suffix
/// leaves `MIN_ROOT` letters.
fn root_of(word: &str) -> Option<String> {
    if word.len() < MIN_ROOT_WORD || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return None;
    }
    let suffix = SUFFIXES.iter().find(|s| word.ends_with(*s))?;
    let root = &word[..word.len() - suffix.len()];
    (root.len() >= MIN_ROOT).then(|| root.to_string())
}

/// `base` for the fusion's stages (`hybrid::distinct`): a word's form as the ranking
/// folds it.
pub(crate) fn base_form(word: &str) -> Cow<'_, str> {
    base(word)
}

/// A word without its inflection, for telling "lives" and "live", "sisters" and
/// "sister", "meetings" and "meeting", "running" and "run", "studies" and "study" are one
/// word when ranking. The index's porter joins these forms when matching; a record it
/// finds by one form must count as holding the word, or it is found and scored as if it
/// held nothing of it. As porter does, a consonant's final `y` is `i` ("study",
/// "studies", "studied" are all "studi"; "party" is not "part", nor "Billy" "Bill"), and
/// a consonant doubled before `ing` or `ed` is single ("runn" is "run"; never `l`, `s` or
/// `z`, which English doubles in the word itself: "fall", "miss"). Only ASCII letters are
/// folded: a word of another script is itself.
fn base(word: &str) -> Cow<'_, str> {
    let w = word;
    let (cut, inflected) = if w.len() > 6 && w.ends_with("ings") {
        (&w[..w.len() - 4], true)
    } else if w.len() > 5 && w.ends_with("ing") {
        (&w[..w.len() - 3], true)
    } else if w.len() > 4 && w.ends_with("ed") {
        (&w[..w.len() - 2], true)
    } else if w.len() > 4 && w.ends_with("es") {
        (&w[..w.len() - 2], false)
    } else if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") {
        (&w[..w.len() - 1], false)
    } else {
        (w, false)
    };
    let b = cut.as_bytes();
    let n = b.len();
    if n > 2 && b[n - 1] == b'y' && is_consonant(b[n - 2]) {
        return Cow::Owned(format!("{}i", &cut[..n - 1]));
    }
    let doubled = inflected && n >= 4 && b[n - 1] == b[n - 2] && is_consonant(b[n - 1]);
    if doubled && !matches!(b[n - 1], b'l' | b's' | b'z') {
        return Cow::Borrowed(&cut[..n - 1]);
    }
    Cow::Borrowed(cut.strip_suffix('e').unwrap_or(cut))
}

/// An ASCII consonant letter (`y` counts as one, as in "study").
fn is_consonant(b: u8) -> bool {
    b.is_ascii_lowercase() && !matches!(b, b'a' | b'e' | b'i' | b'o' | b'u')
}

/// The lower-case, diacritic-free runs of letters and digits of `text`, as the index's
/// `unicode61 remove_diacritics 2` tokenizer cuts it.
pub fn words(text: &str) -> Vec<String> {
    // About one word per six bytes of English.
    let mut out = Vec::with_capacity(text.len() / 6);
    for_each_word(text, |_, w| {
        out.push(w.to_owned());
        true
    });
    out
}

/// Calls `f` with each word of `text` as `words` cuts it, its place (from 0) and its
/// lower-case form, without an allocation a word, until `f` says to stop (`false`); the
/// number of words read.
pub(crate) fn for_each_word(text: &str, mut f: impl FnMut(usize, &str) -> bool) -> usize {
    let mut cur = String::new();
    let mut n = 0;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            cur.push(c.to_ascii_lowercase());
        } else if c.is_alphanumeric() {
            for l in c.to_lowercase() {
                cur.push(fold(l));
            }
        } else if !cur.is_empty() {
            let go_on = f(n, &cur);
            n += 1;
            cur.clear();
            if !go_on {
                return n;
            }
        }
    }
    if !cur.is_empty() {
        f(n, &cur);
        n += 1;
    }
    n
}

/// The base letter of a lower-case Latin letter with a diacritic.
pub(crate) fn fold(c: char) -> char {
    match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ă' | 'ą' => 'a',
        'ç' | 'ć' | 'č' => 'c',
        'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ę' | 'ě' => 'e',
        'ì' | 'í' | 'î' | 'ï' | 'ī' => 'i',
        'ñ' | 'ń' | 'ň' => 'n',
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' | 'ő' => 'o',
        'ù' | 'ú' | 'û' | 'ü' | 'ū' | 'ů' | 'ű' => 'u',
        'ý' | 'ÿ' => 'y',
        'ś' | 'š' => 's',
        'ź' | 'ż' | 'ž' => 'z',
        'ł' => 'l',
        'ř' => 'r',
        'ť' => 't',
        'ď' => 'd',
        other => other,
    }
}

#[cfg(test)]
mod tests;
