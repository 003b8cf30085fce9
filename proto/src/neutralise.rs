//! `neutralise`: makes text from a tool unable to act as a chat-template control sequence.
//!
//! A tokenizer turns `<|im_start|>` or a think/tool-call tag into a special token only when
//! it sees the exact characters. Putting a zero-width joiner right after the `<` leaves the
//! text readable to a person and to the model, but it can no longer open a turn, fake a
//! tool call or close the model's reasoning. No source file holds such a tag whole, so the
//! tag names below are only the part after `<`, and the test builds tags from pieces.

use std::borrow::Cow;

/// The character put after `<`. U+200D is invisible and is not part of any template token.
pub const BREAKER: char = '\u{200D}';

/// Tag names (after `<`, with an optional `/`) that chat templates give meaning to, ending
/// in `>`. Matched without regard to ASCII case, since some templates vary the case.
const TAG_NAMES: &[&str] = &[
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
];

/// Returns `text` with every control tag broken, borrowed and unchanged when there is none.
/// Idempotent: a broken tag has `BREAKER` after its `<`, which no rule matches again.
pub fn neutralise(text: &str) -> Cow<'_, str> {
    let Some(first) = text
        .match_indices('<')
        .map(|(i, _)| i)
        .find(|&i| needs_break(&text[i + 1..]))
    else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 3 * 4);
    out.push_str(&text[..=first]);
    out.push(BREAKER);
    let mut rest_start = first + 1;
    for (at, _) in text.match_indices('<').filter(|&(i, _)| i > first) {
        if needs_break(&text[at + 1..]) {
            out.push_str(&text[rest_start..=at]);
            out.push(BREAKER);
            rest_start = at + 1;
        }
    }
    out.push_str(&text[rest_start..]);
    Cow::Owned(out)
}

/// Whether the text right after a `<` would make it a control tag.
fn needs_break(after: &str) -> bool {
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
        tags
    }

    fn holds_a_whole_tag(s: &str) -> bool {
        let lower = s.to_ascii_lowercase();
        whole_tags().iter().any(|t| lower.contains(t.as_str()))
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
            "[a-z <>|/\u{FF5C}\u{200D}]{0,8}",
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
        fn only_breakers_are_added(s in tagged_text()) {
            let out = neutralise(&s);
            let stripped: String = out.chars().filter(|&c| c != BREAKER).collect();
            let orig: String = s.chars().filter(|&c| c != BREAKER).collect();
            prop_assert_eq!(stripped, orig);
        }
    }
}
