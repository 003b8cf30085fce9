//! Ranking by a record's neighbouring turns (docs/memoryd.md, 'Neighbouring turns').

use super::*;
use rusqlite::OptionalExtension;

/// The owner's question and the answer after it, which shares no word with it but the
/// name of who answers (LoCoMo's turns start with the speaker's name): a row that holds
/// none of a question's words is never a hit on its neighbours' alone.
const ASKED: &str = "Tell me your favourite board game, Nate.";
const ANSWER: &str = "Nate: Definitely Carcassonne, we play it every Sunday.";
/// What is asked.
const QUESTION: &str = "Nate's favourite board game";

fn line(text: &str) -> String {
    user(text).to_line()
}

#[test]
fn a_record_found_only_through_its_neighbours_words_ranks_below_one_that_holds_them() {
    let w = World::new();
    w.append("main", 0, &format!("{}{}", line(ASKED), line(ANSWER)));
    w.append("other", 0, &line("Nate: my favourite board game is chess."));
    // The name alone, far from any question.
    w.append("third", 0, &line("Nate: see you soon."));
    let mut ix = w.index();
    let hits = texts(&mut ix, QUESTION);
    let at = |t: &str| hits.iter().position(|h| h == t);
    let answer = at(ANSWER).unwrap_or_else(|| panic!("the answer is not found: {hits:?}"));
    for holder in [ASKED, "Nate: my favourite board game is chess."] {
        let held = at(holder).unwrap_or_else(|| panic!("{holder:?} is not found: {hits:?}"));
        assert!(held < answer, "{hits:?}");
    }
    let alone = at("Nate: see you soon.").unwrap_or(hits.len());
    assert!(answer < alone, "{hits:?}");
}

#[test]
fn a_neighbours_words_never_lift_a_record_across_a_session_or_epoch_boundary() {
    let w = World::new();
    // Epoch 0 ends with the question; its own answer is next in the same log.
    w.append(
        "a",
        0,
        &format!("{}{}", line("Small talk first."), line(ASKED)),
    );
    w.append("a", 0, &line(ANSWER));
    // The next epoch's first turn and another session's, written at the same moment, so
    // their rows sit right after the question's by row id.
    let (epoch, session) = (
        "Nate: Carcassonne, next epoch.",
        "Nate: Carcassonne, session b.",
    );
    w.append("a", 1, &line(epoch));
    w.append("b", 0, &line(session));
    let mut ix = w.index();
    let hits = texts(&mut ix, QUESTION);
    assert!(hits.iter().any(|h| h == ANSWER), "{hits:?}");
    let at = |t: &str| hits.iter().position(|h| h == t).unwrap_or(usize::MAX);
    assert!(at(ANSWER) < at(epoch).min(at(session)), "{hits:?}");
    // The two hold the name alone and rank as such: by recency, the newer first. Were
    // the question's words lent to either, it would pass the other.
    let epoch_hit = ix.search(QUESTION, DataClass::Private, 50).unwrap();
    let order: Vec<&str> = epoch_hit
        .iter()
        .map(|h| h.text.as_str())
        .filter(|t| *t == epoch || *t == session)
        .collect();
    assert_eq!(order, [session, epoch], "{hits:?}");
}

#[test]
fn after_a_forget_the_forgotten_words_find_nothing_through_neighbours() {
    let w = World::new();
    let log = w.log("main", 0);
    let text = format!(
        "{}{}{}",
        line("the vault word is plumquartz"),
        line("Noted, I will keep the vault word safe."),
        line("Thanks.")
    );
    w.append("main", 0, &text);
    let mut ix = w.index();
    // The reply holds "vault" as the line elsewhere does, and ranks above that shorter,
    // newer line only by what the line before it, holding the rare word, lends it.
    w.append("other", 0, &line("a safe vault word"));
    let before = texts(&mut ix, "plumquartz vault");
    assert_eq!(before[0], "the vault word is plumquartz", "{before:?}");
    assert_eq!(
        before[1], "Noted, I will keep the vault word safe.",
        "{before:?}"
    );
    crate::fixture::rewrite_without(&log, "plumquartz");
    assert_eq!(ix.forget(&[("main".into(), 0)]).unwrap(), 1);
    assert_eq!(texts(&mut ix, "plumquartz"), Vec::<String>::new());
    // Nothing lends the reply the forgotten word any more.
    let after = texts(&mut ix, "plumquartz vault");
    assert_eq!(after[0], "a safe vault word", "{after:?}");
}

