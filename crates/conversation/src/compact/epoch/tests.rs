use super::*;
use crate::open_session::Frozen;
use proto::{DataClass, Label, Origin, Record, SessionId};
use serde_json::json;

use proto::test_records::{tool_result, T};

fn open(dir: &std::path::Path) -> Session {
    Session::open_or_create(dir, &SessionId::parse("main").unwrap(), || {
        Ok(Frozen {
            system: "old system".into(),
            tools: json!([{"type": "function", "function": {"name": "read_file"}}]),
        })
    })
    .unwrap()
}

/// The head `/compact` would start after `s`, with a summary of its own.
fn manual_head(s: &Session) -> Head {
    next_head(
        s,
        DataClass::Private,
        "s".into(),
        json!([]),
        "c".into(),
        SummarySource::Model,
        Reason::Manual,
    )
}

#[test]
fn the_next_head_carries_the_summary_and_the_join_of_the_old_epochs_labels() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    s.append(Record::User {
        time: T.into(),
        content: "hi".into(),
        origin: Origin::Owner,
        matrix: None,
    })
    .unwrap();
    s.append(tool_result(1, "read_file", "key", DataClass::Secret, false))
        .unwrap();
    let head = next_head(
        &s,
        DataClass::Private,
        "new system".into(),
        json!([]),
        "we said hi".into(),
        SummarySource::Fallback,
        Reason::ContextFull,
    );
    assert_eq!(head.epoch, 1);
    assert_eq!(head.system, "new system");
    assert_eq!(head.tools, json!([]));
    assert_eq!(head.carry.as_deref(), Some("we said hi"));
    assert_eq!(head.carry_label, Label::new(DataClass::Secret, false));
    assert_eq!(head.reason, Reason::ContextFull);
    assert_eq!(head.summary_source, SummarySource::Fallback);
}

#[test]
fn a_carried_label_is_kept_even_when_the_epoch_adds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    s.append(tool_result(1, "read_file", "key", DataClass::Secret, false))
        .unwrap();
    let h1 = manual_head(&s);
    start_next(&mut s, h1).unwrap();
    let h2 = manual_head(&s);
    assert_eq!(h2.carry_label.class, DataClass::Secret);
}

#[test]
fn starting_the_next_epoch_writes_its_files_and_moves_the_session_there() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    s.append(tool_result(7, "read_file", "key", DataClass::Secret, false))
        .unwrap();
    let head = next_head(
        &s,
        DataClass::Private,
        "new system".into(),
        json!([]),
        "summary".into(),
        SummarySource::Model,
        Reason::Threshold,
    );
    start_next(&mut s, head.clone()).unwrap();
    assert_eq!(s.epoch(), 1);
    assert_eq!(s.head(), &head);
    assert!(s.records().is_empty());
    assert_eq!(
        s.label(DataClass::Private).class,
        DataClass::Secret,
        "the carry label"
    );
    assert_eq!(s.take_call().unwrap(), 8, "call numbers go on");
    let files: Vec<String> = std::fs::read_dir(dir.path().join("main"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let mut files = files;
    files.sort();
    assert_eq!(
        files,
        [
            "epoch-000000.head.json",
            "epoch-000000.jsonl",
            "epoch-000001.head.json",
            "epoch-000001.jsonl"
        ]
    );
    s.append(Record::Note {
        time: T.into(),
        text: "in epoch 1".into(),
    })
    .unwrap();
    drop(s);
    let again = Session::open(dir.path(), &SessionId::parse("main").unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(again.epoch(), 1);
    assert_eq!(again.head(), &head);
    assert_eq!(again.records().len(), 1);
}

#[test]
fn a_new_epoch_whose_log_was_never_created_opens_empty() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let head = manual_head(&s);
    sessions::head::write(s.dir(), &head).unwrap();
    drop(s);
    let again = Session::open(dir.path(), &SessionId::parse("main").unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(again.epoch(), 1);
    assert!(again.records().is_empty());
}

#[test]
fn a_head_left_under_its_temporary_name_is_not_an_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let head = manual_head(&s);
    let name = head_file_name(1);
    sessions::atomic::write_temp(s.dir(), &name, &sessions::head::to_bytes(&head).unwrap())
        .unwrap();
    LogFile::open(&s.dir().join(log_file_name(1))).unwrap();
    drop(s);
    let again = Session::open(dir.path(), &SessionId::parse("main").unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(again.epoch(), 0);
}

/// The names in session `main`'s directory, sorted.
fn names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("main"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// Regression: a stray `epoch-000001.jsonl` with no head (left alone at start) was opened
/// by the next compaction as epoch 1's log, and its records kept: a line older than the
/// new head's `started` was replayed to the model as part of the new epoch.
#[test]
fn a_stray_log_at_the_new_epochs_name_is_set_aside_with_its_bytes_not_adopted() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let stray = Record::User {
        time: "2020-01-01T00:00:00.000Z".into(),
        content: "a stale line from elsewhere".into(),
        origin: Origin::Owner,
        matrix: None,
    }
    .to_line();
    std::fs::write(s.dir().join(log_file_name(1)), &stray).unwrap();
    // A head put at the new epoch's name is not the session's either.
    std::fs::write(s.dir().join(head_file_name(1)), b"{\"epoch\": 1}").unwrap();
    let head = manual_head(&s);
    start_next(&mut s, head.clone()).unwrap();
    assert_eq!(s.epoch(), 1);
    assert!(s.records().is_empty(), "{:?}", s.records());
    drop(s);
    let again = Session::open(dir.path(), &SessionId::parse("main").unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(again.head(), &head);
    assert!(again.records().is_empty());
    // Both kept, under names no reader takes for an epoch's.
    let names = names(dir.path());
    assert_eq!(names.len(), 6, "{names:?}");
    let kept = |prefix: &str| {
        let name = names
            .iter()
            .find(|n| n.starts_with(&format!("{prefix}.stray-")))
            .unwrap();
        assert!(sessions::leftovers::is_set_aside(name), "{name}");
        std::fs::read(dir.path().join("main").join(name)).unwrap()
    };
    assert_eq!(kept("epoch-000001.jsonl"), stray.as_bytes());
    assert_eq!(kept("epoch-000001.head.json"), b"{\"epoch\": 1}");
    assert_eq!(
        std::fs::read(dir.path().join("main").join(log_file_name(1))).unwrap(),
        b""
    );
}

/// An empty log at the new epoch's name holds nothing (a start that failed earlier made
/// it): it is opened as the new epoch's, nothing set aside.
#[test]
fn an_empty_log_at_the_new_epochs_name_is_taken_as_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    std::fs::write(s.dir().join(log_file_name(1)), b"").unwrap();
    let head = manual_head(&s);
    start_next(&mut s, head).unwrap();
    assert_eq!(s.epoch(), 1);
    assert_eq!(
        names(dir.path()),
        [
            "epoch-000000.head.json",
            "epoch-000000.jsonl",
            "epoch-000001.head.json",
            "epoch-000001.jsonl"
        ]
    );
}
