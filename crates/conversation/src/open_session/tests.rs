use super::*;
use proto::head::head_file_name;
use proto::DataClass;
use serde_json::json;
use std::io::Write;

use proto::test_records::{tool_result, user, T};

fn id() -> SessionId {
    SessionId::parse("main").unwrap()
}

fn frozen() -> Result<Frozen, SessionError> {
    Ok(Frozen {
        system: "You are terse.".into(),
        tools: json!([]),
    })
}

#[test]
fn a_new_session_writes_epoch_zeros_head_and_reopens_with_its_records() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::open_or_create(dir.path(), &id(), frozen).unwrap();
    s.append(user("hi")).unwrap();
    s.append(tool_result(4, "read_file", "x", DataClass::Private, true))
        .unwrap();
    let head: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("main").join(head_file_name(0))).unwrap(),
    )
    .unwrap();
    assert_eq!(head["epoch"], 0);
    assert_eq!(head["system"], "You are terse.");
    assert_eq!(head["carry"], serde_json::Value::Null);
    assert_eq!(head["reason"], "start");
    assert_eq!(head["summary_source"], "model");
    assert_eq!(
        head["carry_label"],
        json!({"class": "public", "untrusted": false})
    );
    drop(s);
    let mut s = Session::open(dir.path(), &id()).unwrap().unwrap();
    assert_eq!(s.records().len(), 2);
    assert_eq!(
        s.label(DataClass::Private),
        Label::new(DataClass::Private, true)
    );
    assert_eq!(s.take_call().unwrap(), 5);
    assert_eq!(s.take_call().unwrap(), 6);
}

#[test]
fn a_session_never_used_opens_as_none_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    assert!(Session::open(dir.path(), &id()).unwrap().is_none());
    assert!(!dir.path().join("main").exists());
}

fn log_path(dir: &Path) -> PathBuf {
    dir.join("main").join(log_file_name(0))
}

fn append_raw(dir: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(log_path(dir))
        .unwrap();
    f.write_all(bytes).unwrap();
}

#[test]
fn a_torn_last_line_is_cut_and_appends_go_on_after_it() {
    for torn in [
        &b"{\"type\":\"user\",\"ti"[..],
        b"{\"type\":\"us\n",
        b"\xff\xfe",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Session::open_or_create(dir.path(), &id(), frozen).unwrap();
        s.append(user("one")).unwrap();
        drop(s);
        let good = std::fs::metadata(log_path(dir.path())).unwrap().len();
        append_raw(dir.path(), torn);
        let mut s = Session::open(dir.path(), &id()).unwrap().unwrap();
        assert_eq!(s.records().len(), 1, "{torn:?}");
        assert_eq!(std::fs::metadata(log_path(dir.path())).unwrap().len(), good);
        s.append(user("two")).unwrap();
        drop(s);
        let s = Session::open(dir.path(), &id()).unwrap().unwrap();
        assert_eq!(s.records().len(), 2);
    }
}

#[test]
fn a_bad_middle_line_refuses_the_open_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::open_or_create(dir.path(), &id(), frozen).unwrap();
    s.append(user("one")).unwrap();
    drop(s);
    append_raw(dir.path(), b"{\"type\":\"user\"}\n");
    append_raw(dir.path(), user("three").to_line().as_bytes());
    let err = Session::open(dir.path(), &id()).err().unwrap().to_string();
    assert!(err.contains("epoch-000000.jsonl line 2"), "{err}");
    assert!(err.contains("time"), "{err}");
}

#[test]
fn a_whole_last_line_that_is_json_but_not_a_record_is_refused_not_cut() {
    let dir = tempfile::tempdir().unwrap();
    let s = Session::open_or_create(dir.path(), &id(), frozen).unwrap();
    drop(s);
    append_raw(dir.path(), b"{\"type\":\"nonsense\",\"time\":\"t\"}\n");
    let err = Session::open(dir.path(), &id()).err().unwrap().to_string();
    assert!(err.contains("line 1"), "{err}");
}

