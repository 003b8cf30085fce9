//! A long recalled record cut to the passage around what best matched the question: the
//! window holding the most of the question's words, marked with `CUT` where text was left
//! out.

use super::Hit;

/// The marker put where a passage was cut out of its record.
pub const CUT: char = '…';

/// Query words shorter than this do not steer where a passage is cut: "is", "my", "at"
/// are in every passage.
const MIN_STEER_WORD: usize = 3;

/// Letters two word forms must share from their start to count as one word when choosing
/// a passage ("appointment", "appointments"): the index's stemmer is memoryd's, not
/// proto's, and a passage only needs to be near what matched.
const SHARED_STEM: usize = 5;

/// Query words a passage's window counts, the first of a long query: a question is a
/// handful of words, and a pasted paragraph as the query steers by its first ones.
const STEERING_COUNTED: usize = 64;

/// Cuts `hit`'s text to the passage around what best matches `query` (docs/turn.md,
/// 'Memory in the turn'), cut at word boundaries and marked with `CUT` where it was cut,
/// followed by a line saying how long the record is: the two together at most
/// `max_chars` characters, the bound a hit is promised. Where that line would take more
/// than half of `max_chars`, it is left out and the passage has them all. A text that
/// fits is left whole. Returns the record's length in characters when it was cut.
pub fn clip_to_passage(hit: &mut Hit, query: &str, max_chars: usize) -> Option<usize> {
    let total = hit.text.chars().count();
    if total <= max_chars {
        return None;
    }
    let note = format!("\n(a passage of a record of {total} characters)");
    let note_chars = note.chars().count();
    hit.text = if 2 * note_chars <= max_chars {
        let passage = passage(&hit.text, query, max_chars - note_chars);
        format!("{passage}{note}")
    } else {
        passage(&hit.text, query, max_chars)
    };
    Some(total)
}

