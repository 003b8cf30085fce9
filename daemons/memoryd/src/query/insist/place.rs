//! The sites a sentence names, for telling whether a text sends its reader to one place
//! again and again (`super::PLACE_TIMES`). A page rewording its order each time still
//! names where to go, and it owns that place: it can vary the address (`go.site.example`,
//! `https://me@deals.site.net/x`), glue words to it (`site.example's`), disguise its dot
//! (`site[.]example`, `site dot example`, `site。example`) or a letter (`sité.example`)
//! and a model still reads it. So a site is the name its owner registers, the part of the
//! host left of its public suffix (`site`), read through those disguises. A name without
//! `://` or `@` reads as a site only when it ends in a top-level domain that is not also a
//! file's ending, so `Math.floor`, `pd.DataFrame` and `setup.py` are not sites.

use crate::query::fold;
use crate::query::stop::is_stop_word;

/// Characters that cannot be part of an address: a token is cut at each, so words glued
/// to an address (`'s`, a dash, a bracket) fall away.
fn outside(c: char) -> bool {
    !(c.is_alphanumeric() || matches!(c, '.' | '-' | '@' | '/' | ':' | '_' | '%' | '~'))
}

/// Characters read as a dot: the ideographic full stops (the full-width and small full
/// stops and the one-dot leader are a plain dot already, `plain`).
const DOTS: [char; 2] = ['。', '｡'];

/// Ways of writing a dot between brackets, a dot wherever they are.
const BRACKETED_DOTS: [&str; 5] = ["[.]", "(.)", "{.}", "[dot]", "(dot)"];

/// Top-level domains a bare name (no `://`, no `@`) may end in to read as a site, beside
/// every two-letter one but `FILE_ENDINGS`: the common ones, and `example`, the one
/// kept for examples.
const TOP_LEVEL: [&str; 40] = [
    "com", "net", "org", "info", "biz", "app", "dev", "xyz", "online", "site", "shop", "store",
    "travel", "example", "top", "club", "blog", "tech", "cloud", "page", "link", "live", "news",
    "email", "space", "website", "pro", "agency", "deals", "money", "help", "world", "today",
    "life", "media", "digital", "zone", "click", "gov", "edu",
];

/// Two-letter endings of common files, some of them a country's domain too: a bare
/// `Node.js`, `main.rs`, `setup.py` or `README.md` is a file.
const FILE_ENDINGS: [&str; 22] = [
    "js", "ts", "cs", "hs", "rb", "go", "db", "ex", "gz", "xz", "vb", "fs", "kt", "el", "rs", "py",
    "md", "sh", "pl", "cc", "mk", "so",
];

/// Second levels under a country's domain that anyone registers under (`bbc.co.uk`,
/// `abc.net.au`): the name left of them is the owner's.
const SECOND_LEVELS: [&str; 14] = [
    "co", "com", "ac", "gov", "org", "net", "edu", "ne", "or", "go", "ltd", "plc", "sch", "nic",
];

/// What a whole text holds of the ways of writing a dot other than a dot, looked for once
/// so that each of its sentences is passed over on a look for a dot alone.
#[derive(Clone, Copy)]
pub(super) struct Spelled {
    /// The word "dot", in any case.
    word: bool,
    /// One of `DOTS`.
    wide: bool,
}

impl Spelled {
    pub(super) fn of(text: &str) -> Spelled {
        Spelled {
            word: ["dot", "Dot", "DOT"].iter().any(|d| text.contains(d)),
            wide: !text.is_ascii() && text.contains(DOTS),
        }
    }
}

/// The sites `sentence` names, each once; `spelled` is what its whole text holds.
pub(super) fn sites(sentence: &str, spelled: Spelled) -> Vec<String> {
    // Every address has a dot or a way of writing one: most sentences are passed over
    // whole, without a copy.
    let dot_word = spelled.word && ["dot", "Dot", "DOT"].iter().any(|d| sentence.contains(d));
    let wide = spelled.wide && sentence.contains(DOTS);
    if !dot_word && !wide && !sentence.as_bytes().contains(&b'.') {
        return Vec::new();
    }
    let mut text: String = sentence
        .chars()
        .map(|c| if DOTS.contains(&c) { '.' } else { c })
        .flat_map(char::to_lowercase)
        .map(fold)
        .collect();
    for dot in BRACKETED_DOTS {
        if text.contains(dot) {
            text = text.replace(dot, ".");
        }
    }
    let mut found: Vec<String> = text.split(outside).filter_map(site).collect();
    if dot_word {
        found.extend(spelled_out(&text));
    }
    found.sort_unstable();
    found.dedup();
    found
}

/// Sites written with the word "dot" (`cheapflights dot example`): only where the word
/// before it is no function word and the word after it a top-level domain, so "the dot
/// product" and "polka dot dress" name nothing.
fn spelled_out(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let bare = |w: &str| w.trim_matches(|c: char| !c.is_alphanumeric()).to_owned();
    (1..words.len().saturating_sub(1))
        .filter(|&i| words[i] == "dot")
        .filter_map(|i| {
            let (before, after) = (bare(words[i - 1]), bare(words[i + 1]));
            if before.is_empty() || is_stop_word(&before) || !top_level(&after) {
                return None;
            }
            site(&format!("{before}.{after}"))
        })
        .collect()
}

/// Whether a bare name may end in `label` and read as a site.
fn top_level(label: &str) -> bool {
    TOP_LEVEL.contains(&label)
        || (label.len() == 2
            && label.chars().all(|c| c.is_ascii_alphabetic())
            && !FILE_ENDINGS.contains(&label))
}

/// The site `token` (lower-case) names when it reads as a web or mail address
/// (`https://host/…`, `someone@host`, `host.tld/…`): the label its owner registers.
fn site(token: &str) -> Option<String> {
    if !token.contains('.') {
        return None;
    }
    let token = token.trim_matches(|c: char| !c.is_alphanumeric());
    let (marked, rest) = match token.split_once("://") {
        Some((_, rest)) => (true, rest),
        None => (token.contains('@'), token),
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    // Whoever's name comes before an `@` (a mailbox, or a login in a URL), the host is
    // after it; a port after the host's `:`.
    let host = authority.rsplit('@').next()?.split(':').next()?;
    let labels: Vec<&str> = host.split('.').collect();
    let n = labels.len();
    let last = *labels.last()?;
    let well_formed = n >= 2
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_alphanumeric() || c == '-'))
        && last.chars().count() >= 2
        && last.chars().all(char::is_alphabetic);
    if !well_formed || (!marked && !top_level(last)) {
        return None;
    }
    let under_country = n >= 3 && last.len() == 2 && SECOND_LEVELS.contains(&labels[n - 2]);
    let owner = if under_country {
        labels[n - 3]
    } else {
        labels[n - 2]
    };
    owner
        .chars()
        .any(char::is_alphabetic)
        .then(|| owner.to_owned())
}
