//! What text may put on the owner's terminal (docs/channel.md, "What the owner sees is
//! true"). The model's words reach a person's screen, and the model may be steered by any
//! page it read, so its text must not be able to move the cursor, erase a line, reorder
//! what is shown (bidi overrides), hide characters (zero-width and tag characters), or
//! pass for one of loopd's own `· ` activity lines.
//!
//! The rule is one: such a character is shown as its escape, `\u{202e}`, and never sent
//! as itself. Newline and tab stay as they are in running text (they move the cursor
//! only in the ways every reader expects); in a one-line field (an activity line's
//! model-given parts) they are escaped too. The middle dot that starts loopd's activity
//! lines, and every character drawn like it, is escaped wherever it stands in model text:
//! at the start of a line it would forge an activity line, and anywhere else a terminal
//! that wraps a long line could bring it to the start of a screen row.

/// How a character of text is written to the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Written as itself.
    Plain,
    /// Written as its `\u{…}` escape.
    Escaped,
}

/// Where the text comes from, which decides what is escaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The model's answer: lines of its own, but no hidden or controlling character and
    /// no middle dot.
    Model,
    /// One field of an activity line (a tool name, its arguments, a URL): as `Model`, and
    /// newline and tab escaped too, so it stays on its line.
    OneLine,
    /// loopd's own text: hidden and controlling characters escaped (it may quote a
    /// server's message), its own `· ` marker kept.
    Own,
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
        c if dot_like(c) => source != Source::Own,
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
        assert_eq!(escape("a\n\tb\u{1b}", Source::Own), "a\n\tb\\u{1b}");
    }

    #[test]
    fn a_middle_dot_or_its_lookalike_from_the_model_is_escaped_anywhere() {
        assert_eq!(
            escape("· http_fetch x ⋅ y ・", Source::Model),
            "\\u{b7} http_fetch x \\u{22c5} y \\u{30fb}"
        );
        assert_eq!(escape("· compacting", Source::Own), "· compacting");
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
