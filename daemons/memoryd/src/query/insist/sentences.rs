//! The sentences of a text, for telling whether it says one again and again: cut where a
//! reader would see one end, whatever marks the end, so that a page cannot hide its
//! refrain in one long "sentence" by ending its sentences in an unusual way.

/// Marks that end a sentence when what follows is not a letter or digit: so
/// `cheapflights.example` and `3.5` stay whole, while a stop before a space, a quote, a
/// zero-width space or the end cuts.
const STOPS: [char; 5] = ['.', '!', '?', '！', '？'];

/// The ideographic and full-width full stops: they end a sentence unless a Latin letter
/// or digit follows. Text in Chinese or Japanese runs on after one without a space; a
/// Latin letter after one is a dot written another way (`site。example`, read as an
/// address by `place`).
const WIDE_STOPS: [char; 3] = ['。', '．', '｡'];

/// Marks that end a sentence wherever they are: a line break, a semicolon (a page joining
/// its sentences with "; " is still saying each of them) and a dash between clauses.
const BREAKS: [char; 4] = ['\n', ';', '；', '—'];

/// The sentences of `text`, the marks between them left out.
pub(super) fn sentences(text: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    std::iter::from_fn(move || {
        while let Some((i, c)) = chars.next() {
            let next = chars.peek().map(|&(_, n)| n);
            let end = BREAKS.contains(&c)
                || (STOPS.contains(&c) && next.is_none_or(|n| !n.is_alphanumeric()))
                || (WIDE_STOPS.contains(&c) && next.is_none_or(|n| !n.is_ascii_alphanumeric()));
            if end {
                let s = &text[start..i];
                start = i + c.len_utf8();
                return Some(s);
            }
        }
        if start < text.len() {
            let s = &text[start..];
            start = text.len();
            return Some(s);
        }
        None
    })
}
