//! `/recall` as a room gets it (docs/matrix.md, 'Labels', 'Forgetting'): asked of memoryd
//! for nothing above `matrix.max_class`, and redacted with its answer by the next removal.
//! The rig is the rooms' tests'.

use crate::channel::tests_rooms::Rig;
use crate::channel::work::Probe;
use crate::worker::Event;

/// Guards `/recall` in a room, a line "exactly as on the socket": it is asked of memoryd,
/// for nothing above `matrix.max_class`, so every hit it quotes may go to the homeserver.
#[test]
fn recall_in_a_room_asks_memoryd_for_nothing_above_the_rooms_class() {
    for (room_class, asked) in [
        (proto::DataClass::Private, proto::DataClass::Private),
        (proto::DataClass::Public, proto::DataClass::Public),
        (proto::DataClass::Secret, proto::DataClass::Private),
    ] {
        let mut rig = Rig::new();
        let mut cfg = (*rig.ch.cfg).clone();
        cfg.matrix.max_class = room_class;
        rig.ch.cfg = std::sync::Arc::new(cfg);
        rig.lines(&[("$q1", "/recall my pin")]);
        assert!(rig.sent().is_empty(), "answered by the probe, not refused");
        let probes = &rig.ch.worker.probes;
        assert_eq!(probes.len(), 1, "{probes:?}");
        assert_eq!(
            probes[0].1,
            Probe::Recall {
                query: "my pin".into(),
                max_class: asked
            },
            "matrix.max_class {room_class}"
        );
    }
}

/// Regression: a `/recall` answered in a room wrote no record, so `/forget` found neither
/// the command nor its answer quoting the forgotten text, and both stayed in the room. A
/// removal now redacts the room's `/recall` commands since the last one, and their answers.
#[test]
fn a_removal_redacts_a_recall_and_its_answer_in_the_room() {
    let mut rig = Rig::new();
    rig.lines(&[("$e1", "my PIN is 4471")]);
    let (id, ..) = rig.turn(0);
    rig.event(Event::Done {
        id,
        reply: Ok("Noted.".into()),
    });
    rig.lines(&[("$q1", "/recall 4471")]);
    let (pid, _) = rig.ch.worker.probes[0].clone();
    rig.event(Event::HitHeader {
        id: pid,
        tainted: false,
        session: "main".into(),
        time: "2026-12-07T10:00:00Z".into(),
    });
    rig.event(Event::Text {
        id: pid,
        text: "the owner said: my PIN is 4471\n".into(),
    });
    rig.event(Event::Done {
        id: pid,
        reply: Ok(String::new()),
    });
    let sent = rig.sent();
    for (i, o) in sent.iter().enumerate() {
        rig.acked(&o.txn, &format!("$r{i}"));
    }
    // What the worker sends after `/forget "4471"` removed the turn's records.
    rig.event(Event::Redact(vec!["$e1".into()], None));
    let redacted: Vec<String> = rig.redactions();
    let answer = format!("$r{}", sent.len() - 1);
    for gone in ["$e1", "$q1", answer.as_str()] {
        assert!(redacted.iter().any(|e| e == gone), "{gone}: {redacted:?}");
    }
}

/// A removal made while a room's `/recall` is still being answered redacts the command at
/// once, and the answer, which memoryd may have read before the removal reached its
/// index, is not sent: loopd's notice says why.
#[test]
fn a_removal_during_a_recall_redacts_the_command_and_sends_a_notice_for_its_answer() {
    let mut rig = Rig::new();
    rig.lines(&[("$q1", "/recall 4471")]);
    let (pid, _) = rig.ch.worker.probes[0].clone();
    rig.event(Event::Redact(Vec::new(), None));
    let redactions: Vec<String> = rig.redactions();
    assert!(redactions.iter().any(|e| e == "$q1"), "{redactions:?}");
    rig.event(Event::Text {
        id: pid,
        text: "the owner said: my PIN is 4471\n".into(),
    });
    rig.event(Event::Done {
        id: pid,
        reply: Ok(String::new()),
    });
    let sent = rig.sent();
    assert!(
        !sent.iter().any(|o| o.content.to_string().contains("4471")),
        "{sent:?}"
    );
    assert!(
        sent.iter().any(|o| o.content["msgtype"] == "m.notice"
            && o.content["body"]
                .as_str()
                .is_some_and(|b| b.contains("is not sent: a /forget"))),
        "{sent:?}"
    );
}

// ---- Regressions found by the review of the redaction of room recalls (each test's
// comment says what used to go wrong).

