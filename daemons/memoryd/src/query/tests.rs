use super::*;

fn expr(q: &str) -> Option<String> {
    fts_query(q)
}

#[test]
fn stop_words_are_dropped_and_the_rest_or_ed() {
    assert_eq!(
        expr("when is my dentist appointment?").as_deref(),
        Some(r#""dentist" OR "appointment" OR "appoint"*"#)
    );
    assert_eq!(
        expr("what is the wifi password").as_deref(),
        Some(r#""wifi" OR "password""#)
    );
    assert_eq!(
        expr("Where does my sister live?").as_deref(),
        Some(r#""sister" OR "live""#)
    );
}

#[test]
fn suffixes_porter_keeps_apart_search_their_root() {
    assert_eq!(
        expr("what am I allergic to").as_deref(),
        Some(r#""allergic" OR "allerg"*"#)
    );
    assert_eq!(
        expr("allergy").as_deref(),
        Some(r#""allergy" OR "allerg"*"#)
    );
    // Too short a root would match unrelated words.
    assert_eq!(expr("meetings").as_deref(), Some(r#""meetings""#));
}

#[test]
fn exact_tokens_are_phrases_of_their_parts() {
    assert_eq!(
        expr("mail maria.santos@example.com about feedback.xlsx").as_deref(),
        Some(r#""mail" OR "maria santos example com" OR "feedback xlsx""#)
    );
    assert_eq!(
        expr("https://example.org/a?b=1 on 2024-06-04, code 463820").as_deref(),
        Some(r#""https example org a b 1" OR "2024 06 04" OR "code" OR "463820""#)
    );
}

#[test]
fn fts5_syntax_in_the_input_is_plain_text() {
    assert_eq!(
        expr(r#"NEAR( dentist "x" OR -cabin AND z* NEAR(a b)"#).as_deref(),
        Some(r#""near" OR "dentist" OR "x" OR "cabin" OR "z" OR "near a" OR "b""#)
    );
    assert_eq!(expr(r#"say "hi""#).as_deref(), Some(r#""hi""#));
}

#[test]
fn nothing_searchable_is_no_query() {
    for q in [
        "",
        "   ",
        "\"",
        "*",
        "( ) - \" *",
        "what is it?",
        "what is my",
        "can you tell me what I said",
        "o que é",
    ] {
        assert_eq!(fts_query(q), None, "{q:?}");
    }
}

#[test]
fn contractions_and_diacritics() {
    assert_eq!(
        expr("what's Maria's birthday").as_deref(),
        Some(r#""maria" OR "birthday" OR "birthda"*"#)
    );
    assert_eq!(
        expr("quando é a reunião com o contabilista?").as_deref(),
        Some(r#""reuniao" OR "contabilista""#)
    );
}

#[test]
fn repeated_and_long_input_is_bounded() {
    assert_eq!(expr("wifi wifi WIFI").as_deref(), Some(r#""wifi""#));
    let long: String = (0..10_000).map(|i| format!("w{i} ")).collect();
    let q = parse(&long).unwrap();
    assert_eq!(q.groups().len(), MAX_QUERY_GROUPS);
}

#[test]
fn coverage_counts_groups_and_sees_phrases() {
    let q = parse("where does my sister live").unwrap();
    let c = q.coverage("My sister Maria lives in Lisbon.");
    assert_eq!((c.matched, c.of, c.phrase()), (2, 2, false));
    let c = q.coverage("Her sister lives nearby");
    assert!(c.phrase() && c.all());
    let c = q.coverage("I live alone");
    assert_eq!((c.matched, c.phrase()), (1, false));
    let q = parse("wifi password at the cabin").unwrap();
    let c = q.coverage("cabin: the wifi password is on the fridge");
    assert_eq!((c.matched, c.adjacent, c.phrase()), (3, 1, false));
    let q = parse("allergy").unwrap();
    assert!(q.coverage("I'm allergic to penicillin").all());
    let q = parse("feedback.xlsx").unwrap();
    assert!(q.coverage("see Feedback.XLSX attached").all());
    assert!(!q.coverage("feedback on the xlsx").all());
}

/// Guards relevance against the index's own matching: porter finds "meetings" for
/// "meeting", "running" for "run", "studies" for "study", and a record found so must be
/// scored as holding the word, else it is found and weighed as holding nothing of it.
#[test]
fn the_forms_the_index_joins_count_as_the_word() {
    let pairs = [
        ("meeting", "meetings"),
        ("meet", "meetings"),
        ("run", "running"),
        ("run", "runs"),
        ("plan", "planned"),
        ("stop", "stopping"),
        ("study", "studies"),
        ("study", "studied"),
        ("study", "studying"),
        ("party", "parties"),
        ("family", "families"),
        ("movie", "movies"),
        ("cookie", "cookies"),
        ("sister", "sisters"),
        ("live", "lives"),
        ("live", "lived"),
        ("walk", "walking"),
        ("box", "boxes"),
        ("fall", "falling"),
        ("dress", "dressed"),
    ];
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    conn.execute_batch(&format!(
        "CREATE VIRTUAL TABLE t USING fts5(x, tokenize = '{}')",
        crate::index::TOKENIZER
    ))
    .unwrap();
    for (a, b) in pairs {
        conn.execute("DELETE FROM t", []).unwrap();
        conn.execute("INSERT INTO t (x) VALUES (?1)", [format!("the {b} record")])
            .unwrap();
        let found: i64 = conn
            .query_row(
                "SELECT count(*) FROM t WHERE t MATCH ?1",
                [format!("\"{a}\"")],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(found, 1, "the index joins {a} and {b}");
        for (asked, held) in [(a, b), (b, a)] {
            let q = parse(asked).unwrap();
            assert!(
                q.coverage(&format!("the {held} record")).all(),
                "{asked} holds {held}"
            );
        }
    }
    // Forms kept apart where English doubles the letter itself.
    assert_eq!(base_form("falling"), "fall");
    assert_eq!(base_form("dressed"), "dress");
    // Words that only look like another's inflection stay apart, as porter keeps them.
    for (a, b) in [
        ("party", "part"),
        ("ready", "read"),
        ("story", "store"),
        ("billy", "bill"),
        ("emily", "emil"),
    ] {
        assert_ne!(base_form(a), base_form(b), "{a} is not {b}");
    }
}

/// Guards memoryd's main thread: a word whose last two bytes are equal but not letters
/// (丸 is e4 b8 b8) was cut inside its last character by the doubled-letter rule.
#[test]
fn a_word_of_another_script_is_never_cut_inside_a_character() {
    for w in ["a丸ing", "丸丸ed", "x丸y", "丸ies", "ünnings"] {
        let _ = base_form(w);
    }
    let q = parse("a丸ing").unwrap();
    assert!(q.coverage("the a丸ing record").all());
}

#[test]
fn the_all_words_expression_ands_the_groups() {
    let q = parse("what am I allergic to, cabin wifi").unwrap();
    assert_eq!(
        q.all_expression().as_deref(),
        Some(r#"("allergic" OR "allerg"*) AND ("cabin") AND ("wifi")"#)
    );
    assert_eq!(parse("wifi").unwrap().all_expression(), None);
}
