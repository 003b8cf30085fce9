//! Reply blocks (SPEC §5): the reply text, lines that start with `.` given one more `.`
//! (as in SMTP), then a line holding only `.`. A `Block` dot-stuffs text as it streams
//! in, piece by piece, remembering whether the next byte starts a line.

pub struct Block {
    at_line_start: bool,
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
        }
    }

    /// Appends streamed `text` to `out`, dot-stuffed.
    pub fn text(&mut self, text: &str, out: &mut String) {
        for piece in text.split_inclusive('\n') {
            if self.at_line_start && piece.starts_with('.') {
                out.push('.');
            }
            out.push_str(piece);
            self.at_line_start = piece.ends_with('\n');
        }
    }

    /// Appends `text` as lines of their own: a newline first if the stream stopped
    /// mid-line, and one after it.
    pub fn lines(&mut self, text: &str, out: &mut String) {
        if text.is_empty() {
            return;
        }
        self.break_line(out);
        self.text(text, out);
        self.break_line(out);
    }

    /// Ends the block.
    pub fn end(mut self, out: &mut String) {
        self.break_line(out);
        out.push_str(".\n");
    }

    fn break_line(&mut self, out: &mut String) {
        if !self.at_line_start {
            out.push('\n');
            self.at_line_start = true;
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
    fn an_empty_reply_is_just_the_terminator() {
        assert_eq!(whole(""), ".\n");
    }
}