/// Answers every `/recall` probe from `from` on (one at a time, as the connection pumps
/// them) with a hit saying `text`, acknowledging all that is sent; the next probe's index.
fn answer_recalls(rig: &mut Rig, from: usize, text: &str) -> usize {
    let mut n = from;
    let mut acked = 0;
    while n < rig.ch.worker.probes.len() {
        let (pid, _) = rig.ch.worker.probes[n].clone();
        rig.event(Event::Text {
            id: pid,
            text: format!("the owner said: {text}\n"),
        });
        rig.event(Event::Done {
            id: pid,
            reply: Ok(String::new()),
        });
        for o in rig.sent() {
            rig.acked(&o.txn, &format!("$ans{n}-{acked}"));
            acked += 1;
        }
        n += 1;
    }
    n
}

/// Regression: the room's `/recall` commands were kept in a list of their own, bounded
/// at 1 024: an older one, and its answer quoting the text, survived the next removal
/// though the store still knew both events. They are now found where every room event is.
#[test]
fn an_old_recall_is_redacted_by_a_removal_however_many_came_after_it() {
    let mut rig = Rig::new();
    for i in 0..1025 {
        let (event, body) = (format!("$q{i}"), format!("/recall thing{i}"));
        rig.lines(&[(event.as_str(), body.as_str())]);
        let n = rig.ch.worker.probes.len() - 1;
        answer_recalls(&mut rig, n, if i == 0 { "my PIN is 4471" } else { "x" });
    }
    rig.event(Event::Redact(Vec::new(), None));
    let red = rig.redactions();
    for gone in ["$q0", "$q1024"] {
        assert!(
            red.iter().any(|e| e == gone),
            "{gone}: {} redactions",
            red.len()
        );
    }
    assert!(
        red.iter().any(|e| e.starts_with("$ans0-")),
        "the old answer"
    );
}

/// Regression: the lines one removal redacted were kept among the last 1 024, its own
/// first: with a thousand room recalls beside them, a turn the removal named while it was
/// being answered kept its owner's event and sent its reply, and the removal's pending
/// file was never settled.
#[test]
fn a_removal_beside_many_recalls_keeps_every_line_it_named() {
    let mut rig = Rig::new();
    rig.lines(&[("$e1", "my PIN is 4471")]);
    let (turn, ..) = rig.turn(0);
    let queued: Vec<(String, String)> = (0..1024)
        .map(|i| (format!("$q{i}"), format!("/recall thing{i}")))
        .collect();
    let queued: Vec<(&str, &str)> = queued
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    rig.lines(&queued);
    crate::redactions::pending_write(&rig.state, &["$e1".to_string()], None).unwrap();
    rig.event(Event::Redact(vec!["$e1".into()], None));
    rig.event(Event::Done {
        id: turn,
        reply: Ok("Noted: 4471.".into()),
    });
    let sent = rig.sent();
    assert!(
        !sent.iter().any(|o| o.content.to_string().contains("4471")),
        "{sent:?}"
    );
    assert!(rig.redactions().iter().any(|e| e == "$e1"));
    assert!(crate::redactions::pending(&rig.state).is_empty(), "settled");
}

/// Regression: a crash in a removal of text said only at the terminal left no pending
/// file, so the start never told the rooms, and a room's `/recall` that quoted the text
/// stayed. The worker now writes one, empty, and the start plans what it stands for.
#[test]
fn a_restart_finishing_a_terminal_removal_redacts_the_rooms_recalls() {
    let mut rig = Rig::new();
    rig.lines(&[("$q1", "/recall 4471")]);
    answer_recalls(&mut rig, 0, "my PIN is 4471");
    crate::redactions::pending_write(&rig.state, &[], None).unwrap();
    let state = rig.state.clone();
    drop(rig);
    let again = Rig::on(state);
    let red = again.redactions();
    assert!(red.iter().any(|e| e == "$q1"), "{red:?}");
    assert!(red.iter().any(|e| e.starts_with("$ans0-")), "{red:?}");
    assert!(
        crate::redactions::pending(&again.state).is_empty(),
        "settled"
    );
}

/// Regression: a pending file that was never settled was planned again at every start,
/// and each time took the room's later `/recall` commands with it, with no removal asked.
#[test]
fn a_restart_with_nothing_pending_redacts_no_recall() {
    let mut rig = Rig::new();
    crate::redactions::pending_write(&rig.state, &["$e1".to_string()], None).unwrap();
    rig.event(Event::Redact(vec!["$e1".into()], None));
    assert!(crate::redactions::pending(&rig.state).is_empty(), "settled");
    rig.lines(&[("$later", "/recall the weather")]);
    answer_recalls(&mut rig, 0, "sunny");
    let state = rig.state.clone();
    drop(rig);
    let again = Rig::on(state);
    assert!(!again.redactions().iter().any(|e| e == "$later"));
}
