//! A text as a reader sees it, for telling whether it says one thing again and again. A
//! page can write its order differently at each saying in ways a model reads past, so
//! this copy takes out the characters no one sees (`proto::query::invisible`: a
//! zero-width space or a soft hyphen inside a word makes a different word of it for a
//! program, not for a model) and the accents written as marks of their own, and reads
//! each character drawn as one ASCII letter, digit or mark as that (`drawn`: full-width
//! and circled forms, a Cyrillic `а`, a Greek `ο`, a letter with an accent). The text's
//! own copy in the index is left as it is; this one is thrown away after the check.

use proto::query::invisible;
use std::borrow::Cow;
use std::sync::OnceLock;
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;
use unicode_security::skeleton;

/// The Latin letter, digit or mark `c` is drawn as (`DRAWN`), or `c` itself.
fn narrow(c: char) -> char {
    match c as u32 {
        0..=0x7f => c,
        _ => drawn(c).unwrap_or(c),
    }
}

/// The code points beyond ASCII looked up for the ASCII character they are drawn as: the
/// whole Basic Multilingual Plane (Greek, Cyrillic, Cherokee, Lisu, Roman numerals,
/// enclosed and full-width forms, letters with accents) and the blocks beyond it that
/// hold look-alikes of Latin letters or digits (Lycian, Carian, Old Italic, Gothic,
/// Deseret, the mathematical letters and digits, enclosed letters, segmented digits). A
/// code point elsewhere is read as it is written.
const DRAWN: [std::ops::Range<u32>; 6] = [
    0x80..0x1_0000,
    0x1_0280..0x1_0350,
    0x1_0400..0x1_0450,
    0x1_d400..0x1_d800,
    0x1_f100..0x1_f1b0,
    0x1_fbf0..0x1_fbfa,
];

/// The ASCII letter, digit or mark `c` is drawn as, from a table of `DRAWN`'s code
/// points made once (some 68 000 characters, a few milliseconds): its compatibility form
/// when that is one ASCII character (full-width `ａ`, circled `ⓐ`, superscript `ᵃ`,
/// mathematical `𝐚`), else its confusable skeleton (UTS #39) without its accents when
/// that is one ASCII letter or digit (Cyrillic `а`, Greek `ο`, `é`). The skeleton draws
/// a capital `I` and the digit one as `l` and the digit zero as `O`, and ASCII text is
/// never changed, so a capital or a digit is given the capital `I` or the digit it
/// stands for: the Cyrillic `І` in "Іgnore" reads as the `I` of "Ignore". Asking for a
/// skeleton costs some 80 ns a character, fourteen times the whole check on a page in
/// Cyrillic; the table is a load.
fn drawn(c: char) -> Option<char> {
    static TABLE: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        DRAWN
            .iter()
            .map(|block| {
                block
                    .clone()
                    .map(|code| char::from_u32(code).map_or(0, |c| ascii_of(c).unwrap_or(0)))
                    .collect()
            })
            .collect()
    });
    let code = c as u32;
    DRAWN
        .iter()
        .zip(table)
        .find(|(block, _)| block.contains(&code))
        .and_then(|(block, drawn)| drawn.get((code - block.start) as usize))
        .filter(|&&l| l != 0)
        .map(|&l| char::from(l))
}

/// `drawn`'s answer for one character, worked out (the table's maker).
fn ascii_of(c: char) -> Option<u8> {
    if let Some(a) = single(std::iter::once(c).nfkc()).filter(char::is_ascii_graphic) {
        return u8::try_from(a).ok();
    }
    if !c.is_alphanumeric() {
        return None;
    }
    let mut buf = [0u8; 4];
    let bare = skeleton(c.encode_utf8(&mut buf)).filter(|&k| !is_combining_mark(k));
    let l = single(bare).filter(char::is_ascii_alphanumeric)?;
    Some(match l {
        'l' if c.is_numeric() => b'1',
        'O' if c.is_numeric() => b'0',
        'l' if c.is_uppercase() => b'I',
        _ => u8::try_from(l).ok()?,
    })
}

/// The one character `chars` holds, when it holds exactly one.
fn single(mut chars: impl Iterator<Item = char>) -> Option<char> {
    let first = chars.next()?;
    chars.next().is_none().then_some(first)
}

/// Whether `c` is taken out: a character no one sees, or an accent written as a mark of
/// its own (`a` and U+0301 read as the `a` they sit on).
fn unseen(c: char) -> bool {
    invisible(c) || is_combining_mark(c)
}

/// `text` as a reader sees it; the text itself when nothing in it changes (any ASCII
/// text, and most others). Only the characters beyond ASCII are decoded to look.
pub(super) fn plain(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let changes = (0..bytes.len()).any(|i| {
        bytes[i] >= 0xc0
            && text
                .get(i..)
                .and_then(|rest| rest.chars().next())
                .is_some_and(|c| unseen(c) || narrow(c) != c || ligature(c).is_some())
    });
    if !changes {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars().filter(|&c| !unseen(c)) {
        match ligature(c) {
            Some(letters) => out.push_str(letters),
            None => out.push(narrow(c)),
        }
    }
    Cow::Owned(out)
}

/// The Latin letters a ligature is written for (`ﬁ` for `fi`, `ǆ` for `dž`'s `dz`, `Ĳ`):
/// one character a reader reads as two or three.
fn ligature(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{132}' => "IJ",
        '\u{133}' => "ij",
        '\u{1c4}' | '\u{1f1}' => "DZ",
        '\u{1c5}' | '\u{1f2}' => "Dz",
        '\u{1c6}' | '\u{1f3}' => "dz",
        '\u{1c7}' => "LJ",
        '\u{1c8}' => "Lj",
        '\u{1c9}' => "lj",
        '\u{1ca}' => "NJ",
        '\u{1cb}' => "Nj",
        '\u{1cc}' => "nj",
        '\u{fb00}' => "ff",
        '\u{fb01}' => "fi",
        '\u{fb02}' => "fl",
        '\u{fb03}' => "ffi",
        '\u{fb04}' => "ffl",
        '\u{fb05}' | '\u{fb06}' => "st",
        _ => return None,
    })
}
