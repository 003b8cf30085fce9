//! Turning free text into an FTS5 query that cannot be a syntax error: each
//! whitespace-separated token becomes a quoted string (a phrase), inner quotes doubled,
//! and the phrases are joined by spaces, which FTS5 reads as AND. Operators such as
//! `NEAR(`, `*`, `OR` or `-` inside a token are then just text.

/// Tokens kept from one query. A question is a handful of words; a longer input is pasted
/// text, and thousands of phrases would only make one recall slow for the same answer.
pub const MAX_QUERY_TOKENS: usize = 64;

/// The FTS5 expression for `text`, or `None` when nothing in it can match (an empty
/// query, or only punctuation, which the tokenizer drops): that is no hits, not an error.
pub fn fts_query(text: &str) -> Option<String> {
    let mut out = String::new();
    for token in text
        .split_whitespace()
        // A token with no letter or digit tokenizes to nothing, and an empty phrase is
        // not something a person meant to search for.
        .filter(|t| t.chars().any(char::is_alphanumeric))
        .take(MAX_QUERY_TOKENS)
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push('"');
        out.push_str(&token.replace('"', "\"\""));
        out.push('"');
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_token_is_quoted() {
        assert_eq!(
            fts_query("tea at four").as_deref(),
            Some(r#""tea" "at" "four""#)
        );
        assert_eq!(
            fts_query(r#"say "hi""#).as_deref(),
            Some(r#""say" """hi""""#)
        );
        assert_eq!(
            fts_query("NEAR( multi-agent").as_deref(),
            Some(r#""NEAR(" "multi-agent""#)
        );
    }

    #[test]
    fn nothing_searchable_is_no_query() {
        for q in ["", "   ", "\"", "*", "( ) - \" *"] {
            assert_eq!(fts_query(q), None, "{q:?}");
        }
    }

    #[test]
    fn long_input_is_cut_to_the_token_limit() {
        let q = fts_query(&"word ".repeat(10_000)).unwrap();
        assert_eq!(q.matches("\"word\"").count(), MAX_QUERY_TOKENS);
    }
}
