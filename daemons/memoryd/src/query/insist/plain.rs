//! A text as a reader sees it, for telling whether it says one thing again and again: the
//! characters no one sees taken out (`proto::query::invisible`: a zero-width space or a
//! soft hyphen inside a word makes a different word of it for a program, not for a
//! model), and the full-width forms of Latin letters, digits and marks read as the
//! letters they look like. The text's own copy in the index is left as it is; this one is
//! thrown away after the check.

use proto::query::invisible;
use std::borrow::Cow;

/// The full-width form's Latin letter, digit or mark (U+FF01 to U+FF5E are U+0021 to
/// U+007E moved up by U+FEE0).
fn narrow(c: char) -> char {
    match c {
        '\u{ff01}'..='\u{ff5e}' => char::from_u32(c as u32 - 0xfee0).unwrap_or(c),
        _ => c,
    }
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
