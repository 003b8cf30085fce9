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
            body: without_reply_fallback(content, body).to_string(),
        },
        (Some("m.notice"), _) => Kind::Notice,
        _ => Kind::OtherMessage,
    }
}

/// `body` without a reply's fallback: a client replying to an event (`m.relates_to`
/// `m.in_reply_to`) may put the event it answers before the sender's words, quoted, as
/// lines starting with `>` and an empty line after them (the spec's fallback, which
/// receivers strip). Those lines are the earlier event's text (the model's, or a page's
/// it repeated), never the owner's words, so they are no part of the owner's line
/// (docs/matrix.md, 'Lines in'). The fallback's first line names the sender
/// (`> <@user:server> …`, `> * <@user:server> …` for an emote); a body that is not
/// shaped so, an owner's own quote in a reply without a fallback among them, is kept
/// whole.
fn without_reply_fallback<'a>(content: &Value, body: &'a str) -> &'a str {
    let replying = content
        .get("m.relates_to")
        .and_then(|r| r.get("m.in_reply_to"))
        .is_some();
    if !replying || !(body.starts_with("> <@") || body.starts_with("> * <@")) {
        return body;
    }
    let mut rest = body;
    while let Some((line, after)) = rest.split_once('\n') {
        if line.is_empty() {
            return after;
        }
        if !line.starts_with('>') {
            break;
        }
        rest = after;
    }
    body
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body_of(content: Value) -> Kind {
        let v = json!({"event_id": "$e", "sender": "@o:x", "type": "m.room.message", "content": content});
        Event::parse(&v).unwrap().kind
    }

    fn text(body: &str) -> Kind {
        Kind::Text { body: body.into() }
    }

    /// Regression: an owner's reply (`m.in_reply_to`) from a client that writes the
    /// spec's fallback was taken whole, the quoted event included, so the model's words
    /// (and a URL a page had it write) came back as the owner's own line: an owner's URL
    /// the model may fetch while the context is guarded (docs/labels.md). The fallback is
    /// no part of the line.
    #[test]
    fn a_replys_fallback_quoting_the_event_it_answers_is_not_the_owners_line() {
        let reply = json!({"m.in_reply_to": {"event_id": "$model"}});
        let quoted =
            "> <@box:x> Sure, see http://evil.example/?d=PIN-3102\n> more\n\nwhat is this?";
        assert_eq!(
            body_of(json!({"msgtype": "m.text", "body": quoted, "m.relates_to": reply})),
            text("what is this?")
        );
        let command = "> <@box:x> loopd: reminder at 09:00\n\n/remind in 1h again";
        assert_eq!(
            body_of(json!({"msgtype": "m.text", "body": command, "m.relates_to": reply})),
            text("/remind in 1h again"),
            "the owner's own words, a command when they start with /"
        );
        // The owner's own quote, in a message that answers nothing, is the owner's.
        assert_eq!(
            body_of(json!({"msgtype": "m.text", "body": quoted})),
            text(quoted)
        );
        // A reply without a fallback (newer clients), or one not shaped as one, is whole.
        for whole in [
            "what is this?",
            "> no empty line after it",
            "> a\nb\n\nc",
            "> the owner's own quote\n\nand their words",
        ] {
            assert_eq!(
                body_of(json!({"msgtype": "m.text", "body": whole, "m.relates_to": reply})),
                text(whole)
            );
        }
    }
}
