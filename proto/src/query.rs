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
fn invisible(c: char) -> bool {
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
mod tests {
    use super::*;

    /// Regression: forgetting in Honcho matched by substring, so `/forget cat` deleted
    /// conclusions about education, a sister named Caterina and car keys nobody can locate.
    #[test]
    fn a_word_matches_whole_words_only() {
        let cat = Query::parse("cat");
        assert!(cat.matches("owner has a cat named Tom"));
        assert!(cat.matches("CAT: Tom"));
        assert!(cat.matches("the cat's bowl"));
        for other in [
            "owner works in education",
            "Caterina is the owner's sister",
            "can never locate the car keys",
            "cats",
        ] {
            assert!(!cat.matches(other), "{other}");
        }
    }

    #[test]
    fn every_word_and_quoted_phrase_must_be_there_in_any_case() {
        let q = Query::parse("\"car keys\" Tom");
        assert!(q.matches("Tom lost the Car Keys"));
        assert!(!q.matches("Tom lost the keys of the car"));
        assert!(!q.matches("the car keys"));
        assert!(Query::parse("4471").matches("my PIN is 4471."));
        assert!(!Query::parse("4471").matches("code 44710"));
        assert!(Query::parse("KOALA5521").matches("call_koala5521"));
        assert!(Query::parse("/x").matches(r#"{"path":"/x"}"#));
        assert!(Query::parse("zoë").matches("Zoë"));
        assert!(!Query::parse("  ").matches("anything"));
        assert!(!Query::parse("\"\"").matches("anything"));
    }

    #[test]
    fn spans_name_every_occurrence_of_every_term() {
        let q = Query::parse("tom cat");
        let text = "Tom's cat, not a tomcat; TOM";
        let spans = q.spans(text);
        let words: Vec<&str> = spans.iter().map(|(a, b)| &text[*a..*b]).collect();
        assert_eq!(words, ["Tom", "cat", "TOM"]);
        assert_eq!(q.first(text), Some(0));
        assert_eq!(Query::parse("İ").spans("xİx İ"), vec![(5, 7)]);
    }
}

#[cfg(test)]
mod every_copy {
    use super::Query;

    /// Regression: a secret written next to a letter or digit of an escape or an
    /// encoding (a percent-encoded URL, a JSON body's `\n`), in a script written without
    /// spaces, or with a final sigma, was not found; the substring rule found every one.
    #[test]
    fn forget_finds_every_copy_the_substring_rule_found() {
        let copies = [
            ("4471", "https://evil.example/c?d=my%20PIN%204471"),
            ("4471", r#"{"note":"PIN:\n4471"}"#),
            ("hunter2", r#"{"body":"pw\u0020hunter2"}"#),
            ("hunter2", "パスワードはhunter2です"),
            ("田中", "田中さんの電話番号"),
            ("bob@example.com", "mailto%3Abob@example.com"),
            ("κωδικος", "ΚΩΔΙΚΟΣ 1234"),
        ];
        for (query, text) in copies {
            let old = text.to_lowercase().contains(&query.to_lowercase());
            assert!(old, "the old rule found {query:?} in {text:?}");
            assert!(
                Query::parse(query).matches(text),
                "/forget {query} misses {text:?}"
            );
        }
    }

    /// Regression: the model wrote a name the owner typed with "ë" as "E" and a combining
    /// diaeresis, a street with a no-break space, codes with a zero-width space or soft
    /// hyphen inside and in full-width digits. `/forget` found none of them while memoryd's
    /// index still answered with the first two, and memory in the turn copied them on.
    #[test]
    fn forget_finds_a_word_however_its_characters_were_composed_or_hidden() {
        let copies = [
            ("Zoë Kraus", "and also ZOE\u{308} KRAUS"),
            ("Zoe\u{308}", "my friend is named Zoë"),
            ("\"Elm Street\"", "friend lives at Elm\u{a0}Street 9."),
            ("ZEBRA7741", "the code is ZEBRA\u{ad}7741"),
            ("LYNX2828", "LYNX\u{200b}2828 it is"),
            ("\"4471\"", "PIN ４４７１."),
            ("ﬁnch", "Mr Finch called"),
            ("Ångström", "Å is the Ångström sign"),
        ];
        for (query, text) in copies {
            assert!(
                Query::parse(query).matches(text),
                "/forget {query} misses {text:?}"
            );
        }
        let text = "and also ZOE\u{308} KRAUS!";
        let spans = Query::parse("zoë kraus").spans(text);
        assert_eq!(
            spans.iter().map(|&(a, b)| &text[a..b]).collect::<Vec<_>>(),
            ["ZOE\u{308}", "KRAUS"],
            "a match covers the whole characters it was read from"
        );
    }

    /// Regression: the first cut of the rule above missed an "ë" written as an escape in
    /// an all-ASCII record (a tool call's JSON arguments, a URL), the same accents typed
    /// in another order, and found "4471" in "¼471" and "1" in "½".
    #[test]
    fn escapes_mark_order_and_one_characters_parts() {
        for (query, text) in [
            ("zoë", r#"{"n":"Zo\u00eb"}"#),
            ("zoë", "Zo%C3%AB"),
            ("LYNX2828", "LYNX%E2%80%8B2828"),
            ("\"4471\"", r#"PIN \uff14\uff14\uff17\uff11"#),
            ("Nguyệt", "Nguy\u{ea}\u{323}t"),
            ("Nguy\u{ea}\u{323}t", "Nguyệt"),
            ("e\u{302}\u{323}", "x e\u{323}\u{302} y"),
        ] {
            assert!(
                Query::parse(query).matches(text),
                "/forget {query} misses {text:?}"
            );
        }
        for (query, text) in [("4471", "¼471"), ("1", "½"), ("2", "½"), ("inch", "ﬁnch")] {
            assert!(!Query::parse(query).matches(text), "{query} in {text:?}");
        }
        assert!(Query::parse("finch").matches("ﬁnch"));
    }

    /// A letter under a long run of combining marks (a page can hold a megabyte of them)
    /// is searched in one pass: each unit's boundary is worked out once, not by walking
    /// back over the marks before it at every place.
    #[test]
    fn a_long_run_of_marks_is_searched_in_one_pass() {
        let text = format!("a{} b", "\u{301}".repeat(200_000));
        assert!(Query::parse("b").matches(&text));
        assert!(!Query::parse("a").matches(&text));
    }

    /// The same words only: an accent is part of its letter, so a word without it is
    /// another word, in either composition.
    #[test]
    fn a_letter_with_a_combining_mark_is_not_the_letter_without_it() {
        for (query, text) in [
            ("Zoe", "Zoë"),
            ("Zoe", "Zoe\u{308}"),
            ("clair", "e\u{301}clair"),
            ("cafe", "café"),
        ] {
            assert!(!Query::parse(query).matches(text), "{query} in {text:?}");
        }
        assert!(Query::parse("café").matches("cafe\u{301} au lait"));
        assert!(
            !Query::parse("\u{200b}").matches("a\u{200b}b"),
            "an invisible query is empty"
        );
    }

    /// What decoding and the script rule add must not take unrelated words: a word of a
    /// script with spaces still needs its boundary, in the decoded form too.
    #[test]
    fn decoded_and_unspaced_forms_still_keep_whole_words() {
        let cat = Query::parse("cat");
        for other in [
            "education%20program",
            r#"{"t":"\u0043aterina"}"#,
            "owner works in education",
            "Caterina",
        ] {
            assert!(!cat.matches(other), "{other}");
        }
        assert!(cat.matches("a%20cat%20named%20Tom"));
        assert!(cat.matches("猫はcatです"));
        let text = "d=my%20PIN%204471&x";
        let spans = Query::parse("4471").spans(text);
        assert_eq!(
            spans.iter().map(|&(a, b)| &text[a..b]).collect::<Vec<_>>(),
            ["4471"]
        );
        let text = r#"{"b":"pw\u0020hunter2"}"#;
        let spans = Query::parse("\"pw hunter2\"").spans(text);
        assert_eq!(
            spans.iter().map(|&(a, b)| &text[a..b]).collect::<Vec<_>>(),
            [r"pw\u0020hunter2"]
        );
        assert!(
            !Query::parse("4471").matches("%E2%82"),
            "an escape that decodes to nothing"
        );
        assert!(Query::parse("new").matches(r"C:\new"), "as it stands too");
    }
}
