//! What loopd sends, built before the first attempt and never changed after: the content
//! of each event, a reply block split at line boundaries under the event size limit, and
//! each event's transaction id fixed by what it carries (docs/matrix.md, 'Exactly once
//! out', 'The limits').

use ring::digest::{digest, SHA256};
use serde_json::{json, Value};

/// The homeserver's limit on one event: Synapse refuses an event whose whole PDU (the
/// content and everything the homeserver adds: ids, hashes, signatures), as canonical
/// JSON, is over 65 536 bytes (`MAX_PDU_SIZE`), and the spec names the same limit.
pub const MAX_EVENT_BYTES: usize = 65_536;

/// What the homeserver adds around the content, generously: the room id and sender (at
/// most 255 bytes each), up to ten `prev_events` and a handful of `auth_events` (about 50
/// bytes an id), the hashes, a signature under a server name of up to 255 bytes, the type,
/// time and depth. Together well under 4 KiB; twice that is kept free.
pub const ENVELOPE_RESERVE: usize = 8 * 1024;

/// The most a content object may take as JSON: what the event limit leaves after the
/// envelope.
pub const MAX_CONTENT_BYTES: usize = MAX_EVENT_BYTES - ENVELOPE_RESERVE;

/// The content's own fields around the text (`msgtype`, `format`, the keys, quotes) and
/// an unasked message's header twice (plain, and escaped in `<strong>`): the fields and
/// tags take about 120 bytes (and the marks of the first line of the text, four each in
/// the body and in the formatted body), 256 are kept; a header character takes at most 6 bytes as
/// JSON and 6 more escaped as HTML in JSON.
pub const FIELDS_RESERVE: usize = 256 + 12 * MAX_HEADER_CHARS;

/// The longest header of an unasked message: loopd's own words (`loopd: reminder, set
/// 17:30`), kept to a line on a phone's screen; a longer one is cut.
pub const MAX_HEADER_CHARS: usize = 120;

/// The budget a part's text has, counted as it will be written in the content's JSON
/// (`json_cost`). A reply longer than this is split.
pub const PART_BUDGET: usize = MAX_CONTENT_BYTES - FIELDS_RESERVE;

/// The format of the one kind of event loopd formats (an unasked message's header).
pub const HTML_FORMAT: &str = "org.matrix.custom.html";

/// What kind of event a part is sent as (docs/matrix.md, 'Out').
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// The model's words: `m.text`, a plain body, never `format`.
    Text,
    /// loopd's own words (activity, errors, command answers): `m.notice`.
    Notice,
    /// An unasked message (a reminder, a heartbeat's message): `m.text` so it reaches the
    /// phone, loopd's header set apart in `formatted_body`.
    Unasked,
}

/// One event to send: its transaction id and content, fixed before the first attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub txn: String,
    pub content: Value,
}

/// The events a reply block becomes: its text split at line boundaries under
/// [`PART_BUDGET`] (a line too long alone is cut at character boundaries), each part with
/// a transaction id fixed by `session`, `block` (the block's number, loopd's own and never
/// reused) and the part's index. The same block planned again gives the same events, so a
/// send retried after a crash is the same event. `header` is an unasked message's header
/// (`Style::Unasked`), repeated on every part so each says whose it is; for a notice, the
/// line each part after the first opens with, so a notice that quotes stored text and is
/// split still opens with loopd's words, never with quoted text alone.
pub fn plan(session: &str, block: u64, style: Style, header: &str, text: &str) -> Vec<Part> {
    let cost: fn(char) -> usize = match style {
        // The text twice (plain, and escaped as HTML), and on each line the mark the plain
        // body may put in front of it (`marked`).
        // The mark may be put there in the formatted body too (`marked_formatted`).
        Style::Unasked => |c| {
            json_cost(c) + json_cost_str(&html_char(c)) + if c == '\n' { 2 * MARK.len() } else { 0 }
        },
        // The mark a line reading as loopd's header gets (`marked_reply`).
        Style::Text => |c| json_cost(c) + if c == '\n' { MARK.len() } else { 0 },
        Style::Notice => json_cost,
    };
    split_cuts(text, PART_BUDGET, cost)
        .into_iter()
        .enumerate()
        .map(|(i, (piece, mid_line))| Part {
            txn: txn_id(&["block", session, &block.to_string(), &i.to_string()]),
            content: content_of(
                style,
                if style == Style::Notice && i == 0 {
                    ""
                } else {
                    header
                },
                &piece,
                mid_line,
            ),
        })
        .collect()
}

