//! Exact codes in a question (docs/memoryd.md, 'Exact codes'): an error number, an
//! address, a file name, a version. A hit holding one of them goes first in a recall with
//! vectors, in the merge and in late interaction, whatever meaning says: a code is asked
//! for exactly, and nothing near it in meaning is what was meant.
//!
//! What is *not* a code matters as much, because a pinned hit takes a place from an
//! answer: a plain number of one or two digits (a count, a day of the month), a year
//! where the question names a time ("on 1 February, 2023", "in 2023"; `query::time`),
//! an ordinal ("13th"), an abbreviation ("U.S.", "e.g."), words joined by a hyphen
//! ("self-care"), function words joined ("and/or"). Read as codes, "1" and "2023" pinned every record holding them, and an
//! owner's earlier questions naming the year went above the answer of each later one.

use crate::index::is_question;
use crate::query::{self, time};

/// The characters that make a token a code when they join its parts (`a.rs`,
/// `10.0.0.1`, `me@host`, `x86_64`, `etc/fstab`, `12:30`). A hyphen only with a digit
/// (`ABC-123`): between letters it joins an English compound.
const JOINERS: [char; 5] = ['.', '/', '@', ':', '_'];

/// The words after which a number in `time::YEARS` is a year, as `query::time` reads
/// them ("in 2023", "since 2019", "early 2024").
const BEFORE_A_YEAR: [&str; 13] = [
    "in", "during", "since", "of", "by", "from", "until", "till", "before", "after", "early",
    "late", "mid",
];

/// How a hit stands to the question's codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Pin {
    /// It holds no code of the question.
    None = 0,
    /// It holds one but is only a question: an owner's earlier asking, kept above what
    /// holds no code (the code still matches exactly) and below what says something
    /// about it.
    Asked = 1,
    /// It holds one and says something.
    Holds = 2,
}

/// The codes of one question, lower-cased.
#[derive(Debug, Clone, Default)]
pub(crate) struct Codes(Vec<String>);

impl Codes {
    pub(crate) fn of(question: &str) -> Codes {
        let tokens: Vec<String> = question
            .split_whitespace()
            .map(|t| {
                t.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            })
            .collect();
        Codes(
            tokens
                .iter()
                .enumerate()
                .filter(|(i, t)| is_code(t) && !is_year(&tokens, *i))
                .map(|(_, t)| t.clone())
                .collect(),
        )
    }

    /// How a hit with `text` stands: whether it holds one of the codes as a whole token
    /// (not "4471" inside "44710"), and whether it is only a question.
    pub(crate) fn pin(&self, text: &str) -> Pin {
        if self.0.is_empty() {
            return Pin::None;
        }
        let lower = text.to_lowercase();
        if !self.0.iter().any(|c| holds_whole(&lower, c)) {
            Pin::None
        } else if is_question(text) {
            Pin::Asked
        } else {
            Pin::Holds
        }
    }
}

/// Whether a lower-cased token reads as a code (before the question's time is read).
fn is_code(token: &str) -> bool {
    if token.is_empty() {
        return false;
    }
    let digits = token.chars().filter(char::is_ascii_digit).count();
    if digits == token.len() {
        // A plain number: a count or a day is not a code; a longer number (an order, a
        // port, a ticket) is.
        return digits > 2;
    }
    if digits > 0 {
        let ordinal = ["st", "nd", "rd", "th"].iter().any(|s| {
            token
                .strip_suffix(s)
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        });
        return !ordinal;
    }
    // Letters joined by dots one by one are an abbreviation ("u.s", "e.g", "a.m").
    let abbreviation = token.contains('.') && token.split('.').all(|p| p.chars().count() == 1);
    // Function words joined ("and/or", "he/she") are prose, not a name of anything.
    let prose = token
        .split(JOINERS)
        .all(|p| !p.is_empty() && query::is_stop_word(p));
    token.chars().any(|c| JOINERS.contains(&c)) && !abbreviation && !prose
}

/// Whether token `i` is a year the question names as a time: a number in `time::YEARS`
/// after a month, a month's day ("May 8, 2023") or a word like "in".
fn is_year(tokens: &[String], i: usize) -> bool {
    if !tokens[i]
        .parse::<i32>()
        .is_ok_and(|y| time::YEARS.contains(&y))
    {
        return false;
    }
    let word = |j: Option<usize>| j.and_then(|j| tokens.get(j)).map(String::as_str);
    let before = word(i.checked_sub(1));
    let is_month = |w: Option<&str>| w.and_then(time::month).is_some();
    // "13" or "13th".
    let is_day = |w: Option<&str>| {
        w.map(|w| w.trim_end_matches(|c: char| c.is_ascii_alphabetic()))
            .and_then(|w| w.parse::<u32>().ok())
            .is_some_and(|d| (1..=31).contains(&d))
    };
    is_month(before)
        || (is_day(before) && is_month(word(i.checked_sub(2))))
        || before.is_some_and(|b| BEFORE_A_YEAR.contains(&b))
}

/// Whether `code` occurs in `text` with no letter or digit either side (both lower-cased,
/// so the places found are places in `text`).
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
    fn a_number_in_the_years_is_a_code_unless_the_question_names_it_as_a_time() {
        assert_eq!(codes("why is NFS port 2049 blocked?"), ["2049"]);
        assert_eq!(codes("what does mysql error 2002 mean?"), ["2002"]);
        assert!(codes("what did I do in 2023?").is_empty());
        assert!(codes("what happened in October 2023?").is_empty());
        assert!(codes("what did Jon get on May 23, 2023?").is_empty());
    }

    #[test]
    fn days_years_counts_ordinals_abbreviations_and_compounds_are_not_codes() {
        assert!(codes("What did Gina find for her clothing store on 1 February, 2023?").is_empty());
        assert!(codes("What painting did Melanie show on October 13TH, 2023?").is_empty());
        assert!(codes("How does Melanie prioritize self-care, and her 2 kids?").is_empty());
        assert!(codes("Which parts of the U.S. has John been to, e.g. Texas?").is_empty());
        assert!(codes("Did he/she say the car and/or the bike?").is_empty());
        assert_eq!(
            codes("what is in src/main or on/off.rs"),
            ["src/main", "on/off.rs"]
        );
    }

    #[test]
    fn a_code_is_held_only_as_a_whole_token() {
        let c = Codes::of("ticket 4471?");
        assert_eq!(c.pin("Ticket 4471 is open."), Pin::Holds);
        assert_eq!(c.pin("see #4471"), Pin::Holds);
        assert_eq!(c.pin("ticket 44710 is open"), Pin::None);
        assert_eq!(c.pin("a14471"), Pin::None);
    }

    #[test]
    fn an_earlier_asking_of_a_code_is_pinned_below_what_says_something_about_it() {
        let c = Codes::of("what does E1234 mean?");
        assert_eq!(c.pin("what does E1234 mean?"), Pin::Asked);
        assert_eq!(c.pin("E1234 means the disk is full."), Pin::Holds);
        assert!(Pin::Holds > Pin::Asked && Pin::Asked > Pin::None);
    }
}
