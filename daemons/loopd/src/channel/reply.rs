//! Reply blocks (docs/channel.md): the reply text, lines that start with `.` given one
//! more `.` (as in SMTP), then a line holding only `.`. A `Block` dot-stuffs text as it
//! streams in, piece by piece, remembering whether the next byte starts a line.
//!
//! Every byte of a block passes through here, so this is where what reaches the owner's
//! terminal is made true (`super::screen`): no text can move the cursor, hide characters,
//! hold the activity marker's middle dot or spell `error: `, wherever it stands; loopd's
//! own lines (`Block::lines`) start with their mark (`· ` or `error: `) written as itself,
//! and an activity line is always exactly one line, whatever its model-given parts hold.

use super::screen::{self, Kind, Mimic, Source};

/// What starts each of loopd's activity lines: only `Block::lines` writes it as itself.
pub const ACTIVITY: &str = "· ";

/// What starts a reply that failed (docs/channel.md): only `Block::lines` writes it as
/// itself, and only at the start of loopd's own text.
pub const ERROR: &str = "error: ";

/// A failure, as the owner reads it: `error: ` and what went wrong.
pub fn error_line(why: impl std::fmt::Display) -> String {
    format!("{ERROR}{why}")
}

pub struct Block {
    at_line_start: bool,
    /// The last character written, for the escape rules that look one character back.
    last: char,
    /// Characters of text not yet written because they may be the start of `error: `
    /// (`screen::mimic`): the next character decides. A streamed answer may split the
    /// word across pieces, so they wait across `text` calls; never more than the mark.
    held: Vec<char>,
}

impl Default for Block {
    fn default() -> Block {
        Block::new()
    }
}

impl Block {
    pub fn new() -> Block {
        Block {
            at_line_start: true,
            last: '\n',
            held: Vec::new(),
        }
    }

    /// Appends a streamed piece of the model's answer to `out`, dot-stuffed and escaped
    /// as model text. Up to the length of `error: ` may wait for the next piece.
    pub fn text(&mut self, text: &str, out: &mut String) {
        self.write(text, Source::Model, out);
    }

    /// Appends loopd's own `text` as lines of their own: a newline first if the stream
    /// stopped mid-line, and one after it. Only the mark it starts with (`· ` or
    /// `error: `) is written as itself; the rest may quote stored text (a recalled hit, a
    /// list of records to forget, a URL) and is escaped as model text is. Text starting
    /// with the activity marker is one activity line: what follows the marker is a
    /// one-line field (tool names, arguments and URLs in it are the model's), so it can
    /// neither end the line early nor hold a forged marker.
    pub fn lines(&mut self, text: &str, out: &mut String) {
        if text.is_empty() {
            return;
        }
        self.settle(Source::Model, true, out);
        self.break_line(out);
        let (mark, rest, source) = if let Some(rest) = text.strip_prefix(ACTIVITY) {
            (ACTIVITY, rest, Source::OneLine)
        } else if let Some(rest) = text.strip_prefix(ERROR) {
            (ERROR, rest, Source::Model)
        } else {
            ("", text, Source::Model)
        };
        if !mark.is_empty() {
            out.push_str(mark);
            self.at_line_start = false;
            self.last = ' ';
        }
        self.write(rest, source, out);
        self.settle(source, true, out);
        self.break_line(out);
    }

    /// Appends a recalled hit's header as a line of its own, in the form memoryd renders
    /// for the model: `memory · session <id> · <time>` (`memory-tainted` when untrusted).
    /// It is the one line of loopd's with middle dots past its start (docs/channel.md,
    /// 'Quoted text'): the two separators are loopd's, written as themselves; the session
    /// id and the time come from the index and are escaped as model text is, so a log
    /// holding anything else in them still cannot draw a marker or end the line.
    pub fn hit_header(&mut self, tainted: bool, session: &str, time: &str, out: &mut String) {
        self.settle(Source::Model, true, out);
        self.break_line(out);
        out.push_str(if tainted {
            "memory-tainted · session "
        } else {
            "memory · session "
        });
        self.at_line_start = false;
        self.last = ' ';
        self.write(session, Source::OneLine, out);
        self.settle(Source::OneLine, true, out);
        out.push_str(" · ");
        self.last = ' ';
        self.write(time, Source::OneLine, out);
        self.settle(Source::OneLine, true, out);
        self.break_line(out);
    }

    /// Ends the block.
    pub fn end(mut self, out: &mut String) {
        self.settle(Source::Model, true, out);
        self.break_line(out);
        out.push_str(".\n");
    }

    fn write(&mut self, text: &str, source: Source, out: &mut String) {
        for c in text.chars() {
            self.held.push(c);
            self.settle(source, false, out);
        }
    }

    /// Writes what is held as far as it is decided; with `last`, all of it (nothing
    /// follows that could complete the mark).
    fn settle(&mut self, source: Source, last: bool, out: &mut String) {
        while let Some(&first) = self.held.first() {
            match screen::mimic(&self.held) {
                Mimic::Whole => {
                    let held = std::mem::take(&mut self.held);
                    self.put(first, Some(Kind::Escaped), source, out);
                    for &c in &held[1..] {
                        self.put(c, None, source, out);
                    }
                }
                Mimic::Partial if !last => return,
                Mimic::Partial | Mimic::No => {
                    self.held.remove(0);
                    self.put(first, None, source, out);
                }
            }
        }
    }

    /// Writes one character, dot-stuffed, as `kind` says or else as `screen::kind` does.
    fn put(&mut self, c: char, kind: Option<Kind>, source: Source, out: &mut String) {
        if self.at_line_start && c == '.' {
            out.push('.');
        }
        let kind = kind.unwrap_or_else(|| screen::kind(c, self.last, source));
        screen::push(c, kind, out);
        self.at_line_start = c == '\n' && source != Source::OneLine;
        self.last = c;
    }

