//! The `remind` tool's call (docs/reminders.md, 'The remind tool'): set at once while the
//! context is trusted, held for the owner's `/allow N` while it is not, and said to the
//! owner either way, or that nothing was set; and the held call read back from loopd's
//! own records, for `/allow N`.

use super::{error_output, refusal_note_prefix, FollowUp, Shown};
use crate::open_session::Session;
use crate::prompt::TurnCtx;
use proto::time::now_rfc3339;
use proto::{Label, Record, ToolCall};
use std::fmt;
use tools::{self, ToolOutput};

/// The `remind` tool: sets the reminder when the context is trusted; holds it for the
/// owner's `/allow N` when it is not (a page the model read must not be able to schedule
/// messages to the owner). Either way the owner sees a `· ` line and the log a `note`.
pub(super) fn remind(
    ctx: &TurnCtx<'_>,
    session: &Session,
    call: &ToolCall,
    number: u64,
) -> (ToolOutput, FollowUp) {
    let label = session.label(ctx.cfg.channel.owner_class);
    if label.untrusted {
        return hold(session, call, number);
    }
    let ask = match tools::remind::read(&call.arguments, remind::clock::now()) {
        Ok(ask) => ask,
        Err(e) => return (error_output(format!("error: {e}")), remind_failed(&e)),
    };
    let shown_due = remind::shown(ask.due);
    let Some(book) = ctx.reminders else {
        let why = "error: remind: reminders cannot be set here".to_string();
        return (error_output(why), FollowUp::Nothing);
    };
    let set = book.with(|b| {
        b.add(
            session.id().as_str(),
            ask.due,
            &ask.text,
            remind::By::Assistant,
            label.class,
        )
    });
    match set {
        // The owner is told in loopd's words: the model's answer after an error may
        // still say the reminder is set.
        Err(e) => (
            error_output(format!("error: remind: {e}")),
            remind_failed(&e),
        ),
        Ok(reminder) => {
            book.changed();
            let line = format!(
                "reminder {} set for {shown_due}: {} (/remind cancel {} removes it)",
                reminder.n, reminder.text, reminder.n
            );
            let output = ToolOutput::done(
                format!("reminder {} set for {shown_due}", reminder.n),
                Label::PUBLIC,
            );
            let shown = Shown {
                line,
                for_model: String::new(),
                note: remind::set_note(&reminder),
                refused: None,
            };
            (output, FollowUp::Refused(shown))
        }
    }
}

/// Characters of why a `remind` call failed that its `· ` line quotes: the reason, and a
/// little of what the model wrote, on one line.
const MAX_FAILED_WHY: usize = 200;

/// The owner's line, and its `note`, for a `remind` call that set nothing: the model reads
/// the error, but its answer may still say the reminder is set.
fn remind_failed(why: &dyn std::fmt::Display) -> FollowUp {
    // The error may quote the model's words (an unreadable WHEN): a line's worth of them.
    let why = why.to_string();
    let why = why
        .strip_prefix(&format!("{}: ", tools::REMIND))
        .unwrap_or(&why);
    let why = crate::prompt::cap_chars(why, MAX_FAILED_WHY);
    let line = format!("{} failed, nothing was set: {why}", tools::REMIND);
    FollowUp::Failed(Shown {
        note: line.clone(),
        line,
        for_model: String::new(),
        refused: None,
    })
}

/// Holds a `remind` call made while the context is untrusted for the owner's `/allow N`
/// (docs/reminders.md, "The remind tool"). The decision is a `refused` record (no url,
/// offered); `/allow N` reads the reminder back from the call itself, its WHEN read
/// against the time of the `assistant` record that holds it, as here, so the owner
/// allows exactly the due time and text this line shows. The `note` is for the owner.
fn hold(session: &Session, call: &ToolCall, number: u64) -> (ToolOutput, FollowUp) {
    let records = session.records();
    let ask = match held_ask(records, records.len(), &call.id) {
        Ok(ask) => ask,
        // Nothing of the call is quoted: a page may have written it.
        Err(e) => {
            return (
                error_output(format!("error: {e}")),
                remind_failed(&"its arguments could not be read"),
            )
        }
    };
    let shown_due = remind::shown(ask.due);
    let due = ask.due.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let why = "the conversation holds untrusted text, which may have asked for it";
    let shown = Shown {
        line: format!(
            "{} refused: {why}. To set the reminder for {shown_due} ({:?}) anyway, send: /allow {number}",
            tools::REMIND,
            ask.text
        ),
        for_model: format!("Only the owner can set it (with /allow {number})."),
        note: format!(
            "{}{}{due}: {}",
            refusal_note_prefix(number),
            remind::held_note_prefix(number),
            ask.text
        ),
        refused: Some(Record::Refused {
            time: now_rfc3339(),
            call: number,
            // Nothing is fetched: a held reminder has no url, and `/allow` tells it from a
            // fetch by its call's tool (docs/labels.md, 'Refusals and `/allow N`').
            url: String::new(),
            reason: format!("{} refused: {why}", tools::REMIND),
            offered: true,
        }),
    };
    let content = format!(
        "error: {} refused: {why}. {}",
        tools::REMIND,
        shown.for_model
    );
    (error_output(content), FollowUp::Refused(shown))
}

/// Why the reminder a held `remind` call asked for cannot be read back from loopd's own
/// records; each names the `remind` tool first.
#[derive(Debug)]
pub(crate) enum HeldAskError {
    /// No `assistant` record before the result asked for anything.
    NoAnswer,
    /// The answer before it holds no `remind` call with this id, or more than one.
    NoSingleCall { id: String },
    /// The answer's `time` is not an RFC 3339 time.
    BadTime {
        time: String,
        source: chrono::ParseError,
    },
    /// The call's arguments are not a reminder.
    Ask(tools::remind::AskError),
}

impl fmt::Display for HeldAskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let remind = tools::REMIND;
        match self {
            HeldAskError::NoAnswer => write!(f, "{remind}: no call asked for it"),
            HeldAskError::NoSingleCall { id } => write!(
                f,
                "{remind}: no single call {id:?} in the answer that asked for it"
            ),
            HeldAskError::BadTime { time, source } => {
                write!(f, "{remind}: the answer's time {time:?}: {source}")
            }
            HeldAskError::Ask(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for HeldAskError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HeldAskError::NoAnswer | HeldAskError::NoSingleCall { .. } => None,
            HeldAskError::BadTime { source, .. } => Some(source),
            HeldAskError::Ask(e) => Some(e),
        }
    }
}

/// The reminder a held `remind` call asks for, read from loopd's own records: the call
/// with id `id` in the last `assistant` record before `records[before]`, its WHEN read
/// against that record's `time` (so `in 2h` is the same instant whenever it is read
/// again). Never from a note nor from any tool's result.
pub(crate) fn held_ask(
    records: &[Record],
    before: usize,
    id: &str,
) -> Result<tools::remind::Ask, HeldAskError> {
    let asked = proto::record::last_answer(records.get(..before).unwrap_or(records));
    let Some((time, calls)) = asked else {
        return Err(HeldAskError::NoAnswer);
    };
    let mut named = calls
        .iter()
        .filter(|c| c.id == id && c.name == tools::REMIND);
    let (Some(call), None) = (named.next(), named.next()) else {
        return Err(HeldAskError::NoSingleCall { id: id.to_string() });
    };
    let at =
        chrono::DateTime::parse_from_rfc3339(time).map_err(|source| HeldAskError::BadTime {
            time: time.to_string(),
            source,
        })?;
    tools::remind::read(&call.arguments, at.with_timezone(&chrono::Utc)).map_err(HeldAskError::Ask)
}
