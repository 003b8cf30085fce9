//! A `/sync` answer read into what the decisions need (docs/matrix.md, 'What a sync
//! brings'), and the filter that keeps the answer to that.

use crate::event::{parse_list, Event, Kind, Membership};
use serde_json::{json, Value};

/// Timeline events asked for per room in one sync. A room with more new events than this
/// since the last sync comes back `limited`, and the rest is read from `/messages`; this
/// bounds one answer (with `MAX_SYNC_BYTES`) without losing anything.
pub const TIMELINE_LIMIT: u64 = 50;

/// The event types a sync brings: messages, membership and encryption. Everything else
/// (reactions, receipts, presence, account data) is left on the homeserver.
pub const EVENT_TYPES: [&str; 4] = [
    "m.room.message",
    "m.room.member",
    "m.room.encryption",
    "m.room.encrypted",
];

/// The filter sent inline with every sync: the timeline's types and length, the state a
/// decision needs (members, encryption), nothing of presence, account data or receipts.
pub fn filter(timeline_limit: u64) -> Value {
    let none = json!({ "not_types": ["*"] });
    json!({
        "presence": none,
        "account_data": none,
        "room": {
            "timeline": { "limit": timeline_limit, "types": EVENT_TYPES },
            "state": { "types": ["m.room.member", "m.room.encryption"], "lazy_load_members": false },
            "ephemeral": none,
            "account_data": none,
            "include_leave": false,
        },
    })
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sync {
    /// The position after this answer: the next sync's `since`, once what it brought is
    /// on disk.
    pub next_batch: String,
    pub joined: Vec<JoinedRoom>,
    pub invited: Vec<Invite>,
    /// Rooms loopd left or was removed from.
    pub left: Vec<String>,
    /// Events that could not be read (no id, sender or type), left out.
    pub unreadable: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JoinedRoom {
    pub room_id: String,
    /// State before the timeline (all of it in a first sync; the changes since `since`
    /// otherwise).
    pub state: Vec<Event>,
    pub timeline: Vec<Event>,
    /// The homeserver left events out between `since` and the timeline.
    pub limited: bool,
    /// Where `/messages` reads backwards from to fill that gap.
    pub prev_batch: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invite {
    pub room_id: String,
    /// Who invited loopd: the sender of loopd's own `invite` membership event in the
    /// invite's stripped state. `None` when the homeserver did not say, or when the
    /// stripped state holds such events from different senders (one is forged).
    pub inviter: Option<String>,
    /// The stripped state says the room is encrypted.
    pub encrypted: bool,
}

impl Sync {
    /// Reads a sync answer for the account `me`. `None` when it has no `next_batch`: such
    /// an answer cannot move the position on, so nothing of it is used.
    pub fn parse(v: &Value, me: &str) -> Option<Sync> {
        let next_batch = v.get("next_batch")?.as_str()?.to_string();
        let rooms = v.get("rooms");
        let mut sync = Sync {
            next_batch,
            ..Sync::default()
        };
        if let Some(join) = rooms.and_then(|r| r.get("join")).and_then(Value::as_object) {
            for (room_id, room) in join {
                let (state, bad_state) =
                    parse_list(room.get("state").and_then(|s| s.get("events")));
                let timeline = room.get("timeline");
                let (events, bad_events) = parse_list(timeline.and_then(|t| t.get("events")));
                sync.unreadable += bad_state + bad_events;
                sync.joined.push(JoinedRoom {
                    room_id: room_id.clone(),
                    state,
                    timeline: events,
                    limited: timeline
                        .and_then(|t| t.get("limited"))
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                    prev_batch: timeline
                        .and_then(|t| t.get("prev_batch"))
                        .and_then(Value::as_str)
                        .map(str::to_string),
                });
            }
        }
        if let Some(invite) = rooms
            .and_then(|r| r.get("invite"))
            .and_then(Value::as_object)
        {
            for (room_id, room) in invite {
                sync.invited.push(read_invite(room_id, room, me));
            }
        }
        if let Some(leave) = rooms
            .and_then(|r| r.get("leave"))
            .and_then(Value::as_object)
        {
            sync.left.extend(leave.keys().cloned());
        }
        // The answer's rooms come in the homeserver's order; sorted, a decision over the
        // same answer is the same whatever order the JSON object kept.
        sync.joined.sort_by(|a, b| a.room_id.cmp(&b.room_id));
        sync.invited.sort_by(|a, b| a.room_id.cmp(&b.room_id));
        sync.left.sort();
        Some(sync)
    }
}

/// Stripped state events carry no event id; they are read here field by field.
fn read_invite(room_id: &str, room: &Value, me: &str) -> Invite {
    let events = room
        .get("invite_state")
        .and_then(|s| s.get("events"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let str_of = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).map(str::to_string);
    // Over federation the stripped state is the inviting server's, unsigned; the invite
    // event itself is the homeserver's own, appended last. An entry that names another
    // sender than the invite for loopd itself is a forgery: no inviter, the invite is
    // rejected.
    let senders: Vec<Option<String>> = events
        .iter()
        .filter(|e| e.get("type").and_then(Value::as_str) == Some("m.room.member"))
        .filter(|e| e.get("state_key").and_then(Value::as_str) == Some(me))
        .filter(|e| {
            e.get("content")
                .and_then(|c| c.get("membership"))
                .and_then(Value::as_str)
                == Some("invite")
        })
        .map(|e| str_of(e, "sender"))
        .collect();
    let inviter = match senders.last() {
        Some(last) if senders.iter().all(|s| s == last) => last.clone(),
        _ => None,
    };
    let encrypted = events
        .iter()
        .any(|e| e.get("type").and_then(Value::as_str) == Some("m.room.encryption"));
    Invite {
        room_id: room_id.to_string(),
        inviter,
        encrypted,
    }
}

/// A `/messages` page: its events (in the order asked for) and the token to read on from,
/// `None` at the end of what there is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    pub events: Vec<Event>,
    pub end: Option<String>,
    pub unreadable: usize,
}

impl Page {
    pub fn parse(v: &Value) -> Page {
        let (events, unreadable) = parse_list(v.get("chunk"));
        Page {
            events,
            end: v.get("end").and_then(Value::as_str).map(str::to_string),
            unreadable,
        }
    }
}

/// The members whose membership is `join` or `invite` after `events` applied in order to
/// `start`. An invited user counts as in the room: they may join, and read what it holds,
/// at any moment, so a room with a stranger invited is no longer only the owners'
/// (docs/matrix.md, 'Rooms and sessions').
pub fn apply_members(start: &mut std::collections::BTreeSet<String>, events: &[Event]) {
    for e in events {
        if let Kind::Member {
            user, membership, ..
        } = &e.kind
        {
            if matches!(membership, Membership::Join | Membership::Invite) {
                start.insert(user.clone());
            } else {
                start.remove(user);
            }
        }
    }
}
