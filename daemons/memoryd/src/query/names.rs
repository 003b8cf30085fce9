//! The names in a question: words written with a capital that are not there only because
//! a sentence starts with them ("What did Caroline paint?" names Caroline; "Where" does
//! not). A record about the person or place named should rank above an equally close
//! record about someone else: meaning alone does not tell Caroline from Melanie, and a
//! question's other words are usually shared by both.

use super::{fold, is_stop_word};

/// Names kept from one question: a question names one or two people or places; more
/// capitalised words are a title or shouting, not names.
pub(crate) const MAX_NAMES: usize = 4;

/// The lower-cased names in `text`, in order, without repeats.
pub fn names(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut sentence_start = true;
    for raw in text.split_whitespace() {
        let word: String = raw
            .trim_matches(|c: char| !c.is_alphanumeric())
            .trim_end_matches("'s")
            .trim_end_matches("’s")
            .to_string();
        let capital = word.chars().next().is_some_and(char::is_uppercase)
            && word.chars().skip(1).any(char::is_lowercase)
            && word.chars().all(char::is_alphabetic);
        let lower: String = word.to_lowercase().chars().map(fold).collect();
        // A question word or a request opening a sentence has its capital from there.
        let opener = sentence_start
            && (QUESTION_WORDS.contains(&lower.as_str()) || OPENERS.contains(&lower.as_str()));
        // Months and days are times (`query::time`), not who or where.
        let time = super::time::MONTHS.iter().any(|m| {
            lower == *m || (lower.len() >= 3 && m.starts_with(lower.as_str()) && lower.len() == 3)
        }) || DAYS.contains(&lower.as_str());
        if capital && !opener && !time && !is_stop_word(&lower) && !out.contains(&lower) {
            out.push(lower);
        }
        sentence_start = raw.ends_with(['.', '?', '!', ':']);
        if out.len() >= MAX_NAMES {
            break;
        }
    }
    out
}

/// Words that open a question and are not stop words.
const QUESTION_WORDS: &[&str] = &[
    "what", "when", "where", "who", "why", "how", "which", "whose", "did", "does", "do", "is",
    "are", "was", "were", "has", "have", "can", "could", "would", "should", "will",
];

/// Imperatives and the like that open a request with a capital.
const OPENERS: &[&str] = &[
    "tell",
    "remind",
    "find",
    "show",
    "list",
    "give",
    "please",
    "remember",
    "recall",
    "search",
    "look",
    "any",
    "anything",
    "name",
    "describe",
    "according",
    "based",
    "considering",
    "given",
    "besides",
    "apart",
    "aside",
    "other",
    "after",
    "before",
    "since",
    "during",
    "in",
    "on",
    "at",
    "for",
    "from",
    "with",
    "about",
    "between",
    "would",
    "might",
    "may",
    "besides",
];

const DAYS: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// Whether `text` holds any of `names` as a word.
pub(crate) fn holds_any(text: &str, names: &[String]) -> bool {
    if names.is_empty() {
        return true;
    }
    super::words(text).iter().any(|w| {
        let w = w.trim_end_matches('s');
        names.iter().any(|n| n == w || n.trim_end_matches('s') == w)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capital_inside_the_question_is_a_name_and_the_opening_question_word_is_not() {
        assert_eq!(names("What did Caroline paint?"), vec!["caroline"]);
        assert_eq!(
            names("When did Melanie's kids visit Paris?"),
            vec!["melanie", "paris"]
        );
        assert_eq!(names("Caroline went where?"), vec!["caroline"]);
        assert!(names("what is my wifi password").is_empty());
        assert!(names("Tell me the wifi password. Where is the router?").is_empty());
    }

    #[test]
    fn a_text_holds_a_name_in_any_case_and_with_a_possessive() {
        let n = vec!["caroline".to_string()];
        assert!(holds_any("caroline's painting", &n));
        assert!(holds_any("Caroline: I painted", &n));
        assert!(!holds_any("Melanie: I painted", &n));
    }
}
