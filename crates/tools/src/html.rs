//! Turning a fetched body into text the model reads: HTML is reduced to plain text with
//! `html2text`, anything else must already be UTF-8 text.
//!
//! A hostile page can make html5ever's tree builder (which html2text uses) run for hours:
//! it is quadratic in nesting depth (servo/html5ever#788). So the document is parsed
//! here, a piece at a time, within [`PARSE_BUDGET`]; a page that does not parse in time,
//! or that html2text cannot lay out, is reduced by the linear [`super::strip`] instead.

use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::TreeBuilderOpts;
use html5ever::ParseOpts;
use std::fmt;
use std::time::{Duration, Instant};

/// Columns html2text wraps paragraphs at. The model does not need short lines, so the
/// wrap is wide enough to keep most sentences whole; it also caps indentation (nested
/// lists and quotes), past which the page goes to the fallback.
pub const WRAP_WIDTH: usize = 120;

/// Time the HTML parse may take. An ordinary 2 MB page parses in well under a second;
/// only pathological nesting takes longer, and that page then goes to the linear
/// fallback, so this bounds the CPU a fetched page can cost besides `timeout_s`.
pub const PARSE_BUDGET: Duration = Duration::from_secs(2);

/// Bytes fed to the parser between looks at the clock. At the deepest nesting the budget
/// allows, one piece costs a small fraction of the budget, so the overrun stays small.
const PARSE_PIECE: usize = 4096;

/// How far into a body without a `Content-Type` we look for an HTML start tag. A doctype
/// or `<html>` comes first in any real page, after at most a byte-order mark and space.
const SNIFF_BYTES: usize = 512;

#[derive(Debug, Clone, PartialEq)]
pub enum BodyError {
    /// The body is not UTF-8; `content_type` is what the server said it was.
    NotUtf8 { content_type: String },
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyError::NotUtf8 { content_type } => {
                write!(
                    f,
                    "the body is not UTF-8 text (content-type {content_type})"
                )
            }
        }
    }
}

/// Whether the body is HTML: by its content type when the server sent one, else by a
/// look at its first bytes.
pub fn is_html(content_type: Option<&str>, body: &[u8]) -> bool {
    match content_type {
        Some(ct) => {
            let mime = ct.split(';').next().unwrap_or("").trim();
            mime.eq_ignore_ascii_case("text/html")
                || mime.eq_ignore_ascii_case("application/xhtml+xml")
        }
        None => {
            let head = &body[..body.len().min(SNIFF_BYTES)];
            let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
            let start = head.iter().position(|b| !b.is_ascii_whitespace());
            let head = start.map_or(&[][..], |i| &head[i..]);
            starts_with_ignore_case(head, b"<!doctype html")
                || starts_with_ignore_case(head, b"<html")
        }
    }
}

