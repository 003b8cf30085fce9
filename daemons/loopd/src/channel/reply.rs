//! Reply blocks (docs/channel.md): the reply text, lines that start with `.` given one
//! more `.` (as in SMTP), then a line holding only `.`. A `Block` dot-stuffs text as it
//! streams in, piece by piece, remembering whether the next byte starts a line.
//!
//! A block is made of `Part`s, each of a kind (the model's text, an activity line, an
//! error, loopd's words, a memory header) that the block keeps as a type until it writes
//! it: the mark a kind starts with is written by the block, never read back out of text.
//! A Matrix room's block also remembers each line's kind (`Kinds`), which is how the room
//! tells loopd's lines from the model's (docs/matrix.md, 'Replies out').
//!
//! Every byte of a block passes through here, and what it may show is decided by the rule
//! every output of loopd's shares (`proto::shown`, docs/channel.md, 'What the owner sees
//! is true'): no text can move the cursor or hide characters, a line of text that starts
//! as loopd's own is shown after `┃ `, and no character drawn as the activity marker's
//! dot stands past a line's start. loopd's own lines start with their mark (`· ` or
//! `error: `) written as itself, and an activity line is always exactly one line,
//! whatever its model-given parts hold.

use proto::shown::{Screen, Source};

/// What starts each of loopd's activity lines: only `Block::put` writes it as itself.
pub(crate) use proto::shown::ACTIVITY;

/// What starts a reply that failed (docs/channel.md): only `Block::put` writes it as
/// itself, and only at the start of loopd's own text.
pub(crate) use proto::shown::ERROR;

