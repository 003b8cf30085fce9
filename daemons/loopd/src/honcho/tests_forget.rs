//! Forgetting in Honcho against the stand-in: the messages that hold forgotten text are
//! named (Honcho cannot delete them), the conclusions of that session that may hold it
//! are deleted, and the others are left.

use super::forget::{forget, Record};
use super::tests::{config, settle, start, Logs};
use proto::head::log_file_name;
use standins::honcho::{Conclusion, Standin};

/// Where the line holding `needle` starts in `main`'s epoch 0 log.
fn offset_of(logs: &Logs, needle: &str) -> u64 {
    let log = std::fs::read_to_string(logs.dir.join(log_file_name(0))).unwrap();
    let mut at = 0;
    for line in log.split_inclusive('\n') {
        if line.contains(needle) {
            return at;
        }
        at += line.len() as u64;
    }
    panic!("no line with {needle:?}");
}

fn conclusion(id: &str, session: &str, created_at: &str) -> Conclusion {
    Conclusion {
        id: id.into(),
        session: session.into(),
        content: format!("conclusion {id}"),
        created_at: created_at.into(),
    }
}

#[test]
fn forgetting_names_the_messages_honcho_keeps_and_deletes_the_conclusions_that_may_hold_them() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut n = logs.owner_turn(0, 1, false).len();
    let forgotten = logs.owner_turn(0, 2, false);
    n += forgotten.len();
    n += logs.owner_turn(0, 3, false).len();
    let cfg = config(state.path(), &server);
    let reporter = start(&cfg);
    settle(&reporter, &server, "main", n);
    reporter.stop();
    let at = forgotten[0].2.clone();
    let honcho_id = server.with(|st| {
        st.conclusions = vec![
            conclusion("before", "main", "2026-01-01T00:00:00Z"),
            conclusion("after", "main", &at),
            conclusion("elsewhere", "other", &at),
        ];
        st.messages
            .iter()
            .find(|m| m.content == "question 2")
            .unwrap()
            .id
            .clone()
    });
    let record = Record {
        epoch: 0,
        offset: offset_of(&logs, "question 2"),
        time: forgotten[0].2.clone(),
    };
    let done = forget(&cfg.honcho, "main", &[record]).unwrap();
    assert_eq!(done.messages_left, vec![honcho_id.clone()]);
    assert_eq!(done.conclusions_deleted, 1);
    assert_eq!(done.failed, None);
    server.with(|st| {
        let left: Vec<&str> = st.conclusions.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(left, ["before", "elsewhere"]);
    });
    let s = done.sentence();
    assert!(s.contains(&honcho_id), "{s}");
    assert!(s.contains("cannot delete or edit a message"), "{s}");
}

#[test]
fn forgetting_text_honcho_never_got_says_so_and_deletes_nothing() {
    let server = Standin::start();
    server.with(|st| st.conclusions = vec![conclusion("c", "main", "2026-01-01T00:00:00Z")]);
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
    )
    .unwrap();
    assert!(done.messages_left.is_empty());
    assert!(
        done.sentence().starts_with("Honcho holds no message"),
        "{}",
        done.sentence()
    );
    server.with(|st| assert_eq!(st.conclusions.len(), 1));
    let mut off = cfg.honcho.clone();
    off.url = String::new();
    assert!(
        forget(&off, "main", &[]).is_none(),
        "reporting off: nothing to do"
    );
}

/// A record reported before an earlier forget of its epoch moved its line is named by
/// Honcho's id under its old place, found by its epoch, side and time.
#[test]
fn a_record_whose_line_an_earlier_forget_moved_is_still_found_in_honcho() {
    use crate::forget::find::find;
    use crate::forget::{apply, plan::Plan};
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut n = logs.owner_turn(0, 1, false).len();
    let second = logs.owner_turn(0, 2, false);
    n += second.len();
    let cfg = config(state.path(), &server);
    let reporter = start(&cfg);
    settle(&reporter, &server, "main", n);
    reporter.stop();
    let old_offset = offset_of(&logs, "question 2");

    let forget_query = |query: &str| {
        let found = find(&logs.dir, query, proto::DataClass::Private).unwrap();
        let chosen: Vec<_> = found.iter().collect();
        let plan = Plan::build("main", proto::time::now_rfc3339(), &chosen, query);
        apply::run(state.path(), &state.path().join("sessions"), &plan).unwrap();
        crate::forget::plan::remove(state.path(), "main").unwrap();
        plan
    };
    forget_query("question 1");
    let plan = forget_query("question 2");
    let records = plan.reported();
    assert_eq!(records.len(), 1);
    assert_ne!(
        records[0].offset, old_offset,
        "the first forget moved the line"
    );
    let done = forget(&cfg.honcho, "main", &records).unwrap();
    let honcho_id = server.with(|st| {
        st.messages
            .iter()
            .find(|m| m.content == "question 2")
            .unwrap()
            .id
            .clone()
    });
    assert_eq!(done.messages_left, vec![honcho_id]);
}