    fn break_line(&mut self, out: &mut String) {
        if !self.at_line_start {
            out.push('\n');
            self.at_line_start = true;
            self.last = '\n';
        }
    }
}

/// A whole reply block holding `text`.
pub fn whole(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    let mut block = Block::new();
    block.lines(text, &mut out);
    block.end(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hit_header_keeps_its_two_separators_and_escapes_whatever_else_its_fields_hold() {
        let mut out = String::new();
        let mut b = Block::new();
        b.text("partial", &mut out);
        b.hit_header(false, "main", "2026-11-30T06:00:00.000Z", &mut out);
        b.hit_header(true, "x\n· y", "t\u{1b}", &mut out);
        b.end(&mut out);
        assert_eq!(
            out,
            "partial\nmemory · session main · 2026-11-30T06:00:00.000Z\n\
             memory-tainted · session x\\u{a}\\u{b7} y · t\\u{1b}\n.\n"
        );
    }

    #[test]
    fn lines_starting_with_a_dot_get_one_more() {
        assert_eq!(whole(".\n..x\nok\n.end"), "..\n...x\nok\n..end\n.\n");
    }

    #[test]
    fn stuffing_follows_line_starts_across_pieces() {
        let mut out = String::new();
        let mut b = Block::new();
        for piece in ["a", "\n", ".b", " c.\n", ".", "d"] {
            b.text(piece, &mut out);
        }
        b.end(&mut out);
        assert_eq!(out, "a\n..b c.\n..d\n.\n");
    }

    #[test]
    fn lines_start_on_a_fresh_line() {
        let mut out = String::new();
        let mut b = Block::new();
        b.text("thinking", &mut out);
        b.lines("· read_file {}", &mut out);
        b.text("done", &mut out);
        b.end(&mut out);
        assert_eq!(out, "thinking\n· read_file {}\ndone\n.\n");
    }

    #[test]
    fn model_text_cannot_pass_for_an_activity_line_even_split_across_pieces() {
        let mut out = String::new();
        let mut b = Block::new();
        for piece in [
            "ok\n",
            "\u{b7}",
            " http_fetch of x refused: send: /allow 2\n",
            "  ·",
            " y",
        ] {
            b.text(piece, &mut out);
        }
        b.lines("· http_fetch {}", &mut out);
        b.end(&mut out);
        assert_eq!(
            out,
            "ok\n\\u{b7} http_fetch of x refused: send: /allow 2\n  \\u{b7} y\n· http_fetch {}\n.\n"
        );
        let activity: Vec<&str> = out.lines().filter(|l| l.starts_with(ACTIVITY)).collect();
        assert_eq!(activity, ["· http_fetch {}"]);
    }

    #[test]
    fn escape_sequences_in_model_text_are_shown_not_obeyed() {
        let mut out = String::new();
        let mut b = Block::new();
        b.text("\u{1b}[1A\u{1b}", &mut out);
        b.text("[2K\0\u{202e}evil\r", &mut out);
        b.end(&mut out);
        assert_eq!(out, "\\u{1b}[1A\\u{1b}[2K\\u{0}\\u{202e}evil\\u{d}\n.\n");
    }

    #[test]
    fn an_activity_line_is_one_line_whatever_its_fields_hold() {
        let mut out = String::new();
        let mut b = Block::new();
        b.lines(
            "· read_file {\"path\":\"a\n· http_fetch of y /allow 3\u{1b}[2K\"}",
            &mut out,
        );
        b.end(&mut out);
        assert_eq!(
            out,
            "· read_file {\"path\":\"a\\u{a}\\u{b7} http_fetch of y /allow 3\\u{1b}[2K\"}\n.\n"
        );
    }

    #[test]
    fn loopds_own_text_keeps_only_its_leading_mark_and_escapes_what_it_quotes() {
        assert_eq!(
            whole("2 entries:\n   a\u{a0}\u{a0}· http_fetch /allow 1\n· fake /allow 2\x07"),
            "2 entries:\n   a\u{a0}\u{a0}\\u{b7} http_fetch /allow 1\n\\u{b7} fake /allow 2\\u{7}\n.\n"
        );
        assert_eq!(
            whole("error: /allow 9: the page said error: retry"),
            "error: /allow 9: the page said \\u{65}rror: retry\n.\n"
        );
        assert_eq!(
            whole("· http_fetch {\"url\":\"error: x\"}"),
            "· http_fetch {\"url\":\"\\u{65}rror: x\"}\n.\n"
        );
    }

    #[test]
    fn model_text_cannot_spell_error_even_split_across_pieces_or_in_lookalikes() {
        let mut out = String::new();
        let mut b = Block::new();
        for piece in [
            "err",
            "or",
            ": llama.cpp timed out; send /allow 2\n",
            "ok\u{a0}\u{a0}e",
            "rror:",
            "\u{a0}x\n",
            "\u{435}rror: y\n",
            "an error:",
            "\n",
            "terror",
        ] {
            b.text(piece, &mut out);
        }
        b.end(&mut out);
        assert_eq!(
            out,
            "\\u{65}rror: llama.cpp timed out; send /allow 2\n\
             ok\u{a0}\u{a0}\\u{65}rror:\u{a0}x\n\\u{435}rror: y\nan error:\nterror\n.\n"
        );
        assert!(!out.lines().any(|l| l.starts_with(ERROR)), "{out}");
    }

    #[test]
    fn an_empty_reply_is_just_the_terminator() {
        assert_eq!(whole(""), ".\n");
    }
}
