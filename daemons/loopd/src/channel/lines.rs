//! Cutting a connection's bytes into lines (SPEC §5): `\n` ends a line, a `\r` before it
//! is dropped, a line over `MAX_LINE` bytes is refused and the rest of it discarded up to
//! its newline, and a line that is not UTF-8 is refused. The connection goes on after
//! each refusal. A partial line stays in the poll loop's input buffer, so the loop's
//! partial-line timeout still sees it.

use crate::MAX_LINE;

#[derive(Debug, PartialEq, Eq)]
pub enum LineEvent {
    Line(String),
    TooLong,
    NotUtf8,
}

#[derive(Default)]
pub struct Framer {
    /// Inside a line already refused as too long: drop bytes up to its newline.
    discarding: bool,
}

impl Framer {
    /// Takes every whole line out of `input`, leaving a partial one behind, and pushes
    /// what it found to `out`.
    pub fn feed(&mut self, input: &mut Vec<u8>, out: &mut Vec<LineEvent>) {
        let mut start = 0;
        while let Some(nl) = input[start..].iter().position(|&b| b == b'\n') {
            let end = start + nl;
            if self.discarding {
                self.discarding = false;
            } else {
                let line = &input[start..end];
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                out.push(if line.len() > MAX_LINE {
                    LineEvent::TooLong
                } else {
                    match std::str::from_utf8(line) {
                        Ok(s) => LineEvent::Line(s.to_string()),
                        Err(_) => LineEvent::NotUtf8,
                    }
                });
            }
            start = end + 1;
        }
        input.drain(..start);
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
            f.feed(&mut input, &mut out);
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
    fn invalid_utf8_is_refused_and_the_next_line_goes_through() {
        let (out, _) = feed_all(&[b"\xff\xfe\nfine\n"]);
        assert_eq!(out, [LineEvent::NotUtf8, LineEvent::Line("fine".into())]);
    }
}