#[test]
fn the_current_epoch_is_the_highest_with_a_head_and_calls_count_across_epochs() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::open_or_create(dir.path(), &id(), frozen).unwrap();
    s.append(tool_result(9, "read_file", "x", DataClass::Public, false))
        .unwrap();
    let mut head = s.head().clone();
    drop(s);
    head.epoch = 1;
    head.carry = Some("before".into());
    head.carry_label = Label::new(DataClass::Secret, false);
    sessions::head::write(&dir.path().join("main"), &head).unwrap();
    // A log without a head is not an epoch.
    std::fs::write(dir.path().join("main").join(log_file_name(2)), b"").unwrap();
    let mut s = Session::open(dir.path(), &id()).unwrap().unwrap();
    assert_eq!(s.epoch(), 1);
    assert_eq!(s.carry(), Some("before"));
    assert!(s.records().is_empty());
    assert_eq!(s.label(DataClass::Private).class, DataClass::Secret);
    assert_eq!(s.take_call().unwrap(), 10);
}

#[test]
fn a_missing_system_prompt_is_an_error_naming_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let err = Session::open_or_create(dir.path(), &id(), || {
        Err(SessionError::Prompt {
            path: "/nowhere/system.md".into(),
            source: std::io::ErrorKind::NotFound.into(),
        })
    })
    .err()
    .unwrap();
    assert!(err.to_string().contains("/nowhere/system.md"));
    assert!(!dir.path().join("main").exists());
}

#[test]
fn the_same_records_read_back_from_disk_give_the_same_request_bytes() {
    use crate::prompt::replay::messages;
    use llama::ChatRequest;
    let body = |s: &Session| {
        ChatRequest {
            slot: 0,
            messages: messages(s.head(), s.records(), 16_000),
            tools: s.head().tools.clone(),
            thinking: true,
        }
        .body()
    };
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::open_or_create(dir.path(), &id(), || {
        Ok(Frozen {
            system: "You are terse.".into(),
            tools: json!([{"type": "function", "function": {"name": "recall"}}]),
        })
    })
    .unwrap();
    s.append(user("héllo \u{1F600} <tag> \"quoted\"")).unwrap();
    s.append(Record::Assistant {
        cut: false,
        time: T.into(),
        content: None,
        tool_calls: vec![proto::ToolCall {
            id: "c1".into(),
            name: "recall".into(),
            arguments: "{ \"query\" : \"x\" }".into(),
        }],
    })
    .unwrap();
    s.append(tool_result(1, "read_file", "x", DataClass::Public, true))
        .unwrap();
    let before = body(&s);
    drop(s);
    let again = Session::open(dir.path(), &id()).unwrap().unwrap();
    assert_eq!(body(&again), before);
}

/// Regression: counting call numbers in closed epochs read every line whole, with no cap.
/// A line past `sessions::MAX_RECORD_LINE` is now passed over (and logged) without being held, and
/// the records after it still count.
#[test]
fn an_over_long_line_in_a_closed_epoch_is_skipped_and_calls_after_it_still_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::open_or_create(dir.path(), &id(), frozen).unwrap();
    s.append(tool_result(3, "read_file", "x", DataClass::Public, false))
        .unwrap();
    let mut head = s.head().clone();
    drop(s);
    let mut huge = vec![b'x'; sessions::MAX_RECORD_LINE as usize + 1];
    huge.push(b'\n');
    append_raw(dir.path(), &huge);
    append_raw(
        dir.path(),
        tool_result(12, "read_file", "x", DataClass::Public, false)
            .to_line()
            .as_bytes(),
    );
    head.epoch = 1;
    sessions::head::write(&dir.path().join("main"), &head).unwrap();
    let mut s = Session::open(dir.path(), &id()).unwrap().unwrap();
    assert_eq!(s.epoch(), 1);
    assert_eq!(s.take_call().unwrap(), 13);
}

/// Regression: a cut answer's calls (numbered `call-7`, `call-8` for want of the server's
/// ids) never run, so no `tool_result` holds their numbers; after a restart the session
/// handed 7 out again, and a later call without an id got the id `call-7` a second time.
#[test]
fn a_cut_answers_call_numbers_are_not_handed_out_again_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::open_or_create(dir.path(), &id(), frozen).unwrap();
    s.append(tool_result(6, "read_file", "x", DataClass::Public, false))
        .unwrap();
    let call = |id: &str| proto::record::ToolCall {
        id: id.into(),
        name: "read_file".into(),
        arguments: "{}".into(),
    };
    s.append(Record::Assistant {
        time: T.into(),
        content: None,
        tool_calls: vec![call("call-7"), call("call-8"), call("server-id-99")],
        cut: true,
    })
    .unwrap();
    drop(s);
    let mut s = Session::open(dir.path(), &id()).unwrap().unwrap();
    assert_eq!(s.take_call().unwrap(), 9);
}

