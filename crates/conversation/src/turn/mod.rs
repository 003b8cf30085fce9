//! A turn (docs/turn.md): append the owner's `user` record, ask the model on `slots.main`
//! with the epoch's replayed prompt, stream its text to the asking client, append
//! `assistant` and `usage`, run each tool call (appending `tool_result`), and go round
//! again until the model answers without tool calls or `loop.max_rounds` is spent.
//! What follows a turn (summaries, compaction, the rerun after `SessionFull`) is
//! loopd's `engine`'s: this module knows nothing of compaction.

pub mod asked;
pub(crate) mod recollect;
pub(crate) mod textcall;
pub(crate) mod tools_run;

use crate::open_session::{Session, SessionError};
use crate::prompt::{replay, THINKING};
use crate::testhook;
use llama::{ChatRequest, Completion, Delta, LlamaError};
use proto::time::now_rfc3339;
use proto::{FromMatrix, Origin, Record, Tokens};
use std::fmt;

use crate::prompt::TurnCtx;

/// Where a turn's visible output goes: the asking client's reply block.
pub trait Sink {
    /// A piece of the model's answer.
    fn text(&mut self, text: &str);
    /// One line of tool activity, shown as `· …`.
    fn activity(&mut self, line: &str);
    /// A `· ` line the owner must read even when nothing else of the turn is shown (a
    /// heartbeat answered with its acknowledgement): a reminder the model set, or held
    /// for `/allow N` (docs/reminders.md, 'The remind tool').
    fn must_show(&mut self, line: &str) {
        self.activity(line);
    }
}

#[derive(Debug)]
pub enum TurnError {
    /// llama.cpp said the prompt does not fit the slot.
    SessionFull(String),
    /// The model could not be asked, or its answer broke.
    Llama(LlamaError),
    /// A record could not be written; nothing after it happened.
    Store(SessionError),
}

/// Statuses that refuse where loopd asks (a login wanted, no such route), not the
/// session's history: for these, `/compact` is no way out.
const NOT_THE_HISTORY: [u16; 4] = [401, 403, 404, 405];

impl fmt::Display for TurnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TurnError::SessionFull(m) => write!(f, "context full: {m}"),
            // Refusals of where loopd asks, not of what it sends: a fresh epoch would be
            // refused the same way.
            TurnError::Llama(e @ LlamaError::Refused { status, .. })
                if NOT_THE_HISTORY.contains(status) =>
            {
                write!(
                    f,
                    "{e}; the server refuses the request whatever it holds: check llama.url, and that a llama.cpp server answers there without a login"
                )
            }
            TurnError::Llama(e) if e.repeats() => write!(
                f,
                "{e}; the server refuses this session's history as it is: send /compact to start a fresh epoch"
            ),
            TurnError::Llama(e) => write!(f, "{e}"),
            TurnError::Store(e) => write!(f, "session log: {e}"),
        }
    }
}

impl std::error::Error for TurnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TurnError::Llama(e) => Some(e),
            TurnError::Store(e) => Some(e),
            TurnError::SessionFull(_) => None,
        }
    }
}

impl From<SessionError> for TurnError {
    fn from(e: SessionError) -> TurnError {
        TurnError::Store(e)
    }
}

/// Where the user record of Matrix event `event` stands in `records`, if it does.
pub fn logged_at(records: &[Record], event: &str) -> Option<usize> {
    records
        .iter()
        .rposition(|r| matches!(r, Record::User { matrix: Some(m), .. } if m.event == event))
}

/// The model's final answer among the records after a user record, up to the next one:
/// the first `assistant` record that asked for no tools.
fn answer_after(after: &[Record]) -> Option<String> {
    for r in after {
        match r {
            Record::User { .. } => return None,
            Record::Assistant {
                content,
                tool_calls,
                ..
            } if tool_calls.is_empty() => return Some(content.clone().unwrap_or_default()),
            _ => {}
        }
    }
    None
}

/// What a successful turn did, for the log line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TurnDone {
    pub rounds: u32,
    pub tool_calls: u32,
    /// The model still wanted tools when `loop.max_rounds` was spent.
    pub(crate) out_of_rounds: bool,
    /// The first completion's counters: after a slot restore, whether it took.
    pub first: Option<Tokens>,
    /// The last completion's counters.
    pub last: Option<Tokens>,
    /// Memory in the turn brought hits into the prompt.
    pub recalled: bool,
    /// The last answer was cut at the server's token limit.
    pub cut: bool,
    /// A `remind` call set a reminder or held one for `/allow N`.
    pub(crate) reminded: bool,
}

/// What a turn is asked: the line, who said it, the Matrix event it was (if any), and
/// when it was said. A line asked again in a new epoch (after a full context) is the
/// same line, written with the same time: a heartbeat's message is found by that time
/// whichever epoch holds its words (docs/matrix.md, 'Forgetting').
#[derive(Debug, Clone, Copy)]
pub struct Asked<'a> {
    pub text: &'a str,
    pub origin: Origin,
    pub from: Option<&'a FromMatrix>,
    pub time: &'a str,
}

