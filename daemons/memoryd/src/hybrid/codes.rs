//! Exact codes in a question (docs/memoryd.md, 'Exact codes'): an error number, an
//! address, a file name, a version. A hit holding one of them goes first in a recall with
//! vectors, in the merge and in late interaction, whatever meaning says: a code is asked
//! for exactly, and nothing near it in meaning is what was meant.
//!
//! What is *not* a code matters as much, because a pinned hit takes a place from an
//! answer: a plain number of one or two digits (a count, a day of the month), a year, an
//! ordinal ("13th"), or a compound of words ("self-care"). "What did Gina find on 1
//! February, 2023?" names a time (`query::time`), and the records holding "1" or "2023"
//! are not its answer; an owner who asked about 2023 before would otherwise have that
//! question pinned above the answer of every later question naming the year.

use crate::index::is_question;

/// The characters that make a token a code when they join its parts (`a.rs`,
/// `10.0.0.1`, `me@host`, `x86_64`, `/etc/fstab`, `12:30`). A hyphen only with a digit
/// (`ABC-123`): between letters it joins an English compound.
const JOINERS: [char; 5] = ['.', '/', '@', ':', '_'];

/// The years a bare four-digit number is taken for: as `query::time` reads "in 2023".
const YEARS: std::ops::RangeInclusive<u32> = 1900..=2200;

/// The codes of one question, lower-cased.
#[derive(Debug, Clone, Default)]
pub(crate) struct Codes(Vec<String>);

impl Codes {
    pub(crate) fn of(question: &str) -> Codes {
        Codes(
            question
                .split_whitespace()
                .map(|t| t.trim_matches(|c: char| !c.is_alphanumeric()))
                .filter(|t| is_code(t))
                .map(str::to_lowercase)
                .collect(),
        )
    }

    /// Whether a hit with `text` goes first: it holds one of the codes as a whole token
    /// (not "13" inside "2013"), and it is not only a question (asking for a code again
    /// does not say what it is).
    pub(crate) fn pin(&self, text: &str) -> bool {
        if self.0.is_empty() || is_question(text) {
            return false;
        }
        let text = text.to_lowercase();
        self.0.iter().any(|c| holds_whole(&text, c))
    }
}

fn is_code(token: &str) -> bool {
    let digits = token.chars().filter(char::is_ascii_digit).count();
    if digits == token.len() {
        // A plain number: a count, a day or a year is not a code; a longer number
        // (an order, a port, a ticket) is.
        let year = token.parse::<u32>().is_ok_and(|y| YEARS.contains(&y));
        return digits > 2 && !year;
    }
    if digits > 0 {
        let ordinal = ["st", "nd", "rd", "th"].iter().any(|s| {
            token
                .strip_suffix(s)
                .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
        });
        return !ordinal;
    }
    token.chars().any(|c| JOINERS.contains(&c))
}

/// Whether `code` occurs in `text` with no letter or digit either side.
fn holds_whole(text: &str, code: &str) -> bool {
    text.match_indices(code).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + code.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(q: &str) -> Vec<String> {
        Codes::of(q).0
    }

    #[test]
    fn codes_addresses_file_names_and_long_numbers_are_codes() {
        assert_eq!(
            codes("what did E1234 say about 10.0.0.1, main.rs, me@host and ticket 4471?"),
            ["e1234", "10.0.0.1", "main.rs", "me@host", "4471"]
        );
        assert_eq!(
            codes("is ABC-123 on x86_64 at 12:30?"),
            ["abc-123", "x86_64", "12:30"]
        );
    }

    #[test]
    fn days_years_counts_ordinals_and_compounds_are_not_codes() {
        assert!(codes("What did Gina find for her clothing store on 1 February, 2023?").is_empty());
        assert!(codes("What painting did Melanie show on October 13th, 2023?").is_empty());
        assert!(codes("How does Melanie prioritize self-care, and her 2 kids?").is_empty());
    }

    #[test]
    fn a_code_is_held_only_as_a_whole_token() {
        let c = Codes::of("ticket 4471?");
        assert!(c.pin("Ticket 4471 is open."));
        assert!(c.pin("see #4471"));
        assert!(!c.pin("ticket 44710 is open"));
        assert!(!c.pin("a14471"));
    }

    #[test]
    fn an_earlier_asking_of_a_code_is_not_pinned() {
        let c = Codes::of("what does E1234 mean?");
        assert!(!c.pin("what does E1234 mean?"));
        assert!(c.pin("E1234 means the disk is full."));
    }
}
