//! Recall answers the questions people ask (docs/memoryd.md): plain-word questions
//! through memoryd's socket, `memoryd recall`, loopd's `/recall` and the model's `recall`
//! tool; questions with nothing to search for; FTS5 syntax, codes, addresses, URLs and
//! file names; another language; duplicates; and the rebuild of an older index.

use super::*;
use crate::loopd::Loopd;
use crate::support::standin::{text, tool_calls};
use crate::support::HANG;
use std::time::Instant;

/// An owner's notes of everyday facts, and the question each answers with the string that shows it.
const NOTES: &[&str] = &[
    "My dentist appointment is on Thursday at 3pm with Dr. Alvarez.",
    "I'm allergic to penicillin, please remember that.",
    "My sister Maria lives in Lisbon and her birthday is June 4.",
    "The wifi password at the cabin is on the fridge.",
    "Buy oat milk and coffee beans on the way home.",
    "The car needs its oil changed before the trip in May.",
    "Send the feedback.xlsx file to maria.santos@example.com by Friday.",
    "The door code for the storage unit is 463820, see https://storage.example.org/unit-12 for hours.",
];

const QUESTIONS: &[(&str, &str)] = &[
    ("when is my dentist appointment", "Thursday at 3pm"),
    ("what am I allergic to", "penicillin"),
    ("where does my sister live", "Lisbon"),
    ("what is the wifi password", "fridge"),
];

fn with_notes() -> (Fixture, Daemon) {
    let fx = Fixture::new("");
    let e = Epoch::start(&fx, "main");
    for n in NOTES {
        e.add(&user(n));
    }
    let d = Daemon::start("memoryd", &fx);
    (fx, d)
}

fn first_text(fx: &Fixture, q: &str) -> String {
    recall(fx, q)
        .into_iter()
        .next()
        .map(|h| h.text)
        .unwrap_or_default()
}

fn cli_text(fx: &Fixture, words: &[&str]) -> String {
    let out = cli_recall(fx, words);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_issue_questions_find_their_notes_first_through_the_socket_and_the_cli() {
    let (fx, _d) = with_notes();
    for (q, want) in QUESTIONS {
        assert!(
            first_text(&fx, q).contains(want),
            "{q:?}: {:?}",
            recall(&fx, q)
        );
        // The command line takes the question as separate words, as a shell splits it.
        let words: Vec<&str> = q.split(' ').collect();
        let out = cli_text(&fx, &words);
        let first = out
            .lines()
            .find(|l| l.starts_with("the owner said: "))
            .unwrap_or_default();
        assert!(first.contains(want), "{q:?}: {out}");
    }
    assert!(first_text(&fx, "do I have any allergies?").contains("penicillin"));
}

#[test]
fn empty_and_stop_word_only_questions_find_nothing() {
    let (fx, _d) = with_notes();
    for q in [
        "",
        "   ",
        "what is it?",
        "is the",
        "please tell me what I said",
        "?!",
    ] {
        assert!(recall(&fx, q).is_empty(), "{q:?}");
    }
    assert_eq!(cli_text(&fx, &["what", "is", "it"]), "");
}

#[test]
fn fts5_syntax_inside_a_question_is_never_an_error() {
    let (fx, _d) = with_notes();
    for q in [
        "NEAR(wifi password)",
        "wifi AND password OR \"cabin",
        "password* ^wifi -fridge",
        "text: wifi password",
        "{text}: (wifi",
    ] {
        assert!(first_text(&fx, q).contains("fridge"), "{q:?}");
    }
    for q in ["\"", "*", "NEAR(", "AND OR NOT", "(((", "\"\"\""] {
        recall(&fx, q);
    }
}

#[test]
fn codes_addresses_urls_and_file_names_match_exactly() {
    let (fx, _d) = with_notes();
    assert!(first_text(&fx, "463820").contains("storage unit"));
    assert!(recall(&fx, "463821").is_empty());
    assert!(first_text(&fx, "feedback.xlsx").contains("maria.santos"));
    assert!(first_text(&fx, "who gets maria.santos@example.com").contains("feedback"));
    assert!(first_text(&fx, "https://storage.example.org/unit-12").contains("463820"));
    // The same parts in another order are another address.
    assert!(recall(&fx, "santos.maria@example.com").is_empty());
    assert!(recall(&fx, "xlsx.feedback").is_empty());
}

#[test]
fn a_question_in_portuguese_finds_its_note() {
    let fx = Fixture::new("");
    Epoch::start(&fx, "main")
        .add(&user(
            "A reunião com o contabilista é na sexta-feira às 10h.",
        ))
        .add(&user("The accountant wants the receipts by Monday."));
    let _d = Daemon::start("memoryd", &fx);
    assert!(first_text(&fx, "quando é a reunião com o contabilista?").contains("sexta-feira"));
    assert!(recall(&fx, "o que é").is_empty());
}

#[test]
fn the_same_text_logged_twice_is_one_hit() {
    let fx = Fixture::new("");
    // A SessionFull rerun logs the owner's line again.
    Epoch::start(&fx, "main")
        .add(&user("the plumber comes on monday"))
        .add(&user("the plumber comes on monday"))
        .add(&assistant("Noted, the plumber on monday."));
    let _d = Daemon::start("memoryd", &fx);
    let texts: Vec<String> = recall(&fx, "when does the plumber come")
        .into_iter()
        .map(|h| h.text)
        .collect();
    assert_eq!(
        texts,
        [
            "the plumber comes on monday",
            "Noted, the plumber on monday."
        ],
        "one hit per distinct text"
    );
}

#[test]
fn plain_questions_work_through_slash_recall_and_the_recall_tool() {
    let l = Loopd::start("");
    let _m = Daemon::start("memoryd", &l.fx);
    let mut c = l.client();
    for n in &NOTES[..4] {
        l.llama.push(text(&["Noted."]));
        c.ask(n);
    }
    for (q, want) in QUESTIONS {
        let block = c.ask(&format!("/recall {q}"));
        let first = block
            .iter()
            .find(|line| line.starts_with("the owner said: "))
            .cloned()
            .unwrap_or_default();
        assert!(first.contains(want), "{q:?}: {block:?}");
    }
    l.llama.push(tool_calls(&[(
        "c1",
        "recall",
        "{\"query\":\"what am I allergic to?\"}",
    )]));
    l.llama.push(text(&["Penicillin."]));
    // (The owner's own line is indexed before the tool runs, so it does not repeat the words.)
    c.ask("which medicine must the doctor avoid giving me?");
    let result = l
        .records("main")
        .into_iter()
        .find(|r| r["type"] == "tool_result" && r["name"] == "recall")
        .unwrap();
    let content = result["content"].as_str().unwrap();
    let first = content
        .lines()
        .find(|line| line.starts_with("the owner said: "))
        .unwrap_or_default();
    assert!(first.contains("allergic to penicillin"), "{content}");
}

/// The index as schema 1 left it: `unicode61` words, and a row whose log is gone.
fn write_schema_1_index(fx: &Fixture) {
    let dir = fx.state_dir.join("memory");
    std::fs::create_dir_all(&dir).unwrap();
    let conn = rusqlite::Connection::open(dir.join("index.sqlite")).unwrap();
    conn.execute_batch(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO meta VALUES ('max_class', '1');
         CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE,
             session TEXT NOT NULL, epoch INTEGER NOT NULL, offset INTEGER NOT NULL,
             line INTEGER NOT NULL, class INTEGER NOT NULL, untrusted INTEGER NOT NULL,
             rows INTEGER NOT NULL, broken TEXT, broken_size INTEGER, broken_mtime INTEGER);
         CREATE VIRTUAL TABLE docs USING fts5(text, session UNINDEXED, epoch UNINDEXED,
             time UNINDEXED, kind UNINDEXED, role UNINDEXED, class UNINDEXED,
             untrusted UNINDEXED, file UNINDEXED);
         INSERT INTO docs (text, session, epoch, time, kind, role, class, untrusted, file)
             VALUES ('a stale ghost row', 'main', 0, '2026-11-30T06:00:00.000Z',
                     'session', 'owner', 1, 0, 1);
         PRAGMA user_version = 1;",
    )
    .unwrap();
}

