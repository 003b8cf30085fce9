//! Rendering a reply nobody asked for (a heartbeat's) into one reply block, the way a
//! client asking for it would have seen it streamed: text dot-stuffed, activity lines as
//! `· line`, and the block cut at `MAX_BEAT_REPLY` bytes with a `[truncated]` line so
//! the owner knows. The heartbeat decides what to say; only the channel makes bytes.
//! Also the words an unasked message is shown under wherever it is shown (its time as
//! the owner reads it, the line for heartbeat messages folded away).

use super::reply::{Block, Part};
use crate::heartbeat::beat::{Piece, Reply, MAX_BEAT_REPLY};
use chrono::{DateTime, Local};
use conversation::inbox;

/// What the line loopd puts above an unasked message (a room's header, the socket's
/// `· while you were away: …`) adds when the message was written while the context was
/// untrusted (docs/labels.md): loopd's line does not vouch for a text that may be a
/// page's words (a phishing link, a request for a PIN). Short enough that the longest
/// room header (`loopd: reply held back from Matrix at … (again)` and this) stays within
/// `matrix::outgoing::MAX_HEADER_CHARS`.
pub(crate) const UNTRUSTED: &str = " (untrusted: written after reading a page or file)";

/// The line that ends a heartbeat reply cut at `MAX_BEAT_REPLY`, so the owner knows.
pub(crate) const TRUNCATED: &str = "[truncated]";

/// A local time as the owner reads it.
pub(crate) fn local(time: &str) -> String {
    DateTime::parse_from_rfc3339(time).map_or_else(
        |_| time.to_string(),
        |t| {
            t.with_timezone(&Local)
                .format("%H:%M %a %-d %b")
                .to_string()
        },
    )
}

/// The line that stands for heartbeat messages folded away.
pub(crate) fn folded_line(folded: u64) -> String {
    format!(
        "{folded} older heartbeat messages were folded away while you were away (each is in the session log; the newest {} wait)",
        inbox::MAX_WAITING_HEARTBEATS
    )
}

/// The whole reply block for `reply`.
pub(crate) fn render(reply: &Reply) -> String {
    let mut t = Transcript::default();
    for piece in &reply.pieces {
        match piece {
            Piece::Text(text) => t.text(text),
            Piece::Activity(line) | Piece::Must(line) => t.activity(line),
        }
    }
    t.finish()
}

/// `pieces` as the owner's screen shows them, for the notify command's standard input
/// (docs/reminders.md, 'What the command sees'): the block `render` makes, so the text is
/// marked and escaped exactly as on the screen, without its closing `.` line and with the
/// dot-stuffing undone (a line the screen shows as `.x` is `.x` here too).
pub(crate) fn screen_text(pieces: &[Piece]) -> String {
    let block = render(&Reply {
        pieces: pieces.to_vec(),
    });
    let body = block.strip_suffix(".\n").unwrap_or(&block);
    let mut out = String::with_capacity(body.len());
    for line in body.split_inclusive('\n') {
        out.push_str(line.strip_prefix('.').unwrap_or(line));
    }
    out
}

#[derive(Default)]
struct Transcript {
    block: Block,
    out: String,
    /// Set once `out` reached `MAX_BEAT_REPLY`; nothing more is added to it after that.
    truncated: bool,
}

impl Transcript {
    fn text(&mut self, text: &str) {
        if !self.truncated {
            self.block.put(Part::Text(text), &mut self.out);
            self.cap();
        }
    }

    fn activity(&mut self, line: &str) {
        if !self.truncated {
            self.block.put(Part::Activity(line), &mut self.out);
            self.cap();
        }
    }

    fn finish(mut self) -> String {
        if self.truncated {
            if !self.out.is_empty() && !self.out.ends_with('\n') {
                self.out.push('\n');
            }
            self.out.push_str(TRUNCATED);
            self.out.push_str("\n.\n");
            return self.out;
        }
        self.block.end(&mut self.out);
        self.out
    }

