//! What a `/forget` query matches (docs/forgetting.md, 'What a query matches'): its words
//! and quoted phrases, each as a whole word of the text, in any case, all of them. The
//! one rule for the box's own records and for what Honcho holds, so the list the owner
//! reads and what is deleted in Honcho never differ: `/forget cat` finds "a cat named
//! Tom", not "education", "Caterina" or "locate".
//!
//! Every copy must be found, however it was written down: the text is searched as it
//! stands and decoded once (percent-encoding that decodes to UTF-8, JSON escapes), case
//! folded, and a word's boundary is only drawn between two letters or digits of scripts
//! that put spaces between words, so a secret written inside Japanese, Chinese or Thai
//! text is found as it is in any other. Query and text are compared in compatibility
//! decomposition (NFKD) without invisible characters (`searched`): "Zoë" written as one
//! character or as "e" and a combining diaeresis, "Elm Street" with a no-break space,
//! "４４７１" and "LYNX" with a zero-width space or soft hyphen inside are the same words
//! to a person, and so to the search.

use unicode_normalization::char::{
    canonical_combining_class, decompose_compatible, is_combining_mark,
};
use unicode_script::{Script, UnicodeScript};

/// A parsed query: the terms a text must hold, each case folded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    terms: Vec<Vec<char>>,
}

/// One character of a text as it is searched, and the bytes of the text it was read
/// from (one character, or a whole escape it decodes).
#[derive(Debug, Clone, Copy)]
struct Unit {
    c: char,
    start: usize,
    end: usize,
    /// Whether it counts as a letter or digit where a word's boundary is drawn (`wordy`);
    /// a combining mark counts as the character it is on (`mark_wordy`).
    wordy: bool,
}

impl Query {
    /// `text`'s terms: each phrase in double quotes (its quotes dropped) and each word
    /// outside them (split at white space). An unclosed quote runs to the end.
    pub fn parse(text: &str) -> Query {
        let mut terms = Vec::new();
        for (i, part) in text.split('"').enumerate() {
            if i % 2 == 1 {
                terms.push(part.trim().to_string());
            } else {
                terms.extend(part.split_whitespace().map(str::to_string));
            }
        }
        Query {
            terms: terms
                .iter()
                .filter(|t| !t.is_empty())
                .map(|t| {
                    let mut chars: Vec<char> = t.chars().flat_map(searched).collect();
                    in_canonical_order(&mut chars, |&c| c);
                    chars
                })
                .filter(|t| !t.is_empty())
                .collect(),
        }
    }

    /// Whether `text` holds every term as a whole word (or words), in any case, as it
    /// stands or decoded. An empty query matches nothing.
    pub fn matches(&self, text: &str) -> bool {
        let forms = forms(text);
        !self.terms.is_empty()
            && self
                .terms
                .iter()
                .all(|t| forms.iter().any(|f| next_match(f, t, 0).is_some()))
    }

