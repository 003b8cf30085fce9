//! The decisions over sync answers written as the homeserver writes them: no network.
//! This file holds the homeserver's answers as builders; the tests are split by what they
//! guard: which events are lines and where the position stands (`lines`), which invites are
//! accepted (`invites`), whether a room is served (`rooms`), and what a restart knows
//! (`restart`).

mod invites;
mod lines;
mod restart;
mod rooms;

use crate::decide::{Action, Extra, Machine, Notice};
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
