//! Reply blocks (docs/channel.md): the reply text, lines that start with `.` given one
//! more `.` (as in SMTP), then a line holding only `.`. A `Block` dot-stuffs text as it
//! streams in, piece by piece, remembering whether the next byte starts a line.
//!
//! Every byte of a block passes through here, so this is where what reaches the owner's
//! terminal is made true (`super::screen`): the model's text (`Block::text`) cannot move
//! the cursor, hide characters or hold the activity marker's middle dot; an activity line
//! is always exactly one line, whatever its model-given parts hold; loopd's own lines
//! (`Block::lines`) keep their marker and lose only terminal controls.

use super::screen::{self, Source};

/// What starts each of loopd's activity lines: only `Block::lines` writes it as itself.
pub const ACTIVITY: &str = "· ";

/// What starts a reply that failed (docs/channel.md): written here and nowhere else.
pub const ERROR: &str = "error: ";

/// A failure, as the owner reads it: `error: ` and what went wrong.
pub fn error_line(why: impl std::fmt::Display) -> String {
    format!("{ERROR}{why}")
}

pub struct Block {
    at_line_start: bool,
    /// The last character written, for the escape rules that look one character back.
    last: char,
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
        }
    }

    /// Appends a streamed piece of the model's answer to `out`, dot-stuffed and escaped
    /// as model text.
    pub fn text(&mut self, text: &str, out: &mut String) {
        self.write(text, Source::Model, out);
    }

    /// Appends loopd's own `text` as lines of their own: a newline first if the stream
    /// stopped mid-line, and one after it. Text starting with the activity marker is one
    /// activity line: what follows the marker is a one-line field (tool names, arguments
    /// and URLs in it are the model's), so it can neither end the line early nor hold a
    /// forged marker.
    pub fn lines(&mut self, text: &str, out: &mut String) {
        if text.is_empty() {
            return;
        }
        self.break_line(out);
        match text.strip_prefix(ACTIVITY) {
            Some(rest) => {
                out.push_str(ACTIVITY);
                self.at_line_start = false;
                self.last = ' ';
                self.write(rest, Source::OneLine, out);
            }
            None => self.write(text, Source::Own, out),
        }
        self.break_line(out);
    }

    /// Ends the block.
    pub fn end(mut self, out: &mut String) {
        self.break_line(out);
        out.push_str(".\n");
    }

    fn write(&mut self, text: &str, source: Source, out: &mut String) {
        // loopd's own text may quote stored text over several lines (`/recall` shows what
        // the model once said): only its first line may start with the marker.
        let mut first_line = true;
        let mut blank_so_far = self.at_line_start;
        for c in text.chars() {
            if self.at_line_start && c == '.' {
                out.push('.');
            }
            let mut kind = screen::kind(c, self.last, source);
            if source == Source::Own && !first_line && blank_so_far && screen::dot_like(c) {
                kind = screen::Kind::Escaped;
            }
            screen::push(c, kind, out);
            let newline = c == '\n' && source != Source::OneLine;
            first_line &= !newline;
            blank_so_far = newline || (blank_so_far && (c == ' ' || c == '\t'));
            self.at_line_start = newline;
            self.last = c;
        }
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
    fn loopds_own_text_keeps_its_first_line_but_no_quoted_line_starts_with_the_marker() {
        assert_eq!(
            whole("memory · session main\nthe assistant said: hi\n · fake /allow 2\x07"),
            "memory · session main\nthe assistant said: hi\n \\u{b7} fake /allow 2\\u{7}\n.\n"
        );
    }

    #[test]
    fn an_empty_reply_is_just_the_terminator() {
        assert_eq!(whole(""), ".\n");
    }
}
