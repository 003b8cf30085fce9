//! Call numbers through a turn: never given twice, and loopd's own to give.

use super::*;

/// Regression: after a hand-edited `call` of `u64::MAX` in the log, each call the model
/// asked for was numbered `u64::MAX` again (the counter saturated), so several records
/// shared one number. The turn now fails naming the session, and logs no call.
#[test]
fn a_turn_whose_session_has_no_call_number_left_fails_naming_it_and_runs_no_call() {
    let mut r = rig();
    r.session
        .append(Record::ToolResult {
            time: "2026-11-30T06:00:00.000Z".into(),
            call: u64::MAX,
            tool_call_id: "c1".into(),
            name: "read_file".into(),
            content: "edited by hand".into(),
            class: proto::DataClass::Public,
            untrusted: false,
        })
        .unwrap();
    let args = serde_json::json!({ "path": r.files.join("boat.txt") }).to_string();
    r.script.then(calls("read_file", &args, "tool_calls"));
    let mut screen = Screen::default();
    let e = r
        .engine
        .turn(&mut r.session, "read it", Origin::Owner, None, &mut screen)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("session main") && e.contains("call numbers are used up"),
        "{e}"
    );
    assert_eq!(kinds(&r.session), ["tool_result", "user"], "no call logged");
}

/// Regression: in chat formats where the model writes the call's id, an id written as
/// `call-18446744073709551615` was kept and counted as a number taken, so every later
/// tool call of the session failed for good. An id in loopd's own shape is loopd's.
#[test]
fn a_call_id_in_loopds_own_shape_is_replaced_by_loopds_number() {
    let mut r = rig();
    let args = serde_json::json!({ "path": r.files.join("boat.txt") }).to_string();
    let mut answer = calls("read_file", &args, "tool_calls");
    if let Answer::Says(_, completion) = &mut answer {
        completion.tool_calls[0].id = format!("call-{}", u64::MAX);
    }
    r.script.then(answer);
    r.script.then(says("done"));
    let mut screen = Screen::default();
    r.engine
        .turn(&mut r.session, "read it", Origin::Owner, None, &mut screen)
        .unwrap();
    let ids: Vec<String> = r
        .session
        .records()
        .iter()
        .filter_map(|rec| match rec {
            Record::Assistant { tool_calls, .. } => {
                Some(tool_calls.iter().map(|c| c.id.clone()).collect::<Vec<_>>())
            }
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(ids, ["call-1"], "{ids:?}");
    assert_eq!(r.session.take_call().unwrap(), 2, "numbers go on");
}
