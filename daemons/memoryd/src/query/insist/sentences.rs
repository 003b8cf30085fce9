//! The sentences of a text, for telling whether it says one again and again: cut where a
//! reader would see one end, whatever marks the end, so that a page cannot hide its
//! refrain in one long "sentence" by ending its sentences in an unusual way.

/// Marks that end a sentence when what follows is not a letter or digit: so
/// `cheapflights.example` and `3.5` stay whole, while a stop before a space, a quote or
/// the end cuts; and between a small letter and a capital (`number.The`), where a
/// sentence ends without its space. Their full-width forms are these already (`plain`).
const STOPS: [char; 3] = ['.', '!', '?'];

/// The ideographic full stops (and the halfwidth one): they end a sentence unless a Latin letter
/// or digit follows. Text in Chinese or Japanese runs on after one without a space; a
/// Latin letter after one is a dot written another way (`site。example`, read as an
/// address by `place`). The full-width full stop is a plain one already (`plain`).
const WIDE_STOPS: [char; 2] = ['。', '｡'];

/// Marks that end a sentence wherever they are: a line break (and the other ways of
/// writing one), a semicolon (a page joining its sentences with "; " is still saying
/// each of them), a dash between clauses, an ellipsis, a bullet and a bar.
const BREAKS: [char; 10] = [
    '\n', '\r', '\u{2028}', '\u{2029}', ';', '；', '—', '…', '•', '|',
];

/// Words after which a sentence that has not ended is cut anyway, at the next space: a
/// sentence of prose rarely runs past 40 words, and a page that never ends its sentences
/// (joined by commas, or by nothing) would otherwise be one sentence naming its site
/// once. Cut into pieces this long, a site named every few dozen words is named in piece
/// after piece, and each such piece counts, next to another or not (`super::APART` is
/// for lines that end).
const LONGEST: usize = 30;

/// A piece of a text as `sentences` cuts it.
pub(super) struct Sentence<'a> {
    pub text: &'a str,
    /// Cut after `LONGEST` words, not at an end: the text runs on around it.
    pub runs_on: bool,
    /// Its words (cut at spaces).
    pub words: usize,
}

/// The sentences of `text`, the marks between them left out. Read byte by byte: a
/// letter or digit of ASCII, most of any text, only moves on.
pub(super) fn sentences(text: &str) -> impl Iterator<Item = Sentence<'_>> {
    let bytes = text.as_bytes();
    let (mut start, mut at) = (0, 0);
    let mut words = 0;
    let mut in_word = false;
    let mut after_small = false;
    std::iter::from_fn(move || {
        while at < bytes.len() {
            let b = bytes[at];
            if b.is_ascii_alphanumeric() {
                words += usize::from(!in_word);
                in_word = true;
                after_small = b.is_ascii_lowercase();
                at += 1;
                continue;
            }
            let c = text[at..].chars().next()?;
            let here = at;
            at += c.len_utf8();
            let next = text[at..].chars().next();
            let space = c.is_whitespace();
            words += usize::from(!space && !in_word);
            in_word = !space;
            let small = std::mem::replace(&mut after_small, c.is_lowercase());
            let ends = BREAKS.contains(&c)
                || (STOPS.contains(&c)
                    && next.is_none_or(|n| !n.is_alphanumeric() || (small && n.is_uppercase())))
                || (WIDE_STOPS.contains(&c) && next.is_none_or(|n| !n.is_ascii_alphanumeric()));
            let runs_on = !ends && space && words >= LONGEST;
            if ends || runs_on {
                let s = &text[start..here];
                start = at;
                in_word = false;
                return Some(Sentence {
                    text: s,
                    runs_on,
                    words: std::mem::take(&mut words),
                });
            }
        }
        if start < text.len() {
            let s = &text[start..];
            start = text.len();
            return Some(Sentence {
                text: s,
                runs_on: false,
                words: std::mem::take(&mut words),
            });
        }
        None
    })
}
