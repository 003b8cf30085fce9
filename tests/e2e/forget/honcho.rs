//! Forgetting with Honcho reporting on (docs/forgetting.md, docs/honcho.md): the list
//! shows, after the box's own entries, what Honcho derived that holds the query's words
//! (conclusions whenever Honcho dated them, peer-card lines), and only what the owner
//! picks is deleted there; the reply says what was deleted and what Honcho keeps (its API
//! cannot delete a message); and the rewritten log does not trip the reporter: every
//! later turn reaches Honcho exactly once, before and after a restart, and the note
//! standing in for the forgotten record never does.

use super::{PHRASE, QUERY};
use crate::loopd::{write_config, Loopd, N_CTX};
use crate::support::standin::{text, Standin};
use crate::support::{Daemon, Fixture};
use standins::honcho::{Conclusion, Standin as Honcho, State};

/// The stand-in's messages as (peer, content), in the order Honcho stored them.
fn said(st: &State) -> Vec<(String, String)> {
    st.messages
        .iter()
        .map(|m| (m.peer_id.clone(), m.content.clone()))
        .collect()
}

fn turn(q: &str, a: &str) -> [(String, String); 2] {
    [
        ("owner".to_string(), q.to_string()),
        ("assistant".to_string(), a.to_string()),
    ]
}

/// A conclusion Honcho stored at `created_at` (not when the message was written).
fn conclusion(id: &str, session: Option<&str>, content: &str, created_at: &str) -> Conclusion {
    Conclusion {
        created_at: created_at.into(),
        ..Conclusion::now(id, session, "owner", content)
    }
}

/// One owner turn, answered by the stand-in llama.cpp.
fn ask(l: &Loopd, q: &str, a: &str) {
    l.llama.push(text(&[a]));
    let reply = l.client().ask(q).join("\n");
    assert!(reply.contains(a), "{q}: {reply}");
}

#[test]
fn a_forget_says_what_honcho_keeps_deletes_its_conclusions_and_later_turns_go_out_once() {
    let honcho = Honcho::start();
    let fx = Fixture::new("");
    let llama = Standin::start(N_CTX);
    let tables = format!("[honcho]\nurl = {:?}\n", honcho.url());
    write_config(&fx, &llama.url, "retries = 2", "", &tables);
    let daemon = Daemon::start("loopd", &fx);
    let mut l = Loopd { fx, llama, daemon };

    let told = format!("my locker code is {PHRASE}");
    let mut want: Vec<(String, String)> = Vec::new();
    ask(&l, &told, "Noted.");
    want.extend(turn(&told, "Noted."));
    for i in 1..=2 {
        let (q, a) = (format!("question {i}"), format!("answer {i}"));
        ask(&l, &q, &a);
        want.extend(turn(&q, &a));
    }
    honcho.wait(|st| st.messages.len() >= want.len());
    let kept_id = honcho.with(|st| {
        let said_it = format!("The owner's locker code is {PHRASE}");
        st.conclusions = vec![
            conclusion("before", Some("main"), &said_it, "2000-01-01T00:00:00Z"),
            conclusion("after", Some("main"), &said_it, "2999-01-01T00:00:00Z"),
            conclusion(
                "tea",
                Some("main"),
                "The owner likes green tea",
                "2999-01-01T00:00:00Z",
            ),
            conclusion(
                "elsewhere",
                Some("other"),
                "Other: tea",
                "2999-01-01T00:00:00Z",
            ),
        ];
        st.messages
            .iter()
            .find(|m| m.content == told)
            .map(|m| m.id.clone())
            .unwrap()
    });

    let mut c = l.client();
    let list = c.ask(&format!("/forget {QUERY}")).join("\n");
    assert!(
        list.starts_with("3 entries hold that: 1 on the box and 2 in Honcho"),
        "{list}"
    );
    assert!(
        list.contains("2. Honcho: a conclusion about owner (after):"),
        "{list}"
    );
    assert!(!list.contains("green tea"), "{list}");
    let reply = c.ask("/forget all").join("\n");
    assert!(reply.starts_with("forgot 1 record and"), "{reply}");
    assert!(
        reply.contains(&format!(
            "Honcho still holds 1 message with the forgotten text (session main, workspace boxmaker; Honcho ids {kept_id})"
        )),
        "{reply}"
    );
    assert!(reply.contains("cannot delete or edit a message"), "{reply}");
    assert!(
        reply.contains("Honcho: 2 conclusions deleted (after, before;"),
        "{reply}"
    );
    assert!(reply.contains("deriver may still draw"), "{reply}");
    honcho.with(|st| {
        let left: Vec<&str> = st
            .live_conclusions()
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(left, ["tea", "elsewhere"]);
    });

    // Later turns: each once, in order, and no note.
    for i in 3..=4 {
        let (q, a) = (format!("question {i}"), format!("answer {i}"));
        ask(&l, &q, &a);
        want.extend(turn(&q, &a));
    }
    honcho.wait(|st| st.messages.len() >= want.len());
    // A restart asks Honcho what it holds before it posts; one more turn shows nothing
    // went twice.
    l.restart();
    ask(&l, "question 5", "answer 5");
    want.extend(turn("question 5", "answer 5"));
    honcho.wait(|st| st.messages.len() >= want.len());
    l.settle();
    honcho.with(|st| {
        assert_eq!(said(st), want, "each turn once, in order");
        assert!(st.messages.iter().all(|m| !m.content.contains("forgotten")));
    });
    let log = l.daemon.log_text();
    assert!(!log.contains("bad line"), "{log}");
    assert!(!log.to_lowercase().contains(&PHRASE.to_lowercase()));
}

