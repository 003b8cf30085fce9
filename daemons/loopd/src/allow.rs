//! `/allow N` (docs/labels.md, "/allow"): the owner fetches a URL the label policy
//! refused, as if they had sent it themselves. Only the channel's owner line reaches here;
//! the model cannot issue it (its text never becomes a command), and `N` must be a
//! refused `http_fetch` call of the current epoch of this same session, allowed at most
//! once.
//!
//! `N` is loopd's own number for the call, and the URL is read from the `refused` record
//! loopd wrote when it refused that call, holding the URL exactly as the owner's `· ` line
//! showed it: never from the model's `tool_call_id` (which may repeat or be empty, so it
//! could name another call), from any text a tool returned, nor from a note's wording.
//! What is fetched is what was shown, byte for byte. An `allowed` record makes a second
//! `/allow N` an error. Logs written before these records existed hold the same decisions
//! as notes; `old_notes` is the one reader of those.
//!
//! What the log gets, so the model reads the result with the owner's next line: an
//! `assistant` record whose one tool call (id `allow-N`) is the fetch of exactly that
//! URL, then its `tool_result` (public, untrusted, like every fetched page), then a
//! `note` saying the owner allowed it. Replay then shows the model a call and its result,
//! the shape every chat template knows, before the owner's next message.

use crate::open_session::{Session, SessionError};
use crate::prompt::TurnCtx;
use crate::turn::tools_run::refusal_note_prefix;
use crate::turn::Sink;
use proto::time::now_rfc3339;
use proto::{Record, ToolCall};
use remind::{self, By};
use tools::{self, guard, HTTP_FETCH};

/// The tool call id of the fetch `/allow N` makes.
pub fn allow_call_id(call: u64) -> String {
    format!("allow-{call}")
}

/// The start of the `note` saying the owner allowed call N, which also makes a second
/// `/allow N` an error.
fn allowed_note_prefix(call: u64) -> String {
    format!("the owner allowed call {call} (/allow {call})")
}

/// Why `/allow N` fetched nothing and set nothing.
#[derive(Debug)]
pub enum AllowError {
    /// The log could not be written.
    Session(SessionError),
    /// Call N cannot be allowed; the rule's words for the owner (docs/labels.md,
    /// 'Refusals and `/allow N`').
    Denied(String),
}

impl From<SessionError> for AllowError {
    fn from(e: SessionError) -> AllowError {
        AllowError::Session(e)
    }
}

/// Logs that the owner allowed call `call`: the `allowed` record `/allow` reads, then a
/// `note` saying what it did, for the owner to read later.
fn allowed(session: &mut Session, call: u64, what: &str) -> Result<(), SessionError> {
    session.append(Record::Allowed {
        time: now_rfc3339(),
        call,
    })?;
    session.append(Record::Note {
        time: now_rfc3339(),
        text: format!("{}: {what}", allowed_note_prefix(call)),
    })
}

/// Runs `/allow call` in `session`: the reply, or why nothing was done.
pub fn run(
    ctx: &TurnCtx<'_>,
    session: &mut Session,
    call: u64,
    sink: &mut dyn Sink,
) -> Result<String, AllowError> {
    if let Some(held) = held_reminder(session, call) {
        let (due, text) = held.map_err(AllowError::Denied)?;
        return set_held(ctx, session, call, due, &text);
    }
    let (cfg, llama) = (ctx.cfg, ctx.client);
    let url = refused_url(session, call).map_err(AllowError::Denied)?;
    let arguments = serde_json::json!({ "url": url }).to_string();
    let fetch = ToolCall {
        id: allow_call_id(call),
        name: HTTP_FETCH.into(),
        arguments,
    };
    sink.activity(&format!(
        "{} (allowed by the owner: /allow {call})",
        crate::turn::tools_run::activity_line(&fetch)
    ));
    let number = session.take_call();
    session.append(Record::Assistant {
        cut: false,
        time: now_rfc3339(),
        content: None,
        tool_calls: vec![fetch.clone()],
    })?;
    let output = tools::run_local(HTTP_FETCH, &fetch.arguments, &cfg.tools);
    let content = llama::tokenize::neutralise_for_model(llama, &output.content);
    // The fetch says whether it failed; a page that begins `error: ` is still a page.
    let failed = output.failed;
    let chars = content.chars().count();
    session.append(Record::ToolResult {
        time: now_rfc3339(),
        call: number,
        tool_call_id: fetch.id.clone(),
        name: HTTP_FETCH.into(),
        content,
        class: output.label.class,
        untrusted: output.label.untrusted,
    })?;
    allowed(session, call, &format!("fetched {url} as call {number}"))?;
    let reply = if failed {
        format!("fetched {url}, which failed; the assistant reads the error with your next message")
    } else {
        format!("fetched {url} ({chars} characters); the assistant reads it with your next message")
    };
    Ok(reply)
}

