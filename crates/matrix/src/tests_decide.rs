//! The decisions over sync answers written as the homeserver writes them: no network.

use crate::decide::{Action, Extra, Machine, Notice, Told};
use crate::event::Event;
use crate::sync::Sync;
use serde_json::{json, Value};

const ME: &str = "@box:example.org";
const OWNER: &str = "@me:example.org";
const STRANGER: &str = "@eve:example.org";
const ROOM: &str = "!room:example.org";

fn owners() -> Vec<String> {
    vec![OWNER.to_string()]
}

fn text(id: &str, sender: &str, body: &str) -> Value {
    json!({"event_id": id, "sender": sender, "type": "m.room.message", "origin_server_ts": 1,
           "content": {"msgtype": "m.text", "body": body}})
}

fn notice(id: &str, sender: &str) -> Value {
    json!({"event_id": id, "sender": sender, "type": "m.room.message",
           "content": {"msgtype": "m.notice", "body": "a notice"}})
}

fn edit(id: &str, sender: &str, of: &str) -> Value {
    json!({"event_id": id, "sender": sender, "type": "m.room.message",
           "content": {"msgtype": "m.text", "body": "* fixed", "m.new_content": {"msgtype": "m.text", "body": "fixed"},
                       "m.relates_to": {"rel_type": "m.replace", "event_id": of}}})
}

fn member(id: &str, user: &str, membership: &str) -> Value {
    json!({"event_id": id, "sender": user, "type": "m.room.member", "state_key": user,
           "content": {"membership": membership}})
}

fn member_was(id: &str, user: &str, membership: &str, was: &str) -> Value {
    let mut m = member(id, user, membership);
    m["unsigned"] = json!({"prev_content": {"membership": was}});
    m
}

fn encryption(id: &str) -> Value {
    json!({"event_id": id, "sender": OWNER, "type": "m.room.encryption", "state_key": "",
           "content": {"algorithm": "m.megolm.v1.aes-sha2"}})
}

fn joined(room: &str, state: Vec<Value>, timeline: Vec<Value>, limited: bool) -> Value {
    json!({ room: {"state": {"events": state},
                   "timeline": {"events": timeline, "limited": limited, "prev_batch": "p1"}}})
}

fn sync(next: &str, join: Value, invite: Value) -> Sync {
    let v = json!({"next_batch": next, "rooms": {"join": join, "invite": invite}});
    Sync::parse(&v, ME).unwrap()
}

/// A machine past its first sync of `ROOM` with `members` joined.
fn running(members: &[&str]) -> Machine {
    let mut m = Machine::new(ME, &owners(), Some("s0".into()));
    let state: Vec<Value> = members
        .iter()
        .enumerate()
        .map(|(i, u)| member(&format!("$m{i}"), u, "join"))
        .collect();
    let s = sync("s1", joined(ROOM, state, vec![], false), json!({}));
    let d = m.decide(&s, &read(&m, &s, members));
    m.confirm(&d);
    m
}

/// What `needs` asks, answered as a homeserver whose rooms hold `members` would.
fn read(m: &Machine, s: &Sync, members: &[&str]) -> Extra {
    let mut extra = Extra::default();
    for room in m.needs(s).members {
        extra
            .members
            .insert(room, members.iter().map(|u| u.to_string()).collect());
    }
    extra
}

fn lines(actions: &[Action]) -> Vec<String> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Line { body, .. } => Some(body.clone()),
            _ => None,
        })
        .collect()
}

fn notices(actions: &[Action]) -> Vec<Notice> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Notice { notice, .. } => Some(*notice),
            _ => None,
        })
        .collect()
}

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
fn invites_are_accepted_only_from_an_owner_by_the_exact_user_id() {
    let mut m = Machine::new(ME, &owners(), Some("s0".into()));
    let invite = |sender: &str| {
        json!({"invite_state": {"events": [
            {"type": "m.room.member", "state_key": ME, "sender": sender, "content": {"membership": "invite"}},
            {"type": "m.room.name", "state_key": "", "sender": sender, "content": {"name": "me"}}
        ]}})
    };
    let s = sync(
        "s1",
        json!({}),
        json!({
            "!a:example.org": invite(OWNER),
            // The owner's localpart on another server, and the owner's id with a suffix.
            "!b:example.org": invite("@me:evil.org"),
            "!c:example.org": invite("@me:example.org.evil"),
            // No inviter said: not an owner's.
            "!d:example.org": {"invite_state": {"events": []}},
        }),
    );
    let d = m.decide(&s, &Extra::default());
    assert_eq!(
        d.actions,
        vec![
            Action::Accept {
                room: "!a:example.org".into()
            },
            Action::Reject {
                room: "!b:example.org".into()
            },
            Action::Reject {
                room: "!c:example.org".into()
            },
            Action::Reject {
                room: "!d:example.org".into()
            },
        ]
    );
}

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

// ---- Membership judged at each event's point after a restart, forged invites, visits,
// rooms no owner is in.

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

/// Over federation the invite's stripped state is the inviting server's, unsigned, with
/// the real invite event appended by loopd's homeserver; a forged member event naming the
/// owner as sender, put first, does not make a stranger's invite an owner's.
#[test]
fn review_an_invite_whose_stripped_state_names_an_owner_first_is_still_the_strangers() {
    let mut m = Machine::new(ME, &owners(), Some("s0".into()));
    let s = sync(
        "s1",
        json!({}),
        json!({
            "!evil:evil.org": {"invite_state": {"events": [
                // Forged by the inviting server (stripped state carries no signature).
                {"type": "m.room.member", "state_key": ME, "sender": OWNER, "content": {"membership": "invite"}},
                {"type": "m.room.name", "state_key": "", "sender": "@eve:evil.org", "content": {"name": "x"}},
                // The invite event itself, appended by loopd's homeserver.
                {"type": "m.room.member", "state_key": ME, "sender": "@eve:evil.org", "content": {"membership": "invite"}}
            ]}}
        }),
    );
    let d = m.decide(&s, &Extra::default());
    assert_eq!(
        d.actions,
        vec![Action::Reject {
            room: "!evil:evil.org".into()
        }]
    );
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
