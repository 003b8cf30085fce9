//! Which events of a sync are the owner's lines (own events, notices and edits are not,
//! history before the machine's first sync or before loopd's invite is not, a gap comes
//! first and once), and the sync position, which moves only when the caller confirms.

use super::*;
use crate::event::Event;

#[test]
fn an_owner_text_is_a_line_and_own_events_notices_and_edits_are_not() {
    let mut m = running(&[ME, OWNER]);
    let s = sync(
        "s2",
        joined(
            ROOM,
            vec![],
            vec![
                text("$1", OWNER, "hello\nsecond line"),
                text("$2", ME, "my own reply"),
                notice("$3", OWNER),
                edit("$4", OWNER, "$1"),
                text("$5", OWNER, "/status"),
            ],
            false,
        ),
        json!({}),
    );
    let d = m.decide(&s, &Extra::default());
    assert_eq!(lines(&d.actions), vec!["hello\nsecond line", "/status"]);
    assert_eq!(d.strangers, 0);
}

#[test]
fn the_first_sync_takes_no_history_but_learns_the_rooms() {
    let mut m = Machine::new(ME, &owners(), None);
    let s = sync(
        "s1",
        joined(
            ROOM,
            vec![member("$a", ME, "join"), member("$b", OWNER, "join")],
            vec![text("$1", OWNER, "old")],
            false,
        ),
        json!({}),
    );
    let d = m.decide(&s, &Extra::default());
    assert!(lines(&d.actions).is_empty());
    assert_eq!(d.history, 1);
    assert_eq!(d.actions, vec![Action::SetUp { room: ROOM.into() }]);
    m.confirm(&d);
    assert_eq!(m.served(ROOM), Some(true));
}

#[test]
fn in_a_room_joined_in_this_sync_only_what_follows_the_invite_is_taken() {
    let mut m = Machine::new(ME, &owners(), Some("s0".into()));
    let s = sync(
        "s1",
        joined(
            ROOM,
            vec![member("$a", OWNER, "join")],
            vec![
                text("$0", OWNER, "before boxmaker was asked"),
                member("$i", ME, "invite"),
                text("$1", OWNER, "hello, are you there?"),
                member("$j", ME, "join"),
                text("$2", OWNER, "good"),
            ],
            false,
        ),
        json!({}),
    );
    let d = m.decide(&s, &read(&m, &s, &[ME, OWNER]));
    assert_eq!(lines(&d.actions), vec!["hello, are you there?", "good"]);
    assert_eq!(d.history, 1);
}

/// A display name change is a `join` after a `join`: the lines before it are still lines.
#[test]
fn a_profile_change_of_loopd_is_not_a_joining() {
    let mut m = running(&[ME, OWNER]);
    let s = sync(
        "s2",
        joined(
            ROOM,
            vec![],
            vec![
                text("$1", OWNER, "first"),
                member_was("$2", ME, "join", "join"),
                text("$3", OWNER, "second"),
            ],
            false,
        ),
        json!({}),
    );
    let d = m.decide(&s, &Extra::default());
    assert_eq!(lines(&d.actions), vec!["first", "second"]);
}

#[test]
fn a_limited_timeline_asks_for_its_gap_and_takes_the_gap_first_once() {
    let mut m = running(&[ME, OWNER]);
    let s = sync(
        "s2",
        joined(
            ROOM,
            vec![],
            vec![text("$3", OWNER, "three"), text("$4", OWNER, "four")],
            true,
        ),
        json!({}),
    );
    let needs = m.needs(&s);
    assert_eq!(needs.gaps.len(), 1);
    assert_eq!(
        (needs.gaps[0].from.as_str(), needs.gaps[0].to.as_str()),
        ("p1", "s1")
    );
    let mut extra = Extra::default();
    let gap: Vec<Event> = [
        text("$1", OWNER, "one"),
        text("$2", OWNER, "two"),
        // The page reached into the timeline: taken once.
        text("$3", OWNER, "three"),
    ]
    .iter()
    .filter_map(Event::parse)
    .collect();
    extra.gaps.insert(ROOM.into(), gap);
    let d = m.decide(&s, &extra);
    assert_eq!(lines(&d.actions), vec!["one", "two", "three", "four"]);
}

#[test]
fn the_position_moves_only_when_the_caller_confirms() {
    let mut m = running(&[ME, OWNER]);
    assert_eq!(m.since(), Some("s1"));
    let s = sync(
        "s2",
        joined(ROOM, vec![], vec![text("$1", OWNER, "x")], false),
        json!({}),
    );
    let d = m.decide(&s, &Extra::default());
    assert_eq!(m.since(), Some("s1"), "not before the records are on disk");
    assert_eq!(m.confirm(&d), "s2");
    assert_eq!(m.since(), Some("s2"));
}

/// Regression: a round the caller could not finish (a join that failed before the
/// records were written) left the machine remembering its lines as taken and its notices
/// as told, so the same sync brought again gave neither: the lines were lost. Until
/// `confirm`, the machine is where it was.
#[test]
fn a_decision_never_confirmed_is_decided_again_the_same_way() {
    let mut m = running(&[ME, OWNER]);
    let s = sync(
        "s2",
        joined(
            ROOM,
            vec![],
            vec![text("$1", OWNER, "x"), member("$2", STRANGER, "join")],
            false,
        ),
        json!({}),
    );
    let first = m.decide(&s, &Extra::default());
    assert_eq!(lines(&first.actions), vec!["x"]);
    assert_eq!(notices(&first.actions), vec![Notice::Stopped { others: 1 }]);
    assert_eq!(m.served(ROOM), Some(true), "not moved on before confirm");
    let again = m.decide(&s, &Extra::default());
    assert_eq!(again.actions, first.actions);
    m.confirm(&again);
    assert_eq!(m.served(ROOM), Some(false));
    assert!(m.told().stopped.contains(ROOM));
}