/// Regression: a log whose `call` was hand-edited to `u64::MAX` was accepted, and the
/// counter saturated there, so every later call got `u64::MAX` again and three records
/// shared one number. Now the last number is given once and then none is.
#[test]
fn call_numbers_are_never_given_twice_once_u64_max_is_reached() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::open_or_create(dir.path(), &id(), frozen).unwrap();
    s.append(tool_result(
        u64::MAX - 1,
        "read_file",
        "x",
        DataClass::Public,
        false,
    ))
    .unwrap();
    assert_eq!(s.take_call().unwrap(), u64::MAX, "the last number, once");
    let e = s.take_call().unwrap_err().to_string();
    assert!(
        e.contains("session main") && e.contains("call numbers are used up"),
        "{e}"
    );
    s.append(tool_result(
        u64::MAX,
        "read_file",
        "y",
        DataClass::Public,
        false,
    ))
    .unwrap();
    assert!(
        s.take_call().is_err(),
        "appending the last number leaves none"
    );
    drop(s);
    // Read back from the log, as after a restart, and after a new epoch.
    let mut s = Session::open(dir.path(), &id()).unwrap().unwrap();
    assert!(matches!(
        s.take_call(),
        Err(SessionError::CallsUsedUp { .. })
    ));
    let mut head = s.head().clone();
    head.epoch = 1;
    sessions::head::write(&dir.path().join("main"), &head).unwrap();
    let mut s = Session::open(dir.path(), &id()).unwrap().unwrap();
    assert_eq!(s.epoch(), 1);
    assert!(
        s.take_call().is_err(),
        "an earlier epoch's number counts too"
    );
}

/// The log's lines as they are on disk now.
fn lines_on_disk(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(log_path(dir))
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

/// Regression: a log replaced on disk while loopd held it open (an editor, or `cp L
/// L.new; sed -i … L.new; mv L.new L`) kept loopd writing to the old, deleted file: every
/// record after the edit was acknowledged and never reached the log at the path.
#[test]
fn a_log_replaced_on_disk_is_read_again_and_later_records_reach_the_file_at_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::open_or_create(dir.path(), &id(), frozen).unwrap();
    s.append(user("first")).unwrap();
    s.append(tool_result(4, "read_file", "x", DataClass::Public, false))
        .unwrap();
    // The edit: a copy with the first line changed, renamed over the log.
    let path = log_path(dir.path());
    let edited = path.with_extension("jsonl.new");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&edited, text.replacen("first", "first, edited", 1)).unwrap();
    std::fs::rename(&edited, &path).unwrap();
    s.append(user("second after edit")).unwrap();
    let on_disk = lines_on_disk(dir.path());
    assert_eq!(on_disk.len(), 3, "{on_disk:?}");
    assert!(on_disk[0].contains("first, edited"), "the edit is kept");
    assert!(on_disk[2].contains("second after edit"), "{on_disk:?}");
    // What the session replays is what the file holds.
    assert_eq!(s.records().len(), 3);
    assert_eq!(s.records()[0], user("first, edited"));
    // Call numbers go on; none is handed out twice.
    assert_eq!(s.take_call().unwrap(), 5);
    // A restart reads the same.
    drop(s);
    let s = Session::open(dir.path(), &id()).unwrap().unwrap();
    assert_eq!(s.records().len(), 3);
}

/// Regression: a new session's epoch 0 adopted a log already at its name whose head had
/// been removed, and replayed its old records under the new head.
#[test]
fn a_headless_log_at_epoch_zeros_name_is_set_aside_not_adopted() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join(id().as_str());
    std::fs::create_dir_all(&session).unwrap();
    std::fs::write(
        session.join("epoch-000000.jsonl"),
        user("old words").to_line(),
    )
    .unwrap();
    let s = Session::open_or_create(dir.path(), &id(), frozen).unwrap();
    assert!(s.records().is_empty(), "{:?}", s.records());
    let aside = std::fs::read_dir(&session)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .find(|n| n.starts_with("epoch-000000.jsonl.stray-"));
    let aside = aside.expect("the old log is kept, set aside");
    let kept = std::fs::read_to_string(session.join(aside)).unwrap();
    assert!(kept.contains("old words"));
}

