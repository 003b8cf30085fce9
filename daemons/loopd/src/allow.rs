//! `/allow N` (SPEC §4, §5): the owner fetches a URL the label policy refused, as if they
//! had sent it themselves. Only the channel's owner line reaches here; the model cannot
//! issue it (its text never becomes a command), and `N` must be a refused `http_fetch`
//! call of the current epoch of this same session, allowed at most once.
//!
//! What the log gets, so the model reads the result with the owner's next line: an
//! `assistant` record whose one tool call (id `allow-N`) is the fetch of exactly the
//! refused URL, then its `tool_result` (public, untrusted, like every fetched page), then a
//! `note` saying the owner allowed it. Replay then shows the model a call and its result,
//! the shape every chat template knows, before the owner's next message.

use crate::session::{Session, SessionError};
use crate::tools::{self, guard, HTTP_FETCH};
use crate::turn::Sink;
use proto::config::Config;
use proto::time::now_rfc3339;
use proto::{Record, ToolCall};

/// The tool call id of the fetch `/allow N` makes, so a second `/allow N` can be told.
pub fn allow_call_id(call: u64) -> String {
    format!("allow-{call}")
}

/// Runs `/allow call` in `session`: the reply text and whether it succeeded. Only a disk
/// failure is an `Err`.
pub fn run(
    cfg: &Config,
    session: &mut Session,
    call: u64,
    sink: &mut dyn Sink,
) -> Result<(String, bool), SessionError> {
    let url = match refused_url(session, call) {
        Ok(url) => url,
        Err(why) => return Ok((format!("error: /allow {call}: {why}"), false)),
    };
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
    let content = crate::llama::tokenize::neutralise_for_model(&cfg.llama.url, &output.content);
    let failed = content.starts_with("error: ");
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
    session.append(Record::Note {
        time: now_rfc3339(),
        text: format!(
            "the owner allowed call {call} (/allow {call}): fetched {url} as call {number}"
        ),
    })?;
    let reply = if failed {
        format!("fetched {url}, which failed; the assistant reads the error with your next message")
    } else {
        format!("fetched {url} ({chars} characters); the assistant reads it with your next message")
    };
    Ok((reply, true))
}

/// The URL refused call `call` wanted, or why `/allow call` cannot fetch it.
fn refused_url(session: &Session, call: u64) -> Result<String, String> {
    let records = session.records();
    let refused = records.iter().enumerate().find_map(|(at, r)| match r {
        Record::ToolResult {
            call: c,
            tool_call_id,
            name,
            content,
            ..
        } if *c == call && name == HTTP_FETCH && content.starts_with(guard::REFUSED_PREFIX) => {
            Some((at, tool_call_id.as_str()))
        }
        _ => None,
    });
    let Some((at, tool_call_id)) = refused else {
        return Err(format!(
            "no refused {HTTP_FETCH} call {call} in epoch {} of session {} (a number from another session or an earlier epoch cannot be allowed)",
            session.epoch(),
            session.id()
        ));
    };
    let allowed = allow_call_id(call);
    let already = records.iter().any(|r| match r {
        Record::ToolResult { tool_call_id, .. } => *tool_call_id == allowed,
        _ => false,
    });
    if already {
        return Err(format!("call {call} was already allowed and fetched"));
    }
    // The call is the one of that id in the nearest assistant record before its result:
    // ids are the model's (or the server's) and need not be unique across rounds.
    records[..at]
        .iter()
        .rev()
        .find_map(|r| match r {
            Record::Assistant { tool_calls, .. } => tool_calls
                .iter()
                .find(|c| c.id == tool_call_id && c.name == HTTP_FETCH)
                .and_then(|c| guard::url_of(&c.arguments)),
            _ => None,
        })
        .ok_or_else(|| format!("call {call} has no url to fetch"))
}