/// The reminder held as refused call `call` (its due time and text), why it can no
/// longer be set, or `None` when call `call` is not a held reminder.
fn held_reminder(
    session: &Session,
    call: u64,
) -> Option<Result<(chrono::DateTime<chrono::Utc>, String), String>> {
    let refused = refusal_note_prefix(call) + &remind::held_note_prefix(call);
    let allowed = allowed_note_prefix(call);
    let mut held = None;
    for r in session.records() {
        if matches!(r, Record::Allowed { call: c, .. } if *c == call) && held.is_some() {
            return Some(Err(format!("call {call} was already allowed")));
        }
        let Record::Note { text, .. } = r else {
            continue;
        };
        if text.starts_with(&allowed) && held.is_some() {
            return Some(Err(format!("call {call} was already allowed")));
        }
        if let Some(rest) = text.strip_prefix(&refused) {
            held.get_or_insert(rest.to_string());
        }
    }
    let rest = held?;
    let parsed = rest.split_once(": ").and_then(|(due, text)| {
        let due = chrono::DateTime::parse_from_rfc3339(due).ok()?;
        Some((due.with_timezone(&chrono::Utc), text.to_string()))
    });
    Some(parsed.ok_or_else(|| format!("call {call} holds no reminder that can be set")))
}

/// Sets the reminder the model asked for in call `call`, now that the owner allowed it.
fn set_held(
    ctx: &TurnCtx<'_>,
    session: &mut Session,
    call: u64,
    due: chrono::DateTime<chrono::Utc>,
    text: &str,
) -> Result<String, AllowError> {
    let Some(book) = ctx.reminders else {
        return Err(AllowError::Denied("reminders cannot be set here".into()));
    };
    let class = session.label(ctx.cfg.channel.owner_class).class;
    let set = book.with(|b| b.add(session.id().as_str(), due, text, By::Assistant, class));
    let reminder = set.map_err(AllowError::Denied)?;
    book.changed();
    allowed(session, call, &remind::set_note(&reminder))?;
    Ok(format!(
        "reminder {} set for {}: {}",
        reminder.n,
        remind::shown(reminder.due_at()),
        reminder.text
    ))
}

/// The URL shown for refused call `call`, or why `/allow call` cannot fetch it.
fn refused_url(session: &Session, call: u64) -> Result<String, String> {
    let mut refused = None;
    for r in session.records() {
        match r {
            Record::Allowed { call: c, .. } if *c == call => {
                return Err(format!("call {call} was already allowed and fetched"));
            }
            Record::Refused {
                call: c,
                url,
                reason,
                offered,
                ..
            } if *c == call => {
                refused.get_or_insert((url.as_str(), reason.as_str(), *offered));
            }
            _ => {}
        }
    }
    let (url, reason, offered) = match refused {
        Some(found) => found,
        None => return old_notes::refused_url(session, call),
    };
    if !offered {
        // A refusal not offered for `/allow` says why first, before its `; `.
        let why = reason.split_once("; ").map_or(reason, |(why, _)| why);
        return Err(format!("call {call} was {why}"));
    }
    checked(call, url)
}

/// The URL of a refusal, checked again: no record of an older loopd, nor a hand-edited
/// log, can make `/allow` fetch a URL that is not exactly its own normal form.
fn checked(call: u64, url: &str) -> Result<String, String> {
    match guard::offer(url) {
        guard::Offer::Allow(normal) if normal == url => Ok(normal),
        _ => Err(format!(
            "call {call} has no url that can be fetched as shown"
        )),
    }
}

/// Logs written before `refused` and `allowed` records existed: the same decisions, read
/// from the wording of the notes those versions wrote (docs/labels.md, "/allow").
mod old_notes {
    use super::{allowed_note_prefix, checked, HTTP_FETCH};
    use crate::open_session::Session;
    use crate::turn::tools_run::{offered_note_prefix, refusal_note_prefix};
    use proto::Record;

    pub fn refused_url(session: &Session, call: u64) -> Result<String, String> {
        let notes = session.records().iter().filter_map(|r| match r {
            Record::Note { text, .. } => Some(text.as_str()),
            _ => None,
        });
        let refused_prefix = refusal_note_prefix(call);
        let allowed_prefix = allowed_note_prefix(call);
        let mut refusal = None;
        for text in notes {
            if text.starts_with(&allowed_prefix) {
                return Err(format!("call {call} was already allowed and fetched"));
            }
            if let Some(rest) = text.strip_prefix(&refused_prefix) {
                refusal.get_or_insert(rest);
            }
        }
        let Some(rest) = refusal else {
            return Err(format!(
                "no refused {HTTP_FETCH} call {call} in epoch {} of session {} (a number from another session or an earlier epoch cannot be allowed)",
                session.epoch(),
                session.id()
            ));
        };
        let Some(shown) = rest.strip_prefix(&offered_note_prefix(call)) else {
            let why = rest.split_once("; ").map_or(rest, |(why, _)| why);
            return Err(format!("call {call} was {why}"));
        };
        // The shown URL is printable ASCII: it ends at the first space.
        checked(call, shown.split(' ').next().unwrap_or_default())
    }
}
