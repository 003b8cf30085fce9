//! What text may put on the owner's terminal (docs/channel.md, "What the owner sees is
//! true"). The model's words reach a person's screen, and the model may be steered by any
//! page it read, so its text must not be able to move the cursor, erase a line, reorder
//! what is shown (bidi overrides), hide characters (zero-width and tag characters), or
//! pass for one of loopd's own lines: a `· ` activity line or an `error: ` line.
//!
//! The rule is one: such a character is shown as its escape, `\u{202e}`, and never sent
//! as itself. Newline and tab stay as they are in running text (they move the cursor
//! only in the ways every reader expects); in a one-line field (an activity line's
//! model-given parts) they are escaped too. The middle dot that starts loopd's activity
//! lines, and every character drawn like it, is escaped wherever it stands; so is the
//! first letter of every `error: ` (and of its lookalikes, `mimic`): at the start of a line
//! either would forge one of loopd's lines, and anywhere else a terminal that wraps a long
//! line could bring it to the start of a screen row. loopd's own text is escaped by the
//! same rule; only the mark that starts it (`· ` or `error: `) is written as itself.

/// How a character of text is written to the terminal.
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
    /// quote stored text): lines of its own, but no hidden or controlling character, no
    /// middle dot and no `error: `.
    Model,
    /// One field of an activity line (a tool name, its arguments, a URL): as `Model`, and
    /// newline and tab escaped too, so it stays on its line.
    OneLine,
}

/// How `c` is written when it comes from `source`, `after` being the character written
/// just before it on the same stream (for the variation-selector rule below).
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

/// The middle dot of loopd's activity marker, and the characters a terminal draws like
/// it: a small dot at mid-height (Greek ano teleia, hyphenation point, bullet and dot
/// operators, the katakana middle dots, runic and other word-separator dots).
pub fn dot_like(c: char) -> bool {
    matches!(
        c,
        '\u{b7}'
            | '\u{387}'
            | '\u{1427}'
            | '\u{16eb}'
            | '\u{2027}'
            | '\u{2219}'
            | '\u{22c5}'
            | '\u{2981}'
            | '\u{2e31}'
            | '\u{2e33}'
            | '\u{30fb}'
            | '\u{a78f}'
            | '\u{ff65}'
            | '\u{10101}'
    )
}

/// What starts loopd's error lines, as `mimic` reads it: `error:` and then a space.
const ERROR_MARK: [char; 7] = ['e', 'r', 'r', 'o', 'r', ':', ' '];

/// How far `held` (characters of text not yet written, in order) goes towards the start of
/// loopd's `error: ` mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mimic {
    /// `held` is the whole mark: its first character is written as its escape.
    Whole,
    /// `held` could still become the mark: wait for the next character.
    Partial,
    /// `held` cannot become the mark: its first character is written as `kind` says.
    No,
}

/// Whether `held` spells `error: `, letter by letter or in characters drawn like its
/// letters (`lookalike`), with any space after the colon.
pub fn mimic(held: &[char]) -> Mimic {
    let fits = held
        .iter()
        .zip(ERROR_MARK)
        .all(|(&c, want)| lookalike(c) == want);
    match (fits, held.len() >= ERROR_MARK.len()) {
        (false, _) => Mimic::No,
        (true, true) => Mimic::Whole,
        (true, false) => Mimic::Partial,
    }
}

