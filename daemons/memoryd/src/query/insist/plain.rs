//! A text as a reader sees it, for telling whether it says one thing again and again: the
//! characters no one sees taken out (`proto::query::invisible`: a zero-width space or a
//! soft hyphen inside a word makes a different word of it for a program, not for a
//! model), the full-width forms of Latin letters, digits and marks read as the letters
//! they look like, and so are the letters of other scripts drawn as one Latin letter or
//! digit (a Cyrillic `а`, a Greek `ο`: their confusable skeleton, UTS #39), which a page
//! can vary from one saying of its order to the next. The text's own copy in the index is left as it is; this one is
//! thrown away after the check.

use proto::query::invisible;
use std::borrow::Cow;
use std::sync::OnceLock;
use unicode_security::skeleton;

/// The Latin letter, digit or mark `c` is drawn as: the full-width form's own (U+FF01 to
/// U+FF5E are U+0021 to U+007E moved up by U+FEE0), or a letter's whose confusable
/// skeleton is one ASCII letter or digit (`DRAWN`). A letter with an accent is left as it
/// is (its skeleton is two characters); the sites' reading folds accents itself.
fn narrow(c: char) -> char {
    match c as u32 {
        0..=0x7f => c,
        0xff01..=0xff5e => char::from_u32(c as u32 - 0xfee0).unwrap_or(c),
        _ => drawn(c).unwrap_or(c),
    }
}

/// The blocks whose letters are looked up for a Latin look-alike: from Latin-1 to the
/// letterlike symbols (Greek, Cyrillic, Armenian, Cherokee, the Kelvin sign and the
/// like), and the mathematical letters and digits. Letters elsewhere are read as they
/// are written.
const DRAWN: [std::ops::Range<u32>; 2] = [0x80..0x2150, 0x1d400..0x1d800];

/// The ASCII letter or digit `c` is drawn as, from a table of `DRAWN`'s code points made
/// once (some ten thousand skeletons, about a millisecond): asking for a skeleton costs
/// some 80 ns a character, fourteen times the whole check's cost on a page in Cyrillic.
fn drawn(c: char) -> Option<char> {
    static TABLE: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        DRAWN
            .iter()
            .map(|block| {
                block
                    .clone()
                    .map(|code| {
                        let Some(c) = char::from_u32(code).filter(|c| c.is_alphanumeric()) else {
                            return 0;
                        };
                        let mut buf = [0u8; 4];
                        let mut drawn = skeleton(c.encode_utf8(&mut buf));
                        match (drawn.next(), drawn.next()) {
                            (Some(l), None) if l.is_ascii_alphanumeric() => l as u8,
                            _ => 0,
                        }
                    })
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

/// `text` as a reader sees it; the text itself when nothing in it changes (any ASCII
/// text, and most others). Only the characters beyond ASCII are decoded to look.
pub(super) fn plain(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let changes = (0..bytes.len()).any(|i| {
        bytes[i] >= 0xc0
            && text
                .get(i..)
                .and_then(|rest| rest.chars().next())
                .is_some_and(|c| invisible(c) || narrow(c) != c)
    });
    if !changes {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .filter(|&c| !invisible(c))
            .map(narrow)
            .collect(),
    )
}
