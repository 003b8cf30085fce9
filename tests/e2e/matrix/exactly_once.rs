//! Exactly once, both ways: an owner's message taken once across a restart of the client
//! and of the homeserver, a gap filled from history, the same transaction id one event.

use super::{owners_room, Driver};
use crate::support::synapse::{shared, Synapse};
use ::matrix::outgoing::{content, plan, Style};
use ::matrix::Error;

fn bodies(d: &Driver) -> Vec<String> {
    d.taken().into_iter().map(|t| t.body).collect()
}

#[test]
fn an_owner_message_is_taken_once_across_a_restart_of_the_client() {
    let Some(syn) = shared() else { return };
    let cast = syn.cast("restart");
    let dir = tempfile::tempdir().unwrap();
    let mut d = Driver::open(syn, &cast.boxmaker, &[&cast.phone], dir.path());
    d.round();
    let room = owners_room(syn, &cast, &mut d);
    syn.say(&cast.phone, &room, "first");
    d.until("first taken", |d, _| bodies(d) == ["first"]);
    drop(d);

    let mut d = Driver::open(syn, &cast.boxmaker, &[&cast.phone], dir.path());
    syn.say(&cast.phone, &room, "second");
    d.until("second taken", |d, _| bodies(d).len() >= 2);
    // One more round: nothing else arrives.
    syn.say(&cast.phone, &room, "third");
    d.until("third taken", |d, _| bodies(d).len() >= 3);
    assert_eq!(bodies(&d), ["first", "second", "third"]);
}

/// The position is saved only after the records: a crash between brings the event again
/// (loopd then finds its id in its records), never skips it.
#[test]
fn a_crash_before_the_position_is_saved_brings_the_event_again() {
    let Some(syn) = shared() else { return };
    let cast = syn.cast("unsaved");
    let dir = tempfile::tempdir().unwrap();
    let mut d = Driver::open(syn, &cast.boxmaker, &[&cast.phone], dir.path());
    d.round();
    let room = owners_room(syn, &cast, &mut d);
    let id = syn.say(&cast.phone, &room, "written, position not saved");
    let deadline = std::time::Instant::now() + super::WITHIN;
    while d.taken().is_empty() {
        assert!(std::time::Instant::now() < deadline, "the line is taken");
        d.round_with(false).unwrap();
    }
    drop(d);
    let mut d = Driver::open(syn, &cast.boxmaker, &[&cast.phone], dir.path());
    d.until("brought again", |d, _| d.taken().len() == 2);
    let taken = d.taken();
    assert!(taken.iter().all(|t| t.event_id == id), "{taken:?}");
}

#[test]
fn a_gap_the_homeserver_leaves_is_read_from_history_in_order() {
    let Some(syn) = shared() else { return };
    let cast = syn.cast("gap");
    let dir = tempfile::tempdir().unwrap();
    let mut d = Driver::open(syn, &cast.boxmaker, &[&cast.phone], dir.path());
    d.timeline_limit = Some(3);
    d.round();
    let room = owners_room(syn, &cast, &mut d);
    let sent: Vec<String> = (0..12).map(|i| format!("message {i}")).collect();
    for s in &sent {
        syn.say(&cast.phone, &room, s);
    }
    let seen = d.until("all twelve taken", |d, _| d.taken().len() >= 12);
    assert_eq!(bodies(&d), sent);
    // The timeline was shorter than what arrived: the homeserver said so.
    let limited = seen.iter().any(|x| x.actions.len() > 3);
    assert!(limited, "one round took more than a timeline holds");
}

#[test]
fn the_same_transaction_id_twice_is_one_event() {
    let Some(syn) = shared() else { return };
    let cast = syn.cast("txn");
    let dir = tempfile::tempdir().unwrap();
    let mut d = Driver::open(syn, &cast.boxmaker, &[&cast.phone], dir.path());
    d.round();
    let room = owners_room(syn, &cast, &mut d);
    let part = &plan("main", 1, Style::Text, "", "the one reply")[0];
    let first = d.client.send(&room, &part.txn, &part.content).unwrap();
    let again = d.client.send(&room, &part.txn, &part.content).unwrap();
    // A new client on the same token (loopd restarted) retries the same event.
    let fresh = syn.client(&cast.boxmaker);
    let third = fresh.send(&room, &part.txn, &part.content).unwrap();
    assert_eq!(first, again);
    assert_eq!(first, third);
    let copies = syn
        .events(&cast.phone, &room)
        .iter()
        .filter(|e| e["content"]["body"] == "the one reply")
        .count();
    assert_eq!(copies, 1);
}

#[test]
fn a_homeserver_stopped_and_started_again_loses_nothing() {
    let Some(syn) = Synapse::start() else { return };
    let cast = syn.cast("outage");
    let dir = tempfile::tempdir().unwrap();
    let mut d = Driver::open(&syn, &cast.boxmaker, &[&cast.phone], dir.path());
    d.round();
    let room = owners_room(&syn, &cast, &mut d);
    let reply = content(Style::Text, "", "sent before the outage");
    let sent = d.client.send(&room, "bm-outage-1", &reply).unwrap();
    syn.say(&cast.phone, &room, "before the outage");

    syn.stop();
    let down = d.round_with(true);
    assert!(
        matches!(down, Err(Error::Transport { .. })),
        "a typed transport error while the homeserver is down: {down:?}"
    );
    let down = d.client.send(&room, "bm-outage-1", &reply);
    assert!(down.as_ref().is_err_and(Error::outcome_unknown), "{down:?}");
    syn.start_again();

    syn.say(&cast.phone, &room, "after the outage");
    d.until("both taken", |d, _| d.taken().len() >= 2);
    assert_eq!(bodies(&d), ["before the outage", "after the outage"]);
    // The transaction id outlived the restart (Synapse keeps it in its database).
    let again = d.client.send(&room, "bm-outage-1", &reply).unwrap();
    assert_eq!(again, sent);
}
