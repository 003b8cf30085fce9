//! Catching up with the logs: at start, on a nudge, before every recall; sessions that
//! come and go; torn and bad lines; restarts.

use super::*;

fn texts(hits: &[Hit]) -> Vec<&str> {
    let mut t: Vec<&str> = hits.iter().map(|h| h.text.as_str()).collect();
    t.sort_unstable();
    t
}

#[test]
fn a_recall_sees_every_line_written_before_it() {
    let fx = Fixture::new("");
    let epoch = Epoch::start(&fx, "main");
    epoch.add(&user("first otter"));
    let _d = Daemon::start("memoryd", &fx);
    assert_eq!(texts(&recall(&fx, "otter")), vec!["first otter"]);
    epoch.add(&assistant("second otter"));
    assert_eq!(
        texts(&recall(&fx, "otter")),
        vec!["first otter", "second otter"]
    );
}

#[test]
fn a_session_that_appears_later_is_picked_up_and_a_removed_one_dropped() {
    let fx = Fixture::new("");
    Epoch::start(&fx, "early").add(&user("early heron"));
    let _d = Daemon::start("memoryd", &fx);
    assert_eq!(recall(&fx, "heron").len(), 1);
    Epoch::start(&fx, "late").add(&user("late heron"));
    assert_eq!(
        texts(&recall(&fx, "heron")),
        vec!["early heron", "late heron"]
    );
    std::fs::remove_dir_all(fx.state_dir.join("sessions/early")).unwrap();
    assert_eq!(texts(&recall(&fx, "heron")), vec!["late heron"]);
    let s = status(&fx);
    assert_eq!((s.logs, s.rows), (1, 1));
}

#[test]
fn a_nudge_indexes_the_session_and_answers_with_status() {
    let fx = Fixture::new("");
    let _d = Daemon::start("memoryd", &fx);
    Epoch::start(&fx, "main")
        .add(&user("nudged badger"))
        .add(&assistant("yes"));
    let answer = frames::ask(
        &fx.memoryd_sock,
        &Request::Nudge {
            session: "main".into(),
        },
    )
    .unwrap();
    let Response::Status(s) = answer else {
        panic!("{answer:?}")
    };
    assert_eq!((s.logs, s.rows), (1, 2));
    let bad = frames::ask(
        &fx.memoryd_sock,
        &Request::Nudge {
            session: "../etc".into(),
        },
    )
    .unwrap();
    assert!(matches!(bad, Response::Error { .. }), "{bad:?}");
}

#[test]
fn every_epoch_with_a_head_is_indexed_and_a_log_without_one_waits() {
    let fx = Fixture::new("");
    Epoch::start(&fx, "main").add(&user("epoch zero lynx"));
    Epoch::begin(&fx.state_dir, "main", 1, Label::PUBLIC).add(&user("epoch one lynx"));
    let headless = fx.state_dir.join("sessions/main").join(log_file_name(2));
    std::fs::write(&headless, user("epoch two lynx").to_line()).unwrap();
    let _d = Daemon::start("memoryd", &fx);
    let mut epochs: Vec<u64> = recall(&fx, "lynx").iter().map(|h| h.epoch).collect();
    epochs.sort_unstable();
    assert_eq!(epochs, vec![0, 1]);
    Epoch::begin(&fx.state_dir, "main", 2, Label::PUBLIC);
    assert_eq!(recall(&fx, "lynx").len(), 3);
}

#[test]
fn a_torn_last_line_is_left_for_later_and_never_indexed_half() {
    let fx = Fixture::new("");
    let epoch = Epoch::start(&fx, "main");
    epoch.add(&user("whole gecko"));
    let line = user("torn gecko tail").to_line();
    let (head, tail) = line.split_at(line.len() / 2);
    epoch.raw(head.as_bytes());
    let _d = Daemon::start("memoryd", &fx);
    assert_eq!(texts(&recall(&fx, "gecko")), vec!["whole gecko"]);
    assert_eq!(status(&fx).rows, 1);
    epoch.raw(tail.as_bytes());
    assert_eq!(
        texts(&recall(&fx, "gecko")),
        vec!["torn gecko tail", "whole gecko"]
    );
    assert_eq!(status(&fx).rows, 2);
}

#[test]
fn a_bad_line_in_the_middle_skips_that_file_with_an_error_naming_file_and_line() {
    let fx = Fixture::new("");
    let bad = Epoch::start(&fx, "broken");
    bad.add(&user("good puffin"))
        .raw(b"{\"type\":\"user\",\"time\":\"x\"}\n")
        .add(&user("later puffin"));
    Epoch::start(&fx, "fine").add(&user("fine puffin"));
    let d = Daemon::start("memoryd", &fx);
    assert_eq!(texts(&recall(&fx, "puffin")), vec!["fine puffin"]);
    let line = d.wait_log("line 2");
    assert!(line.starts_with("memoryd: "), "{line}");
    assert!(line.contains(&bad.log.display().to_string()), "{line}");
    assert!(line.contains("content"), "names the field: {line}");
    // Reported once, not on every recall.
    recall(&fx, "puffin");
    let reports = d
        .log
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains("line 2"))
        .count();
    assert_eq!(reports, 1);
}

#[test]
fn a_restart_continues_where_it_stopped_without_duplicates() {
    let fx = Fixture::new("");
    let epoch = Epoch::start(&fx, "main");
    epoch.add(&user("before the restart ibis"));
    let mut d = Daemon::start("memoryd", &fx);
    assert_eq!(recall(&fx, "ibis").len(), 1);
    assert!(d.stop().success());
    epoch.add(&user("after the restart ibis"));
    let _d = Daemon::start("memoryd", &fx);
    assert_eq!(recall(&fx, "ibis").len(), 2);
    assert_eq!(status(&fx).rows, 2);
}