/// Runs one turn for `asked` in `session`. A failure of the model is also written down
/// as a `note`, so the owner reading the log later sees why there is no answer.
/// `reminded` is set when a `remind` call set (or held) a reminder, and kept across the
/// runs of one line: a run cut short by a full context may have set one before the line
/// is asked again in the new epoch.
///
/// `from` is the Matrix event the line was. One already in the epoch's records is not
/// written again (docs/matrix.md, 'Exactly once in'): a crash cut its turn short, so
/// its answer, when the log holds one, is given again without the model, and otherwise
/// the turn goes on from what the log holds.
pub fn run_turn(
    ctx: &TurnCtx<'_>,
    session: &mut Session,
    asked: Asked<'_>,
    sink: &mut dyn Sink,
    reminded: &mut bool,
) -> Result<TurnDone, TurnError> {
    let Asked {
        text,
        origin,
        from,
        time,
    } = asked;
    if let Some(at) = from.and_then(|f| logged_at(session.records(), &f.event)) {
        if let Some(answer) = answer_after(&session.records()[at + 1..]) {
            sink.text(&answer);
            return Ok(TurnDone::default());
        }
        return rounds(ctx, session, sink, reminded);
    }
    // Asked before the line is written, so memoryd cannot answer the line with itself; a
    // heartbeat's text is loopd's own prompt, not a question of the owner's.
    let memory = match origin {
        Origin::Owner => recollect::recollect(ctx, session, text),
        Origin::Heartbeat => None,
    };
    session.append(Record::User {
        time: time.to_string(),
        content: text.to_string(),
        origin,
        matrix: from.cloned(),
    })?;
    testhook::abort_at("after-user-append");
    let recalled = memory.is_some();
    if let Some(memory) = memory {
        session.append(memory.record.clone())?;
        // The owner sees what memory brought, not only the model (docs/turn.md).
        sink.activity(&memory.line());
    }
    let result = rounds(ctx, session, sink, reminded).map(|mut done| {
        done.recalled = recalled;
        done.reminded = *reminded;
        done
    });
    // An owner's line that asks for a reminder the turn did not set is never left
    // silent (docs/reminders.md, 'Asked in words'): loopd's own line, after the answer,
    // gives the command that sets it.
    if let (Ok(done), Origin::Owner) = (&result, origin) {
        if !done.reminded {
            if let Some(line) = asked::unset_line(text, remind::clock::now()) {
                sink.activity(&line);
            }
        }
    }
    if let Err(TurnError::Llama(e)) = &result {
        let note = Record::Note {
            time: now_rfc3339(),
            // The server's own words go into the session log (where a forget reaches
            // them), never into a log line.
            text: format!("turn failed: {}", e.for_session_log()),
        };
        if let Err(store) = session.append(note) {
            plumbing::error!(
                "session {}: cannot write the failure note: {store}",
                session.id()
            );
        }
    }
    result
}

fn rounds(
    ctx: &TurnCtx<'_>,
    session: &mut Session,
    sink: &mut dyn Sink,
    reminded: &mut bool,
) -> Result<TurnDone, TurnError> {
    let max_rounds = ctx.cfg.turn.max_rounds;
    let mut done = TurnDone::default();
    loop {
        done.rounds += 1;
        let completion = call_model(ctx, session, sink)?;
        let cut = completion.cut();
        let mut completion = completion;
        if !cut && completion.tool_calls.is_empty() {
            let offered = offered_names(session);
            if let Some(call) = completion
                .content
                .as_deref()
                .and_then(|text| textcall::recover(text, &offered))
            {
                // The call replaces the text, so replay sends the model a call it can
                // read back, not its JSON twice.
                completion.content = None;
                completion.tool_calls = vec![call];
            }
        }
        let mut calls = completion.tool_calls;
        // Numbers are taken before the assistant record so a call the server sent
        // without an id, or with the id of another call of the same answer, gets one
        // that is unique in the session, and replays the same.
        let numbers = calls
            .iter()
            .map(|_| session.take_call())
            .collect::<Result<Vec<u64>, _>>()?;
        let mut ids = std::collections::HashSet::new();
        for (call, number) in calls.iter_mut().zip(&numbers) {
            // An id in loopd's own shape is loopd's to give: in some chat formats the
            // model writes the id, and one it wrote as `call-18446744073709551615` would
            // otherwise count as a number taken and use every later one up.
            let ours = call.id.starts_with("call-") || call.id.starts_with("allow-");
            if call.id.is_empty() || ours || !ids.insert(call.id.clone()) {
                call.id = format!("call-{number}");
                ids.insert(call.id.clone());
            }
        }
        session.append(Record::Assistant {
            time: now_rfc3339(),
            content: completion.content,
            tool_calls: calls.clone(),
            cut,
        })?;
        testhook::abort_at("after-assistant-append");
        if let Some(tokens) = completion.timings {
            session.append(Record::Usage {
                time: now_rfc3339(),
                slot: ctx.cfg.slots.main,
                tokens,
            })?;
            done.first.get_or_insert(tokens);
            done.last = Some(tokens);
        } else {
            plumbing::warn!(
                "session {}: llama.cpp sent no timings; no usage record",
                session.id()
            );
        }
        if cut {
            // The answer stopped mid-way: its calls may be cut mid-arguments, and even
            // whole ones were not meant to be the last thing said. None is run, and the
            // owner is told, so a stop mid-sentence is never mistaken for the answer.
            done.cut = true;
            sink.activity(&cut_line(
                completion.timings.map(|t| t.predicted_n),
                calls.len(),
            ));
            return Ok(done);
        }
        if calls.is_empty() {
            return Ok(done);
        }
        done.tool_calls += calls.len() as u32;
        if done.rounds >= max_rounds {
            tools_run::out_of_rounds(session, &calls, &numbers, max_rounds, sink)?;
            done.out_of_rounds = true;
            return Ok(done);
        }
        for (call, number) in calls.iter().zip(numbers) {
            *reminded |= tools_run::run_call(ctx, session, call, number, sink)?;
        }
    }
}

