//! A client that went away with lines read and not yet run (docs/channel.md, 'End of
//! input and disconnects'): the lines that act still run, the loop is woken for them
//! without spinning, and the connection goes once they have.

use super::super::MAX_GONE;
use super::*;
use std::time::Instant;

/// Regression: with nothing in flight, the deadline asked for the gone client's lines
/// was `Instant::now()`, always later than the loop's own `now`: never due, so the loop
/// spun a core and neither these lines nor a reminder nor a heartbeat ever ran.
#[test]
fn a_gone_clients_lines_are_due_at_once_and_only_those_that_act_run() {
    let mut rig = Rig::new();
    rig.out.set_room(ME, 0);
    rig.send(ME, "/help\n/inbox\nremember the milk\n");
    assert!(
        rig.jobs().is_empty(),
        "nothing starts while its output is full"
    );
    let before = Instant::now();
    rig.ch.closed(ME, plumbing::Left::Partly);
    let due = rig.ch.deadline().expect("a deadline for the waiting lines");
    assert!(
        due <= before,
        "due by the loop's clock: {due:?} vs {before:?}"
    );
    rig.ch.timer(&mut rig.out, Instant::now());
    let (id, text) = rig.turn(0);
    assert_eq!(text, "remember the milk", "/help and /inbox answer nobody");
    assert_eq!(rig.jobs().len(), 1);
    rig.done(id, "ok", true);
    assert!(rig.ch.conns.is_empty(), "dropped once its lines ran");
    assert!(rig.ch.deadline().is_none_or(|d| d > before));
}

#[test]
fn departed_clients_past_the_limit_have_their_lines_not_run() {
    let mut rig = Rig::with(Config::default());
    for n in 0..=MAX_GONE {
        let id = ConnId(100 + n);
        rig.ch.accept(&mut rig.out, id, peer());
        rig.out.set_room(id, 0);
        rig.send(id, "a line\n");
        rig.ch.closed(id, plumbing::Left::Partly);
    }
    assert_eq!(rig.ch.conns.values().filter(|c| c.gone).count(), MAX_GONE);
    assert!(!rig.ch.conns.contains_key(&ConnId(100 + MAX_GONE)));
}

/// Regression: a departed client's `/forget QUERY` replaced the list a live client of the
/// same session had shown, and its `/forget all` then removed what that client's owner
/// had chosen not to; before that, its `/forget all` alone removed the older list. A
/// departed client's `/forget` is not run at all: the text stays until asked again.
#[test]
fn a_gone_clients_forget_is_not_run() {
    let mut rig = Rig::new();
    rig.out.set_room(ME, 0);
    rig.send(ME, "/forget bank pin\n/forget all\n/forget 1\n");
    rig.ch.closed(ME, plumbing::Left::Partly);
    rig.ch.timer(&mut rig.out, Instant::now());
    assert!(rig.jobs().is_empty(), "no /forget ran");
    assert!(rig.ch.conns.is_empty());
}
