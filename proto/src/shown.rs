//! What text may put in front of the owner (docs/channel.md, "What the owner sees is
//! true"): the one rule every place that shows loopd's words uses — the channel socket,
//! the notify command's input, the journal, and Matrix when it comes.
//!
//! The model's words reach a person, and the model may be steered by any page it read, so
//! its text must not be able to move the cursor, erase a line, reorder what is shown (bidi
//! overrides), hide characters (zero-width and tag characters), or pass for one of loopd's
//! own lines: a `· ` activity line, an `error: ` line, or a memory header.
//!
//! Two rules, both judged on what a person sees rather than on code points:
//!
//! - **Characters.** A character that acts on a terminal or draws as nothing (`hidden`) is
//!   written as its escape, `\u{202e}`. So is every character drawn as the activity
//!   marker's middle dot (`dot_like`: its UTS #39 confusable skeleton starts with `·`)
//!   anywhere but as the first visible character of a marked line, because a terminal that
//!   wraps a long line can bring any character to the start of a screen row.
//! - **Line starts.** A line whose start reads as one of loopd's marks (`head`: judged on
//!   the confusable skeleton, so `error፡ `, `err०r:` and `•` count) is shown after `MARK`,
//!   `┃ `, which loopd never starts a line of its own with. A line that itself starts
//!   with `┃` gets the mark too, so taking one `┃ ` off each line that has it gives back
//!   the model's text exactly. Nothing else is changed: an `error:` in the middle of a
//!   line (`server_error: …`, a quoted compiler line) is written as itself.
//!
//! Pure: no I/O; callers stream text through a `Screen` or turn a whole string with
//! `text` or `one_line`.

use unicode_categories::UnicodeCategories;
use unicode_security::{skeleton, GeneralSecurityProfile};

/// What starts each of loopd's activity lines.
pub const ACTIVITY: &str = "· ";

/// What starts a line of loopd's that reports a failure.
pub const ERROR: &str = "error: ";

/// The first words of the two memory headers loopd writes (`memory · session …`,
/// docs/channel.md, 'Quoted text').
pub const MEMORY_WORDS: [&str; 2] = ["memory", "memory-tainted"];

/// What is put in front of a line of text that starts as one of loopd's lines would: a
/// heavy vertical bar, drawn as a quote bar, and a space. loopd's own lines never start
/// with it, no lookalike of it passes for any of loopd's marks, and it is rare at the
/// start of a model's line (unlike `>` in Markdown quotes or `|` in tables).
pub const MARK: &str = "┃ ";

/// The character `MARK` starts with: a model line starting with it is marked as well.
const MARK_CHAR: char = '┃';

/// How many blank characters may stand before a line's first visible one for the line
/// still to be judged by its start. Past this, its first visible character is in the
/// middle of a row on any terminal at least this wide, and is judged as mid-line text.
pub const MAX_INDENT: usize = 16;

/// How far apart a terminal's tab stops are: a tab in running text is written as spaces
/// to the next one (see `Screen::put`).
pub const TAB_STOP: usize = 8;

/// Characters drawn as a mid-height dot that neither the confusables data (their skeleton
/// is not `·`) nor the general rules below (`symbol_start`, Braille single dots) cover:
/// the Hangul araea is a letter, so a line starting with it is not a symbol start. The
/// rest are symbols, listed so they are escaped mid-line too. Kept to what is known to
/// draw as the activity marker's dot in common terminal fonts.
const UNMAPPED_DOTS: [char; 5] = ['\u{2e33}', '\u{318d}', '\u{119e}', '\u{2981}', '\u{1f784}'];

/// How many characters of a line's start are held while undecided. `memory-tainted ·`
/// and a few spaces fit; a start still undecided at this length (a run of characters
/// that draw as nothing, many spaces between a `memory` and what follows) is marked, so
/// nothing is held without bound.
pub const MAX_HEAD: usize = MAX_INDENT + 32;

/// How a character of text is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Written as itself.
    Plain,
    /// Written as its `\u{…}` escape.
    Escaped,
}

/// Where the text goes, which decides whether newline and tab are escaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Running text (the model's answer, or loopd's own lines after their mark, which may
    /// quote stored text): lines of its own, each start judged by `head`.
    Model,
    /// One field of one line (a tool name, its arguments, a URL; a journal line): as
    /// `Model`, and newline and tab escaped too, so it stays on its line.
    OneLine,
}

