//! `/allow N` (docs/labels.md, 'Refusals and `/allow N`'): the owner fetches a URL the label policy
//! refused, as if they had sent it themselves, or sets a reminder the model asked for
//! while the context was untrusted. Only the channel's owner line reaches here; the model
//! cannot issue it (its text never becomes a command), and `N` must be a refused
//! `http_fetch` or held `remind` call of the current epoch of this same session, allowed
//! at most once.
//!
//! `N` is loopd's own number for the call, and the decision is the `refused` record loopd
//! wrote when it refused that call: for a fetch it holds the URL exactly as the owner's
//! `· ` line showed it; for a held `remind` call (its `tool_result` names the tool) the
//! reminder is read again from the call in loopd's `assistant` record, its WHEN against
//! that record's time. Never from any text a tool returned, nor from a note's wording.
//! What is fetched or set is what was shown. An `allowed` record makes a second
//! `/allow N` an error. Logs written before these records existed hold the same decisions
//! as notes; `old_notes` is the one reader of those.
//!
//! What the log gets for a fetch, so the model reads the result with the owner's next line: an
//! `assistant` record whose one tool call (id `allow-N`) is the fetch of exactly that
//! URL, then its `tool_result` (public, untrusted, like every fetched page), then a
//! `note` saying the owner allowed it. Replay then shows the model a call and its result,
//! the shape every chat template knows, before the owner's next message.

use crate::open_session::{Session, SessionError};
use crate::prompt::TurnCtx;
use crate::turn::tools_run::{self, allow_call_id};
use crate::turn::Sink;
use proto::time::now_rfc3339;
use proto::{Record, ToolCall};
use std::fmt;
use tools::{self, guard, HTTP_FETCH};

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
    /// The held reminder could not go into the book (it is full, or cannot be written).
    Reminders(remind::BookError),
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
    // The owner reads the denial as the reply's error line: `AllowError` keeps its words.
    let url = match refused(session, call).map_err(|d| AllowError::Denied(d.to_string()))? {
        Held::Fetch(url) => url,
        Held::Reminder(ask) => return set_held(ctx, session, call, ask.due, &ask.text),
    };
    let (cfg, llama) = (ctx.cfg, ctx.client);
    let arguments = serde_json::json!({ "url": url }).to_string();
    let fetch = ToolCall {
        id: allow_call_id(call),
        name: HTTP_FETCH.into(),
        arguments,
    };
    // Taken before anything is said: a session out of numbers fetches nothing.
    let number = session.take_call()?;
    // loopd's words first: a model's call line, clipped, cannot end as this one starts.
    sink.activity(&format!(
        "allowed by the owner (/allow {call}): {}",
        crate::turn::tools_run::activity_line(&fetch)
    ));
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
    // A time already past would fire at once, as if it were due now: the owner allowed a
    // reminder for a moment that is gone, so nothing is set and they are told
    // (docs/reminders.md, 'The remind tool').
    let now = remind::clock::now();
    if due <= now {
        allowed(
            session,
            call,
            &format!(
                "nothing set: the held reminder was for {}, which has passed",
                remind::shown(due)
            ),
        )?;
        return Err(AllowError::Denied(format!(
            "call {call} held a reminder for {}, which has passed; nothing was set (/remind WHEN TEXT sets a new one)",
            remind::shown(due)
        )));
    }
    let class = session.label(ctx.cfg.channel.owner_class).class;
    // Allowed, not vouched for: the words are still what the model wrote after reading
    // untrusted text, and are delivered as such.
    let set = book.with(|b| b.add_untrusted(session.id().as_str(), due, text, class));
    let reminder = set.map_err(AllowError::Reminders)?;
    book.changed();
    allowed(session, call, &remind::set_note(&reminder))?;
    Ok(format!(
        "reminder {} set for {}: {}",
        reminder.n,
        remind::shown(reminder.due_at()),
        reminder.text
    ))
}

/// What refused call `call` held for the owner.
enum Held {
    /// A fetch of this URL, exactly as shown.
    Fetch(String),
    /// A reminder the model asked for.
    Reminder(tools::remind::Ask),
}

/// Why call N cannot be allowed, in the rule's words for the owner (docs/labels.md,
/// 'Refusals and `/allow N`').
#[derive(Debug)]
enum Denial {
    AlreadyAllowed {
        call: u64,
    },
    /// Refused and not offered for `/allow`; `why` is the refusal's own first words.
    NotOffered {
        call: u64,
        why: String,
    },
    /// A held `remind` call whose reminder cannot be read back (from an old note, no why).
    NoReminder {
        call: u64,
        why: Option<tools_run::HeldAskError>,
    },
    /// The refusal's URL is not exactly its own normal form.
    NoUrl {
        call: u64,
    },
    /// No refusal of call N in this epoch of this session.
    NotFound {
        call: u64,
        epoch: u64,
        session: String,
    },
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Denial::AlreadyAllowed { call } => write!(f, "call {call} was already allowed"),
            Denial::NotOffered { call, why } => write!(f, "call {call} was {why}"),
            Denial::NoReminder { call, why: Some(e) } => {
                write!(f, "call {call} holds no reminder that can be set: {e}")
            }
            Denial::NoReminder { call, why: None } => {
                write!(f, "call {call} holds no reminder that can be set")
            }
            Denial::NoUrl { call } => {
                write!(f, "call {call} has no url that can be fetched as shown")
            }
            Denial::NotFound {
                call,
                epoch,
                session,
            } => write!(
                f,
                "no refused {HTTP_FETCH} or remind call {call} in epoch {epoch} of session {session} (a number from another session or an earlier epoch cannot be allowed)"
            ),
        }
    }
}

