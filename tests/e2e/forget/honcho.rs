//! Forgetting with Honcho reporting on (docs/forgetting.md, docs/honcho.md): the reply
//! says what Honcho keeps (its API cannot delete a message) and how many conclusions were
//! deleted; the conclusions that say the forgotten words are gone from the stand-in
//! whether Honcho dated them before or after the message, and the others are left; and
//! the rewritten log does not trip the reporter: every later turn reaches Honcho exactly
//! once, before and after a restart, and the note standing in for the forgotten record
//! never does.

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
    assert!(list.starts_with("1 entries"), "{list}");
    let reply = c.ask("/forget all").join("\n");
    assert!(reply.starts_with("forgot 1 records"), "{reply}");
    assert!(
        reply.contains(&format!(
            "Honcho still holds 1 message with the forgotten text (session main, workspace boxmaker; Honcho ids {kept_id})"
        )),
        "{reply}"
    );
    assert!(reply.contains("cannot delete or edit a message"), "{reply}");
    assert!(
        reply.contains("2 conclusions that said it deleted"),
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