/// The owner asks, the model reads a secret result (`4471`), and an edit on disk takes the
/// result out of the log: a copy holding only the first line renamed over it.
fn read_a_secret_then_edit_it_out(s: &mut Session, dir: &Path) {
    s.append(user("read the vault file")).unwrap();
    s.append(tool_result(
        1,
        "read_file",
        "the code is 4471",
        DataClass::Secret,
        false,
    ))
    .unwrap();
    assert_eq!(s.label(DataClass::Public).class, DataClass::Secret);
    let path = log_path(dir);
    let edited = path.with_extension("jsonl.new");
    let text = std::fs::read_to_string(&path).unwrap();
    let first = text.lines().next().unwrap().to_string();
    std::fs::write(&edited, format!("{first}\n")).unwrap();
    std::fs::rename(&edited, &path).unwrap();
}

/// Regression: reading a replaced log again recomputed the label from the file, so an
/// edit that took a secret tool result out (while the model was answering what it had
/// read) lowered the label the rest of the turn was judged under; and, once that was
/// kept in memory, every reader of the file (memoryd, the Honcho reporter, a restart)
/// still stepped the lower label through it.
#[test]
fn a_log_replaced_without_its_secret_record_keeps_the_label_the_model_read_under() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::open_or_create(dir.path(), &id(), frozen).unwrap();
    read_a_secret_then_edit_it_out(&mut s, dir.path());
    s.append(user("and now?")).unwrap();
    let on_disk = lines_on_disk(dir.path());
    assert_eq!(on_disk.len(), 3, "the edit is followed: {on_disk:?}");
    assert!(!on_disk.iter().any(|l| l.contains("4471")), "{on_disk:?}");
    assert_eq!(
        s.label(DataClass::Public).class,
        DataClass::Secret,
        "the model read the secret; the label stays"
    );
    // The file says so too: a `forgotten` record where the secret stood, before the
    // next record, so whoever steps the label through the file gets the same.
    let floor = Record::from_line(&on_disk[1]).unwrap();
    assert!(
        matches!(
            floor,
            Record::Forgotten {
                class: DataClass::Secret,
                records: 0,
                ..
            }
        ),
        "{floor:?}"
    );
    drop(s);
    let again = Session::open(dir.path(), &id()).unwrap().unwrap();
    assert_eq!(again.label(DataClass::Public).class, DataClass::Secret);
}

/// Regression: a file renamed over the log between the check and the write took the
/// record into the replaced file, which nobody reads; acknowledged, it was lost.
#[test]
fn a_record_written_into_a_log_replaced_under_the_write_goes_again_to_the_file_at_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::open_or_create(dir.path(), &id(), frozen).unwrap();
    s.append(user("first")).unwrap();
    // The swap lands right after the check: a second handle on the old file stands for
    // the moment between `follow_disk` and the write.
    let path = log_path(dir.path());
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = path.with_extension("jsonl.new");
    std::fs::write(&edited, &text).unwrap();
    s.follow_disk().unwrap();
    std::fs::rename(&edited, &path).unwrap();
    s.log.append(&user("second")).unwrap();
    assert!(matches!(
        s.log.changed().unwrap(),
        Some(sessions::log::Changed::Replaced)
    ));
    // What `append` does after its write.
    assert!(!s.again_if_replaced(&user("second"), 1).unwrap());
    let on_disk = lines_on_disk(dir.path());
    assert_eq!(on_disk.len(), 2, "{on_disk:?}");
    assert!(on_disk[1].contains("second"), "{on_disk:?}");
}

/// Regression: a copy of the log made after the write and renamed over it during the
/// write's `fdatasync` already held the record, and it was written into it again: two
/// copies of one record (of an answer with calls, two calls with one id). Then, not
/// written again, it was still added to the records read again, which held it: the
/// prompt replayed it twice.
#[test]
fn a_record_the_replacing_file_already_holds_is_not_written_or_replayed_twice() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::open_or_create(dir.path(), &id(), frozen).unwrap();
    s.append(user("first")).unwrap();
    // The copy is made after the write and renamed over the log.
    s.append_then(user("second"), |path| {
        let edited = path.with_extension("jsonl.new");
        std::fs::copy(path, &edited).unwrap();
        std::fs::rename(&edited, path).unwrap();
    })
    .unwrap();
    let on_disk = lines_on_disk(dir.path());
    assert_eq!(on_disk.len(), 2, "{on_disk:?}");
    assert_eq!(s.records(), &[user("first"), user("second")]);
}