/// Regression: `/forget cat` then `/forget all` deleted, unseen, every conclusion and
/// peer-card line holding the letters "cat" — the owner's work in education, their
/// sister Caterina, the car keys they can never locate — and the reply only counted them.
/// Now the list shows what Honcho holds that says the word, and only the entry picked
/// goes.
#[test]
fn forgetting_a_word_lists_what_honcho_holds_of_it_and_deletes_only_what_is_picked() {
    let honcho = Honcho::start();
    honcho.with(|st| {
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
                "cat: Tom".into(),
                "works in education".into(),
                "sister Caterina".into(),
            ],
        );
    });
    let fx = Fixture::new("");
    let llama = Standin::start(N_CTX);
    let tables = format!("[honcho]\nurl = {:?}\n", honcho.url());
    write_config(&fx, &llama.url, "retries = 2", "", &tables);
    let daemon = Daemon::start("loopd", &fx);
    let l = Loopd { fx, llama, daemon };
    ask(&l, "my cat is called Tom", "Noted.");
    honcho.wait(|st| st.messages.len() >= 2);

    let mut c = l.client();
    let list = c.ask("/forget cat").join("\n");
    assert!(
        list.starts_with("3 entries hold that: 1 on the box and 2 in Honcho"),
        "{list}"
    );
    assert!(
        list.contains("2. Honcho: a conclusion about owner (tom):\n   owner has a cat named Tom"),
        "{list}"
    );
    assert!(
        list.contains("3. Honcho: a line of owner's peer card:\n   cat: Tom"),
        "{list}"
    );
    for other in ["education", "Caterina", "car keys"] {
        assert!(!list.contains(other), "{other} listed: {list}");
    }
    let reply = c.ask("/forget 2").join("\n");
    assert!(
        reply.starts_with("forgot 0 records and 0 carried summaries"),
        "{reply}"
    );
    assert!(
        reply.contains("Honcho: 1 conclusion deleted (tom;"),
        "{reply}"
    );
    assert!(
        reply.contains("Honcho: 1 of the list's entries there were not chosen and stay"),
        "{reply}"
    );
    honcho.with(|st| {
        let left: Vec<&str> = st
            .live_conclusions()
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(left, ["work", "sister", "keys"]);
        assert_eq!(st.cards["owner"].len(), 3, "the card was not chosen");
    });
}

/// A token limited to one session reports, but may not read or delete what Honcho
/// derived for the workspace: the list says so, and that a workspace token is needed,
/// instead of a bare status.
#[test]
fn a_forget_with_a_session_token_says_a_workspace_token_is_needed() {
    let honcho = Honcho::start();
    honcho.with(|st| st.tokens = vec![("session-main".into(), Some("main".into()))]);
    let fx = Fixture::new("");
    let token = fx.path().join("honcho.token");
    std::fs::write(&token, "session-main\n").unwrap();
    let llama = Standin::start(N_CTX);
    let tables = format!(
        "[honcho]\nurl = {:?}\ntoken_file = {:?}\n",
        honcho.url(),
        token.display().to_string()
    );
    write_config(&fx, &llama.url, "retries = 2", "", &tables);
    let daemon = Daemon::start("loopd", &fx);
    let l = Loopd { fx, llama, daemon };
    ask(&l, "my cat is called Tom", "Noted.");
    honcho.wait(|st| st.messages.len() >= 2);
    let list = l.client().ask("/forget cat").join("\n");
    assert!(list.starts_with("1 entries on the box hold that"), "{list}");
    assert!(
        list.contains("\"JWT not permissioned for this resource\""),
        "{list}"
    );
    assert!(list.contains("a workspace token is needed"), "{list}");
}
