//! Forgetting in Honcho against the stand-in: the messages that hold forgotten text are
//! named (Honcho cannot delete them); the conclusions and peer-card lines that hold the
//! query's words are listed whenever Honcho dated them, and only those chosen are
//! deleted; the reply says what stays.

use super::derived::{self, Derived};
use super::forget::{forget, Record};
use super::test_standin::{config, offset_of, settle, start, Logs};
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
fn a_forget_lists_the_conclusions_that_say_the_words_whatever_their_date_and_the_card_lines() {
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
    let found = derived::search(&cfg.honcho, "4471").unwrap();
    assert_eq!(found.failed, None);
    let places: Vec<String> = found.found.iter().map(Derived::place).collect();
    assert_eq!(
        places,
        [
            "Honcho: a conclusion about owner (dream)",
            "Honcho: a conclusion about owner (before)",
            "Honcho: a line of owner's peer card",
        ]
    );
    let chosen: Vec<&Derived> = found.found.iter().collect();
    let deleted = derived::delete(&cfg.honcho, &chosen).unwrap();
    assert_eq!(deleted.conclusions, ["dream", "before"]);
    assert_eq!(deleted.card_lines, 1);
    let done = forget(&cfg.honcho, "main", &[record], Some("4471")).unwrap();
    assert_eq!(done.messages_left, vec![honcho_id.clone()]);
    assert_eq!(done.failed, None);
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
    let d = deleted.sentence();
    assert!(d.contains("2 conclusions deleted (dream, before;"), "{d}");
    assert!(d.contains("until its reconciler runs"), "{d}");
    assert!(
        d.contains("1 line taken out of the owner's peer card"),
        "{d}"
    );
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

/// Regression: conclusions and peer-card lines were matched by substring, ignoring case,
/// and deleted unseen: `/forget cat` deleted what Honcho knew of the owner's work in
/// education, their sister Caterina and the car keys they can never locate.
#[test]
fn forgetting_a_word_lists_only_what_says_that_word_and_deletes_only_what_was_chosen() {
    let server = Standin::start();
    server.with(|st| {
        st.conclusions = [
            ("tom", "owner has a cat named Tom"),
            ("work", "owner works in education"),
            ("sister", "Caterina is the owner's sister"),
            ("keys", "owner can never locate the car keys"),
        ]
        .iter()
        .map(|(id, text)| Conclusion::now(id, Some("main"), "owner", text))
        .collect();
        st.cards.insert(
            "owner".into(),
            vec![
                "Cat: Tom".into(),
                "works in education".into(),
                "sister Caterina".into(),
            ],
        );
    });
    let state = tempfile::tempdir().unwrap();
    let cfg = config(state.path(), &server);
    let found = derived::search(&cfg.honcho, "cat").unwrap();
    let texts: Vec<&str> = found.found.iter().map(Derived::text).collect();
    assert_eq!(texts, ["owner has a cat named Tom", "Cat: Tom"]);
    // Only the conclusion is chosen: the card stays as it was.
    let deleted = derived::delete(&cfg.honcho, &[&found.found[0]]).unwrap();
    assert_eq!(deleted.conclusions, ["tom"]);
    assert_eq!(deleted.card_lines, 0);
    server.with(|st| {
        let left: Vec<&str> = st
            .live_conclusions()
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(left, ["work", "sister", "keys"]);
        assert_eq!(st.cards["owner"].len(), 3);
    });
    derived::delete(&cfg.honcho, &[&found.found[1]]).unwrap();
    server.with(|st| {
        assert_eq!(
            st.cards["owner"],
            [
                "works in education".to_string(),
                "sister Caterina".to_string()
            ]
        );
    });
}

/// A token limited to one session may report but not read or delete what Honcho derived
/// for the workspace: the answer says a workspace token is needed.
#[test]
fn a_session_token_refused_the_conclusions_is_told_a_workspace_token_is_needed() {
    let server = Standin::start();
    server.with(|st| st.tokens = vec![("session-only".into(), Some("main".into()))]);
    let state = tempfile::tempdir().unwrap();
    let token = state.path().join("token");
    std::fs::write(&token, "session-only\n").unwrap();
    let mut cfg = config(state.path(), &server);
    cfg.honcho.token_file = token;
    let found = derived::search(&cfg.honcho, "cat").unwrap();
    let why = found.failed.unwrap();
    assert!(
        why.contains("\"JWT not permissioned for this resource\""),
        "{why}"
    );
    assert!(why.contains("a workspace token is needed"), "{why}");
}

/// Regression: with Honcho taking connections and never answering, a `/forget` list
/// waited out the reporter's 30 s request timeout on loopd's worker, and every session's
/// turns waited behind it; a list's requests have a bound of their own.
#[test]
fn a_list_against_a_honcho_that_never_answers_stops_at_its_own_bound() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut cfg = config(state.path(), &server);
    cfg.honcho.url = format!("http://{}", silent.local_addr().unwrap());
    let found = derived::search(&cfg.honcho, "cat").unwrap();
    assert!(found.found.is_empty());
    assert!(found.failed.is_some(), "the list says it could not search");
    assert!(derived::LIST_REQUEST_TIMEOUT < crate::client::REQUEST_TIMEOUT);
    drop(silent);
}
