//! Words that carry no meaning in a search (docs/memoryd.md): English, plus the commonest
//! function words of Spanish, Portuguese, French, German and Italian, the languages an
//! owner in Europe or the Americas is likeliest to mix in. A question is matched on what
//! is left, so "what is my wifi password" searches for `wifi` and `password` only.
//!
//! The lists are short on purpose: a word is here only when it means nothing on its own
//! in a personal note. Words that are function words in one language but content in
//! another (English "son", "die", "pan"; Spanish "sin") are left out, since dropping a
//! word the owner meant costs more than keeping one that did not matter.

use super::hashed::{word_hash, Hashed};
use std::collections::HashSet;
use std::sync::OnceLock;

/// English: articles, pronouns, auxiliaries, prepositions, question words, and the verbs
/// people wrap a question in ("do you remember", "can you tell me", "please find").
const ENGLISH: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "done",
    "down",
    "during",
    "each",
    "either",
    "else",
    "ever",
    "every",
    "few",
    "find",
    "for",
    "from",
    "further",
    "get",
    "got",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "know",
    "let",
    "me",
    "mention",
    "mentioned",
    "more",
    "most",
    "much",
    "must",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "please",
    "recall",
    "remember",
    "remind",
    "same",
    "say",
    "said",
    "she",
    "should",
    "so",
    "some",
    "such",
    "tell",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "thing",
    "things",
    "this",
    "those",
    "through",
    "to",
    "too",
    "told",
    "under",
    "until",
    "up",
    "us",
    "very",
    "was",
    "we",
    "were",
    "what",
    "whats",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "whose",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    // The pieces contractions leave behind ("what's", "I'm", "don't").
    "s",
    "m",
    "t",
    "re",
    "ll",
    "ve",
    "d",
    "don",
    "didn",
    "doesn",
    "isn",
    "wasn",
];

const SPANISH: &[&str] = &[
    "el", "la", "los", "las", "un", "una", "unos", "unas", "de", "del", "al", "y", "o", "en",
    "que", "qué", "es", "por", "para", "mi", "mis", "tu", "su", "sus", "lo", "le", "se", "yo",
    "cuando", "cuándo", "donde", "dónde", "cual", "cuál", "como", "cómo", "quien", "quién", "está",
    "esta", "este", "eso", "era", "fue", "muy", "pero",
];

const PORTUGUESE: &[&str] = &[
    "o", "os", "a", "as", "um", "uma", "de", "do", "da", "dos", "das", "e", "em", "no", "na",
    "nos", "nas", "que", "é", "por", "para", "meu", "minha", "meus", "minhas", "seu", "sua", "eu",
    "ele", "ela", "quando", "onde", "qual", "como", "quem", "está", "foi", "com", "não", "mais",
    "se",
];

const FRENCH: &[&str] = &[
    "le", "la", "les", "un", "une", "des", "de", "du", "et", "ou", "en", "au", "aux", "est", "que",
    "qui", "quoi", "quand", "où", "comment", "quel", "quelle", "mon", "ma", "mes", "ton", "ta",
    "tes", "je", "tu", "il", "elle", "nous", "vous", "ils", "pour", "par", "dans", "sur", "avec",
    "pas", "ce", "cette",
];

const GERMAN: &[&str] = &[
    "der", "das", "den", "dem", "des", "ein", "eine", "einen", "einem", "und", "oder", "ist",
    "sind", "war", "wann", "wo", "wer", "wie", "welche", "welcher", "mein", "meine", "meinen",
    "ich", "du", "er", "sie", "es", "wir", "ihr", "mit", "von", "zu", "im", "auf", "für", "nicht",
    "auch",
];

const ITALIAN: &[&str] = &[
    "il", "lo", "gli", "le", "un", "uno", "una", "di", "del", "della", "e", "è", "che", "chi",
    "quando", "dove", "quale", "mio", "mia", "miei", "io", "per", "con", "non",
];