/// One part of a reply block, by kind.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Part<'a> {
    /// A streamed piece of the model's answer, or stored text quoted as the model's is
    /// (a recalled hit): shown as model text, a line's start held until it is clear
    /// whether it starts as loopd's lines do (`proto::shown::MAX_HEAD` characters at most).
    Text(&'a str),
    /// An activity line: `· `, then a one-line field (tool names, arguments and URLs in it
    /// are the model's), so it can neither end the line early nor hold a forged marker.
    Activity(&'a str),
    /// A failure: `error: `, then what went wrong, shown as model text is (it may quote
    /// a page or a server's words).
    Error(&'a str),
    /// loopd's own words (a command's answer, a job's last text): lines of their own,
    /// shown as model text is, since they may quote stored text (a list of records to
    /// forget, a URL, a reminder's text).
    Said(&'a str),
    /// A recalled hit's header, in the form memoryd renders for the model:
    /// `memory · session <id> · <time>` (`memory-tainted` when untrusted).
    HitHeader {
        tainted: bool,
        session: &'a str,
        time: &'a str,
    },
}

/// What kind of part a written line began in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineKind {
    /// The model's text (its lines that start as loopd's are shown after `┃ `).
    Model,
    /// loopd's words without a mark: `Part::Said`, and an error's lines after its first.
    Said,
    /// An activity line, `· ` first.
    Activity,
    /// An error's first line, `error: ` first.
    Error,
    /// A recalled hit's header.
    HitHeader,
}

/// Each line a block wrote, by kind, in order: runs of lines of one kind.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Kinds(Vec<(LineKind, usize)>);

impl Kinds {
    fn push(&mut self, kind: LineKind) {
        match self.0.last_mut() {
            Some((last, n)) if *last == kind => *n += 1,
            _ => self.0.push((kind, 1)),
        }
    }

    /// The kind of each line, in order.
    pub(crate) fn lines(&self) -> impl Iterator<Item = LineKind> + '_ {
        self.0
            .iter()
            .flat_map(|&(kind, n)| std::iter::repeat_n(kind, n))
    }
}

pub(crate) struct Block {
    /// What may be shown, and how: line starts held and judged, characters escaped.
    screen: Screen,
    /// Whether the next byte of the block starts a line, for dot-stuffing.
    at_line_start: bool,
    /// What `screen` wrote for the current call, before it is dot-stuffed into `out`.
    shown: String,
    /// Each written line's kind, for a block kept with them (`Block::with_kinds`). One
    /// entry per change of kind, and a change needs a line of loopd's own, one per event
    /// of the job: the entries grow with those, never with the model's text.
    kinds: Option<Kinds>,
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
            kinds: None,
        }
    }

    /// A block that remembers each line's kind, given back by `end`.
    pub(crate) fn with_kinds() -> Block {
        Block {
            kinds: Some(Kinds::default()),
            ..Block::new()
        }
    }

    /// Appends `part` to `out`, dot-stuffed. Each of loopd's own parts starts a line of
    /// its own (a newline first if the stream stopped mid-line) and ends its line; only
    /// the mark its kind starts with is written as itself, what follows is shown as
    /// model text is (one-line for an activity line and a header's fields).
    pub(crate) fn put(&mut self, part: Part<'_>, out: &mut String) {
        if let Part::Text(text) = part {
            self.screen.write(text, Source::Model, &mut self.shown);
            return self.stuff(LineKind::Model, LineKind::Model, out);
        }
        // A model line's start held back is the model's, ended here.
        self.screen.break_line(&mut self.shown);
        self.stuff(LineKind::Model, LineKind::Model, out);
        let s = &mut self.shown;
        let (first, rest) = match part {
            Part::Text(_) => return,
            Part::Said("") => return,
            Part::Activity(line) => {
                self.screen.own(ACTIVITY, s);
                self.screen.write(line, Source::OneLine, s);
                (LineKind::Activity, LineKind::Activity)
            }
            Part::Error(why) => {
                self.screen.own(ERROR, s);
                self.screen.write(why, Source::Model, s);
                (LineKind::Error, LineKind::Said)
            }
            Part::Said(text) => {
                self.screen.write(text, Source::Model, s);
                (LineKind::Said, LineKind::Said)
            }
            // It is the one line of loopd's with middle dots past its start
            // (docs/channel.md, 'Quoted text'): the two separators are loopd's, written as
            // themselves; the session id and the time come from the index and are shown as
            // one-line fields, so a log holding anything else in them still cannot draw a
            // marker or end the line.
            Part::HitHeader {
                tainted,
                session,
                time,
            } => {
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
                (LineKind::HitHeader, LineKind::HitHeader)
            }
        };
        self.screen.break_line(s);
        self.stuff(first, rest, out);
    }

    /// Ends the block; a block kept with its lines' kinds gives them back.
    pub(crate) fn end(mut self, out: &mut String) -> Option<Kinds> {
        self.screen.break_line(&mut self.shown);
        self.stuff(LineKind::Model, LineKind::Model, out);
        out.push_str(".\n");
        self.kinds
    }

    /// Moves what `screen` wrote into `out`, a `.` starting a line given one more; the
    /// first line it starts is of kind `first`, any after it of kind `rest`.
    fn stuff(&mut self, first: LineKind, rest: LineKind, out: &mut String) {
        let mut kind = first;
        for c in self.shown.drain(..) {
            if self.at_line_start {
                if let Some(kinds) = &mut self.kinds {
                    kinds.push(kind);
                    kind = rest;
                }
                if c == '.' {
                    out.push('.');
                }
            }
            out.push(c);
            self.at_line_start = c == '\n';
        }
    }
}

/// A whole reply block holding loopd's words `text`.
pub(crate) fn whole(text: &str) -> String {
    whole_part(Part::Said(text))
}

/// A whole reply block holding one failure: `error: ` and `why`.
pub(crate) fn failed(why: impl std::fmt::Display) -> String {
    whole_part(Part::Error(&why.to_string()))
}

