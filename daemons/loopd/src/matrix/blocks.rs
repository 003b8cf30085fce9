//! A room's reply blocks, read back from the bytes the channel renders for it
//! (docs/matrix.md, 'Out'). A room is served by the same code as a socket connection, so
//! its replies are rendered as the socket's are: marked by `proto::shown`, dot-stuffed,
//! ended by a lone `.`. Here a block's lines are split into what is loopd's (activity,
//! errors, memory headers, and the whole answer to a command), sent as `m.notice`, and
//! what is the model's, sent as `m.text`. Whose a line of a turn's block is comes with
//! it from the block that wrote it (the channel's), never from its first characters; the
//! marking keeps the two views alike: a line of the model's never starts as loopd's lines
//! do (it is shown after `┃ `).

use proto::shown::ACTIVITY;

/// The most bytes of one block held while it is not yet whole: a reply's text is bounded
/// by the model's output and a command's answer by its page, both far below this; past
/// it the block is cut with a line saying so, so a runaway reply cannot hold memory.
pub(crate) const MAX_BLOCK_BYTES: usize = 4 * 1024 * 1024;

/// Whose a block is, known when its line was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Whose {
    /// A turn's reply: the model's text with loopd's lines among it.
    Turn,
    /// A command's answer, or a refusal: loopd's words only.
    Loopd,
}

/// One event's worth of a block, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    /// The model's text: `m.text`, plain body.
    Text(String),
    /// loopd's own lines: `m.notice`.
    Notice(String),
}

/// A block read back whole: its lines, un-stuffed, and whether it was cut at
/// `MAX_BLOCK_BYTES` (its last line then says so, and is loopd's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Read {
    pub(crate) lines: Vec<String>,
    pub(crate) cut: bool,
}

/// Collects a room's rendered bytes and gives back each block once it is whole.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    partial: Vec<u8>,
    /// The current block's lines, un-stuffed.
    lines: Vec<String>,
    held: usize,
    cut: bool,
}

impl Reader {
    /// Feeds rendered bytes; returns the blocks they finished.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<Read> {
        self.partial.extend_from_slice(bytes);
        let mut done = Vec::new();
        while let Some(nl) = self.partial.iter().position(|&b| b == b'\n') {
            let raw: Vec<u8> = self.partial.drain(..=nl).collect();
            let line = String::from_utf8_lossy(&raw[..raw.len() - 1]).into_owned();
            if line == "." {
                self.held = 0;
                done.push(Read {
                    lines: std::mem::take(&mut self.lines),
                    cut: std::mem::take(&mut self.cut),
                });
                continue;
            }
            if self.cut {
                continue;
            }
            let line = match line.strip_prefix('.') {
                Some(rest) => rest.to_string(),
                None => line,
            };
            self.held += line.len() + 1;
            if self.held > MAX_BLOCK_BYTES {
                self.cut = true;
                self.lines
                    .push(format!("{ACTIVITY}[reply cut at {MAX_BLOCK_BYTES} bytes]"));
                continue;
            }
            self.lines.push(line);
        }
        done
    }
}

/// A block's lines as events: for a turn, each run of the model's lines one `Text`, each
/// run of loopd's (`loopds(i)` of line `i`) one `Notice`; a command's whole answer one
/// `Notice`. Blank lines stay with the run they are in; a run of nothing but blank lines
/// is dropped.
///
/// A command's answer may quote stored text (a `/recall` hit, an `/inbox` message, a
/// `/forget` list's entry), which the block marked as the socket's lines are marked. In a
/// room loopd's own notices also start `loopd: …`, a header no command's answer starts a
/// line with, so a quoted line that reads as it is marked too (`marked_reply`), as it is
/// in a turn's text.
pub(crate) fn pieces(whose: Whose, lines: &[String], loopds: impl Fn(usize) -> bool) -> Vec<Piece> {
    if whose == Whose::Loopd {
        let text = lines.join("\n");
        return match text.trim().is_empty() {
            true => Vec::new(),
            false => vec![Piece::Notice(::matrix::outgoing::marked_reply(
                text.trim_end(),
            ))],
        };
    }
    let mut out: Vec<Piece> = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    let mut run_loopds = false;
    let flush = |run: &mut Vec<&str>, loopds: bool, out: &mut Vec<Piece>| {
        let text = run.join("\n");
        run.clear();
        let text = text.trim_matches('\n');
        if text.trim().is_empty() {
            return;
        }
        out.push(match loopds {
            true => Piece::Notice(text.to_string()),
            false => Piece::Text(text.to_string()),
        });
    };
    for (i, line) in lines.iter().enumerate() {
        let mine = loopds(i);
        if mine != run_loopds && !line.trim().is_empty() {
            flush(&mut run, run_loopds, &mut out);
            run_loopds = mine;
        }
        run.push(line);
    }
    flush(&mut run, run_loopds, &mut out);
    // Every owner message gets one reply: a turn whose answer was blank (the socket's
    // block is then blank lines, or nothing) says so rather than leave the room with
    // only a typing notice that came and went.
    if out.is_empty() {
        out.push(Piece::Notice(format!("{ACTIVITY}{EMPTY_ANSWER}")));
    }
    out
}

