//! The plain fallback for HTML that html2text cannot take: the text between the tags,
//! from html5ever's tokenizer alone, one pass and linear in the input.
//!
//! html5ever's tree builder is quadratic in nesting depth (servo/html5ever#788: every
//! block start tag scans the stack of open elements), and html2text's layout refuses
//! indentation deeper than the wrap width. A page that hits either still has text worth
//! reading; this gives it without building a tree. Scripts and styles are dropped,
//! block elements start new lines, and runs of whitespace become one space.

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use std::cell::{Cell, RefCell};

/// Elements whose content is not text for a reader.
const HIDDEN: &[&str] = &[
    "script", "style", "template", "noembed", "noframes", "iframe",
];

/// Elements that start a new line, so words from two blocks never run together.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "caption",
    "dd",
    "div",
    "dl",
    "dt",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "td",
    "th",
    "title",
    "tr",
    "ul",
];

/// The text of `html`, tags removed.
pub fn text(html: &str) -> String {
    let sink = Sink::default();
    let tokenizer = Tokenizer::new(sink, TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(html));
    // The sink never asks to run a script, so feeding ends only when the input does.
    let _ = tokenizer.feed(&input);
    tokenizer.end();
    let out = tokenizer.sink.out.take();
    out.trim().to_string()
}

#[derive(Default)]
struct Sink {
    out: RefCell<String>,
    /// Depth inside hidden elements; text counts only at zero.
    hidden: Cell<usize>,
    /// Whitespace was seen since the last word: the next word on this line gets a space.
    space: Cell<bool>,
}

impl Sink {
    fn newline(&self) {
        let mut out = self.out.borrow_mut();
        self.space.set(false);
        // Blocks are separated by one blank line, never more.
        if !out.is_empty() && !out.ends_with("\n\n") {
            out.push('\n');
        }
    }

    fn push_text(&self, text: &str) {
        let mut out = self.out.borrow_mut();
        if text.starts_with(char::is_whitespace) {
            self.space.set(true);
        }
        for (i, word) in text.split_whitespace().enumerate() {
            let line_start = out.is_empty() || out.ends_with('\n');
            if (i > 0 || self.space.get()) && !line_start {
                out.push(' ');
            }
            out.push_str(word);
            self.space.set(false);
        }
        if text.ends_with(char::is_whitespace) {
            self.space.set(true);
        }
    }
}

impl TokenSink for Sink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        match token {
            Token::TagToken(tag) => {
                let name: &str = &tag.name;
                let start = tag.kind == TagKind::StartTag;
                if HIDDEN.contains(&name) && !tag.self_closing {
                    let h = self.hidden.get();
                    self.hidden
                        .set(if start { h + 1 } else { h.saturating_sub(1) });
                }
                if BLOCKS.contains(&name) {
                    self.newline();
                }
                // The tree builder would switch the tokenizer into these states; without
                // one, this sink does, so `if (a<b)` in a script is not read as a tag.
                if start {
                    return match name {
                        "script" => TokenSinkResult::RawData(RawKind::ScriptData),
                        "style" | "xmp" | "iframe" | "noembed" | "noframes" => {
                            TokenSinkResult::RawData(RawKind::Rawtext)
                        }
                        "title" | "textarea" => TokenSinkResult::RawData(RawKind::Rcdata),
                        "plaintext" => TokenSinkResult::Plaintext,
                        _ => TokenSinkResult::Continue,
                    };
                }
            }
            Token::CharacterTokens(t) if self.hidden.get() == 0 => self.push_text(&t),
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_scripts_and_styles_are_dropped_and_entities_decoded() {
        let page = "<html><head><title>T</title><style>p { x: 1 }</style></head><body>\
                    <script>if (a<b) { document.write('<p>no</p>') }</script>\
                    <h1>Head</h1><p>one &amp; <b>two</b>\n   three</p><div>four</div></body>";
        assert_eq!(text(page), "T\n\nHead\n\none & two three\n\nfour");
    }

    #[test]
    fn blocks_separate_words() {
        assert_eq!(text("<li>a</li><li>b</li>"), "a\n\nb");
        assert_eq!(text("x<br>y"), "x\ny");
        assert_eq!(text("in<i>line</i> words"), "inline words");
    }

    #[test]
    fn deep_nesting_is_linear() {
        let depth = 200_000;
        let page = format!(
            "{}deep text{}",
            "<div>".repeat(depth),
            "</div>".repeat(depth)
        );
        assert_eq!(text(&page), "deep text");
    }
}