fn whole_part(part: Part<'_>) -> String {
    let mut out = String::new();
    let mut block = Block::new();
    block.put(part, &mut out);
    block.end(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A whole block holding one activity line.
    fn activity_block(line: &str) -> String {
        whole_part(Part::Activity(line))
    }

    #[test]
    fn a_hit_header_keeps_its_two_separators_and_escapes_whatever_else_its_fields_hold() {
        let mut out = String::new();
        let mut b = Block::new();
        b.put(Part::Text("partial"), &mut out);
        b.put(
            Part::HitHeader {
                tainted: false,
                session: "main",
                time: "2026-11-30T06:00:00.000Z",
            },
            &mut out,
        );
        b.put(
            Part::HitHeader {
                tainted: true,
                session: "x\n· y",
                time: "t\u{1b}",
            },
            &mut out,
        );
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
            b.put(Part::Text(piece), &mut out);
        }
        b.end(&mut out);
        assert_eq!(out, "a\n..b c.\n..d\n.\n");
    }

    #[test]
    fn lines_start_on_a_fresh_line() {
        let mut out = String::new();
        let mut b = Block::new();
        b.put(Part::Text("thinking"), &mut out);
        b.put(Part::Activity("read_file {}"), &mut out);
        b.put(Part::Text("done"), &mut out);
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
            b.put(Part::Text(piece), &mut out);
        }
        b.put(Part::Activity("http_fetch {}"), &mut out);
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
        b.put(Part::Text("\u{1b}[1A\u{1b}"), &mut out);
        b.put(Part::Text("[2K\0\u{202e}evil\r"), &mut out);
        b.end(&mut out);
        assert_eq!(out, "\\u{1b}[1A\\u{1b}[2K\\u{0}\\u{202e}evil\\u{d}\n.\n");
    }

    #[test]
    fn an_activity_line_is_one_line_whatever_its_fields_hold() {
        assert_eq!(
            activity_block("read_file {\"path\":\"a\n· http_fetch of y /allow 3\u{1b}[2K\"}"),
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
            failed("/allow 9: the page said error: retry\nerror: again"),
            "error: /allow 9: the page said error: retry\n┃ error: again\n.\n"
        );
        assert_eq!(
            activity_block("http_fetch {\"url\":\"x\nerror: x\"}"),
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
            b.put(Part::Text(piece), &mut out);
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
            b.put(Part::Text(piece), &mut out);
        }
        b.end(&mut out);
        assert_eq!(out, "..error: x\n┃ ┃ quoted\n┃ \u{2022} item\n..\n.\n");
    }

    #[test]
    fn an_empty_reply_is_just_the_terminator() {
        assert_eq!(whole(""), ".\n");
    }

    /// loopd's words are typed as such, so words that start as one of loopd's marks (a
    /// quoted record, a reminder's text) are shown as the model's would be, never as an
    /// activity or error line of loopd's.
    #[test]
    fn loopds_words_that_start_as_a_mark_are_marked_not_taken_for_the_mark() {
        assert_eq!(
            whole("· read_file /etc/shadow\nerror: x"),
            "┃ · read_file /etc/shadow\n┃ error: x\n.\n"
        );
    }

    #[test]
    fn a_block_kept_with_kinds_knows_each_lines_kind_across_held_line_starts() {
        let mut out = String::new();
        let mut b = Block::with_kinds();
        b.put(Part::Activity("waiting"), &mut out);
        // A line start held back by the screen (it may yet read as a mark) is the
        // model's when an activity line ends it.
        b.put(Part::Text("ok\n   e"), &mut out);
        b.put(Part::Activity("read_file {}"), &mut out);
        b.put(Part::Text("\u{b7} forged\n.dot\n"), &mut out);
        b.put(
            Part::HitHeader {
                tainted: false,
                session: "main",
                time: "t",
            },
            &mut out,
        );
        b.put(Part::Error("failed\nsecond line"), &mut out);
        b.put(Part::Said(""), &mut out);
        let kinds = b.end(&mut out).unwrap();
        assert_eq!(
            out,
            "· waiting\nok\n   e\n· read_file {}\n┃ \u{b7} forged\n..dot\n\
             memory · session main · t\nerror: failed\nsecond line\n.\n"
        );
        use LineKind::*;
        assert_eq!(
            kinds.lines().collect::<Vec<_>>(),
            [Activity, Model, Model, Activity, Model, Model, HitHeader, Error, Said]
        );
        assert_eq!(Block::new().end(&mut String::new()), None);
    }
}
