//! A log growing turn after turn is checked by its last indexed bytes between whole
//! checks (`verified`): what is changed there is found at the next look, what is changed
//! before them at the first look after `verified::FULL_EVERY`, by a whole pass, or by a
//! forget at once.

use super::*;
use crate::fixture::{user, World};
use proto::SessionId;
use std::io::{Seek, SeekFrom, Write};

/// Searches `q` after a recall's catch-up (the sessions active lately).
fn recalled(ix: &mut Index, q: &str) -> Vec<String> {
    ix.catch_up_recent(Budget::UNLIMITED).unwrap();
    ix.search(q, DataClass::Private, 50)
        .unwrap()
        .into_iter()
        .map(|h| h.text)
        .collect()
}

/// A log of `filler` lines (far more than `TAIL_BYTES`) after one about `word`, indexed
/// and then grown by a line, so the index remembers it checked whole.
fn grown_log(w: &World, word: &str) -> Index {
    w.append("main", 0, &user(&format!("the {word} is here")).to_line());
    for i in 0..200 {
        w.append(
            "main",
            0,
            &user(&format!("filler line number {i}")).to_line(),
        );
    }
    let mut ix = w.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    ix.catch_up_session(&SessionId::parse("main").unwrap(), Budget::UNLIMITED)
        .unwrap();
    w.append("main", 0, &user("one more line").to_line());
    assert_eq!(recalled(&mut ix, word), [format!("the {word} is here")]);
    ix
}

/// Overwrites `from` with `to` (the same length) in the log, in place.
fn overwrite(path: &std::path::Path, from: &str, to: &str) {
    assert_eq!(from.len(), to.len());
    let text = std::fs::read_to_string(path).unwrap();
    let at = text.find(from).unwrap();
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.seek(SeekFrom::Start(at as u64)).unwrap();
    f.write_all(to.as_bytes()).unwrap();
}

#[test]
fn a_change_among_the_last_indexed_bytes_is_found_at_the_next_look() {
    let w = World::new();
    let mut ix = grown_log(&w, "kettle");
    overwrite(&w.log("main", 0), "one more line", "one more lime");
    w.append("main", 0, &user("and another").to_line());
    assert_eq!(recalled(&mut ix, "lime"), ["one more lime"]);
    assert_eq!(ix.status().unwrap().rows, 203);
}

#[test]
fn a_change_before_the_last_indexed_bytes_is_found_once_the_whole_check_is_due() {
    let w = World::new();
    let mut ix = grown_log(&w, "kettle");
    overwrite(&w.log("main", 0), "kettle", "teapot");
    w.append("main", 0, &user("and another").to_line());
    // The whole part was last checked `FULL_EVERY` ago: the next look checks it whole.
    ix.verified.age_by(crate::index::verified::FULL_EVERY);
    assert!(recalled(&mut ix, "kettle").is_empty());
    assert_eq!(recalled(&mut ix, "teapot"), ["the teapot is here"]);
    assert_eq!(ix.status().unwrap().rows, 203);
}

#[test]
fn a_whole_pass_and_a_forget_check_the_whole_log() {
    let w = World::new();
    let mut ix = grown_log(&w, "kettle");
    overwrite(&w.log("main", 0), "kettle", "teapot");
    w.append("main", 0, &user("and another").to_line());
    ix.catch_up(Budget::UNLIMITED).unwrap();
    assert!(ix
        .search("kettle", DataClass::Private, 5)
        .unwrap()
        .is_empty());
    overwrite(&w.log("main", 0), "teapot", "kettle");
    ix.forget(&[("main".to_string(), 0)]).unwrap();
    assert_eq!(
        ix.search("kettle", DataClass::Private, 5).unwrap()[0].text,
        "the kettle is here"
    );
    assert_eq!(ix.status().unwrap().rows, 203);
}

#[test]
fn rows_dropped_forget_every_log_verified() {
    let w = World::new();
    let mut ix = grown_log(&w, "kettle");
    assert!(ix.verified.remembers(1));
    w.append("other", 0, &user("a line elsewhere").to_line());
    ix.catch_up(Budget::UNLIMITED).unwrap();
    std::fs::remove_dir_all(w.log("other", 0).parent().unwrap()).unwrap();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    assert!(!ix.verified.remembers(1));
}

#[test]
fn the_logs_remembered_cover_every_hot_session_twice() {
    assert_eq!(
        crate::index::verified::MAX_REMEMBERED,
        2 * crate::index::hot::MAX_HOT
    );
}

/// Regression: after a restart, a session the index already knew was looked into before
/// a recall only once loopd nudged it, so a line written to it just before the recall was
/// not found (read-your-writes); nor was a line in a session whose log gave no rows when
/// first read (only a tool result).
#[test]
fn a_recall_after_a_restart_sees_a_line_written_to_a_session_the_index_knew() {
    let w = World::new();
    w.append("main", 0, &user("the first line").to_line());
    w.append(
        "tools",
        0,
        &proto::test_records::tool_result(1, "read_file", "x", DataClass::Public, false).to_line(),
    );
    let mut ix = w.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    w.append("tools", 0, &user("a mango in the tools session").to_line());
    assert_eq!(recalled(&mut ix, "mango"), ["a mango in the tools session"]);
    drop(ix);
    let mut ix = w.index();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    w.append("main", 0, &user("the plumber number is 4471").to_line());
    assert_eq!(recalled(&mut ix, "plumber"), ["the plumber number is 4471"]);
}