/// The lower-case words of `text` that steer a passage.
fn steering_words(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in query.split(|c: char| !c.is_alphanumeric()) {
        if w.chars().count() < MIN_STEER_WORD {
            continue;
        }
        let w = w.to_lowercase();
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// Whether word `w` (lower-case) is a form of query word `q`.
fn same_word(w: &str, q: &str) -> bool {
    if w == q {
        return true;
    }
    let long = |s: &str| s.chars().nth(SHARED_STEM - 1).is_some();
    long(w) && long(q) && w.chars().take(SHARED_STEM).eq(q.chars().take(SHARED_STEM))
}

/// `steering_matches` of an ASCII `text`, read byte by byte: a word is a run of ASCII
/// letters and digits, and a byte is a character. Cutting pasted text into pieces a
/// character at a time was most of what is left of a passage's time.
fn ascii_steering_matches(text: &str, wanted: &[String]) -> Vec<(usize, usize)> {
    // Each query word's bytes, and its first `SHARED_STEM` bytes when it has that many
    // characters and they are ASCII (an ASCII word can share them only then): what
    // `same_ascii_word` finds out again for every word of the text.
    let prepared: Vec<(&[u8], Option<&[u8]>)> = wanted
        .iter()
        .map(|q| {
            let qb = q.as_bytes();
            let stem = (q.chars().nth(SHARED_STEM - 1).is_some() && qb[..SHARED_STEM].is_ascii())
                .then(|| &qb[..SHARED_STEM]);
            (qb, stem)
        })
        .collect();
    let same = |w: &[u8], (qb, stem): &(&[u8], Option<&[u8]>)| {
        w.eq_ignore_ascii_case(qb)
            || (w.len() >= SHARED_STEM
                && stem.is_some_and(|st| w[..SHARED_STEM].eq_ignore_ascii_case(st)))
    };
    // The bytes a matching word can start with, in either case: most words of a record
    // start otherwise and are passed without comparing them to each query word.
    let mut opens = [false; 256];
    for q in wanted {
        if let Some(&b) = q.as_bytes().first() {
            opens[usize::from(b.to_ascii_lowercase())] = true;
            opens[usize::from(b.to_ascii_uppercase())] = true;
        }
    }
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if !bytes[at].is_ascii_alphanumeric() {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && bytes[at].is_ascii_alphanumeric() {
            at += 1;
        }
        if !opens[usize::from(bytes[start])] {
            continue;
        }
        let word = &bytes[start..at];
        if let Some(q) = prepared.iter().position(|q| same(word, q)) {
            found.push((start, q));
        }
    }
    found
}

/// `same_word` of an ASCII word `w` as it is written (any case) and query word `q`
/// (lower-case): the same answer as `same_word(&w.to_lowercase(), q)`, without the copy.
fn same_ascii_word(w: &str, q: &str) -> bool {
    let (w, qb) = (w.as_bytes(), q.as_bytes());
    if w.eq_ignore_ascii_case(qb) {
        return true;
    }
    // An ASCII word has as many characters as bytes; `q` shares its first `SHARED_STEM`
    // characters only when they are ASCII too, so its bytes there are those characters.
    w.len() >= SHARED_STEM
        && qb.len() >= SHARED_STEM
        && q.chars().nth(SHARED_STEM - 1).is_some()
        && w[..SHARED_STEM].eq_ignore_ascii_case(&qb[..SHARED_STEM])
}

/// Where the passage's window starts: the window of `room` characters (of `total`),
/// starting a quarter before a matching word so the words leading up to it come along,
/// that holds the most distinct query words of `found` (each match's character and which
/// of the `wanted` query words it is, in text order), the earliest such; 0 when none.
fn best_start(found: &[(usize, usize)], wanted: usize, room: usize, total: usize) -> usize {
    // Every window lies within the text, so the matches of the whole text decide.
    let most = wanted.min(STEERING_COUNTED);
    best_window(found, wanted, most, room, total, total).unwrap_or(0)
}

/// `best_start` from the matches of the text's first `scanned` characters only, given
/// that no window holds more than `most` distinct query words: `None` when they cannot
/// decide it, because no window wholly inside them holds `most` and a later one might
/// hold more. A window that does is the answer: none holds more, and every window before
/// it lies inside them too, so the whole text's matches find the same one first.
fn best_window(
    found: &[(usize, usize)],
    wanted: usize,
    most: usize,
    room: usize,
    total: usize,
    scanned: usize,
) -> Option<usize> {
    if most == 0 {
        return Some(0);
    }
    // The windows' starts only move forward with the words they start from, so the
    // words inside are kept as a sliding range with a count per query word: each word
    // enters and leaves once, where counting every window afresh was quadratic in the
    // matches of a long record.
    let lead = room / 4;
    let mut best = (0usize, 0usize);
    let mut count = vec![0usize; wanted];
    let (mut lo, mut hi, mut distinct) = (0usize, 0usize, 0usize);
    for &(at, _) in found {
        let start = at.saturating_sub(lead).min(total - room);
        if start + room > scanned {
            // This window and every later one run past the matches read.
            return None;
        }
        while hi < found.len() && found[hi].0 < start + room {
            let q = found[hi].1;
            if q < STEERING_COUNTED {
                count[q] += 1;
                if count[q] == 1 {
                    distinct += 1;
                }
            }
            hi += 1;
        }
        while lo < hi && found[lo].0 < start {
            let q = found[lo].1;
            if q < STEERING_COUNTED {
                count[q] -= 1;
                if count[q] == 0 {
                    distinct -= 1;
                }
            }
            lo += 1;
        }
        if distinct > best.1 {
            best = (start, distinct);
            if distinct == most {
                return Some(start);
            }
        }
    }
    (scanned >= total).then_some(best.0)
}

/// Bytes of a long record a passage looks into first, at least: a question's words are
/// most often all together somewhere near the start of what answers it, and then the
/// rest of the record cannot hold a better window. Reading a record's 32 KiB for every
/// hit of every line was most of what memory in the turn cost loopd among pasted
/// documents (docs/measurements/memoryd.md, 'Long records').
const FIRST_LOOK_BYTES: usize = 4 * 1024;

/// `best_start` decided from the first part of a long `text` (`best_window`), of at least
/// `FIRST_LOOK_BYTES` and four windows, cut after a whitespace so no word is split;
/// `None` when that part cannot decide it or is the whole text.
fn first_look(text: &str, wanted: &[String], room: usize, total: usize) -> Option<usize> {
    let from = FIRST_LOOK_BYTES.max(room.saturating_mul(4));
    let tail = text.as_bytes().get(from..)?;
    let end = from + tail.iter().position(u8::is_ascii_whitespace)? + 1;
    let most = reachable(text, wanted)?;
    let part = &text[..end];
    let scanned = if part.is_ascii() {
        part.len()
    } else {
        part.chars().count()
    };
    best_window(
        &steering_matches(part, wanted),
        wanted.len(),
        most,
        room,
        total,
        scanned,
    )
}

/// Bytes of ASCII at the start of `text`. Checked a block at a time (the standard
/// library's `is_ascii` reads a word at a time) before the block holding the first other
/// byte is read byte by byte: a long record is looked over this way up to three times a
/// hit.
fn ascii_len(text: &str) -> usize {
    /// Bytes checked at once.
    const BLOCK: usize = 64;
    let bytes = text.as_bytes();
    let mut at = 0;
    for block in bytes.chunks(BLOCK) {
        if !block.is_ascii() {
            break;
        }
        at += block.len();
    }
    at + bytes[at..]
        .iter()
        .position(|b| !b.is_ascii())
        .unwrap_or(bytes.len() - at)
}

/// Where the words of `text`'s ASCII start end: its ASCII start up to its last separator
/// (a stored row cut short ends in a marker that is not ASCII, a pasted page may hold a
/// few such characters late). Before it, bytes are characters and no word runs on past it.
fn ascii_words_end(text: &str) -> usize {
    let ascii = ascii_len(text);
    if ascii == text.len() {
        ascii
    } else {
        text.as_bytes()[..ascii]
            .iter()
            .rposition(|b| !b.is_ascii_alphanumeric())
            .map_or(0, |at| at + 1)
    }
}

/// Bytes past the words of a record's ASCII start (`ascii_words_end`) that `reachable`
/// reads word by word at most: a row cut short ends in a marker of a few dozen, while a
/// page with a curly quote near its start would be read whole, and then again in full
/// when the first look cannot decide, slower than reading it once.
const REST_READ_BYTES: usize = 1024;

/// How many of the counted query words (the first `STEERING_COUNTED` of `wanted`) some
/// word of `text` may be, at most: the most a window can hold. `None` when the text is
/// not ASCII early enough for that to be quick (`REST_READ_BYTES`).
///
/// In the text's ASCII start a word is a query word only where the text holds, in any
/// case, that word's first `SHARED_STEM` characters at the start of a word, or all of a
/// shorter one as a whole word, which a substring search finds far faster than reading
/// the text word by word; the rest is read word by word. A query word sharing its first
/// `SHARED_STEM` characters with an earlier one is never counted: every word of the text
/// that is it is the earlier one first.
fn reachable(text: &str, wanted: &[String]) -> Option<usize> {
    let cut = ascii_words_end(text);
    if text.len() - cut > REST_READ_BYTES {
        return None;
    }
    let lower = text[..cut].to_ascii_lowercase();
    let in_rest: Vec<usize> = steering_matches(&text[cut..], wanted)
        .into_iter()
        .map(|(_, q)| q)
        .collect();
    let mut stems: Vec<&str> = Vec::new();
    let mut most = 0;
    for (q, w) in wanted.iter().take(STEERING_COUNTED).enumerate() {
        let long = w.chars().nth(SHARED_STEM - 1).is_some();
        let stem = &w[..w
            .char_indices()
            .nth(SHARED_STEM)
            .map_or(w.len(), |(at, _)| at)];
        if long {
            if stems.contains(&stem) {
                continue;
            }
            stems.push(stem);
        }
        if in_rest.contains(&q) || held_as_word(&lower, stem, !long) {
            most += 1;
        }
    }
    Some(most)
}

/// Whether ASCII `text` holds `part` at the start of a word, and, when `whole`, as a
/// whole word.
fn held_as_word(text: &str, part: &str, whole: bool) -> bool {
    // `contains` has a vectorised search that `match_indices` lacks: most words asked
    // for that a record does not hold are told so at its speed.
    if !text.contains(part) {
        return false;
    }
    let bytes = text.as_bytes();
    let apart = |at: Option<&u8>| at.is_none_or(|b| !b.is_ascii_alphanumeric());
    text.match_indices(part).any(|(at, _)| {
        let before = at.checked_sub(1).and_then(|i| bytes.get(i));
        apart(before) && (!whole || apart(bytes.get(at + part.len())))
    })
}

/// Each word of `text` that is one of the `wanted` query words (`same_word`): its first
/// character's index and which query word it is, in text order.
fn steering_matches(text: &str, wanted: &[String]) -> Vec<(usize, usize)> {
    let cut = ascii_words_end(text);
    let mut found = ascii_steering_matches(&text[..cut], wanted);
    let mut ch = cut;
    let text = &text[cut..];
    for piece in text.split_inclusive(|c: char| !c.is_alphanumeric()) {
        let end = piece
            .char_indices()
            .find(|(_, c)| !c.is_alphanumeric())
            .map_or(piece.len(), |(i, _)| i);
        let word = &piece[..end];
        // An ASCII word is compared in place: lower-casing it into a new string for
        // every word of a long record was most of the passage's time.
        let q = if word.is_ascii() {
            wanted.iter().position(|q| same_ascii_word(word, q))
        } else {
            let word = word.to_lowercase();
            wanted.iter().position(|q| same_word(&word, q))
        };
        if let Some(q) = q {
            found.push((ch, q));
        }
        ch += if piece.is_ascii() {
            piece.len()
        } else {
            piece.chars().count()
        };
    }
    found
}

/// The passage of `text` (longer than `max_chars` characters) of at most `max_chars`
/// characters that holds the most distinct words of `query`, the earliest such; the
/// start of the text when none is held. Cut at whitespace, `CUT` marking each cut end.
pub fn passage(text: &str, query: &str, max_chars: usize) -> String {
    // Each character's byte, kept only from the first that takes more than one: in
    // ASCII text (most of what is pasted) the two are the same, and the list was a
    // word's worth of work for every character of a long record.
    let ascii = ascii_len(text);
    let starts: Vec<usize> = text[ascii..]
        .char_indices()
        .map(|(i, _)| ascii + i)
        .collect();
    let total = ascii + starts.len();
    if total <= max_chars {
        return text.to_string();
    }
    let byte_at = |ch: usize| {
        if ch < ascii {
            ch
        } else {
            starts.get(ch - ascii).copied().unwrap_or(text.len())
        }
    };
    // Room for a marker at each end.
    let room = max_chars.saturating_sub(2).max(1);
    let wanted = steering_words(query);
    // A window starts a quarter before a matching word, so the words that lead up to it
    // come along; the best holds the most distinct query words.
    let best = first_look(text, &wanted, room, total)
        .unwrap_or_else(|| best_start(&steering_matches(text, &wanted), wanted.len(), room, total));
    let (mut start, mut end) = (best, (best + room).min(total));
    // Word boundaries: a cut start moves forward past the word it fell in, a cut end
    // back to the last whitespace, unless the window is one unbroken word.
    if start > 0 {
        let window = &text[byte_at(start)..byte_at(end)];
        if let Some(ws) = window.find(char::is_whitespace) {
            start += window[..ws].chars().count();
            let rest = &text[byte_at(start)..byte_at(end)];
            start += rest.chars().take_while(|c| c.is_whitespace()).count();
        }
    }
    if end < total {
        let window = &text[byte_at(start)..byte_at(end)];
        if let Some(ws) = window.rfind(char::is_whitespace) {
            let kept = window[..ws].trim_end();
            if !kept.is_empty() {
                end = start + kept.chars().count();
            }
        }
    }
    let mut out = String::with_capacity(byte_at(end) - byte_at(start) + 8);
    if start > 0 {
        out.push(CUT);
    }
    out.push_str(&text[byte_at(start)..byte_at(end)]);
    if end < total {
        out.push(CUT);
    }
    out
}

#[cfg(test)]
mod tests;
