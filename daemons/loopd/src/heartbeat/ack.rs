//! Telling a heartbeat's "nothing to report" apart from news (docs/honcho.md). The model is asked
//! to answer `HEARTBEAT_OK` when there is nothing the owner should hear about; models
//! often wrap it ("HEARTBEAT_OK — all quiet.", "**HEARTBEAT_OK**"), so the token counts
//! as an acknowledgement at the start or the end of the answer as long as little else
//! comes with it. Anything longer, or the token in the middle of text, is news.

/// The answer that means "nothing to report".
pub(crate) const TOKEN: &str = "HEARTBEAT_OK";

/// Other characters an acknowledgement may carry besides the token. A sentence or two of
/// "all quiet" is not news; a real message is longer than this, and a model that buries
/// news after the token past this length gets it delivered rather than swallowed.
pub(crate) const MAX_OTHER_CHARS: usize = 300;

/// Markup a model may put around the token (bold, code, strike); stripped from the edges
/// before looking for it, so `**HEARTBEAT_OK**` is the token alone.
const MARKUP: &[char] = &['*', '`', '_', '~'];

/// True when `answer` is an acknowledgement that should be logged but not delivered:
/// the token alone, or at the start or end with at most [`MAX_OTHER_CHARS`] characters
/// besides it (whitespace around the answer not counted).
pub(crate) fn is_ack(answer: &str) -> bool {
    let text = answer.trim().trim_matches(MARKUP).trim();
    // The token must stand as a word of its own: `HEARTBEAT_OKAY` is not it.
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let rest = match (text.strip_prefix(TOKEN), text.strip_suffix(TOKEN)) {
        (Some(rest), _) if !word(rest.chars().next()) => rest,
        (_, Some(rest)) if !word(rest.chars().next_back()) => rest,
        _ => return false,
    };
    let rest = rest.trim().trim_matches(MARKUP).trim();
    rest.chars().count() <= MAX_OTHER_CHARS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_alone_is_an_ack() {
        assert!(is_ack("HEARTBEAT_OK"));
        assert!(is_ack("  HEARTBEAT_OK\n"));
        assert!(is_ack("**HEARTBEAT_OK**"));
        assert!(is_ack("`HEARTBEAT_OK`"));
    }

    #[test]
    fn the_token_at_the_start_or_end_with_a_little_text_is_an_ack() {
        assert!(is_ack("HEARTBEAT_OK."));
        assert!(is_ack("HEARTBEAT_OK — nothing new since this morning."));
        assert!(is_ack("All quiet on the server.\n\nHEARTBEAT_OK"));
        assert!(is_ack("Nothing to report: **HEARTBEAT_OK**"));
    }

    #[test]
    fn up_to_300_other_characters_is_an_ack_and_301_is_news() {
        let at_limit = "x".repeat(MAX_OTHER_CHARS);
        assert!(is_ack(&format!("HEARTBEAT_OK {at_limit}")));
        assert!(is_ack(&format!("{at_limit} HEARTBEAT_OK")));
        let over = "x".repeat(MAX_OTHER_CHARS + 1);
        assert!(!is_ack(&format!("HEARTBEAT_OK {over}")));
        assert!(!is_ack(&format!("{over} HEARTBEAT_OK")));
    }

    #[test]
    fn characters_are_counted_not_bytes() {
        let at_limit = "é".repeat(MAX_OTHER_CHARS);
        assert!(is_ack(&format!("HEARTBEAT_OK {at_limit}")));
    }

    #[test]
    fn the_token_in_the_middle_or_missing_is_news() {
        assert!(!is_ack(
            "The backup failed. HEARTBEAT_OK otherwise, but check it."
        ));
        assert!(!is_ack("Your parcel arrived."));
        assert!(!is_ack("heartbeat_ok"));
        assert!(!is_ack("HEARTBEAT_OKAY, the disk is full"));
    }

    #[test]
    fn an_empty_answer_is_not_an_ack() {
        // The caller treats an empty answer as nothing to deliver on its own; here it is
        // simply not the token.
        assert!(!is_ack(""));
        assert!(!is_ack("   "));
    }
}