    /// Where each term occurs in `text`, as byte ranges, in order; a match in the decoded
    /// form covers the whole escapes it was read from.
    pub fn spans(&self, text: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for form in forms(text) {
            for t in &self.terms {
                let mut from = 0;
                while let Some((start, next)) = next_match(&form, t, from) {
                    out.push((form[start].start, form[next - 1].end));
                    from = next.max(start + 1);
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The byte where the first occurrence of any term starts.
    pub fn first(&self, text: &str) -> Option<usize> {
        self.spans(text).first().map(|&(s, _)| s)
    }
}

/// `c` case folded: lower-cased, and the final sigma as the other sigma, so `ΚΩΔΙΚΟΣ`
/// and `κωδικος` are one word.
fn fold(c: char) -> impl Iterator<Item = char> {
    c.to_lowercase().map(|l| if l == 'ς' { 'σ' } else { l })
}

/// What `c` is searched as: its compatibility decomposition (NFKD), case folded, without
/// the characters that draw nothing (`invisible`). Query and text go through the same
/// steps, so a text matches a query written in either composition.
fn searched(c: char) -> impl Iterator<Item = char> {
    let mut out: Vec<char> = Vec::with_capacity(2);
    decompose_compatible(c, |d| {
        for l in fold(d) {
            // Lower case may compose what decomposition took apart (`Å`, the Ångström
            // sign, lowers to `å`): decomposed again.
            decompose_compatible(l, |e| {
                if !invisible(e) {
                    out.push(e);
                }
            });
        }
    });
    out.into_iter()
}

/// Characters Unicode marks as ignorable by default (`Default_Ignorable_Code_Point`):
/// soft hyphens, zero-width spaces and joiners, direction marks, variation selectors and
/// tags. A renderer draws none of them, so a word with one inside is the word a person
/// reads.
pub fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{34f}'
            | '\u{61c}'
            | '\u{115f}'..='\u{1160}'
            | '\u{17b4}'..='\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{3164}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff0}'..='\u{fff8}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0000}'..='\u{e0fff}'
    )
}

/// The forms of `text` searched: as it stands, and decoded when it holds an escape;
/// each character as `searched` makes it, every part keeping the bytes of the character
/// (or escape) it came from.
fn forms(text: &str) -> Vec<Vec<Unit>> {
    let raw: Vec<Unit> = text
        .char_indices()
        .map(|(start, c)| Unit {
            c,
            start,
            end: start + c.len_utf8(),
            wordy: false,
        })
        .collect();
    let mut forms = vec![raw];
    if text.contains(['%', '\\']) {
        forms.push(decode(text));
    }
    forms.into_iter().map(normalised).collect()
}

/// `units` as they are searched (`searched`). ASCII text is searched as it stands, with
/// its case folded as every unit's is when it is compared (`match_at`).
fn normalised(units: Vec<Unit>) -> Vec<Unit> {
    let mut units = expanded(units);
    mark_wordy(&mut units);
    units
}

/// Each unit as `searched` makes it, the marks of each character in canonical order
/// (`in_canonical_order`). A form all ASCII is its own.
fn expanded(units: Vec<Unit>) -> Vec<Unit> {
    if units.iter().all(|u| u.c.is_ascii()) {
        return units;
    }
    let mut out = Vec::with_capacity(units.len());
    for u in units {
        if u.c.is_ascii() {
            // Its own decomposition, folded when compared.
            out.push(u);
            continue;
        }
        out.extend(searched(u.c).map(|c| Unit {
            c,
            start: u.start,
            end: u.end,
            wordy: false,
        }));
    }
    in_canonical_order(&mut out, |u| u.c);
    out
}

/// Sorts each run of combining marks by canonical combining class, keeping the order of
/// marks of one class, as Unicode's canonical ordering does: the same accents typed in
/// another order (a Vietnamese input method puts the dot below last) are the same text.
fn in_canonical_order<T>(items: &mut [T], char_of: impl Fn(&T) -> char) {
    let class = |t: &T| canonical_combining_class(char_of(t));
    let mut i = 0;
    while i < items.len() {
        if class(&items[i]) == 0 {
            i += 1;
            continue;
        }
        let start = i;
        while i < items.len() && class(&items[i]) != 0 {
            i += 1;
        }
        items[start..i].sort_by_key(|t| class(t));
    }
}

/// Sets each unit's `wordy` in one pass: a combining mark takes the last other unit's.
fn mark_wordy(units: &mut [Unit]) {
    let mut base = false;
    for u in units {
        if !is_combining_mark(u.c) {
            base = wordy(u.c);
        }
        u.wordy = base;
    }
}

/// `text` with its escapes undone, once: a run of `%XX` that decodes to UTF-8 (a URL),
/// and JSON's `\n`, `\t`, `\"`, `\\`, `\uXXXX` (surrogate pairs joined). An escape
/// that decodes to nothing valid stays as it is written.
fn decode(text: &str) -> Vec<Unit> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        if let Some((c, len)) = percent_at(bytes, i).or_else(|| json_escape_at(text, i)) {
            out.push(Unit {
                c,
                start: i,
                end: i + len,
                wordy: false,
            });
            i += len;
            continue;
        }
        let Some(c) = text[i..].chars().next() else {
            break;
        };
        out.push(Unit {
            c,
            start: i,
            end: i + c.len_utf8(),
            wordy: false,
        });
        i += c.len_utf8();
    }
    out
}

/// The value of two hex digits at `bytes[i..]`.
fn hex_byte(bytes: &[u8], i: usize) -> Option<u8> {
    let pair = bytes.get(i..i + 2)?;
    let s = std::str::from_utf8(pair).ok()?;
    u8::from_str_radix(s, 16).ok()
}

/// The character that the `%XX` escapes at `i` encode in UTF-8, and how many bytes of
/// the text they take.
fn percent_at(bytes: &[u8], i: usize) -> Option<(char, usize)> {
    let mut encoded = [0u8; 4];
    let mut n = 0;
    while n < 4 && bytes.get(i + 3 * n) == Some(&b'%') {
        encoded[n] = hex_byte(bytes, i + 3 * n + 1)?;
        n += 1;
        if let Ok(s) = std::str::from_utf8(&encoded[..n]) {
            return s.chars().next().map(|c| (c, 3 * n));
        }
    }
    None
}

