//! The sites a sentence names, for telling whether a text sends its reader to one place
//! again and again (`super::PLACE_TIMES`). A page rewording its order each time still
//! names where to go, and it owns that place: it can vary the address (`go.site.example`,
//! `deals.site.example`, `https://go@site.example/x`), glue words to it
//! (`site.example's`, `site.example—now`) or disguise its dot (`site[.]example`,
//! `site dot example`, `site。example`) and a model still reads it. So a site is the
//! part of a host its owner registers, read through those disguises.

/// Characters that cannot be part of an address: a token is cut at each, so words glued
/// to an address (`'s`, a dash, a bracket) fall away.
fn outside(c: char) -> bool {
    !(c.is_alphanumeric() || matches!(c, '.' | '-' | '@' | '/' | ':' | '_' | '%' | '~'))
}

/// Characters read as a dot: the ideographic and full-width full stops.
const DOTS: [char; 3] = ['。', '．', '｡'];

/// Characters a reader does not see, dropped before reading: zero-width spaces and
/// joiners, the word joiner and the byte-order mark.
const UNSEEN: [char; 5] = ['\u{200b}', '\u{200c}', '\u{200d}', '\u{2060}', '\u{feff}'];

/// Ways of writing a dot that a model reads as one.
const SPELLED_DOTS: [&str; 4] = ["[.]", "(.)", "{.}", " dot "];

/// File-name endings that are no one's top-level domain: `Cargo.toml` or `Node.js`
/// said throughout a page of docs is its topic, not a place to send the reader. Endings
/// that are also a country's domain (`.rs`, `.py`, `.md`, `.sh`) stay sites: a page could
/// be sending the reader there.
const FILE_ENDINGS: [&str; 28] = [
    "js", "jsx", "ts", "tsx", "json", "toml", "yaml", "yml", "html", "htm", "txt", "css", "lock",
    "cfg", "conf", "ini", "xml", "csv", "log", "java", "cpp", "hpp", "rb", "kt", "php", "sql",
    "pdf", "png",
];

/// The sites `sentence` names, each once.
pub(super) fn sites(sentence: &str) -> Vec<String> {
    // Every address has a dot or a way of writing one: most sentences are passed over
    // whole, without a copy (the wide dots and unseen characters are not ASCII).
    let spelled = !sentence.is_ascii() && (sentence.contains(DOTS) || sentence.contains(UNSEEN));
    let dot_word = [" dot ", " Dot ", " DOT "]
        .iter()
        .any(|d| sentence.contains(d));
    if !spelled && !dot_word && !sentence.contains('.') {
        return Vec::new();
    }
    let mut text: String = sentence
        .chars()
        .filter(|c| !UNSEEN.contains(c))
        .map(|c| if DOTS.contains(&c) { '.' } else { c })
        .collect::<String>()
        .to_lowercase();
    for dot in SPELLED_DOTS {
        text = text.replace(dot, ".");
    }
    let mut found: Vec<String> = text.split(outside).filter_map(site).collect();
    found.sort_unstable();
    found.dedup();
    found
}

/// The site `token` names when it reads as a web or mail address (`https://host/…`,
/// `someone@host`, `host.tld/…`): the last two parts of its host, three when the second
/// last is a short one under a country's domain (`bbc.co.uk`).
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
    // Whoever's name comes before an `@` (a mailbox, or userinfo in a URL), the host is
    // after it; a port after the host's `:`.
    let host = authority.rsplit('@').next()?.split(':').next()?;
    let labels: Vec<&str> = host.split('.').collect();
    let last = *labels.last()?;
    let well_formed = labels.len() >= 2
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_alphanumeric() || c == '-'))
        && labels[..labels.len() - 1]
            .iter()
            .any(|l| l.chars().any(char::is_alphabetic))
        && last.chars().count() >= 2
        && last.chars().all(char::is_alphabetic);
    if !well_formed || (!marked && FILE_ENDINGS.contains(&last)) {
        return None;
    }
    let n = labels.len();
    let under_country = n >= 3 && last.chars().count() == 2 && labels[n - 2].chars().count() <= 3;
    let keep = if under_country { 3 } else { 2 };
    Some(labels[n - keep..].join("."))
}