/// How `c` is written when it comes from `source` in the middle of a line, `after` being
/// the character written just before it (for the variation-selector rule below).
pub fn kind(c: char, after: char, source: Source) -> Kind {
    let escaped = match c {
        '\n' | '\t' => source == Source::OneLine,
        // Emoji presentation (U+FE0E, U+FE0F) after a visible non-ASCII character is how
        // emoji are written; anywhere else a variation selector draws nothing.
        '\u{fe0e}' | '\u{fe0f}' => after.is_ascii() || hidden(after) || dot_like(after),
        c if hidden(c) => true,
        c if dot_like(c) => true,
        _ => false,
    };
    if escaped {
        Kind::Escaped
    } else {
        Kind::Plain
    }
}

/// Appends `c` as `kind` says.
pub fn push(c: char, kind: Kind, out: &mut String) {
    match kind {
        Kind::Plain => out.push(c),
        Kind::Escaped => out.extend(c.escape_unicode()),
    }
}

/// Characters a terminal does not draw as a glyph of their own: controls (C0, DEL, C1:
/// ESC starts cursor moves and erasures, CR returns to the line's start), format
/// characters (bidi embeddings, overrides and isolates, zero-width spaces and joiners,
/// the byte-order mark, invisible operators, tag characters), line and paragraph
/// separators, and the fillers and selectors that render as nothing. Any of them can hide
/// or rearrange what is shown.
pub fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{ad}'
                | '\u{34f}'
                | '\u{600}'..='\u{605}'
                | '\u{61c}'
                | '\u{6dd}'
                | '\u{70f}'
                | '\u{890}'..='\u{891}'
                | '\u{8e2}'
                | '\u{115f}'..='\u{1160}'
                | '\u{17b4}'..='\u{17b5}'
                | '\u{180b}'..='\u{180f}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}'
                | '\u{3164}'
                | '\u{fe00}'..='\u{fe0f}'
                | '\u{feff}'
                | '\u{ffa0}'
                | '\u{fff9}'..='\u{fffb}'
                | '\u{110bd}'
                | '\u{110cd}'
                | '\u{13430}'..='\u{1343f}'
                | '\u{1bca0}'..='\u{1bca3}'
                | '\u{1d173}'..='\u{1d17a}'
                | '\u{e0000}'..='\u{e0fff}'
        )
}

/// Whether `c` is drawn as (or starting with) the middle dot of loopd's activity marker:
/// its confusable skeleton (UTS #39) starts with `·` — the middle dot, the bullet, the
/// Greek ano teleia, the katakana middle dots, the word-separator dots, the modifier
/// half-triangular colon, and the syllabics drawn as a dot beside a letter. No ASCII
/// character is one, which the test checks, so plain text pays nothing for the look-up.
/// So are the Braille patterns of a single dot, and the few in `UNMAPPED_DOTS`.
pub fn dot_like(c: char) -> bool {
    !c.is_ascii()
        && (skeleton_of(c).first() == Some(&'\u{b7}')
            || braille_dot(c)
            || UNMAPPED_DOTS.contains(&c))
}

/// A Braille pattern with one dot raised: drawn as a lone dot.
fn braille_dot(c: char) -> bool {
    braille(c) && (c as u32 - 0x2800).count_ones() == 1
}

fn braille(c: char) -> bool {
    ('\u{2800}'..='\u{28ff}').contains(&c)
}

/// Whether `c`, first on a line and followed by a blank, makes the line pass for one of
/// loopd's marked lines: a non-ASCII punctuation mark or symbol (general category P or
/// S), or a Braille pattern. Honest text rarely starts a line that way (a bullet `•` is
/// one, and was always marked); a dot the data does not know is one too.
fn symbol_start(c: char) -> bool {
    !c.is_ascii() && (c.is_punctuation() || c.is_symbol() || braille(c))
}

/// A combining mark (general category Mn or Me): drawn on the character before it, or on
/// nothing at a line's start, so it is not looked at when a start is judged.
pub fn combining(c: char) -> bool {
    c.is_mark_nonspacing() || c.is_mark_enclosing()
}

/// Whether `c` is blank where a line starts: a tab, a space a terminal draws as empty, or
/// a character whose skeleton is a space (the blank Braille pattern). Characters that
/// draw as nothing at all are not blank: they are shown as escapes.
fn blank(c: char) -> bool {
    c == '\t'
        || (c != '\n'
            && !hidden(c)
            && (c.is_whitespace() || (!c.is_ascii() && skeleton_of(c) == [' '])))
}

