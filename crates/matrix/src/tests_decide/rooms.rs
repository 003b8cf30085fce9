//! Whether a room is served: a stranger joined or invited stops it with one notice and
//! their leaving serves it again, an encrypted room is refused, a room no owner is in is
//! not served, and each line is judged by the room as it was when it was written.

use super::*;
use crate::decide::Told;
use crate::event::Event;

#[test]
fn a_stranger_joining_stops_the_room_with_one_notice_until_they_leave() {
    let mut m = running(&[ME, OWNER]);
    let s = sync(
        "s2",
        joined(
            ROOM,
            vec![],
            vec![
                text("$1", OWNER, "before"),
                member("$2", STRANGER, "join"),
                text("$3", OWNER, "while they are here"),
                text("$4", STRANGER, "hi, I am eve, my text is never read"),
            ],
            false,
        ),
        json!({}),
    );
    let d = m.decide(&s, &Extra::default());
    assert_eq!(lines(&d.actions), vec!["before"]);
    assert_eq!(notices(&d.actions), vec![Notice::Stopped { others: 1 }]);
    assert_eq!((d.strangers, d.unserved), (1, 1));
    m.confirm(&d);
    assert_eq!(m.served(ROOM), Some(false));

    // Still there: no second notice, nothing taken.
    let s = sync(
        "s3",
        joined(ROOM, vec![], vec![text("$5", OWNER, "again")], false),
        json!({}),
    );
    let d = m.decide(&s, &Extra::default());
    assert!(d.actions.is_empty(), "{:?}", d.actions);
    m.confirm(&d);

    let s = sync(
        "s4",
        joined(
            ROOM,
            vec![],
            vec![member("$6", STRANGER, "leave"), text("$7", OWNER, "after")],
            false,
        ),
        json!({}),
    );
    let d = m.decide(&s, &Extra::default());
    assert_eq!(lines(&d.actions), vec!["after"]);
    assert_eq!(notices(&d.actions), vec![Notice::Resumed]);
    m.confirm(&d);
    assert_eq!(m.served(ROOM), Some(true));
}

#[test]
fn a_stopped_room_told_before_a_restart_is_not_told_again() {
    let mut m = Machine::new(ME, &owners(), Some("s0".into()));
    m.restore(Told {
        stopped: [ROOM.to_string()].into(),
        ..Told::default()
    });
    let s = sync("s1", joined(ROOM, vec![], vec![], false), json!({}));
    let mut extra = Extra::default();
    extra
        .members
        .insert(ROOM.into(), vec![ME.into(), OWNER.into(), STRANGER.into()]);
    let d = m.decide(&s, &extra);
    assert!(notices(&d.actions).is_empty(), "{:?}", d.actions);
}

#[test]
fn an_encrypted_room_is_refused_with_one_notice() {
    let mut m = running(&[ME, OWNER]);
    let s = sync(
        "s2",
        joined(
            ROOM,
            vec![],
            vec![encryption("$1"), text("$2", OWNER, "secret")],
            false,
        ),
        json!({}),
    );
    let d = m.decide(&s, &Extra::default());
    assert!(lines(&d.actions).is_empty());
    assert_eq!(notices(&d.actions), vec![Notice::Encrypted]);
    m.confirm(&d);
    let s = sync(
        "s3",
        joined(ROOM, vec![], vec![text("$3", OWNER, "more")], false),
        json!({}),
    );
    let d = m.decide(&s, &Extra::default());
    assert!(d.actions.is_empty(), "{:?}", d.actions);
}

#[test]
fn a_strangers_messages_are_counted_and_never_carried() {
    let mut m = running(&[ME, OWNER]);
    let s = sync(
        "s2",
        joined(
            ROOM,
            vec![],
            vec![text("$1", STRANGER, "my PIN is 4471")],
            false,
        ),
        json!({}),
    );
    let d = m.decide(&s, &Extra::default());
    assert_eq!(d.strangers, 1);
    assert!(!format!("{d:?}").contains("4471"));
}

/// Regression: the state block (the room where the timeline starts) was applied before a
/// gap's events, so an owner's line written in the gap before a stranger joined was
/// judged as if the stranger were already there, and never taken.
#[test]
fn a_line_in_a_gap_is_judged_by_the_room_as_it_was_then() {
    let mut m = running(&[ME, OWNER]);
    let s = sync(
        "s2",
        joined(
            ROOM,
            vec![member("$j", STRANGER, "join")],
            vec![text("$3", OWNER, "late")],
            true,
        ),
        json!({}),
    );
    let mut extra = Extra::default();
    let gap: Vec<Event> = [text("$1", OWNER, "early"), member("$j", STRANGER, "join")]
        .iter()
        .filter_map(Event::parse)
        .collect();
    extra.gaps.insert(ROOM.into(), gap);
    let d = m.decide(&s, &extra);
    assert_eq!(lines(&d.actions), vec!["early"]);
    assert_eq!(d.unserved, 1);
    assert_eq!(notices(&d.actions), vec![Notice::Stopped { others: 1 }]);
}

