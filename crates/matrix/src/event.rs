//! Room events as the library reads them: only what a decision needs, from the JSON of a
//! `/sync` timeline or a `/messages` page. An event that is not an object with an id,
//! a sender and a type is left out (and counted by the caller), never a failure of the
//! whole answer: one odd event must not stop the channel.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub event_id: String,
    pub sender: String,
    pub ts: u64,
    pub kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Membership {
    Invite,
    Join,
    Leave,
    Ban,
    Knock,
}

impl Membership {
    fn parse(s: &str) -> Option<Membership> {
        Some(match s {
            "invite" => Membership::Invite,
            "join" => Membership::Join,
            "leave" => Membership::Leave,
            "ban" => Membership::Ban,
            "knock" => Membership::Knock,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `m.room.message` with `msgtype` `m.text`, not an edit.
    Text { body: String },
    /// `m.room.message` with `msgtype` `m.notice`.
    Notice,
    /// An edit (`m.relates_to.rel_type` `m.replace`), of any msgtype.
    Edit { of: String },
    /// Another `m.room.message` (an image, an emote) or one without a body (redacted).
    OtherMessage,
    /// `m.room.member`: `user` (the state key) is now `membership`.
    Member {
        user: String,
        membership: Membership,
        /// The membership before this event (`unsigned.prev_content`), when the homeserver
        /// said: a `join` after a `join` is a profile change, not a joining.
        was: Option<Membership>,
    },
    /// `m.room.encryption`: the room is encrypted from here on.
    Encryption,
    /// `m.room.encrypted`: a message loopd cannot read.
    Encrypted,
    /// `m.room.redaction` and anything else.
    Other,
}

impl Event {
    /// Reads one event, or `None` when it lacks what every event has.
    pub fn parse(v: &Value) -> Option<Event> {
        let event_id = v.get("event_id")?.as_str()?.to_string();
        let sender = v.get("sender")?.as_str()?.to_string();
        let kind_name = v.get("type")?.as_str()?;
        let ts = v
            .get("origin_server_ts")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let content = v.get("content").unwrap_or(&Value::Null);
        let kind = match kind_name {
            "m.room.message" => message(content),
            "m.room.member" => {
                let user = v.get("state_key").and_then(Value::as_str);
                let m = content
                    .get("membership")
                    .and_then(Value::as_str)
                    .and_then(Membership::parse);
                let was = v
                    .get("unsigned")
                    .and_then(|u| u.get("prev_content"))
                    .and_then(|c| c.get("membership"))
                    .and_then(Value::as_str)
                    .and_then(Membership::parse);
                match (user, m) {
                    (Some(user), Some(membership)) => Kind::Member {
                        user: user.to_string(),
                        membership,
                        was,
                    },
                    _ => Kind::Other,
                }
            }
            // A state event only (one without a state key is not the room's encryption).
            "m.room.encryption" if v.get("state_key").is_some() => Kind::Encryption,
            "m.room.encrypted" => Kind::Encrypted,
            _ => Kind::Other,
        };
        Some(Event {
            event_id,
            sender,
            ts,
            kind,
        })
    }
}

fn message(content: &Value) -> Kind {
    let relates = content.get("m.relates_to");
    if let Some(of) = relates
        .filter(|r| r.get("rel_type").and_then(Value::as_str) == Some("m.replace"))
        .and_then(|r| r.get("event_id"))
        .and_then(Value::as_str)
    {
        return Kind::Edit { of: of.to_string() };
    }
    let body = content.get("body").and_then(Value::as_str);
    match (content.get("msgtype").and_then(Value::as_str), body) {
        (Some("m.text"), Some(body)) => Kind::Text {
            body: body.to_string(),
        },
        (Some("m.notice"), _) => Kind::Notice,
        _ => Kind::OtherMessage,
    }
}

/// The events of a JSON list (a timeline, a state block, a `/messages` chunk) that parse,
/// and how many did not.
pub fn parse_list(v: Option<&Value>) -> (Vec<Event>, usize) {
    let Some(list) = v.and_then(Value::as_array) else {
        return (Vec::new(), 0);
    };
    let events: Vec<Event> = list.iter().filter_map(Event::parse).collect();
    let bad = list.len() - events.len();
    (events, bad)
}
