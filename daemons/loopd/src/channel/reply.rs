//! Reply blocks (docs/channel.md): the reply text, lines that start with `.` given one
//! more `.` (as in SMTP), then a line holding only `.`. A `Block` dot-stuffs text as it
//! streams in, piece by piece, remembering whether the next byte starts a line.
//!
//! Every byte of a block passes through here, and what it may show is decided by the rule
//! every output of loopd's shares (`proto::shown`, docs/channel.md, 'What the owner sees
//! is true'): no text can move the cursor or hide characters, a line of text that starts
//! as loopd's own is shown after `┃ `, and no character drawn as the activity marker's
//! dot stands past a line's start. loopd's own lines (`Block::lines`) start with their
//! mark (`· ` or `error: `) written as itself, and an activity line is always exactly one
//! line, whatever its model-given parts hold.

use proto::shown::{Screen, Source};

/// What starts each of loopd's activity lines: only `Block::lines` writes it as itself.
pub(crate) use proto::shown::ACTIVITY;

/// What starts a reply that failed (docs/channel.md): only `Block::lines` writes it as
/// itself, and only at the start of loopd's own text.
pub(crate) use proto::shown::ERROR;

/// A failure, as the owner reads it: `error: ` and what went wrong.
pub(crate) fn error_line(why: impl std::fmt::Display) -> String {
    format!("{ERROR}{why}")
}

pub(crate) struct Block {
    /// What may be shown, and how: line starts held and judged, characters escaped.
    screen: Screen,
    /// Whether the next byte of the block starts a line, for dot-stuffing.
    at_line_start: bool,
    /// What `screen` wrote for the current call, before it is dot-stuffed into `out`.
    shown: String,
}

impl Default for Block {
    fn default() -> Block {
        Block::new()
    }
}

impl Block {
    pub(crate) fn new() -> Block {
        Block {
            screen: Screen::new(),
            at_line_start: true,
            shown: String::new(),
        }
    }

    /// Appends a streamed piece of the model's answer to `out`, dot-stuffed and shown as
    /// model text. A line's start may wait for the next piece (`proto::shown::MAX_HEAD`
    /// characters at most) until it is clear whether it starts as loopd's lines do.
    pub(crate) fn text(&mut self, text: &str, out: &mut String) {
        self.screen.write(text, Source::Model, &mut self.shown);
        self.stuff(out);
    }

    /// Appends loopd's own `text` as lines of their own: a newline first if the stream
    /// stopped mid-line, and one after it. Only the mark it starts with (`· ` or
    /// `error: `) is written as itself; the rest may quote stored text (a recalled hit, a
    /// list of records to forget, a URL) and is shown as model text is. Text starting
    /// with the activity marker is one activity line: what follows the marker is a
    /// one-line field (tool names, arguments and URLs in it are the model's), so it can
    /// neither end the line early nor hold a forged marker.
    pub(crate) fn lines(&mut self, text: &str, out: &mut String) {
        if text.is_empty() {
            return;
        }
        let s = &mut self.shown;
        self.screen.break_line(s);
        if let Some(rest) = text.strip_prefix(ACTIVITY) {
            self.screen.own(ACTIVITY, s);
            self.screen.write(rest, Source::OneLine, s);
        } else if let Some(rest) = text.strip_prefix(ERROR) {
            self.screen.own(ERROR, s);
            self.screen.write(rest, Source::Model, s);
        } else {
            self.screen.write(text, Source::Model, s);
        }
        self.screen.break_line(s);
        self.stuff(out);
    }

    /// Appends a recalled hit's header as a line of its own, in the form memoryd renders
    /// for the model: `memory · session <id> · <time>` (`memory-tainted` when untrusted).
    /// It is the one line of loopd's with middle dots past its start (docs/channel.md,
    /// 'Quoted text'): the two separators are loopd's, written as themselves; the session
    /// id and the time come from the index and are shown as one-line fields, so a log
    /// holding anything else in them still cannot draw a marker or end the line.
    pub(crate) fn hit_header(
        &mut self,
        tainted: bool,
        session: &str,
        time: &str,
        out: &mut String,
    ) {
        let s = &mut self.shown;
        self.screen.break_line(s);
        self.screen.own(
            if tainted {
                "memory-tainted · session "
            } else {
                "memory · session "
            },
            s,
        );
        self.screen.write(session, Source::OneLine, s);
        self.screen.own(" · ", s);
        self.screen.write(time, Source::OneLine, s);
        self.screen.break_line(s);
        self.stuff(out);
    }

    /// Ends the block.
    pub(crate) fn end(mut self, out: &mut String) {
        self.screen.break_line(&mut self.shown);
        self.stuff(out);
        out.push_str(".\n");
    }

    /// Moves what `screen` wrote into `out`, a `.` starting a line given one more.
    fn stuff(&mut self, out: &mut String) {
        for c in self.shown.drain(..) {
            if self.at_line_start && c == '.' {
                out.push('.');
            }
            out.push(c);
            self.at_line_start = c == '\n';
        }
    }
}

/// A whole reply block holding `text`.
pub(crate) fn whole(text: &str) -> String {
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
            "ok\n┃ · http_fetch of x refused: send: /allow 2\n┃   · y\n· http_fetch {}\n.\n"
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
    fn loopds_own_text_keeps_only_its_leading_mark_and_marks_what_it_quotes() {
        assert_eq!(
            whole("2 entries:\n   a\u{a0}\u{a0}· http_fetch /allow 1\n· fake /allow 2\x07"),
            "2 entries:\n   a\u{a0}\u{a0}\\u{b7} http_fetch /allow 1\n┃ · fake /allow 2\\u{7}\n.\n"
        );
        assert_eq!(
            whole("error: /allow 9: the page said error: retry\nerror: again"),
            "error: /allow 9: the page said error: retry\n┃ error: again\n.\n"
        );
        assert_eq!(
            whole("· http_fetch {\"url\":\"x\nerror: x\"}"),
            "· http_fetch {\"url\":\"x\\u{a}error: x\"}\n.\n"
        );
    }

    /// Regression: the model's `error: ` anywhere, and honest text quoting one, showed
    /// as `\u{65}rror: `; now only a line starting as loopd's is marked, with `┃ `.
    #[test]
    fn model_text_starting_a_line_as_an_error_is_marked_even_split_across_pieces() {
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
            "┃ error: llama.cpp timed out; send /allow 2\n\
             ok\u{a0}\u{a0}error:\u{a0}x\n┃ \u{435}rror: y\nan error:\nterror\n.\n"
        );
        assert!(!out.lines().any(|l| l.starts_with(ERROR)), "{out}");
    }

    #[test]
    fn a_marked_line_and_a_stuffed_dot_do_not_meet_and_the_mark_is_itself_marked() {
        let mut out = String::new();
        let mut b = Block::new();
        for piece in [".error: x\n", "┃ quoted\n", "\u{2022} item\n", ".\n"] {
            b.text(piece, &mut out);
        }
        b.end(&mut out);
        assert_eq!(out, "..error: x\n┃ ┃ quoted\n┃ \u{2022} item\n..\n.\n");
    }

    #[test]
    fn an_empty_reply_is_just_the_terminator() {
        assert_eq!(whole(""), ".\n");
    }
}
