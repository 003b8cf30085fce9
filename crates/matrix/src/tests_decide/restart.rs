//! What the machine knows after a restart: no room, so it asks their members before
//! taking anything, and judges each line by the room as it was then, not as it is now.

use super::*;
use crate::decide::Told;

/// After a restart the machine knows no room: it asks their members, and judges the
/// batch by them.
#[test]
fn after_a_restart_the_members_are_asked_before_anything_is_taken() {
    let mut m = Machine::new(ME, &owners(), Some("s5".into()));
    let s = sync(
        "s6",
        joined(ROOM, vec![], vec![text("$1", OWNER, "x")], false),
        json!({}),
    );
    assert_eq!(m.needs(&s).members, vec![ROOM.to_string()]);
    let mut extra = Extra::default();
    extra
        .members
        .insert(ROOM.into(), vec![ME.into(), OWNER.into()]);
    let d = m.decide(&s, &extra);
    assert_eq!(lines(&d.actions), vec!["x"]);
}

/// Regression: after a restart, a limited sync's state block (only what changed since
/// the saved position) was taken as the room's whole membership, so a stranger who had
/// joined long before went unseen and the room was served.
#[test]
fn after_a_restart_the_state_changes_of_a_sync_alone_never_make_a_room_served() {
    let mut m = Machine::new(ME, &owners(), Some("s5".into()));
    let s = sync(
        "s6",
        joined(
            ROOM,
            vec![member("$o", OWNER, "join")],
            vec![text("$1", OWNER, "x")],
            true,
        ),
        json!({}),
    );
    assert_eq!(m.needs(&s).members, vec![ROOM.to_string()]);
    let d = m.decide(&s, &read(&m, &s, &[ME, OWNER, STRANGER]));
    assert!(lines(&d.actions).is_empty(), "{:?}", d.actions);
    assert_eq!(notices(&d.actions), vec![Notice::Stopped { others: 1 }]);
}

/// A caller that did not read what `needs` asked gets nothing from the room, and is
/// asked again.
#[test]
fn a_room_whose_members_were_never_read_is_not_served() {
    let mut m = Machine::new(ME, &owners(), Some("s5".into()));
    let s = sync(
        "s6",
        joined(ROOM, vec![], vec![text("$1", OWNER, "x")], false),
        json!({}),
    );
    let d = m.decide(&s, &Extra::default());
    assert!(lines(&d.actions).is_empty());
    m.confirm(&d);
    assert_eq!(m.served(ROOM), Some(false));
    let s = sync(
        "s7",
        joined(ROOM, vec![], vec![text("$2", OWNER, "y")], false),
        json!({}),
    );
    assert_eq!(m.needs(&s).members, vec![ROOM.to_string()]);
    let d = m.decide(&s, &read(&m, &s, &[ME, OWNER]));
    assert_eq!(lines(&d.actions), vec!["y"]);
}

/// After a restart the members read are the room now, after the timeline. An owner's line
/// written while the room was served, before a stranger joined during loopd's downtime,
/// is judged by the room as it was then and taken, not skipped for good.
#[test]
fn review_after_a_restart_a_line_written_before_a_stranger_joined_is_not_skipped() {
    let mut m = Machine::new(ME, &owners(), Some("s5".into()));
    let s = sync(
        "s6",
        joined(
            ROOM,
            vec![],
            vec![
                text("$1", OWNER, "written while served"),
                member("$j", STRANGER, "join"),
            ],
            false,
        ),
        json!({}),
    );
    // The homeserver answers `/joined_members` with the members now.
    let d = m.decide(&s, &read(&m, &s, &[ME, OWNER, STRANGER]));
    assert_eq!(
        lines(&d.actions),
        vec!["written while served"],
        "the owner's line was written before the stranger joined; unserved={}",
        d.unserved
    );
}

/// The other way: the room was stopped before the restart (a stranger in it); while loopd
/// was down the owner wrote, then the stranger left. The line was written in the
/// stranger's presence and is not taken later.
#[test]
fn review_after_a_restart_a_line_written_while_a_stranger_was_in_is_not_taken() {
    let mut m = Machine::new(ME, &owners(), Some("s5".into()));
    let mut told = Told::default();
    told.stopped.insert(ROOM.to_string());
    m.restore(told);
    let s = sync(
        "s6",
        joined(
            ROOM,
            vec![],
            vec![
                text("$1", OWNER, "Eve, this is for you, not the bot"),
                member("$l", STRANGER, "leave"),
            ],
            false,
        ),
        json!({}),
    );
    let d = m.decide(&s, &read(&m, &s, &[ME, OWNER]));
    assert!(
        lines(&d.actions).is_empty(),
        "a line written while the stranger was in the room was taken: {:?}",
        d.actions
    );
}