/// The English function words a question's word pieces are matched without (`embed::late`):
/// articles, pronouns, auxiliaries, prepositions, conjunctions and question words only.
/// Shorter than `ENGLISH` on purpose: matched in context, "before", "all", "most" or
/// "remember" say something of what is asked, and dropping them measured worse on LoCoMo
/// (docs/measurements/memoryd.md, 'Late interaction').
const FUNCTION: &[&str] = &[
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "do", "does", "did", "what",
    "when", "where", "who", "whom", "which", "why", "how", "of", "to", "in", "on", "at", "for",
    "with", "and", "or", "but", "i", "you", "he", "she", "it", "we", "they", "my", "your", "his",
    "her", "its", "our", "their", "me", "him", "us", "them", "this", "that", "these", "those",
    "has", "have", "had", "will", "would", "can", "could", "should", "there", "here", "as", "by",
    "from", "about", "into", "than", "then", "so", "not", "no", "if",
];

/// Whether `word` (lower-case) is an English function word (`FUNCTION`).
pub(crate) fn is_function_word(word: &str) -> bool {
    FUNCTION.contains(&word)
}

/// The other languages' lists, each a language a question may be written in.
const OTHERS: [&[&str]; 5] = [SPANISH, PORTUGUESE, FRENCH, GERMAN, ITALIAN];

/// Whether `list` holds `word`, compared without diacritics as the parser folds the query.
fn holds(list: &[&str], word: &str) -> bool {
    list.iter()
        .any(|s| s.chars().map(super::fold).eq(word.chars()))
}

/// Whether `word` (lower-case, as the query parser has it) is a function word of any of
/// the languages, whatever the question around it: for telling how wordy a text is. A
/// set made once: a long record's best passage asks this of each of its 150 words, and
/// a scan of every list per word was a sixth of a recall among pasted documents.
pub(crate) fn is_stop_word(word: &str) -> bool {
    static ALL: OnceLock<HashSet<String>> = OnceLock::new();
    ALL.get_or_init(|| every_stop_word().collect())
        .contains(word)
}

/// `is_stop_word` for a word given by its hash (`hashed::word_hash`): for a text read
/// word by word, whose words are hashed anyway (`insist`).
pub(crate) fn is_stop_hash(hash: u64) -> bool {
    static ALL: OnceLock<HashSet<u64, Hashed>> = OnceLock::new();
    ALL.get_or_init(|| every_stop_word().map(|w| word_hash(&w)).collect())
        .contains(&hash)
}

/// Every language's function words, folded as the query parser folds a word.
fn every_stop_word() -> impl Iterator<Item = String> {
    std::iter::once(ENGLISH)
        .chain(OTHERS)
        .flat_map(|list| list.iter())
        .map(|s| s.chars().map(super::fold).collect())
}

/// Whether `word` carries no meaning in a search in a question whose words are `question`.
/// An English function word never does. A word that is a function word only in another
/// language ("er" is German for "he", and the ER where Sam went) counts as one only when the
/// question holds another function word of that language that English does not have, so
/// "wann war er da" drops `er` and "when was Sam in the ER" keeps it: a stop word of
/// another language must not delete an English question's only content word.
pub(crate) fn is_stop_word_in(word: &str, question: &[String]) -> bool {
    if holds(ENGLISH, word) {
        return true;
    }
    OTHERS.iter().any(|list| {
        holds(list, word)
            && question
                .iter()
                .any(|other| other != word && holds(list, other) && !holds(ENGLISH, other))
    })
}

#[cfg(test)]
mod tests {
    use super::{is_stop_word, is_stop_word_in};

    fn words(q: &str) -> Vec<String> {
        q.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn a_function_word_of_another_language_is_kept_in_an_english_question() {
        let q = words("when was sam in the er");
        assert!(!is_stop_word_in("er", &q));
        assert!(is_stop_word_in("when", &q) && is_stop_word_in("the", &q));
        let q = words("wann war er beim arzt");
        assert!(is_stop_word_in("er", &q));
        let q = words("donde esta mi pasaporte");
        assert!(is_stop_word_in("mi", &q) && !is_stop_word_in("pasaporte", &q));
    }

    #[test]
    fn question_words_are_stop_words_and_content_words_are_not() {
        for w in [
            "what", "is", "my", "the", "please", "quando", "ou", "wann", "fur", "nao",
        ] {
            assert!(is_stop_word(w), "{w}");
        }
        for w in [
            "dentist", "son", "die", "wifi", "password", "lisbon", "2024",
        ] {
            assert!(!is_stop_word(w), "{w}");
        }
    }
}