/// Whether the last of `held` is one a combining mark after it would make `Unit::Any`.
fn awaits_mark(held: &[char]) -> bool {
    held.last()
        .is_some_and(|&c| !c.is_alphanumeric() && !blank(c) && !combining(c))
}

/// One character of a line's start as `head` sees it: combining marks dropped, and
/// whether any stood on it.
#[derive(Debug, Clone, Copy)]
struct Seen {
    c: char,
    marked: bool,
}

/// `held` with its combining marks dropped onto the character before them.
fn drawn(held: &[char]) -> Vec<Seen> {
    let mut out: Vec<Seen> = Vec::with_capacity(held.len());
    for &c in held {
        if combining(c) {
            if let Some(last) = out.last_mut() {
                last.marked = true;
            }
            continue;
        }
        out.push(Seen { c, marked: false });
    }
    out
}

/// One unit of a skeleton as `head` compares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    /// This character.
    Is(char),
    /// Some letter: one the confusables data leaves as itself but that draws like others.
    Letter,
    /// Anything: punctuation with a combining mark on it (`.` with a dot above reads as
    /// `:`).
    Any,
}

/// `c` as `head` compares it: its confusable skeleton (UTS #39), one unit a character of
/// the skeleton. A letter the confusables data leaves as itself and the security profile
/// of UTS #39 does not allow in identifiers (IPA, obsolete and technical letters such as
/// `ɾ`, drawn like `r` but not mapped to it) is one unknown unit, `None`, which may stand
/// for any letter. A character the skeleton drops (one that draws as nothing) gives no
/// unit.
/// Punctuation or a symbol with a combining mark on it may draw as any other, so it is
/// `Any`.
fn units(seen: Seen) -> Vec<Unit> {
    let c = seen.c;
    if seen.marked && !c.is_alphanumeric() && !blank(c) {
        return vec![Unit::Any];
    }
    let drawn = skeleton_of(c);
    if drawn == [c] && c.is_alphabetic() && !c.identifier_allowed() {
        return vec![Unit::Letter];
    }
    drawn.into_iter().map(Unit::Is).collect()
}

/// The confusable skeleton (UTS #39) of `c` alone.
fn skeleton_of(c: char) -> Vec<char> {
    let mut buf = [0u8; 4];
    skeleton(c.encode_utf8(&mut buf)).collect()
}

/// How the start of a line compares with one of loopd's marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    /// It starts as loopd's lines do: the line is shown after `MARK`.
    Mark,
    /// It cannot: the line is shown as it is.
    Plain,
    /// Not decided yet: more of the line is needed (hold it).
    Open,
}

/// Judges `held`, the first characters of a line (without its newline), against loopd's
/// marks: `·` (any character drawn as one), `error:`, a memory header (`memory` or
/// `memory-tainted`, blanks, then a dot), each compared on confusable skeletons after up
/// to `MAX_INDENT` blanks; and `MARK`'s own bar in the first column. `ended` says that
/// no more of the line will come, so what is still open is plain.
pub fn head(held: &[char], ended: bool) -> Head {
    let mut verdict = judge(held);
    // A combining mark still to come may change the last character (`.` then a dot above
    // reads as `:`): a start is plain only once a character follows the one that made it
    // so.
    if verdict == Head::Plain
        && !ended
        && awaits_mark(held)
        && judge(&held[..held.len() - 1]) != Head::Plain
    {
        verdict = Head::Open;
    }
    match verdict {
        Head::Open if ended && passes_for_block_end(held) => Head::Mark,
        Head::Open if ended => Head::Plain,
        Head::Open if held.len() >= MAX_HEAD => Head::Mark,
        v => v,
    }
}

/// Whether a whole line draws as the `.` alone that ends loopd's reply blocks, written
/// with another character (`․`, `．`): the channel stuffs a model's own `.` line to
/// `..`, but a lookalike would read as the end of the reply, and what follows it as
/// something else (docs/channel.md, "What the owner sees is true").
fn passes_for_block_end(held: &[char]) -> bool {
    let seen: Vec<Seen> = drawn(held)
        .into_iter()
        .filter(|s| !blank(s.c) && !hidden(s.c))
        .collect();
    matches!(seen.as_slice(), [one] if one.c != '.' && skeleton_of(one.c) == ['.'])
}

