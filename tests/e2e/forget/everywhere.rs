//! `/forget` reaches every copy (docs/forgetting.md, 'Every copy removed'): copies
//! in another session, every field and form of a tool call, quoted digits, a list too
//! long for one reply, call numbers after the newest results went, and neither daemon's
//! log lines ever holding the conversation's words.

use super::*;
use crate::support::standin::Reply;

/// Neither daemon's log lines hold any of `words` (any case).
fn logs_hold_none(l: &Loopd, m: &Daemon, words: &[&str]) {
    for (name, log) in [("loopd", l.daemon.log_text()), ("memoryd", m.log_text())] {
        let log = log.to_lowercase();
        for w in words {
            assert!(
                !log.contains(&w.to_lowercase()),
                "{name}'s log lines hold {w:?}:\n{log}"
            );
        }
    }
}

#[test]
fn forget_finds_and_removes_copies_in_another_session() {
    let (l, m) = start(None);
    let mut c = l.client();
    c.ask("/session b");
    l.llama.push(text(&["Noted."]));
    c.ask("my password is QUOKKA7731");
    c.ask("/session main");
    l.llama.push(text(&["Hello."]));
    c.ask("hello");
    let list = c.ask("/forget quokka7731");
    assert!(
        list.iter().any(|x| x.contains("session b: user")),
        "the list names the other session's copy: {list:?}"
    );
    let done = c.ask("/forget all").join("\n");
    assert!(done.contains("session b:"), "{done}");
    // Regression: a removal that changed nothing of the asking session's own was logged
    // nowhere it was asked; forgetting is logged as a note, counts only.
    let notes: Vec<String> = l
        .records("main")
        .iter()
        .filter(|r| r["type"] == "note")
        .map(|r| r["text"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("forgotten by the owner from this session: 1 record and")),
        "{notes:?}"
    );
    let b = l.session_dir("b");
    let held: Vec<PathBuf> = walk(&b)
        .into_iter()
        .filter(|p| String::from_utf8_lossy(&std::fs::read(p).unwrap()).contains("QUOKKA7731"))
        .collect();
    assert_eq!(held, Vec::<PathBuf>::new());
    let recalled = c.ask("/recall QUOKKA7731").join("\n");
    assert!(!recalled.contains("QUOKKA7731"), "{recalled}");
    assert_eq!(
        c.ask("/forget quokka7731"),
        ["nothing on the box holds that (every session searched)"]
    );
    logs_hold_none(&l, &m, &["QUOKKA7731"]);
}

#[test]
fn forget_finds_tool_call_names_ids_escaped_arguments_and_quoted_digits() {
    let (l, m) = start(None);
    let mut c = l.client();
    let args = r#"{"path":"Tr0ub\"4dor\\x Zo\u00eb 4471"}"#;
    l.llama
        .push(tool_calls(&[("call_KOALA5521", "read_file", args)]));
    l.llama.push(text(&["Could not read it."]));
    c.ask("read the odd file");
    for query in ["koala5521", "Tr0ub\"4dor\\x", "ZOË", "\"4471\""] {
        let list = c.ask(&format!("/forget {query}"));
        assert!(
            list.iter().any(|x| x.contains("session main: assistant")),
            "{query}: {list:?}"
        );
    }
    // The last list was of "4471": digits in quotes are a query, not entry numbers.
    let done = c.ask("/forget all").join("\n");
    assert!(done.starts_with("forgot "), "{done}");
    for query in ["koala5521", "Zoë", "Tr0ub"] {
        assert_eq!(
            c.ask(&format!("/forget {query}")),
            ["nothing on the box holds that (every session searched)"],
            "{query}"
        );
    }
    l.llama.push(text(&["Fine."]));
    c.ask("and now?");
    let sent = l.llama.chats().last().unwrap().body.clone();
    for gone in ["KOALA5521", "Tr0ub", "4471", "Zo\\u00eb", "Zoë"] {
        assert!(!sent.contains(gone), "{gone} replayed: {sent}");
    }
    logs_hold_none(&l, &m, &["KOALA5521", "Tr0ub", "4471"]);
}

#[test]
fn call_numbers_are_not_reused_after_the_newest_results_are_forgotten() {
    let (l, _m) = start(None);
    let mut c = l.client();
    let files = l.fx.path().join("files").join("notes.txt");
    let args = serde_json::json!({ "path": files }).to_string();
    l.llama.push(tool_calls(&[("c1", "read_file", &args)]));
    l.llama.push(text(&["Read it."]));
    c.ask("read my notes file");
    c.ask(&format!("/forget {QUERY}"));
    c.ask("/forget all");
    l.llama.push(tool_calls(&[("c2", "read_file", &args)]));
    l.llama.push(text(&["Read it again."]));
    c.ask("read my notes file again");
    let calls: Vec<u64> = l
        .records("main")
        .iter()
        .filter(|r| r["type"] == "tool_result")
        .map(|r| r["call"].as_u64().unwrap())
        .collect();
    assert_eq!(calls, [2], "call 1 was used before the forget");
}

