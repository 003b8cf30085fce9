//! The reporter against the stand-in Honcho, driven with pokes; the harness (logs written
//! as loopd writes them, waits on events, never on sleeps) is `test_support`.

use super::test_standin::*;
use super::*;
use proto::head::log_file_name;
use proto::{Origin, Record};
use standins::honcho::{Fault, Standin, HANG};

#[test]
fn no_url_means_no_reporter() {
    assert!(Reporter::start(&Arc::default(), never_rewriting).is_none());
}

/// Regression: the reporter copied the state directory, the peers, the classes and the
/// Honcho session out of the configuration into its own state. It now keeps the `Arc` it
/// is handed (one more holder while it runs, none after it stops) and reads that.
#[test]
fn the_reporter_holds_the_configuration_it_is_handed_not_a_copy() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = logs.owner_turn(0, 1, false);
    let cfg = Arc::new(config(state.path(), &server));
    let reporter = Reporter::start_with(Arc::clone(&cfg), options(AfterPost::Continue)).unwrap();
    assert_eq!(
        Arc::strong_count(&cfg),
        2,
        "the reporter shares the one Arc"
    );
    settle(&reporter, &server, "main", want.len());
    server.with(|st| assert_eq!(got(st), want));
    reporter.stop();
    assert_eq!(
        Arc::strong_count(&cfg),
        1,
        "a stopped reporter holds nothing"
    );
}

#[test]
fn owner_turns_are_reported_once_in_order_without_heartbeats_or_tool_traffic() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut want = logs.owner_turn(0, 1, true);
    logs.user(0, "HEARTBEAT-PROMPT", Origin::Heartbeat);
    logs.assistant(0, Some("HEARTBEAT_OK"), false);
    want.extend(logs.owner_turn(0, 2, false));
    let reporter = start(&config(state.path(), &server));
    reporter.poke("main");
    settle(&reporter, &server, "main", want.len());
    server.with(|st| {
        assert_eq!(got(st), want);
        for m in &st.messages {
            assert_eq!(
                m.session, "main",
                "the boxmaker session names the Honcho session"
            );
            assert_eq!(m.metadata["boxmaker_session"], "main");
        }
        let ids: Vec<&str> = st
            .messages
            .iter()
            .map(|m| m.metadata["boxmaker_id"].as_str().unwrap())
            .collect();
        assert!(ids[0].starts_with("main/0/0/owner"), "{ids:?}");
        assert!(ids[1].ends_with("/assistant"), "{ids:?}");
    });
    // Later turns go out after the earlier ones, and nothing is sent twice.
    let more = logs.owner_turn(0, 3, false);
    want.extend(more);
    settle(&reporter, &server, "main", want.len());
    server.with(|st| assert_eq!(got(st), want));
}

#[test]
fn an_unfinished_turn_waits_for_its_final_answer_and_a_torn_line_is_not_read() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let tq = logs.user(0, "question", Origin::Owner);
    logs.tool_traffic(0);
    let reporter = start(&config(state.path(), &server));
    round(&reporter, "main");
    server.with(|st| assert!(st.posts().is_empty(), "posted {:?}", st.messages));

    // The final answer's line without its newline yet: still not read.
    let ta = logs.time();
    let line = Record::Assistant {
        cut: false,
        time: ta.clone(),
        content: Some("answer".into()),
        tool_calls: vec![],
    }
    .to_line();
    logs.raw(0, line.trim_end_matches('\n'));
    round(&reporter, "main");
    server.with(|st| assert!(st.posts().is_empty(), "posted {:?}", st.messages));

    logs.raw(0, "\n");
    settle(&reporter, &server, "main", 2);
    let want = vec![
        ("owner".to_string(), "question".to_string(), tq),
        ("assistant".to_string(), "answer".to_string(), ta),
    ];
    server.with(|st| assert_eq!(got(st), want));
}

/// Regression: a turn whose rounds ran out (its last answer still asked for tools, so it
/// has none free of them) was dropped when the next line came, and the owner's message
/// never reached Honcho. It is reported with its last answer's text once the next line
/// shows it finished; a turn with no answer at all (it failed) is not.
#[test]
fn a_turn_whose_rounds_ran_out_is_reported_with_its_last_answer() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let t1 = logs.user(0, "look it up", Origin::Owner);
    let a1 = logs.assistant(0, Some("still looking"), true);
    logs.user(0, "a turn that failed", Origin::Owner);
    let t2 = logs.user(0, "thanks", Origin::Owner);
    let a2 = logs.assistant(0, Some("welcome"), false);
    let reporter = start(&config(state.path(), &server));
    reporter.poke("main");
    settle(&reporter, &server, "main", 4);
    let want = vec![
        ("owner".to_string(), "look it up".to_string(), t1),
        ("assistant".to_string(), "still looking".to_string(), a1),
        ("owner".to_string(), "thanks".to_string(), t2),
        ("assistant".to_string(), "welcome".to_string(), a2),
    ];
    server.with(|st| assert_eq!(got(st), want));
}

