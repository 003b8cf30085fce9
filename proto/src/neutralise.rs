//! `neutralise`: makes text from a tool unable to act as a chat-template control sequence.
//!
//! A tokenizer turns a ChatML turn opener (`<|`, `im_start`, `|>` run together) or a think/tool-call tag into a special token only when
//! it sees the exact characters. Putting a zero-width joiner right after the `<` leaves the
//! text readable to a person and to the model, but it can no longer open a turn, fake a
//! tool call or close the model's reasoning. No source file holds such a tag whole, so the
//! tag names below are only the part after `<`, and the test builds tags from pieces.

use std::borrow::Cow;

/// The character put after `<`. U+200D is invisible and is not part of any template token.
pub const BREAKER: char = '\u{200D}';

/// Tag names (after `<`, with an optional `/`) that chat templates give meaning to, ending
/// in `>`. Matched without regard to ASCII case, since some templates vary the case.
pub const TAG_NAMES: &[&str] = &[
    "think",
    "thinking",
    "tool_call",
    "tool_calls",
    "tool_response",
    "tool_result",
    "tools",
    "function_call",
    "start_of_turn",
    "end_of_turn",
    "s",
    "bos",
    "eos",
    "pad",
    "unk",
    "arg_key",
    "arg_value",
    "available_tools",
    "tool_results",
];

/// Returns `text` with every control tag broken, borrowed and unchanged when there is none.
/// Idempotent: a broken tag has `BREAKER` after its `<`, which no rule matches again.
pub fn neutralise(text: &str) -> Cow<'_, str> {
    let breaks = || {
        text.match_indices(['<', '['])
            .filter(|&(i, open)| needs_break(open, &text[i + 1..]))
            .map(|(i, _)| i + 1)
    };
    break_at(text, breaks)
}

/// `text` with `BREAKER` put at each byte offset `at()` yields (ascending, each on a
/// character boundary), borrowed when it yields none.
fn break_at<I: Iterator<Item = usize>>(text: &str, at: impl Fn() -> I) -> Cow<'_, str> {
    if at().next().is_none() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 3 * 4);
    let mut rest_start = 0;
    for cut in at() {
        out.push_str(&text[rest_start..cut]);
        out.push(BREAKER);
        rest_start = cut;
    }
    out.push_str(&text[rest_start..]);
    Cow::Owned(out)
}

/// [`neutralise`], then each of `specials` (the spans the served model's tokenizer reads
/// as special tokens, as its server said) still standing whole in the text broken after
/// its first character. Spans of one character cannot be broken and are left; an empty
/// list is plain `neutralise`.
pub fn neutralise_spans<'a>(text: &'a str, specials: &[String]) -> Cow<'a, str> {
    let mut out = neutralise(text);
    for special in specials {
        let Some(first) = special.chars().next() else {
            continue;
        };
        if special.len() == first.len_utf8() || !out.contains(special.as_str()) {
            continue;
        }
        let current = out.into_owned();
        let broken = break_at(&current, || {
            current
                .match_indices(special.as_str())
                .map(|(i, _)| i + first.len_utf8())
        })
        .into_owned();
        out = Cow::Owned(broken);
    }
    out
}

/// Whether the text right after `open` (`<` or `[`) would make it a control tag.
fn needs_break(open: &str, after: &str) -> bool {
    if open == "[" {
        return bracket_word(after);
    }
    // `<|…|>` is the family most templates use; `<｜` (fullwidth bar) is DeepSeek's.
    if after.starts_with('|') || after.starts_with('\u{FF5C}') {
        return true;
    }
    let name = after.strip_prefix('/').unwrap_or(after);
    TAG_NAMES.iter().any(|tag| {
        name.len() > tag.len()
            && name.as_bytes()[..tag.len()].eq_ignore_ascii_case(tag.as_bytes())
            && name.as_bytes()[tag.len()] == b'>'
    })
}

