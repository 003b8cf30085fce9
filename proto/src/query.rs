//! What a `/forget` query matches (docs/forgetting.md, 'What a query matches'): its words
//! and quoted phrases, each as a whole word of the text, in any case, all of them. The
//! one rule for the box's own records and for what Honcho holds, so the list the owner
//! reads and what is deleted in Honcho never differ: `/forget cat` finds "a cat named
//! Tom", not "education", "Caterina" or "locate".

/// A parsed query: the terms a text must hold, each lower-cased.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    terms: Vec<Vec<char>>,
}

impl Query {
    /// `text`'s terms: each phrase in double quotes (its quotes dropped) and each word
    /// outside them (split at white space). An unclosed quote runs to the end.
    pub fn parse(text: &str) -> Query {
        let mut terms = Vec::new();
        for (i, part) in text.split('"').enumerate() {
            if i % 2 == 1 {
                terms.push(part.trim().to_string());
            } else {
                terms.extend(part.split_whitespace().map(str::to_string));
            }
        }
        Query {
            terms: terms
                .iter()
                .filter(|t| !t.is_empty())
                .map(|t| t.chars().flat_map(char::to_lowercase).collect())
                .collect(),
        }
    }

    /// Whether `text` holds every term as a whole word (or words), in any case. An empty
    /// query matches nothing.
    pub fn matches(&self, text: &str) -> bool {
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        !self.terms.is_empty()
            && self
                .terms
                .iter()
                .all(|t| next_match(&chars, text.len(), t, 0).is_some())
    }

    /// Where each term occurs in `text`, as byte ranges, in order.
    pub fn spans(&self, text: &str) -> Vec<(usize, usize)> {
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        let mut out = Vec::new();
        for t in &self.terms {
            let mut from = 0;
            while let Some((start, end, next)) = next_match(&chars, text.len(), t, from) {
                out.push((chars[start].0, end));
                from = next.max(start + 1);
            }
        }
        out.sort_unstable();
        out
    }

    /// The byte where the first occurrence of any term starts.
    pub fn first(&self, text: &str) -> Option<usize> {
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        self.terms
            .iter()
            .filter_map(|t| next_match(&chars, text.len(), t, 0).map(|(s, _, _)| chars[s].0))
            .min()
    }
}

/// A character that makes up words: a term's end must not be next to one.
fn wordy(c: char) -> bool {
    c.is_alphanumeric()
}

/// The first occurrence of `term` (lower-cased) among `chars` (a text's characters with
/// their byte offsets; `len` its length in bytes) from character `from` on, that is a
/// whole word: not preceded by a word character when the term starts with one, not
/// followed by one when it ends with one. Its first character, the byte after it, and
/// the character after it.
fn next_match(
    chars: &[(usize, char)],
    len: usize,
    term: &[char],
    from: usize,
) -> Option<(usize, usize, usize)> {
    let (&first, &last) = (term.first()?, term.last()?);
    for i in from..chars.len() {
        if wordy(first) && i > 0 && wordy(chars[i - 1].1) {
            continue;
        }
        let Some(next) = match_at(chars, i, term) else {
            continue;
        };
        if wordy(last) && chars.get(next).is_some_and(|(_, c)| wordy(*c)) {
            continue;
        }
        let end = chars.get(next).map_or(len, |(b, _)| *b);
        return Some((i, end, next));
    }
    None
}

/// Whether `term` starts at character `i`, each character compared lower-cased; the
/// index of the character after the match when it does. A term that ends inside one
/// character's lower-case form is not a match.
fn match_at(chars: &[(usize, char)], i: usize, term: &[char]) -> Option<usize> {
    let mut t = 0;
    let mut k = i;
    while t < term.len() {
        let (_, c) = *chars.get(k)?;
        for l in c.to_lowercase() {
            if term.get(t) != Some(&l) {
                return None;
            }
            t += 1;
        }
        k += 1;
    }
    Some(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: forgetting in Honcho matched by substring, so `/forget cat` deleted
    /// conclusions about education, a sister named Caterina and car keys nobody can locate.
    #[test]
    fn a_word_matches_whole_words_only() {
        let cat = Query::parse("cat");
        assert!(cat.matches("owner has a cat named Tom"));
        assert!(cat.matches("CAT: Tom"));
        assert!(cat.matches("the cat's bowl"));
        for other in [
            "owner works in education",
            "Caterina is the owner's sister",
            "can never locate the car keys",
            "cats",
        ] {
            assert!(!cat.matches(other), "{other}");
        }
    }

    #[test]
    fn every_word_and_quoted_phrase_must_be_there_in_any_case() {
        let q = Query::parse("\"car keys\" Tom");
        assert!(q.matches("Tom lost the Car Keys"));
        assert!(!q.matches("Tom lost the keys of the car"));
        assert!(!q.matches("the car keys"));
        assert!(Query::parse("4471").matches("my PIN is 4471."));
        assert!(!Query::parse("4471").matches("code 44710"));
        assert!(Query::parse("KOALA5521").matches("call_koala5521"));
        assert!(Query::parse("/x").matches(r#"{"path":"/x"}"#));
        assert!(Query::parse("zoë").matches("Zoë"));
        assert!(!Query::parse("  ").matches("anything"));
        assert!(!Query::parse("\"\"").matches("anything"));
    }

    #[test]
    fn spans_name_every_occurrence_of_every_term() {
        let q = Query::parse("tom cat");
        let text = "Tom's cat, not a tomcat; TOM";
        let spans = q.spans(text);
        let words: Vec<&str> = spans.iter().map(|(a, b)| &text[*a..*b]).collect();
        assert_eq!(words, ["Tom", "cat", "TOM"]);
        assert_eq!(q.first(text), Some(0));
        assert_eq!(Query::parse("İ").spans("xİx İ"), vec![(5, 7)]);
    }
}

#[cfg(test)]
mod review {
    use super::Query;

    /// Review finding 4: a secret written next to a letter or digit of an escape or an
    /// encoding (a percent-encoded URL, a JSON body's `\n`), or in a script written without
    /// spaces, is no longer found; the substring rule before the merge found every one.
    #[test]
    fn review_forget_finds_every_copy_the_substring_rule_found() {
        let copies = [
            ("4471", "https://evil.example/c?d=my%20PIN%204471"),
            ("4471", r#"{"note":"PIN:\n4471"}"#),
            ("hunter2", r#"{"body":"pw\u0020hunter2"}"#),
            ("hunter2", "パスワードはhunter2です"),
            ("田中", "田中さんの電話番号"),
            ("bob@example.com", "mailto%3Abob@example.com"),
            ("κωδικος", "ΚΩΔΙΚΟΣ 1234"),
        ];
        for (query, text) in copies {
            let old = text.to_lowercase().contains(&query.to_lowercase());
            assert!(old, "the old rule found {query:?} in {text:?}");
            assert!(
                Query::parse(query).matches(text),
                "/forget {query} misses {text:?}"
            );
        }
    }
}
