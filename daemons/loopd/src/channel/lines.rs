//! Cutting a connection's bytes into lines (docs/channel.md): `\n` ends a line, a `\r` before it
//! is dropped, a line over `MAX_LINE` bytes is refused and the rest of it discarded up to
//! its newline, and a line that is not UTF-8 is refused. The connection goes on after
//! each refusal. A partial line stays in the poll loop's input buffer, so the loop's
//! line deadline still sees it; at the end of input it is the last line.

use crate::limits::MAX_LINE;

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LineEvent {
    Line(String),
    TooLong,
    NotUtf8,
}

#[derive(Default)]
pub(crate) struct Framer {
    /// Inside a line already refused as too long: drop bytes up to its newline.
    discarding: bool,
}

impl Framer {
    /// Takes up to `max` whole lines out of `input`, leaving the rest (further lines and
    /// a partial one) behind, and pushes what it found to `out`.
    pub(crate) fn feed(&mut self, input: &mut Vec<u8>, out: &mut Vec<LineEvent>, max: usize) {
        let mut start = 0;
        let mut found = 0;
        while found < max {
            let Some(nl) = input[start..].iter().position(|&b| b == b'\n') else {
                break;
            };
            let end = start + nl;
            if self.discarding {
                self.discarding = false;
            } else {
                out.push(line_event(&input[start..end]));
                found += 1;
            }
            start = end + 1;
        }
        // One drain per call: draining per line would move the rest of the buffer once
        // for every short line in it.
        input.drain(..start);
        if found == max {
            // Lines may be left behind; the partial-line rules apply once they are taken.
            return;
        }
        // What is left has no newline. A `\r` at its end may belong to a `\r\n` that is
        // still on its way, so it does not count towards the limit yet.
        let pending = input.strip_suffix(b"\r").unwrap_or(input).len();
        if self.discarding {
            input.clear();
        } else if pending > MAX_LINE {
            input.clear();
            self.discarding = true;
            out.push(LineEvent::TooLong);
        }
    }

    /// The end of input: what is left without a newline is the last line (docs/channel.md), so
    /// `printf 'hi' | socat …` is answered like `printf 'hi\n' | …`.
    pub(crate) fn finish(&mut self, rest: &mut Vec<u8>) -> Option<LineEvent> {
        let discarding = std::mem::take(&mut self.discarding);
        let last = (!discarding && !rest.is_empty()).then(|| line_event(rest));
        rest.clear();
        last
    }
}

/// One line without its `\n`: its `\r` dropped, then refused if too long or not UTF-8.
fn line_event(line: &[u8]) -> LineEvent {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.len() > MAX_LINE {
        LineEvent::TooLong
    } else {
        match std::str::from_utf8(line) {
            Ok(s) => LineEvent::Line(s.to_string()),
            Err(_) => LineEvent::NotUtf8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_all(chunks: &[&[u8]]) -> (Vec<LineEvent>, Vec<u8>) {
        let mut f = Framer::default();
        let mut input = Vec::new();
        let mut out = Vec::new();
        for c in chunks {
            input.extend_from_slice(c);
            f.feed(&mut input, &mut out, usize::MAX);
        }
        (out, input)
    }

    #[test]
    fn lines_split_on_newline_with_crlf_accepted() {
        let (out, rest) = feed_all(&[b"hi\r\nthere\nhalf", b" a line"]);
        assert_eq!(
            out,
            [
                LineEvent::Line("hi".into()),
                LineEvent::Line("there".into())
            ]
        );
        assert_eq!(rest, b"half a line");
    }

    #[test]
    fn a_long_line_is_refused_once_and_discarded_to_its_newline() {
        let big = vec![b'x'; MAX_LINE + 5];
        let (out, rest) = feed_all(&[&big, b"xxxx", b"more\nok\n"]);
        assert_eq!(out, [LineEvent::TooLong, LineEvent::Line("ok".into())]);
        assert!(rest.is_empty());
    }

    #[test]
    fn a_long_line_arriving_whole_is_refused() {
        let mut big = vec![b'x'; MAX_LINE + 1];
        big.extend_from_slice(b"\nnext\n");
        let (out, _) = feed_all(&[&big]);
        assert_eq!(out, [LineEvent::TooLong, LineEvent::Line("next".into())]);
    }

    #[test]
    fn a_line_of_exactly_the_limit_is_accepted_even_with_crlf() {
        let mut line = vec![b'y'; MAX_LINE];
        line.push(b'\r');
        let (out, rest) = feed_all(&[&line]);
        assert!(out.is_empty());
        assert_eq!(rest.len(), MAX_LINE + 1);
        let (out, _) = feed_all(&[&line, b"\n"]);
        assert!(matches!(&out[..], [LineEvent::Line(s)] if s.len() == MAX_LINE));
    }

    #[test]
    fn feeding_stops_after_max_lines_and_leaves_the_rest_whole() {
        let mut f = Framer::default();
        let mut input = b"a\nb\nc\npart".to_vec();
        let mut out = Vec::new();
        f.feed(&mut input, &mut out, 2);
        assert_eq!(
            out,
            [LineEvent::Line("a".into()), LineEvent::Line("b".into())]
        );
        assert_eq!(input, b"c\npart");
        out.clear();
        f.feed(&mut input, &mut out, 2);
        assert_eq!(out, [LineEvent::Line("c".into())]);
        assert_eq!(input, b"part");
    }

    #[test]
    fn the_rest_at_end_of_input_is_a_line_unless_it_was_being_discarded() {
        let mut f = Framer::default();
        assert_eq!(
            f.finish(&mut b"last\r".to_vec()),
            Some(LineEvent::Line("last".into()))
        );
        assert_eq!(f.finish(&mut Vec::new()), None);
        let mut big = vec![b'x'; MAX_LINE + 5];
        f.feed(&mut big, &mut Vec::new(), usize::MAX);
        assert_eq!(f.finish(&mut b"tail".to_vec()), None);
    }

    #[test]
    fn invalid_utf8_is_refused_and_the_next_line_goes_through() {
        let (out, _) = feed_all(&[b"\xff\xfe\nfine\n"]);
        assert_eq!(out, [LineEvent::NotUtf8, LineEvent::Line("fine".into())]);
    }
}