fn starts_with_ignore_case(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// The body as text. `cut` says the body was cut at the size limit, so an incomplete
/// UTF-8 sequence at its very end is dropped rather than refused.
pub fn body_text(content_type: Option<&str>, body: &[u8], cut: bool) -> Result<String, BodyError> {
    let text = utf8(body, cut).ok_or_else(|| BodyError::NotUtf8 {
        content_type: content_type.unwrap_or("unknown").to_string(),
    })?;
    if is_html(content_type, body) {
        Ok(to_text(text))
    } else {
        Ok(text.to_string())
    }
}

fn utf8(body: &[u8], cut: bool) -> Option<&str> {
    match std::str::from_utf8(body) {
        Ok(s) => Some(s),
        // error_len() is None only when the input ends inside a sequence.
        Err(e) if cut && e.error_len().is_none() => {
            std::str::from_utf8(&body[..e.valid_up_to()]).ok()
        }
        Err(_) => None,
    }
}

/// Reduces an HTML document to plain text: headings, paragraphs and list items as lines,
/// table cells one per line, link targets as numbered footnotes so the model can follow
/// them. Never fails: what html2text cannot take goes to the plain fallback.
pub fn to_text(html: &str) -> String {
    to_text_within(html, PARSE_BUDGET)
}

fn to_text_within(html: &str, budget: Duration) -> String {
    let Some(dom) = parse_within(html, budget) else {
        return super::strip::text(html);
    };
    // Raw mode lists table cells instead of laying out a grid: no padding, no width
    // negotiation, and nothing a hostile `colspan` can inflate. Without width overflow,
    // indentation deeper than the wrap width is an error (and goes to the fallback)
    // rather than output that grows with depth times lines.
    let cfg = html2text::config::plain_no_decorate()
        .raw_mode(true)
        .link_footnotes(true);
    cfg.dom_to_render_tree(&dom)
        .and_then(|tree| cfg.render_to_string(tree, WRAP_WIDTH))
        .unwrap_or_else(|_| super::strip::text(html))
}

/// The parsed document, or `None` when parsing would take longer than `budget`.
fn parse_within(html: &str, budget: Duration) -> Option<html2text::RcDom> {
    let opts = ParseOpts {
        tree_builder: TreeBuilderOpts {
            // As html2text parses: with scripting off, `<noscript>` content is text.
            scripting_enabled: false,
            ..TreeBuilderOpts::default()
        },
        ..ParseOpts::default()
    };
    let mut parser = html5ever::parse_document(html2text::RcDom::default(), opts);
    let stop = Instant::now() + budget;
    let mut rest = html;
    while !rest.is_empty() {
        let mut end = rest.len().min(PARSE_PIECE);
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (piece, after) = rest.split_at(end);
        parser.process(StrTendril::from_slice(piece));
        rest = after;
        if !rest.is_empty() && Instant::now() >= stop {
            return None;
        }
    }
    Some(parser.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_reduced_to_text_without_tags_scripts_or_styles() {
        let page = "<!DOCTYPE html><html><head><title>T</title><style>p{color:red}</style>\
                    <script>alert('x')</script></head><body><h1>Weather</h1>\
                    <p>Sunny &amp; <b>warm</b>.</p><ul><li>one</li><li>two</li></ul>\
                    <a href=\"https://example.org/next\">next</a></body></html>";
        let text = body_text(Some("text/html; charset=utf-8"), page.as_bytes(), false).unwrap();
        assert!(text.contains("Weather"), "{text}");
        assert!(text.contains("Sunny & warm."), "{text}");
        assert!(text.contains("* one\n* two"), "{text}");
        assert!(text.contains("[1]: https://example.org/next"), "{text}");
        for gone in ["<p>", "<b>", "color:red", "alert("] {
            assert!(!text.contains(gone), "{gone} left in {text}");
        }
    }

    #[test]
    fn a_body_without_content_type_is_sniffed() {
        assert!(is_html(None, b"\xef\xbb\xbf  <!doctype HTML><p>x"));
        assert!(is_html(None, b"\n<HTML><body>x"));
        assert!(!is_html(None, b"plain <html> later"));
        assert!(!is_html(Some("text/plain"), b"<html>"));
        assert!(is_html(Some("Application/XHTML+XML"), b""));
    }

    #[test]
    fn plain_text_is_kept_as_is() {
        let text = body_text(Some("text/plain"), b"a <b> c\n", false).unwrap();
        assert_eq!(text, "a <b> c\n");
    }

    #[test]
    fn binary_bodies_are_refused_naming_the_content_type() {
        let e = body_text(Some("image/png"), b"\x89PNG\r\n\x1a\n\xff\xfe", false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the body is not UTF-8 text (content-type image/png)"
        );
    }

    #[test]
    fn a_cut_inside_a_character_drops_the_partial_character() {
        let body = "añ".as_bytes();
        assert_eq!(
            body_text(Some("text/plain"), &body[..2], true).unwrap(),
            "a"
        );
        assert!(body_text(Some("text/plain"), &body[..2], false).is_err());
    }

    /// Guards against servo/html5ever#788: 100 000 nested divs would parse for many
    /// minutes. A short budget makes the test quick; the text still comes out, whole.
    #[test]
    fn deeply_nested_html_goes_to_the_fallback_and_keeps_all_its_text() {
        let depth = 100_000;
        let page = format!(
            "{}deep{}<p>after</p>",
            "<div>".repeat(depth),
            "</div>".repeat(depth)
        );
        let text = to_text_within(&page, Duration::from_millis(100));
        assert_eq!(text, "deep\n\nafter");
    }

    #[test]
    fn indentation_deeper_than_the_wrap_width_goes_to_the_fallback() {
        let page = format!("{}quoted", "<blockquote>".repeat(200));
        assert_eq!(to_text(&page), "quoted");
    }

    #[test]
    fn tables_are_listed_cell_by_cell() {
        let page = "<table><tr><td>a</td><td colspan=100000>b</td></tr></table>";
        let text = to_text(page);
        assert!(text.contains('a') && text.contains('b'), "{text}");
        assert!(text.len() < 100, "{text}");
    }
}
