//! Recall hits rendered as text for a person or the model, each line of a hit's text kept
//! inside it (docs/memoryd.md, 'Recall').

use super::Hit;
use crate::neutralise::neutralise;

/// Renders hits for the model (memory in the turn, the `recall` tool): a header line per
/// hit, then who said what. Every further line of a hit's text is indented by two
/// spaces, so nothing inside a hit (a forged header, a forged `the owner said:`) can
/// start a line of its own (docs/memoryd.md, 'Recall'). Untrusted text is neutralised
/// again here, since the model reads this output. A header's fields are one line each
/// (`shown::one_line`): they come from a log on disk, and a `time` edited to hold a line
/// break would otherwise start a line of the hit's own making.
pub fn render_hits(hits: &[Hit]) -> String {
    render(hits, crate::shown::one_line, |body| body)
}

/// The same hits for a person at a terminal (`memoryd recall`). A hit may hold a page's
/// words, and a terminal obeys what the model's tokenizer ignores: a backspace or a
/// cursor move before an indented line would undo its indent on screen and draw a
/// forged header. So the header's fields are shown as one line and each hit's text as
/// the owner is shown the model's (`shown`: control characters escaped, a line starting
/// as one of loopd's would marked), as loopd's `/recall` does.
pub fn render_hits_for_person(hits: &[Hit]) -> String {
    render(hits, crate::shown::one_line, |body| {
        crate::shown::text(&body)
    })
}

/// `render_hits` with each header field passed through `field` and each hit's body
/// (`the owner said: …` and its indented lines) through `body`.
fn render(hits: &[Hit], field: impl Fn(&str) -> String, body: impl Fn(String) -> String) -> String {
    let mut out = String::new();
    for (i, hit) in hits.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let tag = if hit.label.untrusted {
            "memory-tainted"
        } else {
            "memory"
        };
        let who = if hit.role == "owner" {
            "the owner said"
        } else {
            "the assistant said"
        };
        let text = if hit.label.untrusted {
            neutralise(&hit.text)
        } else {
            std::borrow::Cow::Borrowed(hit.text.as_str())
        };
        out.push_str(&format!(
            "{tag} · session {} · {}\n",
            field(&hit.session),
            field(&hit.time)
        ));
        let mut said = format!("{who}: ");
        push_indented(&mut said, &text);
        said.push('\n');
        out.push_str(&body(said));
    }
    out
}

/// Characters that end a line on a terminal or for a tokenizer's notion of lines: each
/// starts a new, indented line of the hit, so none can begin an unindented one.
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// `text` onto `out`, each line after the first on a line of its own indented by two
/// spaces; `\r\n` is one break. loopd's `/recall` uses it too, so a hit's lines break
/// where they break for the model.
pub fn push_indented(out: &mut String, text: &str) {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if is_line_break(c) {
            if c == '\r' && chars.peek() == Some(&'\n') {
                chars.next();
            }
            out.push_str("\n  ");
        } else {
            out.push(c);
        }
    }
}