/// The line each event after the first of a notice too long for one opens with: a
/// command's answer may quote stored text, and every notice must open with loopd's own
/// words, never with quoted text alone (docs/matrix.md, 'Replies out').
pub(crate) const CONTINUED: &str = "loopd: continued from the notice above";

/// loopd's line for a turn whose answer held nothing to show.
pub(crate) const EMPTY_ANSWER: &str = "the model's answer was empty";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_read_back_whole_and_unstuffed_across_pieces() {
        let mut r = Reader::default();
        assert!(r.feed(b"hel").is_empty());
        let blocks = r.feed(b"lo\n..dots\n.\nnext\n.\n");
        let lines: Vec<&[String]> = blocks.iter().map(|b| &b.lines[..]).collect();
        assert_eq!(
            lines,
            [
                &["hello".to_string(), ".dots".to_string()][..],
                &["next".to_string()][..]
            ]
        );
        assert!(blocks.iter().all(|b| !b.cut));
    }

    #[test]
    fn a_turn_splits_into_the_models_text_and_loopds_notices_in_order() {
        let lines: Vec<String> = [
            "· read_file /etc/hosts",
            "Here it is:",
            "",
            "┃ · not a real activity line",
            "┃ error: neither is this",
            "· done in 1.2 s",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Whose each line is, as the block that wrote it knew.
        let loopds = [true, false, false, false, false, true];
        assert_eq!(
            pieces(Whose::Turn, &lines, |i| loopds[i]),
            vec![
                Piece::Notice("· read_file /etc/hosts".into()),
                Piece::Text(
                    "Here it is:\n\n┃ · not a real activity line\n┃ error: neither is this".into()
                ),
                Piece::Notice("· done in 1.2 s".into()),
            ]
        );
    }

    #[test]
    fn a_commands_answer_is_one_notice_whatever_its_lines_look_like() {
        let lines = vec!["session main".to_string(), "· x".to_string()];
        assert_eq!(
            pieces(Whose::Loopd, &lines, |_| true),
            vec![Piece::Notice("session main\n· x".into())]
        );
        assert!(pieces(Whose::Loopd, &[String::new()], |_| true).is_empty());
    }

    /// Regression: a turn whose answer was blank sent the room nothing (typing came and
    /// went), though every owner message gets one reply; a command with nothing to say
    /// (`/quit`) still sends nothing.
    #[test]
    fn a_blank_answer_is_said_in_a_notice() {
        let blank = vec![String::new(), "   ".to_string()];
        assert_eq!(
            pieces(Whose::Turn, &blank, |_| false),
            vec![Piece::Notice(format!("{ACTIVITY}{EMPTY_ANSWER}"))]
        );
        assert_eq!(
            pieces(Whose::Turn, &[], |_| false),
            vec![Piece::Notice(format!("{ACTIVITY}{EMPTY_ANSWER}"))]
        );
    }

    #[test]
    fn a_runaway_block_is_cut_with_a_line_saying_so() {
        let mut r = Reader::default();
        let line = vec![b'x'; 1024 * 1024];
        for _ in 0..5 {
            r.feed(&line);
            r.feed(b"\n");
        }
        let blocks = r.feed(b".\n");
        assert_eq!(blocks.len(), 1);
        // Three lines fit under the bound; the fourth passes it and is the cut's line.
        assert_eq!(blocks[0].lines.len(), 4);
        assert!(blocks[0].cut);
        assert!(
            blocks[0].lines[3].starts_with("· [reply cut"),
            "{:?}",
            &blocks[0].lines[3][..20]
        );
    }
}