/// `held` against the marks as it stands, Open while more of it could still decide.
fn judge(held: &[char]) -> Head {
    if held.first() == Some(&MARK_CHAR) {
        return Head::Mark;
    }
    let seen = drawn(held);
    let indent = seen.iter().take_while(|s| blank(s.c)).count();
    if indent > MAX_INDENT {
        return Head::Plain;
    }
    marks(&seen[indent..])
}

/// `rest` (a line's start after its indent) against each mark: the first that matches
/// decides, and it stays open while any still could.
fn marks(rest: &[Seen]) -> Head {
    let seen: Vec<Unit> = rest.iter().flat_map(|&s| units(s)).collect();
    if seen.is_empty() {
        return Head::Open;
    }
    // The first character drawn (not one that draws as nothing): a dot marks the line; a
    // symbol does when a blank follows it, as loopd's `· ` does.
    if let Some(at) = rest.iter().position(|&s| !units(s).is_empty()) {
        let first = rest[at].c;
        if dot_like(first) {
            return Head::Mark;
        }
        if symbol_start(first) {
            match rest.get(at + 1) {
                None => return Head::Open,
                Some(next) if blank(next.c) => return Head::Mark,
                Some(_) => {}
            }
        }
    }
    let mut verdict = Head::Plain;
    for target in [ACTIVITY.trim_end(), ERROR.trim_end()] {
        match against(&seen, target) {
            Head::Mark => return Head::Mark,
            Head::Open => verdict = Head::Open,
            Head::Plain => {}
        }
    }
    match memory_header(rest) {
        Head::Mark => Head::Mark,
        Head::Open => Head::Open,
        Head::Plain => verdict,
    }
}

/// `seen` (skeleton units) against the skeleton of `target`: an unknown unit matches a
/// letter of it.
fn against(seen: &[Unit], target: &str) -> Head {
    let want: Vec<char> = skeleton(target).collect();
    let fits = seen.iter().zip(&want).all(|(unit, &w)| match *unit {
        Unit::Is(u) => u == w,
        Unit::Letter => w.is_alphabetic(),
        Unit::Any => true,
    });
    match (fits, seen.len() >= want.len()) {
        (false, _) => Head::Plain,
        (true, true) => Head::Mark,
        (true, false) => Head::Open,
    }
}

/// `rest` against a memory header: one of `MEMORY_WORDS` (by skeleton), blanks, and a
/// character drawn as a dot.
fn memory_header(rest: &[Seen]) -> Head {
    let word_end = rest.iter().position(|s| blank(s.c));
    let word: Vec<Unit> = rest[..word_end.unwrap_or(rest.len())]
        .iter()
        .flat_map(|&s| units(s))
        .collect();
    // A whole word must be exactly one of them; a word still arriving must not be longer.
    let fits = |whole: bool| {
        MEMORY_WORDS.iter().any(|w| {
            let want = skeleton(w).count();
            if whole {
                word.len() == want && against(&word, w) == Head::Mark
            } else {
                word.len() <= want && against(&word, w) != Head::Plain
            }
        })
    };
    let Some(end) = word_end else {
        return if fits(false) { Head::Open } else { Head::Plain };
    };
    if !fits(true) {
        return Head::Plain;
    }
    match rest[end..].iter().find(|s| !blank(s.c)) {
        None => Head::Open,
        Some(s) if dot_like(s.c) || s.marked => Head::Mark,
        Some(_) => Head::Plain,
    }
}

/// Text written for the owner, piece by piece: each line's start held until `head`
/// decides it, then written after `MARK` or as it is, every character as `kind` says.
/// A stream may split a line's start across pieces; at most `MAX_HEAD` characters wait.
/// The channel's reply blocks (dot-stuffing on top) and every whole-string caller
/// (`text`, `one_line`) write through it.
#[derive(Debug, Clone)]
pub struct Screen {
    /// Nothing of the current line has been written yet.
    at_line_start: bool,
    /// The last character written, for the rules that look one character back.
    last: char,
    /// The start of the current line, not yet judged.
    held: Vec<char>,
    /// How many characters of the current line have been written: where a tab's spaces
    /// end.
    column: usize,
}

impl Default for Screen {
    fn default() -> Screen {
        Screen::new()
    }
}

impl Screen {
    pub fn new() -> Screen {
        Screen {
            at_line_start: true,
            last: '\n',
            held: Vec::new(),
            column: 0,
        }
    }

    /// Whether the next character written starts a line.
    pub fn at_line_start(&self) -> bool {
        self.at_line_start && self.held.is_empty()
    }

