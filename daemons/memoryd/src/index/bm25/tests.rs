//! `bm25_by_phrase` against FTS5's own `bm25`: the same score, for chat turns and for
//! long rows holding the words hundreds of times, in a table with content and in a
//! contentless one.

use super::{register, NAME};
use rusqlite::{params, Connection};

/// The same score: to the bit, unless the C compiler fused a multiply and an add in
/// SQLite's own `bm25` (a build for a machine with FMA), which moves its last bits.
fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

fn table(contentless: bool) -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    register(&conn).unwrap();
    let options = if contentless {
        ", content = '', contentless_delete = 1"
    } else {
        ""
    };
    conn.execute_batch(&format!(
        "CREATE VIRTUAL TABLE t USING fts5(text{options}, tokenize = '{}')",
        crate::index::TOKENIZER
    ))
    .unwrap();
    conn
}

/// Each row matching `expr`: its id, `bm25` and `bm25_by_phrase`.
fn scores(conn: &Connection, expr: &str) -> Vec<(i64, f64, f64)> {
    let name = NAME.to_str().unwrap();
    let sql = format!("SELECT rowid, bm25(t), {name}(t) FROM t WHERE t MATCH ?1 ORDER BY rowid");
    let mut stmt = conn.prepare(&sql).unwrap();
    let rows = stmt
        .query_map([expr], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

#[test]
fn a_chat_turn_scores_as_bm25_scores_it() {
    let turns = [
        "We moved the meeting with the landlord to Thursday at four.",
        "Meetings, meetings: the landlord wants another one about the boiler.",
        "The boiler was serviced in March; the landlord paid for it.",
        "Remind me to call the plumber about the boiler pressure.",
        "The cat sat on the mat while the landlord fixed the boiler boiler boiler.",
        "My passport number is X1234567 and it runs out in 2031.",
        "running late to the meeting, start without me",
    ];
    for contentless in [false, true] {
        let conn = table(contentless);
        for (i, text) in turns.iter().enumerate() {
            conn.execute(
                "INSERT INTO t (rowid, text) VALUES (?1, ?2)",
                params![i64::try_from(i).unwrap() + 1, text],
            )
            .unwrap();
        }
        for expr in [
            "landlord",
            "boiler OR landlord",
            "boiler AND landlord",
            "\"the landlord\" OR meeting",
            "meet* OR passport",
            "x1234567",
            "boiler OR cat OR mat OR plumber OR pressure",
        ] {
            let found = scores(&conn, expr);
            assert!(!found.is_empty(), "{expr}");
            for (rowid, bm25, ours) in found {
                assert!(
                    same(bm25, ours),
                    "{expr}, row {rowid}, contentless {contentless}: {bm25} {ours}"
                );
            }
        }
    }
}

#[test]
fn a_long_row_holding_the_words_hundreds_of_times_scores_as_bm25_scores_it() {
    let sentences = [
        "The quarterly report describes the shipping volumes along the northern route.",
        "Warehouse staffing was short in the autumn because two supervisors left.",
        "Weather delays slowed the deliveries to the coastal stores for a week.",
    ];
    for contentless in [false, true] {
        let conn = table(contentless);
        for id in 1..=20_i64 {
            let n = usize::try_from(id).unwrap();
            let text: Vec<&str> = (0..n * 40).map(|i| sentences[(i * n) % 3]).collect();
            conn.execute(
                "INSERT INTO t (rowid, text) VALUES (?1, ?2)",
                params![id, text.join(" ")],
            )
            .unwrap();
        }
        conn.execute(
            "INSERT INTO t (rowid, text) VALUES (21, 'why was the warehouse staffing short?')",
            [],
        )
        .unwrap();
        for expr in [
            "warehouse AND staffing AND short",
            "shipping OR coastal OR staffing",
            "\"northern route\" OR deliveries",
        ] {
            let found = scores(&conn, expr);
            assert!(found.len() > 10, "{expr}");
            for (rowid, bm25, ours) in found {
                assert!(same(bm25, ours), "{expr}, row {rowid}: {bm25} {ours}");
            }
        }
    }
}

#[test]
fn weights_are_refused_by_name() {
    let conn = table(false);
    conn.execute("INSERT INTO t (text) VALUES ('harbour')", [])
        .unwrap();
    let name = NAME.to_str().unwrap();
    let e = conn
        .query_row(
            &format!("SELECT {name}(t, 2.0) FROM t WHERE t MATCH 'harbour'"),
            [],
            |r| r.get::<_, f64>(0),
        )
        .unwrap_err();
    assert!(e.to_string().contains("takes no arguments"), "{e}");
}

#[test]
fn every_connection_the_index_opens_has_it() {
    let dir = tempfile::tempdir().unwrap();
    let conn = crate::index::schema::connect(&dir.path().join("index.sqlite")).unwrap();
    conn.execute_batch("CREATE VIRTUAL TABLE t USING fts5(text)")
        .unwrap();
    conn.execute("INSERT INTO t (text) VALUES ('harbour')", [])
        .unwrap();
    let score: f64 = conn
        .query_row(
            &format!(
                "SELECT {}(t) FROM t WHERE t MATCH 'harbour'",
                NAME.to_str().unwrap()
            ),
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(score < 0.0);
}

/// Each row matching `expr` with `bm25_by_phrase` given the table's name and the
/// expression, as the index's statements call it.
fn named_scores(conn: &Connection, table: &str, expr: &str) -> Vec<(i64, f64)> {
    let name = NAME.to_str().unwrap();
    let sql = format!(
        "SELECT rowid, {name}({table}, '{table}', ?1) FROM {table} WHERE {table} MATCH ?1 \
         ORDER BY rowid"
    );
    let mut stmt = conn.prepare(&sql).unwrap();
    let rows = stmt
        .query_map([expr], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

#[test]
fn an_expressions_phrases_are_read_in_order_with_their_prefix_stars() {
    use super::phrases_of;
    assert_eq!(
        phrases_of(r#""dentist" OR "appoint"*"#).unwrap(),
        [r#""dentist""#, r#""appoint"*"#]
    );
    assert_eq!(
        phrases_of(r#"("a" AND "b c") OR NOT "say ""hi""""#).unwrap(),
        [r#""a""#, r#""b c""#, r#""say ""hi""""#]
    );
    assert_eq!(phrases_of("").unwrap(), Vec::<String>::new());
    // What the index never writes is not named: such a statement counts on its own.
    assert_eq!(phrases_of("dentist OR \"appoint\""), None);
    assert_eq!(phrases_of("\"open"), None);
    assert_eq!(phrases_of("{text}: \"a\""), None);
}

/// The counts a recall shares between its statements change no score: the same phrase
/// at another place in another expression, a prefix beside the word it starts, and two
/// tables holding one phrase each score as they do counted alone. (A phrase numbered
/// otherwise than left to right would take another's count and fail this.)
#[test]
fn a_recalls_shared_counts_give_every_statement_its_own_scores() {
    let conn = Connection::open_in_memory().unwrap();
    register(&conn).unwrap();
    for t in ["t", "u"] {
        conn.execute_batch(&format!(
            "CREATE VIRTUAL TABLE {t} USING fts5(text, tokenize = '{}')",
            crate::index::TOKENIZER
        ))
        .unwrap();
    }
    let turns = [
        "We moved the meeting with the landlord to Thursday at four.",
        "Meetings, meetings: the landlord wants another one about the boiler.",
        "The boiler was serviced in March; the landlord paid for it.",
        "Remind me to call the plumber about the boiler pressure.",
        "The meet is at noon; the landlord will not come.",
        "boiler boiler boiler and a cat",
    ];
    for (i, text) in turns.iter().enumerate() {
        let id = i64::try_from(i).unwrap() + 1;
        conn.execute(
            "INSERT INTO t (rowid, text) VALUES (?1, ?2)",
            params![id, text],
        )
        .unwrap();
        // The other table holds the words in other rows and other numbers.
        if i % 2 == 0 {
            conn.execute(
                "INSERT INTO u (rowid, text) VALUES (?1, ?2)",
                params![id, text],
            )
            .unwrap();
        }
    }
    let statements = [
        ("t", r#""boiler" OR "landlord""#),
        ("t", r#""landlord" AND ("boiler" OR "meet"*)"#),
        ("t", r#""meet" OR "meet"* OR "landlord""#),
        ("u", r#""boiler" OR "landlord""#),
        ("u", r#""landlord" OR "boiler" OR "cat""#),
        ("t", r#""cat" OR "boiler""#),
    ];
    let alone: Vec<_> = statements
        .iter()
        .map(|(t, e)| named_scores(&conn, t, e))
        .collect();
    let recall = super::Recall::begin();
    let shared: Vec<_> = statements
        .iter()
        .map(|(t, e)| named_scores(&conn, t, e))
        .collect();
    drop(recall);
    for ((alone, shared), (t, e)) in alone.iter().zip(&shared).zip(&statements) {
        assert!(!alone.is_empty(), "{t} {e}");
        assert_eq!(alone.len(), shared.len(), "{t} {e}");
        for ((r1, a), (r2, b)) in alone.iter().zip(shared) {
            assert_eq!(r1, r2);
            assert_eq!(a.to_bits(), b.to_bits(), "{t} {e}, row {r1}: {a} {b}");
        }
    }
}