/// Sessions in the backlog rebuilt in the test below: with the request budget at one
/// chunk, a recall meets a partly rebuilt index.
const BACKLOG: usize = 120;

#[test]
fn an_older_index_is_rebuilt_at_start_with_every_row_and_label_and_no_secret() {
    let fx = Fixture::new("");
    write_schema_1_index(&fx);
    let private = Label::new(DataClass::Private, false);
    let e = Epoch::begin(&fx.state_dir, "main", 0, private);
    e.add(&user("the allergy note: penicillin"))
        .add(&tool_summary(
            1,
            "a page about otters",
            DataClass::Public,
            true,
        ))
        .add(&tool_result(
            1,
            "read_file",
            "the vault pin",
            DataClass::Secret,
            false,
        ))
        .add(&assistant("the secret pin is 4711 heliotrope"));
    for n in 0..BACKLOG {
        Epoch::start(&fx, &format!("s{n}")).add(&user(&format!("backlog heron {n}")));
    }
    let mut cmd = Daemon::command("memoryd", &fx);
    cmd.env("BOXMAKER_MEMORYD_TEST_REQUEST_CHUNKS", "1");
    let mut d = Daemon::spawn(cmd, &fx);
    // READY comes before the rebuild is done; a recall meanwhile answers from what is in.
    d.ready();
    assert!(recall(&fx, "heron").len() <= 50);
    d.wait_log("rebuilt the index in");
    let log = d.log_text();
    assert!(
        log.contains("memoryd: rebuilding the index")
            && log.contains("schema 1 (whole words)")
            && log.contains("schema 4"),
        "{log}"
    );
    let deadline = Instant::now() + HANG;
    while status(&fx).rows < BACKLOG as u64 + 2 {
        assert!(Instant::now() < deadline, "{:?}", status(&fx));
        std::thread::yield_now();
    }
    assert_eq!(status(&fx).rows, BACKLOG as u64 + 2);
    assert!(recall(&fx, "ghost").is_empty(), "the stale row is gone");
    let owner = recall(&fx, "what was the allergy");
    assert_eq!(owner.len(), 1, "{owner:?}");
    assert_eq!((owner[0].role.as_str(), owner[0].label), ("owner", private));
    let summary = recall(&fx, "otters");
    assert_eq!(summary.len(), 1);
    assert_eq!(
        (summary[0].kind.as_str(), summary[0].label),
        ("summary", Label::new(DataClass::Public, true))
    );
    assert_eq!(recall(&fx, "heron").len(), 50);
    assert!(recall_at(&fx, "heliotrope pin", DataClass::Secret).is_empty());
    let bytes = index_bytes(&fx);
    for secret in ["heliotrope", "4711", "vault pin"] {
        assert!(!contains(&bytes, secret), "{secret} reached the index file");
    }
}