/// Regression: the label read under was kept only once the `forgotten` record carrying
/// it was written, so a failed write (a full disk) left the session on the file's lower
/// label, and the job's error dropped it from memory, where alone the label was.
#[test]
fn a_reread_keeps_the_label_in_memory_before_the_log_is_told_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::open_or_create(dir.path(), &id(), frozen).unwrap();
    read_a_secret_then_edit_it_out(&mut s, dir.path());
    // The re-read alone, as when the write after it fails.
    let changed = s.log.changed().unwrap().unwrap();
    s.read_again(changed).unwrap();
    assert_eq!(s.label(DataClass::Public).class, DataClass::Secret);
    assert!(
        s.owes_floor(),
        "the session must stay open until the log is told"
    );
    assert_eq!(lines_on_disk(dir.path()).len(), 1);
    // The next append writes the record owed first.
    s.append(user("and now?")).unwrap();
    assert!(!s.owes_floor());
    let on_disk = lines_on_disk(dir.path());
    assert_eq!(on_disk.len(), 3, "{on_disk:?}");
    assert!(on_disk[1].contains("\"forgotten\""), "{on_disk:?}");
}

/// A log replaced by one with a bad line is refused as an open would refuse it, naming
/// file and line, and nothing is written anywhere: the record is not acknowledged.
#[test]
fn a_log_replaced_by_a_damaged_one_refuses_the_append_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::open_or_create(dir.path(), &id(), frozen).unwrap();
    s.append(user("first")).unwrap();
    let path = log_path(dir.path());
    let edited = path.with_extension("jsonl.new");
    std::fs::write(
        &edited,
        format!("not json\n{}", user("first").to_line()).as_bytes(),
    )
    .unwrap();
    std::fs::rename(&edited, &path).unwrap();
    let err = s.append(user("second")).err().unwrap().to_string();
    assert!(err.contains("epoch-000000.jsonl line 1"), "{err}");
    assert_eq!(lines_on_disk(dir.path()).len(), 2);
}

/// A log written to by something else in place (same file, a record more) is read again
/// too, so the next record follows it and the session holds it.
#[test]
fn a_log_written_to_in_place_by_something_else_is_read_again_before_an_append() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::open_or_create(dir.path(), &id(), frozen).unwrap();
    s.append(user("first")).unwrap();
    append_raw(dir.path(), user("from outside").to_line().as_bytes());
    s.append(user("third")).unwrap();
    assert_eq!(lines_on_disk(dir.path()).len(), 3);
    assert_eq!(s.records()[1], user("from outside"));
    assert_eq!(s.records().len(), 3);
}

/// Regression: a session directory that is a symbolic link was followed, served and
/// appended to, while memoryd and `/forget` refuse to follow it: the text it held was
/// out of `/forget`'s reach, which then said every session was searched.
#[test]
fn a_session_directory_that_is_a_symbolic_link_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let mut real = Session::open_or_create(elsewhere.path(), &id(), frozen).unwrap();
    real.append(user("remember the code word is pineapple"))
        .unwrap();
    drop(real);
    std::os::unix::fs::symlink(elsewhere.path().join("main"), dir.path().join("main")).unwrap();
    let linked = dir.path().join("main").display().to_string();
    for err in [
        Session::open(dir.path(), &id()).err().unwrap(),
        Session::open_or_create(dir.path(), &id(), frozen)
            .err()
            .unwrap(),
    ] {
        let err = err.to_string();
        assert!(
            err.contains(&linked) && err.contains("is a symbolic link; not followed"),
            "{err}"
        );
    }
    // Nothing was written through the link.
    let log = elsewhere.path().join("main").join(log_file_name(0));
    assert_eq!(std::fs::read_to_string(log).unwrap().lines().count(), 1);
    // Other sessions are served as ever.
    let other = SessionId::parse("other").unwrap();
    let mut s = Session::open_or_create(dir.path(), &other, frozen).unwrap();
    s.append(user("hi")).unwrap();
}
