//! A text as a reader sees it, for telling whether it says one thing again and again: the
//! characters no one sees taken out (a zero-width space or a soft hyphen inside a word
//! makes a different word of it for a program, not for a model), and the full-width forms
//! of Latin letters, digits and marks read as the letters they look like. The text's own
//! copy in the index is left as it is; this one is thrown away after the check.

use std::borrow::Cow;

/// Whether `c` is a format character a reader does not see: the soft hyphen, the
/// combining grapheme joiner, the Mongolian vowel separator, zero-width spaces and
/// joiners, the direction marks and embeddings, the word joiner and invisible operators,
/// variation selectors, the byte-order mark and the tag characters.
fn unseen(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{34f}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}'
            | '\u{e0000}'..='\u{e007f}'
    )
}

/// The full-width form's Latin letter, digit or mark (U+FF01 to U+FF5E are U+0021 to
/// U+007E moved up by U+FEE0).
fn narrow(c: char) -> char {
    match c {
        '\u{ff01}'..='\u{ff5e}' => char::from_u32(c as u32 - 0xfee0).unwrap_or(c),
        _ => c,
    }
}

/// Whether the UTF-8 bytes starting a character (up to three of them, the rest zero)
/// start one that `unseen` or `narrow` changes: read off the encodings of the ranges
/// above, so a text is looked through byte by byte, without decoding it.
fn changes(b: [u8; 3]) -> bool {
    matches!(
        b,
        [0xc2, 0xad, _]
            | [0xcd, 0x8f, _]
            | [0xe1, 0xa0, 0x8e]
            | [0xe2, 0x80, 0x8b..=0x8f | 0xaa..=0xae]
            | [0xe2, 0x81, 0xa0..=0xaf]
            | [0xef, 0xb8, 0x80..=0x8f]
            | [0xef, 0xbb, 0xbf]
            | [0xef, 0xbc, 0x81..=0xbf]
            | [0xef, 0xbd, 0x80..=0x9e]
            | [0xf3, 0xa0, 0x80..=0x81]
    )
}

/// `text` as a reader sees it; the text itself when nothing in it changes (any ASCII
/// text, and most others).
pub(super) fn plain(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let any = !text.is_ascii()
        && (0..bytes.len()).any(|i| {
            bytes[i] >= 0xc2
                && changes([
                    bytes[i],
                    bytes.get(i + 1).copied().unwrap_or(0),
                    bytes.get(i + 2).copied().unwrap_or(0),
                ])
        });
    if !any {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().filter(|&c| !unseen(c)).map(narrow).collect())
}