#[test]
fn an_index_made_before_the_turns_index_gains_it_in_place_without_a_rebuild() {
    let w = World::new();
    w.append("main", 0, &format!("{}{}", line(ASKED), line(ANSWER)));
    let mut ix = w.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    drop(ix);
    // As an index made before: no index of each log's rows.
    let db = w.dir.path().join("memory/index.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("DROP INDEX docs_turns").unwrap();
    drop(conn);
    let mut ix = w.index();
    assert!(!ix.rebuilding());
    assert_eq!(ix.status().unwrap().rows, 2);
    let hits = texts(&mut ix, QUESTION);
    assert!(hits.iter().any(|h| h == ANSWER), "{hits:?}");
}

#[test]
fn questions_asked_again_and_again_do_not_keep_the_answer_out_of_the_first_hits() {
    let w = World::new();
    w.append(
        "notes",
        0,
        &line("The boat is called Wavedancer, painted blue."),
    );
    let mut asked = String::new();
    for i in 0..30 {
        asked.push_str(&line(&format!("What is the boat called, try {i}?")));
        asked.push_str(&line(&format!("You asked: what is the boat called {i}?")));
    }
    w.append("owner", 0, &asked);
    let mut ix = w.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    let hits = ix
        .search("what is the boat called", DataClass::Private, 3)
        .unwrap();
    assert_eq!(hits[0].text, "The boat is called Wavedancer, painted blue.");
}

/// The row ids whose neighbours' field (`near_field`) holds `word`.
fn field_holders(ix: &Index, word: &str) -> Vec<i64> {
    let mut stmt = ix
        .conn()
        .prepare("SELECT rowid FROM near WHERE near MATCH ?1 ORDER BY rowid")
        .unwrap();
    stmt.query_map([word], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The row id of the row holding exactly `text`.
fn rowid_of(ix: &Index, text: &str) -> i64 {
    ix.conn()
        .query_row("SELECT rowid FROM docs WHERE text = ?1", [text], |r| {
            r.get(0)
        })
        .unwrap()
}

#[test]
fn a_neighbour_that_arrives_later_puts_its_words_into_the_earlier_rows_field() {
    let w = World::new();
    w.append(
        "main",
        0,
        &format!("{}{}", line("Small talk first."), line(ANSWER)),
    );
    let mut ix = w.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    assert_eq!(field_holders(&ix, "zorblax"), Vec::<i64>::new());
    // Two turns later, in a later catch-up: the answer's field and the small talk's
    // (two turns before) gain its words; a turn three away does not.
    w.append(
        "main",
        0,
        &format!("{}{}", line("Nice."), line("Was that at the zorblax club?")),
    );
    ix.catch_up(Budget::UNLIMITED).unwrap();
    let holders = field_holders(&ix, "zorblax");
    assert_eq!(
        holders,
        vec![rowid_of(&ix, ANSWER), rowid_of(&ix, "Nice.")],
        "the small talk, three turns before, holds nothing of it"
    );
    // The row itself does not hold its own words in its field.
    assert!(!holders.contains(&rowid_of(&ix, "Was that at the zorblax club?")));
}

#[test]
fn a_neighbours_field_never_holds_words_from_another_session_or_epoch() {
    let w = World::new();
    w.append("a", 0, &line("the zorblax festival was loud"));
    w.append("a", 1, &line("Nate: next epoch."));
    w.append("b", 0, &line("Nate: another session."));
    let mut ix = w.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    assert_eq!(field_holders(&ix, "zorblax"), Vec::<i64>::new());
    assert_eq!(field_holders(&ix, "epoch"), Vec::<i64>::new());
}

#[test]
fn a_neighbour_above_a_rows_class_lends_it_no_words() {
    let w = World::new();
    // A public turn, then a secret read raises the rolling label: the turn after it is
    // secret-tainted and must not lend its words to the public one before it.
    let public = crate::fixture::user("the weather is mild");
    let mut text = public.to_line();
    text.push_str(&crate::fixture::user("Nice.").to_line());
    w.append("main", 0, &text);
    let mut ix = w.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    ix.conn()
        .execute("UPDATE docs SET class = 2 WHERE text = 'Nice.'", [])
        .unwrap();
    let (weather, nice) = (rowid_of(&ix, "the weather is mild"), rowid_of(&ix, "Nice."));
    let file: i64 = ix
        .conn()
        .query_row("SELECT file FROM docs WHERE rowid = ?1", [weather], |r| {
            r.get(0)
        })
        .unwrap();
    crate::index::near_field::refresh(ix.conn(), file, i64::MIN).unwrap();
    // The public turn's field no longer holds "nice"; the secret one's holds "weather".
    assert_eq!(field_holders(&ix, "nice"), Vec::<i64>::new());
    assert_eq!(field_holders(&ix, "weather"), vec![nice]);
}

#[test]
fn a_forgotten_records_words_leave_its_neighbours_field() {
    let w = World::new();
    let log = w.log("main", 0);
    w.append(
        "main",
        0,
        &format!(
            "{}{}{}",
            line("Tell me the vault word."),
            line("the vault word is plumquartz"),
            line("Noted.")
        ),
    );
    let mut ix = w.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    assert_eq!(field_holders(&ix, "plumquartz").len(), 2);
    crate::fixture::rewrite_without(&log, "plumquartz");
    assert_eq!(ix.forget(&[("main".into(), 0)]).unwrap(), 1);
    assert_eq!(field_holders(&ix, "plumquartz"), Vec::<i64>::new());
    // The turns left are neighbours now, each in the other's field.
    assert_eq!(
        field_holders(&ix, "noted"),
        vec![rowid_of(&ix, "Tell me the vault word.")]
    );
}

#[test]
fn an_index_made_before_the_neighbours_field_gains_it_in_place_without_a_rebuild() {
    let w = World::new();
    w.append("main", 0, &format!("{}{}", line(ASKED), line(ANSWER)));
    let mut ix = w.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    drop(ix);
    let db = w.dir.path().join("memory/index.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("DROP TABLE near; PRAGMA user_version = 3")
        .unwrap();
    drop(conn);
    let ix = w.index();
    assert!(!ix.rebuilding());
    let version: i64 = ix
        .conn()
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, 4);
    assert_eq!(ix.status().unwrap().rows, 2);
    assert_eq!(
        field_holders(&ix, "carcassonne"),
        vec![rowid_of(&ix, ASKED)]
    );
}

#[test]
fn a_fill_stopped_part_way_goes_on_from_the_last_log_it_committed() {
    let w = World::new();
    w.append(
        "a",
        0,
        &format!("{}{}", line("alpha one"), line("alpha two")),
    );
    w.append(
        "b",
        0,
        &format!("{}{}", line("bravo one"), line("bravo two")),
    );
    let mut ix = w.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    let first: i64 = ix
        .conn()
        .query_row("SELECT min(id) FROM files", [], |r| r.get(0))
        .unwrap();
    drop(ix);
    // As a fill stopped after the first log: its fields were committed, then the
    // process was killed. Were the fill to start over, the first log would be filled
    // again; left as committed, it keeps the (here: emptied) fields it had.
    let db = w.dir.path().join("memory/index.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("DROP TABLE near; PRAGMA user_version = 3")
        .unwrap();
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('near_filled', ?1)",
        [first.to_string()],
    )
    .unwrap();
    drop(conn);
    let ix = w.index();
    assert_eq!(field_holders(&ix, "alpha"), Vec::<i64>::new());
    assert_eq!(field_holders(&ix, "bravo").len(), 2);
    let left: i64 = ix
        .conn()
        .query_row(
            "SELECT count(*) FROM meta WHERE key = 'near_filled'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 0);
}

/// Rows' bm25 scored in one statement (`Index::scores_of`) is each row's bm25 asked alone,
/// as recall asked it a row at a time before: FTS5 counts a phrase's rows over the whole
/// table whatever rows a statement keeps.
#[test]
fn rows_scored_together_score_as_each_row_asked_alone() {
    let w = World::new();
    let turns = [
        "Nate: my favourite board game is chess.",
        "Tell me your favourite board game, Nate.",
        "Nate: Definitely Carcassonne, we play it every Sunday.",
        "The board met on Sunday about the game budget.",
        "Carcassonne again? Chess is a better game.",
        "Nothing about any of it here.",
        "game game game board board favourite",
    ];
    for (i, t) in turns.iter().enumerate() {
        w.append(["a", "b"][i % 2], 0, &line(t));
    }
    let mut ix = w.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    let ids: Vec<i64> = ix
        .conn
        .prepare("SELECT id FROM docs_content ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(ids.len(), turns.len());
    for q in [
        QUESTION,
        "favourite game on sunday",
        "carcassonne",
        "budget",
    ] {
        let expr = crate::query::parse(q).unwrap().expression();
        for (near, table) in [(true, "near"), (false, "docs")] {
            let together = ix.scores_of(near, &expr, &ids).unwrap();
            let sql = format!(
                "SELECT bm25_by_phrase({table}) FROM {table} WHERE {table} MATCH ?1 AND rowid = ?2"
            );
            for &id in &ids {
                let alone: Option<f64> = ix
                    .conn
                    .query_row(&sql, rusqlite::params![expr, id], |r| r.get(0))
                    .optional()
                    .unwrap();
                assert_eq!(
                    together.get(&id).copied(),
                    alone,
                    "{q} in {table}, row {id}"
                );
            }
            // A part of the rows: the others' scores do not move.
            let part = ix.scores_of(near, &expr, &ids[2..4]).unwrap();
            for (id, s) in &part {
                assert_eq!(together.get(id), Some(s), "{q} in {table}, row {id}");
            }
            assert!(part.keys().all(|id| ids[2..4].contains(id)));
        }
    }
}

/// What the search of the field relies on to pass over looking for its window
/// (`Index::near_matching`): a word's fields are at most `2 * NEAR_TURNS` times the rows
/// holding it, however its rows sit (side by side, at a log's ends, in several logs and
/// epochs).
#[test]
fn a_words_fields_are_at_most_twice_near_turns_its_rows() {
    let w = World::new();
    let mut texts: Vec<String> = Vec::new();
    for i in 0..12 {
        texts.push(if [0, 4, 5, 6, 11].contains(&i) {
            format!("turn {i} names the quokka")
        } else {
            format!("turn {i} is about the weather")
        });
    }
    let log: String = texts.iter().map(|t| line(t)).collect();
    w.append("main", 0, &log);
    w.append("main", 1, &line("the quokka again, alone in its epoch"));
    w.append(
        "other",
        0,
        &format!("{}{}", line("hello"), line("a quokka")),
    );
    let mut ix = w.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    let rows: i64 = ix
        .conn()
        .query_row(
            "SELECT count(*) FROM docs WHERE docs MATCH 'quokka'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let fields = field_holders(&ix, "quokka").len() as i64;
    assert_eq!(rows, 7);
    assert!(fields > 0);
    assert!(
        fields <= 2 * i64::from(crate::index::near::NEAR_TURNS) * rows,
        "{fields} fields for {rows} rows"
    );
}

/// Guards "relevance first, then recency" against the neighbours' lending: turns that all
/// hold every word of the question are equally relevant, and the newest comes first,
/// though an older turn has more such turns around it to lend it their scores.
#[test]
fn equally_relevant_turns_rank_newest_first_whatever_their_neighbours() {
    let w = World::new();
    let text: String = (0..30)
        .map(|n| line(&format!("kiwi note n{n:03}")))
        .collect();
    w.append("main", 0, &text);
    let mut ix = w.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    let hits: Vec<String> = ix
        .search("kiwi", DataClass::Private, 10)
        .unwrap()
        .into_iter()
        .map(|h| h.text)
        .collect();
    let newest: Vec<String> = (20..30)
        .rev()
        .map(|n| format!("kiwi note n{n:03}"))
        .collect();
    assert_eq!(hits, newest);
}

/// The same with a fact told three times and acknowledged each time: the latest telling
/// leads, the owner's and the assistant's alike.
#[test]
fn the_latest_of_three_tellings_leads_though_the_earlier_ones_have_more_neighbours() {
    let w = World::new();
    let text: String = ["B12", "C7", "D3"]
        .iter()
        .map(|spot| {
            format!(
                "{}{}",
                line(&format!("the parking spot is {spot}")),
                proto::test_records::assistant(&format!("Noted, parking spot {spot}.")).to_line()
            )
        })
        .collect();
    w.append("main", 0, &text);
    let mut ix = w.index();
    let hits = texts(&mut ix, "parking spot");
    let at = |t: &str| hits.iter().position(|h| h == t).unwrap_or(usize::MAX);
    assert!(hits[0].ends_with("D3."), "{hits:?}");
    for said in ["the parking spot is {}", "Noted, parking spot {}."] {
        let (d3, c7, b12) = (
            at(&said.replace("{}", "D3")),
            at(&said.replace("{}", "C7")),
            at(&said.replace("{}", "B12")),
        );
        assert!(d3 < c7 && c7 < b12, "{hits:?}");
    }
}
