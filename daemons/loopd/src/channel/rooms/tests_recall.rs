//! `/recall` as a room gets it (docs/matrix.md, 'Labels', 'Forgetting'): asked of memoryd
//! for nothing above `matrix.max_class`, and redacted with its answer by the next removal.
//! The rig is the rooms' tests'.

use crate::channel::tests_rooms::Rig;
use crate::channel::work::Probe;
use crate::matrix::store::Why;
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
    rig.event(Event::Redact(vec!["$e1".into()]));
    let redacted: Vec<String> = rig
        .store()
        .outbox
        .iter()
        .filter_map(|o| match &o.why {
            Why::Redact { event } => Some(event.clone()),
            _ => None,
        })
        .collect();
    let answer = format!("$r{}", sent.len() - 1);
    for gone in ["$e1", "$q1", answer.as_str()] {
        assert!(redacted.iter().any(|e| e == gone), "{gone}: {redacted:?}");
    }
}

/// A removal made while a room's `/recall` is still being answered redacts the command at
/// once, and the answer as soon as the homeserver acknowledges it: memoryd may have read
/// the text before the removal reached its index.
#[test]
fn a_removal_during_a_recall_redacts_its_answer_once_acknowledged() {
    let mut rig = Rig::new();
    rig.lines(&[("$q1", "/recall 4471")]);
    let (pid, _) = rig.ch.worker.probes[0].clone();
    rig.event(Event::Redact(Vec::new()));
    let redactions = |rig: &Rig| -> Vec<String> {
        rig.store()
            .outbox
            .iter()
            .filter_map(|o| match &o.why {
                Why::Redact { event } => Some(event.clone()),
                _ => None,
            })
            .collect()
    };
    rig.event(Event::Text {
        id: pid,
        text: "the owner said: my PIN is 4471\n".into(),
    });
    rig.event(Event::Done {
        id: pid,
        reply: Ok(String::new()),
    });
    let answer = rig
        .sent()
        .into_iter()
        .find(|o| {
            o.content["body"]
                .as_str()
                .is_some_and(|b| b.contains("4471"))
        })
        .expect("the answer is planned");
    rig.acked(&answer.txn, "$late");
    for gone in ["$q1", "$late"] {
        assert!(
            redactions(&rig).iter().any(|e| e == gone),
            "{gone}: {:?}",
            redactions(&rig)
        );
    }
}