/// The character of `error: ` that `c` is drawn like, or `c` itself: Cyrillic, Greek,
/// Armenian and fullwidth letters, the mathematical alphabets, colon-like marks, and every
/// space (a no-break or em space after the colon draws as the space loopd writes).
fn lookalike(c: char) -> char {
    if c.is_whitespace() && c != '\n' {
        return ' ';
    }
    let code = c as u32;
    // Fullwidth ASCII (U+FF01–FF5E) is ASCII drawn wide.
    if (0xff01..=0xff5e).contains(&code) {
        return char::from_u32(code - 0xfee0).unwrap_or(c);
    }
    // The mathematical alphabets (bold, italic, script, fraktur, double-struck, sans,
    // monospace): thirteen runs of 52 letters, capitals then small letters.
    if (0x1d400..=0x1d6a3).contains(&code) {
        let at = (code - 0x1d400) % 52;
        return match at {
            0..=25 => char::from(b'A' + at as u8),
            _ => char::from(b'a' + (at - 26) as u8),
        };
    }
    match c {
        '\u{435}' | '\u{4bd}' | '\u{212e}' | '\u{212f}' | '\u{1d07}' | '\u{ab32}' => 'e',
        '\u{433}' | '\u{1d26}' | '\u{2c85}' | '\u{ab47}' | '\u{ab48}' | '\u{1d63}' => 'r',
        '\u{43e}' | '\u{3bf}' | '\u{585}' | '\u{1d0f}' | '\u{1d11}' | '\u{2134}' | '\u{2c9f}'
        | '\u{ab3d}' => 'o',
        '\u{2d0}' | '\u{2f8}' | '\u{589}' | '\u{5c3}' | '\u{703}' | '\u{704}' | '\u{16ec}'
        | '\u{1804}' | '\u{1809}' | '\u{205a}' | '\u{2236}' | '\u{a4fd}' | '\u{a789}'
        | '\u{fe13}' | '\u{fe55}' | '\u{fe30}' => ':',
        c => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` with every character `source` may not write as itself escaped.
    fn escape(text: &str, source: Source) -> String {
        let mut out = String::new();
        let mut after = '\n';
        for c in text.chars() {
            push(c, kind(c, after, source), &mut out);
            after = c;
        }
        out
    }

    #[test]
    fn terminal_controls_are_shown_as_escapes() {
        assert_eq!(
            escape("a\u{1b}[1A\u{1b}[2Kb\0c\rd\u{9b}2J", Source::Model),
            "a\\u{1b}[1A\\u{1b}[2Kb\\u{0}c\\u{d}d\\u{9b}2J"
        );
    }

    #[test]
    fn bidi_overrides_and_zero_width_characters_are_shown_as_escapes() {
        assert_eq!(
            escape(
                "Tea\u{200b}\u{200c}\u{202e}x\u{2066}\u{feff}\u{e0041}",
                Source::Model
            ),
            "Tea\\u{200b}\\u{200c}\\u{202e}x\\u{2066}\\u{feff}\\u{e0041}"
        );
    }

    #[test]
    fn newline_and_tab_stay_in_running_text_but_not_in_a_one_line_field() {
        assert_eq!(escape("a\n\tb", Source::Model), "a\n\tb");
        assert_eq!(escape("a\n\tb", Source::OneLine), "a\\u{a}\\u{9}b");
    }

    #[test]
    fn a_middle_dot_or_its_lookalike_from_the_model_is_escaped_anywhere() {
        assert_eq!(
            escape("· http_fetch x ⋅ y ・", Source::Model),
            "\\u{b7} http_fetch x \\u{22c5} y \\u{30fb}"
        );
    }

    #[test]
    fn error_and_its_lookalikes_are_the_mark_and_nothing_shorter_or_different_is() {
        let chars = |s: &str| s.chars().collect::<Vec<char>>();
        for forged in [
            "error: ",
            "error:\u{a0}",
            "\u{435}rr\u{43e}r: ",
            "ｅｒｒｏｒ：\u{3000}",
            "\u{1d41e}rror\u{2236} ",
        ] {
            assert_eq!(mimic(&chars(forged)), Mimic::Whole, "{forged:?}");
        }
        assert_eq!(mimic(&chars("err")), Mimic::Partial);
        assert_eq!(mimic(&chars("error:")), Mimic::Partial);
        for other in ["Error: ", "errors", "error:x", "error:\n", "terror"] {
            assert_eq!(mimic(&chars(other)), Mimic::No, "{other:?}");
        }
    }

    #[test]
    fn emoji_presentation_is_kept_only_after_a_visible_non_ascii_character() {
        assert_eq!(escape("❤\u{fe0f}", Source::Model), "❤\u{fe0f}");
        assert_eq!(escape("a\u{fe0f}", Source::Model), "a\\u{fe0f}");
        assert_eq!(
            escape("❤\u{fe0f}\u{fe0f}", Source::Model),
            "❤\u{fe0f}\\u{fe0f}"
        );
    }

    #[test]
    fn ordinary_text_is_unchanged() {
        let text = "Grüße, 東京 — «ok» • item 😊 → done.";
        assert_eq!(escape(text, Source::Model), text);
    }
}
