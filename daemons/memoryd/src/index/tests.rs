//! The index against real files in a temporary state directory.

use super::*;
use crate::fixture::{head, user, user_at, World, T};
use proto::head::{head_file_name, log_file_name};
use proto::label::Label;
use proto::record::Record;

fn texts(index: &mut Index, q: &str) -> Vec<String> {
    index.catch_up(Budget::UNLIMITED).unwrap();
    index
        .search(q, DataClass::Private, 50)
        .unwrap()
        .into_iter()
        .map(|h| h.text)
        .collect()
}

#[test]
fn awkward_queries_are_never_errors() {
    let w = World::new();
    w.append(
        "main",
        0,
        &user("don't stop the multi-agent tea party").to_line(),
    );
    let mut ix = w.index();
    // A contraction is its first word, here a stop word: nothing to search for.
    assert!(texts(&mut ix, "don't").is_empty());
    assert_eq!(texts(&mut ix, "don't stop").len(), 1);
    assert_eq!(texts(&mut ix, "multi-agent").len(), 1);
    for q in [
        "\"", "NEAR(", "*", "", "AND", "OR tea", "tea*", "-tea", "^tea", "col:tea",
    ] {
        texts(&mut ix, q);
    }
    texts(&mut ix, &"x".repeat(100 * 1024));
}

#[test]
fn a_torn_last_line_waits_and_is_indexed_once_complete() {
    let w = World::new();
    let line = user("the torn kettle").to_line();
    let (a, b) = line.split_at(10);
    w.append("main", 0, &user("first").to_line());
    w.append("main", 0, a);
    let mut ix = w.index();
    assert!(texts(&mut ix, "kettle").is_empty());
    assert_eq!(texts(&mut ix, "first").len(), 1);
    w.append("main", 0, b);
    assert_eq!(texts(&mut ix, "kettle"), vec!["the torn kettle"]);
    assert_eq!(ix.status().unwrap().rows, 2);
}

#[test]
fn a_bad_line_sets_the_file_aside_until_it_changes() {
    let w = World::new();
    w.append("main", 0, &user("before the damage").to_line());
    w.append("main", 0, "{not json\n");
    w.append("main", 0, &user("after the damage").to_line());
    w.append("other", 0, &user("undamaged damage").to_line());
    let mut ix = w.index();
    assert_eq!(texts(&mut ix, "damage"), vec!["undamaged damage"]);
    // Repaired: the bad line replaced by a good one, so the file is read again.
    let path = w.log("main", 0);
    let fixed = [
        user("before the damage"),
        user("mended"),
        user("after the damage"),
    ]
    .iter()
    .map(Record::to_line)
    .collect::<String>();
    std::fs::write(&path, fixed).unwrap();
    assert_eq!(texts(&mut ix, "damage").len(), 3);
    assert_eq!(ix.status().unwrap().rows, 4);
}

#[test]
fn removed_sessions_are_dropped_and_new_ones_found() {
    let w = World::new();
    w.append("a", 0, &user("apple").to_line());
    let mut ix = w.index();
    assert_eq!(texts(&mut ix, "apple").len(), 1);
    w.append("b", 0, &user("apple pie").to_line());
    assert_eq!(texts(&mut ix, "apple").len(), 2);
    std::fs::remove_dir_all(w.dir.path().join("sessions/a")).unwrap();
    assert_eq!(texts(&mut ix, "apple"), vec!["apple pie"]);
    assert_eq!(ix.status().unwrap().logs, 1);
}

#[test]
fn a_log_without_a_head_waits_for_it() {
    let w = World::new();
    let dir = w.dir.path().join("sessions/main");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(log_file_name(3)), user("headless").to_line()).unwrap();
    let mut ix = w.index();
    assert!(texts(&mut ix, "headless").is_empty());
    let label = Label::new(DataClass::Private, true);
    std::fs::write(
        dir.join(head_file_name(3)),
        serde_json::to_string(&head(3, label)).unwrap(),
    )
    .unwrap();
    ix.catch_up(Budget::UNLIMITED).unwrap();
    let hits = ix.search("headless", DataClass::Private, 5).unwrap();
    assert_eq!((hits[0].epoch, hits[0].label), (3, label));
}

#[test]
fn a_changed_max_class_rebuilds_the_index() {
    let w = World::new();
    w.append("main", 0, &user("kept").to_line());
    let mut ix = w.index();
    assert_eq!(texts(&mut ix, "kept").len(), 1);
    drop(ix);
    let mut public = Index::open(w.dir.path(), DataClass::Public)
        .unwrap()
        .with_owner_class(DataClass::Public);
    assert_eq!(public.status().unwrap().rows, 0);
    public.catch_up(Budget::UNLIMITED).unwrap();
    assert_eq!(
        public.search("kept", DataClass::Public, 5).unwrap().len(),
        1
    );
}

#[test]
fn recall_ranks_by_bm25_then_recency_and_honours_the_callers_class() {
    let w = World::new();
    let at = user_at;
    w.append(
        "main",
        0,
        &at("2026-01-01T00:00:00.000Z", "tea old").to_line(),
    );
    w.append(
        "main",
        0,
        &at("2026-01-02T00:00:00.000Z", "tea new").to_line(),
    );
    let secret_ish = Record::ToolResult {
        time: T.into(),
        call: 1,
        tool_call_id: "c".into(),
        name: "read_file".into(),
        content: "body".into(),
        class: DataClass::Private,
        untrusted: false,
    };
    w.append("main", 0, &secret_ish.to_line());
    w.append(
        "main",
        0,
        &at("2026-01-03T00:00:00.000Z", "private tea").to_line(),
    );
    // Owner words counted public here, so only the tool result makes a row private.
    let mut ix = w.index().with_owner_class(DataClass::Public);
    assert_eq!(
        texts(&mut ix, "tea"),
        vec!["private tea", "tea new", "tea old"]
    );
    let public: Vec<String> = ix
        .search("tea", DataClass::Public, 10)
        .unwrap()
        .into_iter()
        .map(|h| h.text)
        .collect();
    assert_eq!(public, vec!["tea new", "tea old"]);
    assert_eq!(ix.search("tea", DataClass::Private, 1).unwrap().len(), 1);
}

mod common_words;
mod near;
mod recall;
mod verified;