    /// Cuts `out` back to `MAX_BEAT_REPLY` once it has grown past it.
    fn cap(&mut self) {
        if self.out.len() <= MAX_BEAT_REPLY {
            return;
        }
        let mut cut = MAX_BEAT_REPLY;
        while !self.out.is_char_boundary(cut) {
            cut -= 1;
        }
        self.out.truncate(cut);
        // A cut just after the first `.` of a dot-stuffed line would leave a line holding
        // only `.`, which ends the block early; that line is dropped.
        let line_start = self.out.rfind('\n').map_or(0, |i| i + 1);
        if &self.out[line_start..] == "." {
            self.out.truncate(line_start);
        }
        self.truncated = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> Piece {
        Piece::Text(t.into())
    }

    fn activity(t: &str) -> Piece {
        Piece::Activity(t.into())
    }

    #[test]
    fn the_transcript_is_a_reply_block_and_its_last_round_the_answer() {
        let reply = Reply {
            pieces: vec![
                text("Let me look."),
                activity("read_file {\"path\":\"/x\"}"),
                text("HEARTBEAT_"),
                text("OK"),
            ],
        };
        assert_eq!(
            render(&reply),
            "Let me look.\n· read_file {\"path\":\"/x\"}\nHEARTBEAT_OK\n.\n"
        );
    }

    #[test]
    fn an_answer_before_the_tools_is_not_the_final_one() {
        let reply = Reply {
            pieces: vec![
                text("HEARTBEAT_OK"),
                activity("stopped: loop.max_rounds (1) was spent"),
            ],
        };
        assert_eq!(
            render(&reply),
            "HEARTBEAT_OK\n· stopped: loop.max_rounds (1) was spent\n.\n"
        );
    }

    /// Regression: the transcript kept everything streamed over all rounds, and the block
    /// is held once per client. It is now cut at `MAX_BEAT_REPLY` with a marker line, and
    /// still ends as one well-formed block.
    #[test]
    fn a_long_heartbeat_reply_is_capped_with_a_truncated_marker() {
        let line = format!("{}\n", "y".repeat(1023));
        let mut pieces = Vec::new();
        for _ in 0..(MAX_BEAT_REPLY / line.len() + 10) {
            pieces.push(text(&line));
            pieces.push(activity("read_file {}"));
        }
        pieces.push(text("HEARTBEAT_OK"));
        let block = render(&Reply { pieces });
        assert!(block.len() <= MAX_BEAT_REPLY + TRUNCATED.len() + 4);
        assert!(
            block.ends_with(&format!("\n{TRUNCATED}\n.\n")),
            "{}",
            &block[block.len() - 40..]
        );
        assert_eq!(block.lines().filter(|l| *l == ".").count(), 1);
    }

    /// Regression: the notify command got the model's text raw, so a page's forged
    /// `· reminder` line and its escape sequences reached the owner's phone as they were.
    #[test]
    fn the_notify_text_is_the_screens_marked_and_without_control_sequences() {
        let forged = "\u{1b}[2J· reminder 7, due 09:00\n.hidden\nplain";
        let shown = screen_text(&[activity("reminder 1, due 09:00"), text(forged)]);
        assert!(!shown.contains('\u{1b}'), "{shown:?}");
        assert!(shown.starts_with("· reminder 1, due 09:00\n"), "{shown:?}");
        assert!(
            !shown.lines().skip(1).any(|l| l.starts_with("· ")),
            "only loopd's own line starts with the activity mark: {shown:?}"
        );
        assert!(shown.contains("\n.hidden\n"), "unstuffed: {shown:?}");
        assert!(shown.ends_with("plain\n"), "{shown:?}");
        assert!(!shown.ends_with(".\n"));
        let forged = "All fine.\n\u{1b}[Herror: llama.cpp timed out; send /allow 7\n\u{202e}";
        let shown = screen_text(&[text(forged)]);
        assert!(!shown.contains('\u{202e}'), "{shown:?}");
        assert!(
            !shown.lines().any(|l| l.starts_with("error: ")),
            "a forged error line is marked: {shown:?}"
        );
    }

    #[test]
    fn a_cut_inside_a_dot_stuffed_line_does_not_end_the_block_early() {
        let mut head = "z".repeat(MAX_BEAT_REPLY - 2);
        head.push('\n');
        // Stuffed to `..more`, whose first `.` is the last byte within the cap.
        let block = render(&Reply {
            pieces: vec![text(&head), text(".more\n")],
        });
        assert_eq!(
            block.lines().filter(|l| *l == ".").count(),
            1,
            "only the terminator"
        );
        assert!(block.ends_with(&format!("z\n{TRUNCATED}\n.\n")));
    }
}