/// The content of one event of `style`.
pub fn content(style: Style, header: &str, text: &str) -> Value {
    content_of(style, header, text, false)
}

/// The content of one event of `style`; `mid_line` says that `text` starts in the middle
/// of a line a split cut (a line longer than a whole event). That start opens the event,
/// where an owner reads it as a line's, so it is judged as one: when it starts as one of
/// loopd's lines do (`proto::shown::head`: `· `, `error: `, a memory header, the bar) or
/// reads as loopd's header, it is written after [`MARK`], in every style.
fn content_of(style: Style, header: &str, text: &str, mid_line: bool) -> Value {
    let header: String = header.chars().take(MAX_HEADER_CHARS).collect();
    match style {
        Style::Text => json!({
            "msgtype": "m.text",
            "body": marked_from(text, mid_line, marked_reply),
        }),
        Style::Notice if header.is_empty() => json!({
            "msgtype": "m.notice",
            "body": marked_from(text, mid_line, str::to_string),
        }),
        Style::Notice => json!({
            "msgtype": "m.notice",
            "body": format!("{header}\n{}", marked_from(text, mid_line, str::to_string)),
        }),
        Style::Unasked => json!({
            "msgtype": "m.text",
            "body": format!("{header}\n{}", marked_from(text, mid_line, marked)),
            "format": HTML_FORMAT,
            "formatted_body": format!(
                "<strong>{}</strong><br>{}",
                html(&header),
                html(&marked_formatted(text))
            ),
        }),
    }
}

/// `text` with its lines marked by `mark`; a first line that starts mid-line and reads
/// as loopd's (`starts_as_loopds_line`) is written after [`MARK`] instead, once.
fn marked_from(text: &str, mid_line: bool, mark: fn(&str) -> String) -> String {
    if !(mid_line && starts_as_loopds_line(text)) {
        return mark(text);
    }
    match text.split_once('\n') {
        Some((first, rest)) => format!("{MARK}{first}\n{}", mark(rest)),
        None => format!("{MARK}{text}"),
    }
}

/// Whether `text`'s first line, judged as a line's start is on loopd's other surfaces
/// (held until `proto::shown::head` decides, at most `MAX_HEAD` characters), starts as
/// one of loopd's lines or reads as loopd's header.
fn starts_as_loopds_line(text: &str) -> bool {
    use proto::shown::{head, Head};
    let first = text.split('\n').next().unwrap_or("");
    let mut held = Vec::new();
    let mut verdict = Head::Open;
    for c in first.chars() {
        held.push(c);
        verdict = head(&held, false);
        if verdict != Head::Open {
            break;
        }
    }
    if verdict == Head::Open {
        verdict = head(&held, true);
    }
    verdict == Head::Mark || reads_as_loopds(first)
}

/// What is put in front of a line of model text that could pass for loopd's own in an
/// unasked message's plain body: the mark loopd's other surfaces use (`proto::shown`).
pub const MARK: &str = proto::shown::MARK;

/// How many characters of a line's start, past its blanks, are compared with loopd's
/// header.
const HEAD_CHARS: usize = 64;

