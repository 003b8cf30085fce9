//! What a `/forget` query matches, as the owner means it.

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

/// Every copy of the words, however it was written down.
mod every_copy {
    use super::Query;

    /// Regression: a secret written next to a letter or digit of an escape or an
    /// encoding (a percent-encoded URL, a JSON body's `\n`), in a script written without
    /// spaces, or with a final sigma, was not found; the substring rule found every one.
    #[test]
    fn forget_finds_every_copy_the_substring_rule_found() {
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

    /// Regression: the model wrote a name the owner typed with "ë" as "E" and a combining
    /// diaeresis, a street with a no-break space, codes with a zero-width space or soft
    /// hyphen inside and in full-width digits. `/forget` found none of them while memoryd's
    /// index still answered with the first two, and memory in the turn copied them on.
    #[test]
    fn forget_finds_a_word_however_its_characters_were_composed_or_hidden() {
        let copies = [
            ("Zoë Kraus", "and also ZOE\u{308} KRAUS"),
            ("Zoe\u{308}", "my friend is named Zoë"),
            ("\"Elm Street\"", "friend lives at Elm\u{a0}Street 9."),
            ("ZEBRA7741", "the code is ZEBRA\u{ad}7741"),
            ("LYNX2828", "LYNX\u{200b}2828 it is"),
            ("\"4471\"", "PIN ４４７１."),
            ("ﬁnch", "Mr Finch called"),
            ("Ångström", "Å is the Ångström sign"),
        ];
        for (query, text) in copies {
            assert!(
                Query::parse(query).matches(text),
                "/forget {query} misses {text:?}"
            );
        }
        let text = "and also ZOE\u{308} KRAUS!";
        let spans = Query::parse("zoë kraus").spans(text);
        assert_eq!(
            spans.iter().map(|&(a, b)| &text[a..b]).collect::<Vec<_>>(),
            ["ZOE\u{308}", "KRAUS"],
            "a match covers the whole characters it was read from"
        );
    }

    /// Regression: the first cut of the rule above missed an "ë" written as an escape in
    /// an all-ASCII record (a tool call's JSON arguments, a URL), the same accents typed
    /// in another order, and found "4471" in "¼471" and "1" in "½".
    #[test]
    fn escapes_mark_order_and_one_characters_parts() {
        for (query, text) in [
            ("zoë", r#"{"n":"Zo\u00eb"}"#),
            ("zoë", "Zo%C3%AB"),
            ("LYNX2828", "LYNX%E2%80%8B2828"),
            ("\"4471\"", r#"PIN \uff14\uff14\uff17\uff11"#),
            ("Nguyệt", "Nguy\u{ea}\u{323}t"),
            ("Nguy\u{ea}\u{323}t", "Nguyệt"),
            ("e\u{302}\u{323}", "x e\u{323}\u{302} y"),
        ] {
            assert!(
                Query::parse(query).matches(text),
                "/forget {query} misses {text:?}"
            );
        }
        for (query, text) in [("4471", "¼471"), ("1", "½"), ("2", "½"), ("inch", "ﬁnch")] {
            assert!(!Query::parse(query).matches(text), "{query} in {text:?}");
        }
        assert!(Query::parse("finch").matches("ﬁnch"));
    }

    /// A letter under a long run of combining marks (a page can hold a megabyte of them)
    /// is searched in one pass: each unit's boundary is worked out once, not by walking
    /// back over the marks before it at every place.
    #[test]
    fn a_long_run_of_marks_is_searched_in_one_pass() {
        let text = format!("a{} b", "\u{301}".repeat(200_000));
        assert!(Query::parse("b").matches(&text));
        assert!(!Query::parse("a").matches(&text));
    }

    /// The same words only: an accent is part of its letter, so a word without it is
    /// another word, in either composition.
    #[test]
    fn a_letter_with_a_combining_mark_is_not_the_letter_without_it() {
        for (query, text) in [
            ("Zoe", "Zoë"),
            ("Zoe", "Zoe\u{308}"),
            ("clair", "e\u{301}clair"),
            ("cafe", "café"),
        ] {
            assert!(!Query::parse(query).matches(text), "{query} in {text:?}");
        }
        assert!(Query::parse("café").matches("cafe\u{301} au lait"));
        assert!(
            !Query::parse("\u{200b}").matches("a\u{200b}b"),
            "an invisible query is empty"
        );
    }

    /// What decoding and the script rule add must not take unrelated words: a word of a
    /// script with spaces still needs its boundary, in the decoded form too.
    #[test]
    fn decoded_and_unspaced_forms_still_keep_whole_words() {
        let cat = Query::parse("cat");
        for other in [
            "education%20program",
            r#"{"t":"\u0043aterina"}"#,
            "owner works in education",
            "Caterina",
        ] {
            assert!(!cat.matches(other), "{other}");
        }
        assert!(cat.matches("a%20cat%20named%20Tom"));
        assert!(cat.matches("猫はcatです"));
        let text = "d=my%20PIN%204471&x";
        let spans = Query::parse("4471").spans(text);
        assert_eq!(
            spans.iter().map(|&(a, b)| &text[a..b]).collect::<Vec<_>>(),
            ["4471"]
        );
        let text = r#"{"b":"pw\u0020hunter2"}"#;
        let spans = Query::parse("\"pw hunter2\"").spans(text);
        assert_eq!(
            spans.iter().map(|&(a, b)| &text[a..b]).collect::<Vec<_>>(),
            [r"pw\u0020hunter2"]
        );
        assert!(
            !Query::parse("4471").matches("%E2%82"),
            "an escape that decodes to nothing"
        );
        assert!(Query::parse("new").matches(r"C:\new"), "as it stands too");
    }
}