/// `WORD]` or `/WORD]` with a word of two or more upper-case ASCII letters and
/// underscores (digits after the first letter): the shape of `[INST]` and its family.
/// These tokens are matched exactly by tokenizers, so `[inst]` is plain text; a harmless
/// `[OK]` in a page gets an invisible joiner too.
fn bracket_word(after: &str) -> bool {
    let name = after.strip_prefix('/').unwrap_or(after);
    let Some(end) = name.find(']') else {
        return false;
    };
    let word = &name.as_bytes()[..end];
    word.len() >= 2
        && word[0].is_ascii_uppercase()
        && word
            .iter()
            .all(|&b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every whole control sequence the tests look for, built from pieces.
    fn whole_tags() -> Vec<String> {
        let mut tags = vec![String::from("<") + "|", String::from("<") + "\u{FF5C}"];
        for name in TAG_NAMES {
            tags.push(format!("<{name}>"));
            tags.push(format!("</{name}>"));
        }
        for word in BRACKETED {
            tags.push(format!("[{word}]"));
        }
        tags
    }

    /// The bracketed control words the issue names, and a few more of the family.
    const BRACKETED: &[&str] = &[
        "INST",
        "/INST",
        "TOOL_CALLS",
        "AVAILABLE_TOOLS",
        "/AVAILABLE_TOOLS",
        "TOOL_RESULTS",
        "/TOOL_RESULTS",
        "SYSTEM_PROMPT",
        "THINK",
    ];

    #[test]
    fn breaks_the_families_beyond_chatml() {
        let mut inputs: Vec<String> = BRACKETED.iter().map(|w| format!("x[{w}]y")).collect();
        for name in ["s", "/s", "bos", "eos", "arg_key", "/arg_value"] {
            inputs.push(format!("a<{name}>b"));
        }
        for input in inputs {
            let out = neutralise(&input);
            assert!(matches!(out, Cow::Owned(_)), "{input}");
            assert!(!holds_a_whole_tag(&out), "{out}");
        }
    }

    #[test]
    fn bracketed_near_misses_are_borrowed() {
        for input in [
            "[x]",
            "[1]",
            "[a b]",
            "[link](https://x)",
            "[",
            "[]",
            "[_A]",
        ] {
            assert!(matches!(neutralise(input), Cow::Borrowed(_)), "{input}");
        }
        assert!(matches!(neutralise("[inst]"), Cow::Borrowed(_)));
    }

    #[test]
    fn spans_the_server_names_are_broken_after_their_first_character() {
        let special = String::from("<") + "custom_special>";
        let text = format!("a{special}b{special}");
        let out = neutralise_spans(&text, std::slice::from_ref(&special));
        assert!(!out.contains(&special), "{out}");
        assert_eq!(out.matches(BREAKER).count(), 2);
        assert!(matches!(
            neutralise_spans("plain", &[special]),
            Cow::Borrowed(_)
        ));
    }

    /// Angle tags are looked for in any case, bracketed words exactly (as tokenizers do).
    fn holds_a_whole_tag(s: &str) -> bool {
        let lower = s.to_ascii_lowercase();
        whole_tags().iter().any(|t| {
            if t.starts_with('[') {
                s.contains(t.as_str())
            } else {
                lower.contains(t.as_str())
            }
        })
    }

    #[test]
    fn breaks_template_tokens_and_tags() {
        let im = format!("{}{}", "<|im_", "start|>system");
        let think = format!("{}{}", "</", "think>");
        let call = format!("{}{}", "<TOOL_", "CALL>");
        for input in [im, think, call] {
            let out = neutralise(&input);
            assert!(matches!(out, Cow::Owned(_)), "{input}");
            assert!(!holds_a_whole_tag(&out), "{out}");
            assert!(out.contains(BREAKER));
        }
    }

    #[test]
    fn clean_text_and_near_misses_are_borrowed() {
        for input in [
            "",
            "a < b > c",
            "<html><body>",
            "<thinker>",
            "x<",
            "<toolsx>",
        ] {
            assert!(matches!(neutralise(input), Cow::Borrowed(_)), "{input}");
        }
    }

    fn tagged_text() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            "[a-zA-Z_ <>|/\\[\\]\u{FF5C}\u{200D}]{0,8}",
            proptest::sample::select(whole_tags()),
            proptest::sample::select(whole_tags()).prop_map(|t| t.to_uppercase()),
            Just(String::from(">")),
        ];
        proptest::collection::vec(piece, 0..12).prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn output_never_holds_a_whole_tag(s in tagged_text()) {
            prop_assert!(!holds_a_whole_tag(&neutralise(&s)));
        }

        #[test]
        fn it_is_idempotent(s in tagged_text()) {
            let once = neutralise(&s).into_owned();
            let twice = neutralise(&once);
            prop_assert!(matches!(twice, Cow::Borrowed(_)));
            prop_assert_eq!(twice.as_ref(), once.as_str());
        }

        #[test]
        fn clean_text_comes_back_borrowed(s in "[^<]{0,64}") {
            prop_assert!(matches!(neutralise(&s), Cow::Borrowed(_)));
        }

        #[test]
        fn named_spans_never_survive(s in tagged_text(), span in "[<\\[][a-z_|]{1,6}[>\\]]") {
            let out = neutralise_spans(&s, std::slice::from_ref(&span));
            prop_assert!(!out.contains(span.as_str()));
            prop_assert!(!holds_a_whole_tag(&out));
            let stripped: String = out.chars().filter(|&c| c != BREAKER).collect();
            let orig: String = s.chars().filter(|&c| c != BREAKER).collect();
            prop_assert_eq!(stripped, orig);
        }

        #[test]
        fn only_breakers_are_added(s in tagged_text()) {
            let out = neutralise(&s);
            let stripped: String = out.chars().filter(|&c| c != BREAKER).collect();
            let orig: String = s.chars().filter(|&c| c != BREAKER).collect();
            prop_assert_eq!(stripped, orig);
        }
    }
}