/// `text` for an unasked message's plain `body`, where loopd's header is one line above
/// it and nothing else sets the header apart (push notifications and plain clients show
/// the body): a line that reads as a header of loopd's (`reads_as_loopds`) is written
/// after [`MARK`], and so is a line that starts with the mark's bar, so taking one mark
/// off each line that has it gives the text back.
pub fn marked(text: &str) -> String {
    let bar = MARK.chars().next();
    text.split('\n')
        .map(|line| {
            if line.chars().next() == bar || reads_as_loopds(line) {
                format!("{MARK}{line}")
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` for an unasked message's `formatted_body`, where loopd's header is set apart
/// in bold and the text after it is escaped, so a line of plain letters that reads
/// `loopd: …` is not bold and never passes for it. Letters drawn bold are another matter:
/// a line that reads as loopd's header in lookalikes (`𝐥𝐨𝐨𝐩𝐝: 𝐫𝐞𝐦𝐢𝐧𝐝𝐞𝐫`, the
/// mathematical bold letters, draws exactly as the bold header) is written after
/// [`MARK`], as in the plain body; one spelled in plain ASCII letters is left as it is.
fn marked_formatted(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            let plain = line
                .trim_start()
                .get(..5)
                .is_some_and(|s| s.eq_ignore_ascii_case("loopd"));
            if !plain && reads_as_loopds(line) {
                format!("{MARK}{line}")
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` of a reply's `m.text`: the reply block already marks what would pass for the
/// socket's lines of loopd's (`proto::shown`, which also marks a line starting with the
/// bar), but an unasked message in a room opens with `loopd: …`, a header of loopd's only
/// the room has, so a model line that reads as it (`reads_as_loopds`) is marked too: in
/// a phone's notification the two bodies would otherwise read alike.
pub fn marked_reply(text: &str) -> String {
    let bar = MARK.chars().next();
    text.split('\n')
        .map(|line| {
            if line.chars().next() != bar && reads_as_loopds(line) {
                format!("{MARK}{line}")
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `line` starts, as a person reads it, with `loopd`: judged on the confusable
/// skeleton (UTS #39) of its start as written and lower-cased (the skeleton draws a
/// capital `I` as `l`, but not the `i` it lower-cases to), characters that draw as
/// nothing, combining marks (drawn on the letter before them) and the blanks before it
/// left out, so `Loopd:`, `Ioopd:`, `l\u{200b}oopd:`, `l\u{301}oopd:` and `ⅼoopd:` count. A
/// letter the confusables data leaves as itself and UTS #39 restricts (`ʟ`, `ɭ`) stands
/// for any letter, as it does where `proto::shown` judges a line's start. Marking a line
/// that merely begins with the word costs two characters; missing one lets the model
/// speak as loopd.
fn reads_as_loopds(line: &str) -> bool {
    let written: String = line
        .chars()
        .filter(|c| !proto::shown::hidden(*c) && !proto::shown::combining(*c))
        // However many blanks come first: a notification shows the body without them.
        .skip_while(|c| blank(*c))
        .take(HEAD_CHARS)
        .collect();
    let lowered: String = written.chars().flat_map(char::to_lowercase).collect();
    starts_as_loopd(&written) || starts_as_loopd(&lowered)
}

/// Whether `c` draws as blank: white space, or a character whose skeleton is (the blank
/// Braille pattern).
fn blank(c: char) -> bool {
    let mut buf = [0u8; 4];
    c.is_whitespace()
        || unicode_security::skeleton(c.encode_utf8(&mut buf)).all(char::is_whitespace)
}

/// Whether the skeleton of `start`, lower-cased and without its leading blanks, begins
/// with `loopd`'s, a restricted letter matching any letter.
fn starts_as_loopd(start: &str) -> bool {
    use unicode_security::GeneralSecurityProfile;
    let mut drawn = unicode_security::skeleton(start)
        .flat_map(char::to_lowercase)
        .filter(|c| !proto::shown::hidden(*c) && !proto::shown::combining(*c))
        .skip_while(|c| c.is_whitespace());
    unicode_security::skeleton("loopd").all(|want| {
        drawn
            .next()
            .is_some_and(|c| c == want || (c.is_alphabetic() && !c.identifier_allowed()))
    })
}

/// A transaction id fixed by `fields`: `bm` and the first 128 bits of the SHA-256 of the
/// fields, each length-prefixed (so `("ab","c")` and `("a","bc")` differ). 34 characters of
/// `[a-z0-9]`, safe in a path segment.
pub fn txn_id(fields: &[&str]) -> String {
    let mut input = Vec::new();
    for f in fields {
        input.extend_from_slice(&(f.len() as u64).to_be_bytes());
        input.extend_from_slice(f.as_bytes());
    }
    let d = digest(&SHA256, &input);
    let mut out = String::from("bm");
    for b in &d.as_ref()[..16] {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The transaction id of the redaction of `event` in `room`: retried, the same redaction.
pub fn redaction_txn(room: &str, event: &str) -> String {
    txn_id(&["redact", room, event])
}

/// Splits `text` into pieces whose summed `cost` is at most `budget`, at line boundaries:
/// the newline at a cut is dropped, so joining the pieces with `\n` gives `text` back. A
/// line over the budget alone is cut at character boundaries (only there does the join
/// differ). Empty text is one empty piece.
pub fn split(text: &str, budget: usize, cost: impl Fn(char) -> usize) -> Vec<String> {
    split_cuts(text, budget, cost)
        .into_iter()
        .map(|(piece, _)| piece)
        .collect()
}

/// [`split`], each piece with whether it starts in the middle of a line (a cut inside a
/// line longer than the budget).
fn split_cuts(text: &str, budget: usize, cost: impl Fn(char) -> usize) -> Vec<(String, bool)> {
    let line_cost = |s: &str| s.chars().map(&cost).sum::<usize>();
    let mut pieces = Vec::new();
    // The piece being filled, its cost and whether it starts mid-line; `None` before the
    // first line and after a cut.
    let mut cur: Option<(String, usize, bool)> = None;
    for line in text.split('\n') {
        let c = line_cost(line);
        if let Some((s, sc, _)) = cur.as_mut() {
            let joined = *sc + cost('\n') + c;
            if joined <= budget {
                s.push('\n');
                s.push_str(line);
                *sc = joined;
                continue;
            }
        }
        if let Some((s, _, mid)) = cur.take() {
            pieces.push((s, mid));
        }
        if c <= budget {
            cur = Some((line.to_string(), c, false));
            continue;
        }
        // A line longer than a whole event: cut where the budget runs out.
        let (mut s, mut sc, mut mid) = (String::new(), 0, false);
        for ch in line.chars() {
            let cc = cost(ch);
            if sc + cc > budget && !s.is_empty() {
                pieces.push((std::mem::take(&mut s), mid));
                sc = 0;
                mid = true;
            }
            s.push(ch);
            sc += cc;
        }
        cur = Some((s, sc, mid));
    }
    if let Some((s, _, mid)) = cur {
        pieces.push((s, mid));
    }
    pieces
}

/// A character's length in the content's JSON. serde_json and Synapse's canonical JSON
/// both write non-ASCII as UTF-8; `"` and `\` take two bytes, a control character up to
/// six (`\u00XX`; the short forms are counted at six too, to be safe).
pub fn json_cost(c: char) -> usize {
    match c {
        '"' | '\\' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

fn json_cost_str(s: &str) -> usize {
    s.chars().map(json_cost).sum()
}

/// Text escaped for `formatted_body`, its newlines as `<br>`.
pub fn html(text: &str) -> String {
    text.chars().map(html_char).collect()
}

fn html_char(c: char) -> String {
    match c {
        '&' => "&amp;".into(),
        '<' => "&lt;".into(),
        '>' => "&gt;".into(),
        '"' => "&quot;".into(),
        '\'' => "&#39;".into(),
        '\n' => "<br>".into(),
        c => c.to_string(),
    }
}