/// The character a JSON escape at `i` stands for, and how many bytes it takes.
fn json_escape_at(text: &str, i: usize) -> Option<(char, usize)> {
    let rest = text.get(i..)?.strip_prefix('\\')?;
    let c = match rest.chars().next()? {
        'n' => '\n',
        't' => '\t',
        'r' => '\r',
        'b' => '\u{8}',
        'f' => '\u{c}',
        '/' => '/',
        '\\' => '\\',
        '"' => '"',
        'u' => return unicode_escape(rest),
        _ => return None,
    };
    Some((c, 2))
}

/// `uXXXX` (after its backslash), or a surrogate pair of them: the character and the
/// bytes taken with the backslash.
fn unicode_escape(rest: &str) -> Option<(char, usize)> {
    let unit = |s: &str| -> Option<u32> {
        let hex = s.get(1..5)?;
        if hex.chars().all(|c| c.is_ascii_hexdigit()) {
            u32::from_str_radix(hex, 16).ok()
        } else {
            None
        }
    };
    let high = unit(rest)?;
    if let Some(c) = char::from_u32(high) {
        return Some((c, 6));
    }
    let low = unit(rest.get(5..)?.strip_prefix('\\')?)?;
    if !(0xd800..0xdc00).contains(&high) || !(0xdc00..0xe000).contains(&low) {
        return None;
    }
    char::from_u32(0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00)).map(|c| (c, 12))
}

/// Whether `c` makes up words that a term's end must not touch: a letter or digit of a
/// script written with spaces between words. Chinese, Japanese, Thai and the others
/// written without them have no boundary to draw, so a term is found inside them as a
/// substring.
fn wordy(c: char) -> bool {
    c.is_alphanumeric() && !unspaced(c.script())
}

/// Scripts written without spaces between words.
fn unspaced(script: Script) -> bool {
    matches!(
        script,
        Script::Han
            | Script::Hiragana
            | Script::Katakana
            | Script::Bopomofo
            | Script::Yi
            | Script::Thai
            | Script::Lao
            | Script::Khmer
            | Script::Myanmar
            | Script::Tibetan
            | Script::Tai_Le
            | Script::New_Tai_Lue
            | Script::Tai_Tham
            | Script::Tai_Viet
            | Script::Balinese
            | Script::Javanese
            | Script::Buginese
    )
}

/// The first occurrence of `term` (folded) in `units` from unit `from` on that is a whole
/// word: no boundary is crossed where its first or last character touches a letter or
/// digit (`wordy`, both sides; a combining mark counts as the letter it is on, so "Zoe"
/// is not found in "Zoë" written with one, nor "clair" in "éclair"). Its first unit and
/// the unit after it.
fn next_match(units: &[Unit], term: &[char], from: usize) -> Option<(usize, usize)> {
    let first = *term.first()?;
    // A term ending in a combining mark ends in the letter it is on.
    let last = *term.iter().rev().find(|&&c| !is_combining_mark(c))?;
    // Units read from one character (its decomposition, "½" as "1⁄2") share its bytes:
    // a match starts and ends only between characters of the text.
    let same = |a: &Unit, b: &Unit| a.start == b.start && a.end == b.end;
    for i in from..units.len() {
        if i > 0 && (same(&units[i - 1], &units[i]) || wordy(first) && units[i - 1].wordy) {
            continue;
        }
        let Some(next) = match_at(units, i, term) else {
            continue;
        };
        if let Some(after) = units.get(next) {
            if same(&units[next - 1], after) || is_combining_mark(after.c) {
                continue;
            }
            if wordy(last) && after.wordy {
                continue;
            }
        }
        return Some((i, next));
    }
    None
}

/// Whether `term` starts at unit `i`, each character compared folded; the index of the
/// unit after the match when it does. A term that ends inside one character's folded
/// form is not a match.
fn match_at(units: &[Unit], i: usize, term: &[char]) -> Option<usize> {
    let mut t = 0;
    let mut k = i;
    while t < term.len() {
        let u = units.get(k)?;
        for l in fold(u.c) {
            if term.get(t) != Some(&l) {
                return None;
            }
            t += 1;
        }
        k += 1;
    }
    Some(k)
}

#[cfg(test)]
mod tests;