impl std::error::Error for Denial {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Denial::NoReminder { why: Some(e), .. } => Some(e),
            Denial::AlreadyAllowed { .. }
            | Denial::NotOffered { .. }
            | Denial::NoReminder { why: None, .. }
            | Denial::NoUrl { .. }
            | Denial::NotFound { .. } => None,
        }
    }
}

/// What `/allow call` may do, or why it cannot: read from the `refused` and `allowed`
/// records, and for a held reminder from the call itself (docs/labels.md, 'Refusals and
/// `/allow N`').
fn refused(session: &Session, call: u64) -> Result<Held, Denial> {
    let records = session.records();
    let mut refused = None;
    for r in records {
        if let Record::Allowed { call: c, .. } = r {
            if *c == call {
                return Err(Denial::AlreadyAllowed { call });
            }
        }
        if let Record::Refused {
            call: c,
            url,
            reason,
            offered,
            ..
        } = r
        {
            if *c == call {
                refused.get_or_insert((url.as_str(), reason.as_str(), *offered));
            }
        }
    }
    let (url, reason, offered) = match refused {
        Some(found) => found,
        None => return old_notes::refused(session, call),
    };
    if !offered {
        // A refusal not offered for `/allow` says why first.
        let why = tools_run::refusal_why(reason);
        return Err(Denial::NotOffered {
            call,
            why: why.to_string(),
        });
    }
    // The tool the call named, from its `tool_result`: a held reminder has no url.
    let result = records.iter().enumerate().find_map(|(at, r)| {
        if let Record::ToolResult {
            call: c,
            name,
            tool_call_id,
            ..
        } = r
        {
            (*c == call).then_some((at, name, tool_call_id))
        } else {
            None
        }
    });
    if let Some((at, name, id)) = result {
        if name == tools::REMIND {
            return tools_run::held_ask(records, at, id)
                .map(Held::Reminder)
                .map_err(|e| Denial::NoReminder { call, why: Some(e) });
        }
    }
    checked(call, url).map(Held::Fetch)
}

/// The URL of a refusal, checked again: no record of an older loopd, nor a hand-edited
/// log, can make `/allow` fetch a URL that is not exactly its own normal form.
fn checked(call: u64, url: &str) -> Result<String, Denial> {
    match guard::offer(url) {
        guard::Offer::Allow(normal) if normal == url => Ok(normal),
        _ => Err(Denial::NoUrl { call }),
    }
}

/// Logs written before `refused` and `allowed` records existed, or before a held reminder
/// had its `refused` record: the same decisions, read from the wording of the notes those
/// versions wrote (docs/labels.md, 'Refusals and `/allow N`'). The only place a note's wording decides
/// anything, and only where no record does.
mod old_notes {
    use super::{allowed_note_prefix, checked, Denial, Held};
    use crate::open_session::Session;
    use crate::turn::tools_run::{offered_note_prefix, refusal_note_prefix, refusal_why};
    use proto::Record;

    pub fn refused(session: &Session, call: u64) -> Result<Held, Denial> {
        let notes = session.records().iter().filter_map(|r| {
            if let Record::Note { text, .. } = r {
                Some(text.as_str())
            } else {
                None
            }
        });
        let refused_prefix = refusal_note_prefix(call);
        let allowed_prefix = allowed_note_prefix(call);
        let mut refusal = None;
        for text in notes {
            if text.starts_with(&allowed_prefix) {
                return Err(Denial::AlreadyAllowed { call });
            }
            if let Some(rest) = text.strip_prefix(&refused_prefix) {
                refusal.get_or_insert(rest);
            }
        }
        let Some(rest) = refusal else {
            return Err(Denial::NotFound {
                call,
                epoch: session.epoch(),
                session: session.id().to_string(),
            });
        };
        if let Some(held) = rest.strip_prefix(&remind::held_note_prefix(call)) {
            return reminder(held)
                .map(Held::Reminder)
                .ok_or(Denial::NoReminder { call, why: None });
        }
        let Some(shown) = rest.strip_prefix(&offered_note_prefix(call)) else {
            return Err(Denial::NotOffered {
                call,
                why: refusal_why(rest).to_string(),
            });
        };
        // The shown URL is printable ASCII: it ends at the first space.
        checked(call, shown.split(' ').next().unwrap_or_default()).map(Held::Fetch)
    }

    /// A held reminder's note after its prefix: the due time (RFC 3339), `: `, the text.
    fn reminder(held: &str) -> Option<tools::remind::Ask> {
        let (due, text) = held.split_once(": ")?;
        let due = chrono::DateTime::parse_from_rfc3339(due).ok()?;
        Some(tools::remind::Ask {
            due: due.with_timezone(&chrono::Utc),
            text: text.to_string(),
        })
    }
}