/// The names of the tools frozen in the epoch's head.
fn offered_names(session: &Session) -> Vec<&str> {
    session
        .head()
        .tools
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default()
}

/// The `· ` line for an answer the server cut at its token limit.
pub(crate) fn cut_line(tokens: Option<u64>, calls: usize) -> String {
    let at = tokens.map_or_else(String::new, |n| format!(" at {n} tokens"));
    let calls = match calls {
        0 => String::new(),
        1 => "; its tool call was not run".to_string(),
        n => format!("; its {n} tool calls were not run"),
    };
    format!("the answer was cut{at}: the server's token limit{calls}")
}

fn call_model(
    ctx: &TurnCtx<'_>,
    session: &Session,
    sink: &mut dyn Sink,
) -> Result<Completion, TurnError> {
    let request = ChatRequest {
        slot: ctx.cfg.slots.main,
        messages: replay::messages(
            session.head(),
            session.records(),
            ctx.cfg.turn.tool_result_cap,
        ),
        tools: session.head().tools.clone(),
        thinking: THINKING,
    };
    let mut streamed = false;
    let mut thinking = false;
    let mut on_delta = |d: Delta<'_>| match d {
        Delta::Content(text) => {
            sink.text(text);
            if !streamed {
                streamed = true;
                testhook::abort_at("mid-stream");
            }
        }
        // The model's reasoning is neither the reply nor replayed; the owner is told
        // once that it is thinking, so a long silence is not mistaken for a hang.
        Delta::Reasoning(_) if !thinking && !streamed => {
            thinking = true;
            sink.activity("thinking…");
        }
        Delta::Reasoning(_) | Delta::ToolCall { .. } => {}
    };
    ctx.client
        .chat(&request, &mut on_delta)
        .map_err(|e| match e {
            LlamaError::ContextFull(m) => TurnError::SessionFull(m),
            other => TurnError::Llama(other),
        })
}

#[cfg(test)]
mod resume_tests {
    use super::{answer_after, logged_at};
    use proto::test_records::{assistant, assistant_calling, user, user_from_matrix};

    #[test]
    fn a_line_from_matrix_is_found_by_its_event_and_its_answer_is_the_first_without_tools() {
        let records = vec![
            user("from the socket"),
            assistant("socket answer"),
            user_from_matrix("from the phone", "$e1"),
            assistant_calling(&[("c1", "read_file", "{}")]),
            assistant("the phone's answer"),
            user_from_matrix("cut short", "$e2"),
        ];
        assert_eq!(logged_at(&records, "$e1"), Some(2));
        assert_eq!(logged_at(&records, "$e3"), None);
        assert_eq!(
            answer_after(&records[3..]).as_deref(),
            Some("the phone's answer")
        );
        // A line whose turn a crash cut before any answer has none: the turn goes on.
        assert_eq!(answer_after(&records[6..]), None);
        // The next line's answer is not this line's.
        assert_eq!(answer_after(&[user("next"), assistant("x")]), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_of_where_loopd_asks_does_not_send_the_owner_to_compact() {
        // Regression: a 401, 403 or 404 (a wrong llama.url, a proxy wanting a login) was
        // told "send /compact", which the server refuses the same way.
        let refused = |status| {
            TurnError::Llama(LlamaError::Refused {
                status,
                message: "no".into(),
            })
            .to_string()
        };
        for status in [401, 403, 404] {
            let said = refused(status);
            assert!(!said.contains("/compact"), "{said}");
            assert!(said.contains("check llama.url"), "{said}");
        }
        assert!(refused(400).contains("send /compact"));
    }
}
