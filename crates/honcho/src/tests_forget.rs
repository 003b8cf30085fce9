//! Forgetting in Honcho against the stand-in: the messages that hold forgotten text are
//! named (Honcho cannot delete them); the conclusions that say the forgotten words are
//! deleted whenever Honcho dated them, and the others are left; the owner's peer card
//! loses the lines that say them; the reply says what stays.

use super::forget::{forget, Record};
use super::test_support::{config, offset_of, settle, start, Logs};
use standins::honcho::{Conclusion, Standin};

/// A conclusion dated `created_at`, as Honcho dates it: when it stored it.
fn dated(id: &str, session: Option<&str>, content: &str, created_at: &str) -> Conclusion {
    Conclusion {
        created_at: created_at.into(),
        ..Conclusion::now(id, session, "owner", content)
    }
}

/// Regression: conclusions were chosen by date (at or after the forgotten message), so one
/// saying the secret dated before it (another clock) was kept and an unrelated one dated
/// after it was deleted; a peer card saying it was left as it was.
#[test]
fn a_forget_deletes_the_conclusions_that_say_the_words_whatever_their_date_and_edits_the_card() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut n = logs.owner_turn(0, 1, false).len();
    let time = logs.user(0, "my locker code is 4471", proto::Origin::Owner);
    logs.assistant(0, Some("Noted."), false);
    n += 2;
    n += logs.owner_turn(0, 3, false).len();
    let cfg = config(state.path(), &server);
    let reporter = start(&cfg);
    settle(&reporter, &server, "main", n);
    reporter.stop();
    let honcho_id = server.with(|st| {
        st.conclusions = vec![
            dated(
                "before",
                Some("main"),
                "The owner's locker code is 4471",
                "2000-01-01T00:00:00Z",
            ),
            dated(
                "after",
                Some("main"),
                "The owner likes green tea",
                "2999-01-01T00:00:00Z",
            ),
            dated(
                "dream",
                None,
                "Owner guards locker 4471 carefully",
                "2999-01-01T00:00:00Z",
            ),
            dated(
                "elsewhere",
                Some("other"),
                "Other session: tea",
                "2999-01-01T00:00:00Z",
            ),
        ];
        st.cards.insert(
            "owner".into(),
            vec!["Name: Sam".into(), "Locker code: 4471".into()],
        );
        st.summaries.insert(
            "main".into(),
            "The owner said the locker code is 4471.".into(),
        );
        st.messages
            .iter()
            .find(|m| m.content.contains("4471"))
            .unwrap()
            .id
            .clone()
    });
    let record = Record {
        epoch: 0,
        offset: offset_of(&logs, "4471"),
        time,
    };
    let done = forget(&cfg.honcho, "main", &[record], Some("4471")).unwrap();
    assert_eq!(done.messages_left, vec![honcho_id.clone()]);
    assert_eq!(done.failed, None);
    assert_eq!(done.conclusions_deleted, 2);
    assert_eq!(done.card_lines_removed, 1);
    assert!(done.summary_holds);
    server.with(|st| {
        let left: Vec<&str> = st
            .live_conclusions()
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(left, ["after", "elsewhere"]);
        assert_eq!(st.cards["owner"], vec!["Name: Sam".to_string()]);
    });
    let s = done.sentence();
    assert!(s.contains(&honcho_id), "{s}");
    assert!(s.contains("cannot delete or edit a message"), "{s}");
    assert!(s.contains("and their embeddings"), "{s}");
    assert!(s.contains("summary still says it"), "{s}");
    assert!(s.contains("until its reconciler runs"), "{s}");
    assert!(s.contains("deriver may still draw"), "{s}");
}

#[test]
fn forgetting_text_honcho_never_got_says_so_and_deletes_nothing_else() {
    let server = Standin::start();
    server
        .with(|st| st.conclusions = vec![Conclusion::now("c", Some("main"), "owner", "likes tea")]);
    let state = tempfile::tempdir().unwrap();
    let cfg = config(state.path(), &server);
    let done = forget(
        &cfg.honcho,
        "main",
        &[Record {
            epoch: 0,
            offset: 0,
            time: "2026-11-30T04:34:57.000Z".into(),
        }],
        Some("4471"),
    )
    .unwrap();
    assert!(done.messages_left.is_empty());
    assert!(
        done.sentence().starts_with("Honcho holds no message"),
        "{}",
        done.sentence()
    );
    server.with(|st| assert_eq!(st.live_conclusions().len(), 1));
    let mut off = cfg.honcho.clone();
    off.url = String::new();
    assert!(
        forget(&off, "main", &[], None).is_none(),
        "reporting off: nothing to do"
    );
}
