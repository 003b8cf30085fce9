//! Running the model's tool calls inside a turn: the name must be one of the epoch's
//! frozen tools, the arguments JSON, and the tool's policy must allow it in the session's
//! context label. Every outcome — a result, an error, a refusal — becomes the call's
//! `tool_result`, which the model reads; nothing here fails the turn but the disk.

use super::{Sink, TurnCtx};
use crate::session::{Session, SessionError};
use crate::tools::{self, guard, ToolOutput};
use proto::time::now_rfc3339;
use proto::{Label, Record, ToolCall};

/// Characters of a call's arguments shown on its `· ` activity line. Enough to see
/// which file or URL; a long argument is elided rather than flooding the reply.
pub const ACTIVITY_ARGS_CHARS: usize = 200;

/// Runs one call and appends its `tool_result` (and a `note` when refused).
pub fn run_call(
    ctx: &TurnCtx<'_>,
    session: &mut Session,
    call: &ToolCall,
    number: u64,
    sink: &mut dyn Sink,
) -> Result<(), SessionError> {
    sink.activity(&activity_line(call));
    let mut refused = None;
    let verdict = guard::policy(
        &call.name,
        &call.arguments,
        session.label(),
        ctx.cfg.tools.http_fetch.guard_class,
        session.records(),
    );
    let output = if !offered(session, &call.name) {
        error_output(format!("error: unknown tool {:?}", call.name))
    } else if let Err(refusal) = verdict {
        let output = error_output(format!(
            "{}{}. Only the owner can fetch it (with /allow {number}).",
            crate::tools::guard::REFUSED_PREFIX,
            refusal.reason
        ));
        refused = Some(refusal);
        output
    } else if let Err(e) = serde_json::from_str::<serde_json::Value>(&call.arguments) {
        error_output(format!("error: arguments are not valid json: {e}"))
    } else if call.name == "recall" {
        crate::recall::run(&ctx.cfg.memory, &call.arguments)
    } else {
        tools::run_local(&call.name, &call.arguments, &ctx.cfg.tools)
    };
    // Broken here, once, where the record is made: the server is asked which spans its
    // model reads as special, and the answer is kept in the record, so replay stays a pure
    // function of the records however the server answers later.
    let output = ToolOutput {
        content: crate::llama::tokenize::neutralise_for_model(
            ctx.client.base_url(),
            &output.content,
        ),
        label: output.label,
    };
    append_result(session, call, number, output)?;
    if let Some(refusal) = refused {
        let why = one_line_clipped(&refusal.reason);
        match &refusal.url {
            Some(url) => sink.activity(&format!(
                "{why}. To fetch {} anyway, send: /allow {number}",
                one_line_clipped(url)
            )),
            None => sink.activity(&why),
        }
        session.append(Record::Note {
            time: now_rfc3339(),
            text: format!(
                "tool {} (call {number}) refused: {}; /allow {number} fetches it",
                call.name, refusal.reason
            ),
        })?;
    }
    Ok(())
}

/// The model asked for tools in its last allowed round: each call gets a result saying
/// it was not run, so the next turn's prompt still answers every call, plus a `note`.
pub fn out_of_rounds(
    session: &mut Session,
    calls: &[ToolCall],
    numbers: &[u64],
    max_rounds: u32,
    sink: &mut dyn Sink,
) -> Result<(), SessionError> {
    for (call, number) in calls.iter().zip(numbers) {
        let why = format!("error: not run: loop.max_rounds ({max_rounds}) was spent");
        append_result(session, call, *number, error_output(why))?;
    }
    sink.activity(&format!(
        "stopped: loop.max_rounds ({max_rounds}) was spent"
    ));
    session.append(Record::Note {
        time: now_rfc3339(),
        text: format!(
            "turn stopped after {max_rounds} rounds; {} tool calls were not run",
            calls.len()
        ),
    })
}

fn append_result(
    session: &mut Session,
    call: &ToolCall,
    number: u64,
    output: ToolOutput,
) -> Result<(), SessionError> {
    session.append(Record::ToolResult {
        time: now_rfc3339(),
        call: number,
        tool_call_id: call.id.clone(),
        name: call.name.clone(),
        content: output.content,
        class: output.label.class,
        untrusted: output.label.untrusted,
    })
}

fn error_output(content: String) -> ToolOutput {
    ToolOutput {
        content,
        label: Label::PUBLIC,
    }
}

/// Whether `name` is among the tools frozen in the epoch's head: the model may only
/// call what it was offered.
fn offered(session: &Session, name: &str) -> bool {
    session
        .head()
        .tools
        .as_array()
        .is_some_and(|list| list.iter().any(|t| t["function"]["name"] == name))
}

/// `read_file {"path":"/x"}`: the name and the arguments on one line, clipped.
pub fn activity_line(call: &ToolCall) -> String {
    // Both parts come from the model: one line each, clipped, so neither can end the
    // `· ` line early and pass for reply text, nor flood the client.
    format!(
        "{} {}",
        one_line_clipped(&call.name),
        one_line_clipped(&call.arguments)
    )
}

fn one_line_clipped(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(ACTIVITY_ARGS_CHARS)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().nth(ACTIVITY_ARGS_CHARS).is_some() {
        out.push('…');
    }
    out
}