    /// Appends `text` from `source` to `out`. In `Model` text a line's start may wait for
    /// the next piece (or `settle`); a `OneLine` field is written at once, as mid-line
    /// text wherever it stands.
    pub fn write(&mut self, text: &str, source: Source, out: &mut String) {
        for c in text.chars() {
            if source == Source::OneLine {
                self.settle(out);
                self.put(c, kind(c, self.last, source), source, out);
                continue;
            }
            if !self.at_line_start {
                self.put(c, kind(c, self.last, source), source, out);
                continue;
            }
            if c == '\n' {
                self.release(head(&self.held, true), out);
                self.put(c, Kind::Plain, source, out);
                continue;
            }
            self.held.push(c);
            match head(&self.held, false) {
                Head::Open => {}
                decided => self.release(decided, out),
            }
        }
    }

    /// Appends loopd's own `mark` (`· `, `error: `, a header's words) as itself, on the
    /// current line: the caller knows it is loopd's.
    pub fn own(&mut self, mark: &str, out: &mut String) {
        self.settle(out);
        out.push_str(mark);
        self.column = match mark.rfind('\n') {
            Some(i) => mark[i + 1..].chars().count(),
            None => self.column + mark.chars().count(),
        };
        if let Some(c) = mark.chars().last() {
            self.at_line_start = c == '\n';
            self.last = c;
        }
    }

    /// Writes a held line start as it stands: nothing more of it will come now.
    pub fn settle(&mut self, out: &mut String) {
        if !self.held.is_empty() {
            self.release(head(&self.held, true), out);
        }
    }

    /// Ends the current line unless nothing of it has been written.
    pub fn break_line(&mut self, out: &mut String) {
        self.settle(out);
        if !self.at_line_start {
            out.push('\n');
            self.at_line_start = true;
            self.last = '\n';
            self.column = 0;
        }
    }

    /// Writes the held line start as `verdict` says: after `MARK` when marked, its first
    /// visible character then written as itself (it is the mark's own dot, at a column no
    /// wrap reaches); every other character as `kind` says.
    fn release(&mut self, verdict: Head, out: &mut String) {
        let held = std::mem::take(&mut self.held);
        let marked = verdict == Head::Mark;
        if marked {
            out.push_str(MARK);
            self.last = ' ';
            self.column += MARK.chars().count();
        }
        let first = held.iter().position(|&c| !blank(c) && !combining(c));
        for (i, &c) in held.iter().enumerate() {
            let kind = match kind(c, self.last, Source::Model) {
                Kind::Escaped if marked && Some(i) == first && dot_like(c) && !hidden(c) => {
                    Kind::Plain
                }
                // A combining mark before the first character would draw on the mark's
                // space, or on nothing: it is shown as its escape.
                _ if first.is_none_or(|f| i < f) && combining(c) => Kind::Escaped,
                k => k,
            };
            self.put(c, kind, Source::Model, out);
        }
    }

    /// Writes `c`. A tab in running text is written as spaces to the next `TAB_STOP`: a
    /// terminal stops a run of tabs at its right margin without wrapping, so tabs and one
    /// more character would bring what follows to the start of the next row on a terminal
    /// of any width (docs/channel.md, 'What the owner sees is true').
    fn put(&mut self, c: char, kind: Kind, source: Source, out: &mut String) {
        if c == '\t' && kind == Kind::Plain {
            let spaces = TAB_STOP - self.column % TAB_STOP;
            out.extend(std::iter::repeat_n(' ', spaces));
            self.column += spaces;
        } else {
            let before = out.len();
            push(c, kind, out);
            self.column = if c == '\n' && kind == Kind::Plain {
                0
            } else {
                self.column + out[before..].chars().count()
            };
        }
        self.at_line_start = c == '\n' && source == Source::Model && kind == Kind::Plain;
        self.last = c;
    }
}

/// `text` (running text: lines of the model's, or text loopd quotes) as the owner may see
/// it: every line's start judged, every character as `kind` says. The whole-string form
/// of `Screen`, for every place that is handed a finished text (the notify command's
/// input, a Matrix event).
pub fn text(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + MARK.len());
    let mut screen = Screen::new();
    screen.write(text, Source::Model, &mut out);
    screen.settle(&mut out);
    out
}

/// `text` as one line (a journal line, a field of an activity line): newline and tab
/// escaped too, and no character drawn as a dot, so nothing in it starts a line or draws
/// a mark where a wrap brings it.
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut screen = Screen::new();
    screen.write(text, Source::OneLine, &mut out);
    out
}

#[cfg(test)]
mod tests;