#[test]
fn a_turn_rerun_in_the_next_epoch_is_reported_once_and_the_carry_never() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut want = logs.owner_turn(0, 1, false);
    // Turn 2 runs out of context in epoch 0 and is run again in epoch 1.
    logs.user(0, "question 2", Origin::Owner);
    logs.tool_traffic(0);
    logs.head(1, Some("CARRY-SUMMARY"));
    want.extend(logs.owner_turn(1, 2, false));
    let reporter = start(&config(state.path(), &server));
    settle(&reporter, &server, "main", want.len());
    server.with(|st| {
        assert_eq!(got(st), want);
        assert!(st.messages.iter().all(|m| !m.content.contains("CARRY")));
    });
}

#[test]
fn a_stretch_of_503s_delays_reports_and_loses_none() {
    let server = Standin::start();
    server.with(|st| {
        st.list_faults
            .extend([Fault::Status(503), Fault::Status(502)]);
        st.post_faults.extend([Fault::Status(503); 3]);
    });
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut want = Vec::new();
    for n in 0..3 {
        want.extend(logs.owner_turn(0, n, n == 1));
    }
    let reporter = start(&config(state.path(), &server));
    reporter.poke("main");
    settle(&reporter, &server, "main", want.len());
    server.with(|st| assert_eq!(got(st), want));
    assert!(reporter.health().failures >= 5, "{:?}", reporter.health());
}

#[test]
fn a_server_that_is_down_then_up_gets_everything_once_in_order() {
    let mut server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut want = logs.owner_turn(0, 1, false);
    let reporter = start(&config(state.path(), &server));
    settle(&reporter, &server, "main", want.len());

    server.down();
    let failures = reporter.health().failures;
    want.extend(logs.owner_turn(0, 2, true));
    reporter.poke("main");
    want.extend(logs.owner_turn(0, 3, false));
    reporter.poke("main");
    let h = reporter.wait_for(HANG, |h| h.failures >= failures + 2);
    assert!(h.failures >= failures + 2, "{h:?}");
    assert!(h.last_error.is_some());

    server.up();
    settle(&reporter, &server, "main", want.len());
    server.with(|st| assert_eq!(got(st), want));
}

#[test]
fn a_bad_line_stops_the_scan_with_the_file_and_byte_named() {
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    logs.owner_turn(0, 1, false);
    let at = std::fs::metadata(logs.dir.join(log_file_name(0)))
        .unwrap()
        .len();
    logs.raw(0, "{\"type\":\"user\"}\n");
    logs.owner_turn(0, 2, false);
    let e = scan::scan(&logs.dir, cursor::Cursor::default(), 50)
        .unwrap_err()
        .to_string();
    assert!(e.contains("epoch-000000.jsonl"), "{e}");
    assert!(e.contains(&format!("byte {at}")), "{e}");
    assert!(e.contains("`time`"), "{e}");
}

#[test]
fn a_cursor_past_the_logs_is_an_error_not_a_silent_stop() {
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    logs.owner_turn(0, 1, false);
    let past_end = cursor::Cursor {
        epoch: 0,
        offset: 1 << 20,
        done: 0,
    };
    let e = scan::scan(&logs.dir, past_end, 50).unwrap_err().to_string();
    assert!(e.contains("past the end of log"), "{e}");
    let gone = cursor::Cursor {
        epoch: 7,
        offset: 0,
        done: 0,
    };
    let e = scan::scan(&logs.dir, gone, 50).unwrap_err().to_string();
    assert!(e.contains("epoch 7"), "{e}");
}

/// Regression: the scan read log lines without a cap, so a damaged log with no newlines was
/// held whole in memory. A line past `MAX_RECORD_LINE` is now a bad line, named like one.
#[test]
fn a_log_line_over_the_record_line_limit_is_a_bad_line_not_read_whole() {
    use sessions::MAX_RECORD_LINE;
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    logs.owner_turn(0, 1, false);
    let at = std::fs::metadata(logs.dir.join(log_file_name(0)))
        .unwrap()
        .len();
    logs.raw(0, &"x".repeat(MAX_RECORD_LINE as usize + 1));
    logs.raw(0, "\n");
    logs.owner_turn(0, 2, false);
    let e = scan::scan(&logs.dir, cursor::Cursor::default(), 50)
        .unwrap_err()
        .to_string();
    assert!(e.contains("epoch-000000.jsonl"), "{e}");
    assert!(e.contains(&format!("byte {at}")), "{e}");
    assert!(e.contains(&format!("over {MAX_RECORD_LINE} bytes")), "{e}");
}