/// A stranger who joins and leaves between two syncs (or while loopd is down) saw the
/// room (with `shared` history visibility, all of it): the owner is told, one notice that
/// the room stopped being served and one that it is served again.
#[test]
fn review_a_stranger_who_joined_and_left_within_one_sync_is_told_of() {
    let mut m = running(&[ME, OWNER]);
    let s = sync(
        "s2",
        joined(
            ROOM,
            vec![],
            vec![
                member("$j", STRANGER, "join"),
                member_was("$l", STRANGER, "leave", "join"),
            ],
            false,
        ),
        json!({}),
    );
    let d = m.decide(&s, &Extra::default());
    assert!(
        notices(&d.actions).contains(&Notice::Stopped { others: 1 }),
        "a stranger was in the room and nobody was told: {:?}",
        d.actions
    );
    assert_eq!(
        notices(&d.actions),
        vec![Notice::Stopped { others: 1 }, Notice::Resumed]
    );
    m.confirm(&d);
    assert_eq!(m.served(ROOM), Some(true));
}

/// A room every owner has left is not served, though nobody but loopd is in it: an unasked
/// message sent there would be marked delivered and never reach an owner. The told rooms,
/// which loopd's channel reads "served" from, say so too.
#[test]
fn review_a_room_every_owner_has_left_is_not_served() {
    let mut m = running(&[ME, OWNER]);
    let s = sync(
        "s2",
        joined(
            ROOM,
            vec![],
            vec![member_was("$l", OWNER, "leave", "join")],
            false,
        ),
        json!({}),
    );
    let d = m.decide(&s, &Extra::default());
    m.confirm(&d);
    assert_eq!(
        m.served(ROOM),
        Some(false),
        "a room with nobody but loopd in it counts as served"
    );
    // loopd's channel reads "served" from the told rooms (`Told`), so they must say so.
    let told = m.told();
    assert!(
        told.stopped.contains(ROOM) || told.encrypted.contains(ROOM),
        "loopd would still send unasked messages there: {told:?}"
    );
}

/// A room that is encrypted is not set up: the set-up's own notice (URL previews) would be
/// plain text in it beyond the one notice it gets. A plain room new to the machine is.
#[test]
fn an_encrypted_room_new_to_the_machine_is_not_set_up() {
    let mut m = Machine::new(ME, &owners(), Some("s1".into()));
    let s = sync(
        "s2",
        joined(
            ROOM,
            vec![],
            vec![encryption("$e"), member("$j", ME, "join")],
            false,
        ),
        json!({}),
    );
    let d = m.decide(&s, &read(&m, &s, &[ME, OWNER]));
    assert!(
        !d.actions.iter().any(|a| matches!(a, Action::SetUp { .. })),
        "{:?}",
        d.actions
    );
    assert_eq!(notices(&d.actions), vec![Notice::Encrypted]);

    let mut m = Machine::new(ME, &owners(), Some("s1".into()));
    let s = sync(
        "s2",
        joined(ROOM, vec![], vec![text("$1", OWNER, "hi")], false),
        json!({}),
    );
    let d = m.decide(&s, &read(&m, &s, &[ME, OWNER]));
    assert_eq!(d.actions[0], Action::SetUp { room: ROOM.into() });
    assert_eq!(lines(&d.actions), vec!["hi"]);
}

/// A room every owner left stops being served without a notice (nobody would read it),
/// and is told served again when an owner is back.
#[test]
fn a_room_an_owner_comes_back_to_is_served_again() {
    let mut m = running(&[ME, OWNER]);
    let s = sync(
        "s2",
        joined(
            ROOM,
            vec![],
            vec![member_was("$l", OWNER, "leave", "join")],
            false,
        ),
        json!({}),
    );
    let d = m.decide(&s, &Extra::default());
    assert!(notices(&d.actions).is_empty(), "{:?}", d.actions);
    m.confirm(&d);
    let s = sync(
        "s3",
        joined(
            ROOM,
            vec![],
            vec![
                member_was("$j", OWNER, "join", "leave"),
                text("$1", OWNER, "back"),
            ],
            false,
        ),
        json!({}),
    );
    let d = m.decide(&s, &Extra::default());
    assert_eq!(notices(&d.actions), vec![Notice::Resumed]);
    assert_eq!(lines(&d.actions), vec!["back"]);
    m.confirm(&d);
    assert_eq!(m.served(ROOM), Some(true));
}

/// Regression: after a restart, the first sync saw a stranger's invite but not yet their
/// join, the room still counted as served, and a reply that had waited went out to it.
/// An invited stranger may join, and read the room, at any moment: the invite stops the
/// room already, and the stranger's leaving (or a rescinded invite) serves it again.
#[test]
fn a_stranger_invited_stops_the_room_before_they_join() {
    let mut m = running(&[ME, OWNER]);
    let s = sync(
        "s2",
        joined(ROOM, vec![], vec![member("$i", STRANGER, "invite")], false),
        json!({}),
    );
    let d = m.decide(&s, &Extra::default());
    m.confirm(&d);
    assert_eq!(
        m.served(ROOM),
        Some(false),
        "an invited stranger stops the room"
    );
    let s = sync(
        "s3",
        joined(
            ROOM,
            vec![],
            vec![member_was("$r", STRANGER, "leave", "invite")],
            false,
        ),
        json!({}),
    );
    let d = m.decide(&s, &Extra::default());
    m.confirm(&d);
    assert_eq!(
        m.served(ROOM),
        Some(true),
        "a rescinded invite serves it again"
    );
}