#[test]
fn a_list_longer_than_a_reply_is_paged_and_the_connection_stays() {
    let (l, _m) = start(None);
    let big = l.fx.path().join("files").join("big.txt");
    // Under read_file's default max_bytes; ten reads of it are far over what one reply
    // may queue (`loopd::limits::HARD_OUTPUT`).
    std::fs::write(&big, "walrus tusk ".repeat(80_000)).unwrap();
    let args = serde_json::json!({ "path": big }).to_string();
    let mut c = l.client();
    for i in 0..10 {
        l.llama
            .push(tool_calls(&[(&format!("r{i}"), "read_file", &args)]));
        l.llama.push(text(&["Read."]));
        c.ask("read the big file");
    }
    for i in 0..45 {
        l.llama.push(text(&["Ok."]));
        c.ask(&format!("walrus number {i}"));
    }
    let first = c.ask("/forget walrus");
    let n: usize = first[0]
        .strip_suffix(" entries on the box hold that:")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{:?}", &first[..1]));
    assert!(n >= 55, "{n}");
    assert!(
        first.iter().any(|x| x.contains("/forget more")),
        "{:?}",
        first.last()
    );
    assert!(first.iter().any(|x| x.starts_with("50. session main")));
    let next = c.ask("/forget more");
    assert!(
        next.iter().any(|x| x.starts_with("51. session main")),
        "{next:?}"
    );
    assert!(c.ask("/status").iter().any(|x| x.starts_with("label: ")));
}

#[test]
fn a_server_error_quoting_the_conversation_stays_out_of_the_log_lines() {
    let (l, m) = start(None);
    let mut c = l.client();
    // The tag is built from pieces: no source file holds a chat-template tag whole.
    let body = concat!(
        r#"{"error":{"code":500,"message":"Failed to parse input at pos 12: <"#,
        r#"tool_call>{\"password\":\"PRIVATE:QUOKKA7731\"}","type":"server_error"}}"#
    );
    for _ in 0..3 {
        l.llama.push(Reply::Status(500, body.to_string()));
    }
    let reply = c.ask("my password is PRIVATE:QUOKKA7731").join("\n");
    assert!(reply.contains("error: "), "{reply}");
    assert!(!reply.contains("QUOKKA7731\"}"), "{reply}");
    logs_hold_none(&l, &m, &["QUOKKA7731"]);
}

#[test]
fn forget_all_removes_a_copy_made_after_the_list_was_shown_and_says_so() {
    let (l, _m) = start(None);
    let mut c = l.client();
    l.llama.push(text(&["Noted."]));
    c.ask("my code is QUOKKA4420");
    let list = c.ask("/forget quokka4420");
    assert!(list[0].starts_with("1 entries"), "{list:?}");
    // Meanwhile another connection copies it into another session.
    let mut other = l.client();
    other.ask("/session b");
    l.llama.push(text(&["Noted again."]));
    other.ask("again: my code is QUOKKA4420");
    let done = c.ask("/forget all").join("\n");
    assert!(done.starts_with("forgot "), "{done}");
    assert!(done.contains("copied since the list"), "{done}");
    assert!(done.contains("session b:"), "{done}");
    assert_eq!(
        c.ask("/forget quokka4420"),
        ["nothing on the box holds that (every session searched)"]
    );
}

/// Regression: one session whose files loopd cannot read (a head that is not JSON, a
/// log that is a FIFO) made every `/forget` an error, so nothing anywhere could be
/// forgotten until the owner found that file. The rest of the box is searched and
/// cleaned, and the reply names the session passed over.
#[test]
fn a_damaged_session_is_named_and_does_not_stop_forgetting_elsewhere() {
    let (l, _m) = start(None);
    let mut c = l.client();
    l.llama.push(text(&["Noted."]));
    c.ask("my password is QUOKKA7731");
    let broken = l.fx.state_dir.join("sessions").join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("epoch-000000.head.json"), "garbage{{{").unwrap();
    let list = c.ask("/forget quokka7731").join("\n");
    assert!(list.contains("session main: user"), "{list}");
    assert!(
        list.contains("session broken could not be searched")
            && list.contains("epoch-000000.head.json"),
        "{list}"
    );
    let done = c.ask("/forget all").join("\n");
    assert!(
        done.starts_with("session broken could not be searched"),
        "said first: {done}"
    );
    assert!(
        done.contains(
            "\nforgot 1 record and 0 carried summaries in the sessions that could be read:"
        ),
        "{done}"
    );
    let nothing = c.ask("/forget quokka7731").join("\n");
    assert!(
        nothing.starts_with("nothing in the sessions that could be read holds that"),
        "{nothing}"
    );
    assert!(!walk(&l.session_dir("main"))
        .iter()
        .any(|p| String::from_utf8_lossy(&std::fs::read(p).unwrap()).contains("QUOKKA7731")));
}
