//! Running the model's tool calls inside a turn: the name must be one of the epoch's
//! frozen tools, the arguments JSON, and the tool's policy must allow it in the session's
//! context label. Every outcome — a result, an error, a refusal — becomes the call's
//! `tool_result`, which the model reads; nothing here fails the turn but the disk.
//!
//! Each call is known by loopd's own number for it (`call`, unique in the session), never
//! by the server's `tool_call_id`, which may repeat or be empty: the `· ` line offering
//! `/allow N` and the `refused` record that `/allow N` reads both name that number.

use super::Sink;
use crate::open_session::{Session, SessionError};
use crate::prompt::TurnCtx;
use proto::time::now_rfc3339;
use proto::{Label, Record, ToolCall};
use tools::guard::{self, Allowed, Offer, Refusal};
use tools::{self, ToolOutput};

mod remind;
pub(crate) use remind::{held_ask, HeldAskError};

/// The tool call id of the fetch `/allow N` makes.
pub(crate) fn allow_call_id(call: u64) -> String {
    format!("allow-{call}")
}

/// The `N` of `/allow N` whose fetch a tool call id names, if it is one: how `/forget`
/// finds the room events of the `/allow N` that wrote a record (docs/matrix.md,
/// 'Forgetting'). A model's call given such an id only makes more events go.
pub(crate) fn allowed_call(id: &str) -> Option<u64> {
    id.strip_prefix("allow-")?.parse().ok()
}

/// Characters of a call's arguments shown on its `· ` activity line. Enough to see
/// which file or URL; a long argument is elided rather than flooding the reply. A refused
/// URL is shown whole on the refusal's own line (up to `guard::offer::MAX_OFFERED_URL`).
pub(crate) const ACTIVITY_ARGS_CHARS: usize = 200;

/// Runs one call and appends its `tool_result` (and a `note` when refused, or when it
/// fetched one of the owner's URLs under the guard). True when it was a `remind` call
/// that set a reminder or held one for `/allow N`: its own `· ` line told the owner.
pub(crate) fn run_call(
    ctx: &TurnCtx<'_>,
    session: &mut Session,
    call: &ToolCall,
    number: u64,
    sink: &mut dyn Sink,
) -> Result<bool, SessionError> {
    sink.activity(&activity_line(call));
    let (output, after) = outcome(ctx, session, call, number);
    // A reminder set or held: the line asking in words has nothing to offer.
    let reminded = call.name == tools::REMIND && matches!(after, FollowUp::Refused(_));
    // Shown whatever the turn's answer: what was set or held, or that nothing was.
    let must = reminded || matches!(after, FollowUp::Failed(_));
    // Broken here, once, where the record is made: the server is asked which spans its
    // model reads as special, and the answer is kept in the record, so replay stays a pure
    // function of the records however the server answers later.
    let output = ToolOutput {
        content: llama::tokenize::neutralise_for_model(ctx.client, &output.content),
        ..output
    };
    append_result(session, call, number, output)?;
    after.record(session, sink, must)?;
    Ok(reminded)
}

/// What a call's result is followed by.
enum FollowUp {
    Nothing,
    /// The `note` that bounds the owner's URL to one fetch per owner line.
    OwnerFetched(String),
    /// A `· ` line and a `note`: a refusal's, or a reminder the model set.
    Refused(Shown),
    /// A `· ` line and a `note` the owner must read: a reminder the model asked for and
    /// did not get (nothing was set, whatever its answer says).
    Failed(Shown),
}

impl FollowUp {
    /// Writes what follows the result; `reminded`: the line is a reminder set or held,
    /// which the owner must see whatever the turn's answer.
    fn record(
        self,
        session: &mut Session,
        sink: &mut dyn Sink,
        reminded: bool,
    ) -> Result<(), SessionError> {
        let text = match self {
            FollowUp::Nothing => return Ok(()),
            FollowUp::OwnerFetched(note) => note,
            FollowUp::Refused(shown) | FollowUp::Failed(shown) => {
                if reminded {
                    sink.must_show(&shown.line);
                } else {
                    sink.activity(&shown.line);
                }
                if let Some(mut refused) = shown.refused {
                    // Timed as it is written, after the call's `tool_result`: a log's
                    // times never go back from one line to the next.
                    if let Record::Refused { time, .. } = &mut refused {
                        *time = now_rfc3339();
                    }
                    session.append(refused)?;
                }
                shown.note
            }
        };
        session.append(Record::Note {
            time: now_rfc3339(),
            text,
        })
    }
}

/// Checks and runs `call`: its output, and what must follow its result.
fn outcome(
    ctx: &TurnCtx<'_>,
    session: &Session,
    call: &ToolCall,
    number: u64,
) -> (ToolOutput, FollowUp) {
    if !offered(session, &call.name) {
        let why = format!("error: unknown tool {:?}", call.name);
        return (error_output(why), FollowUp::Nothing);
    }
    if let Err(e) = serde_json::from_str::<serde_json::Value>(&call.arguments) {
        let why = format!("error: arguments are not valid json: {e}");
        return (error_output(why), FollowUp::Nothing);
    }
    if call.name == tools::REMIND {
        return remind::remind(ctx, session, call, number);
    }
    let verdict = guard::policy(
        &call.name,
        &call.arguments,
        session.label(ctx.cfg.channel.owner_class),
        ctx.cfg.tools.http_fetch.guard_class,
        session.records(),
    );
    let after = match verdict {
        Err(refusal) => {
            let shown = Shown::of(&refusal, number);
            let content = format!(
                "{}{}. {}",
                guard::REFUSED_PREFIX,
                refusal.reason(),
                shown.for_model
            );
            return (error_output(content), FollowUp::Refused(shown));
        }
        Ok(Allowed::Run) => FollowUp::Nothing,
        Ok(Allowed::OwnerOnce(url)) => {
            FollowUp::OwnerFetched(guard::owner_fetch_note(number, &url))
        }
    };
    let output = if call.name == tools::RECALL {
        crate::recall::run(&ctx.cfg.memory, &call.arguments)
    } else {
        tools::run_local(&call.name, &call.arguments, &ctx.cfg.tools)
    };
    (output, after)
}

/// The start of the `note` a refusal writes for call N. The note is for the owner to
/// read; `/allow N` reads its wording only in logs written before `refused` records
/// (`crate::allow`'s old-notes reader).
pub(crate) fn refusal_note_prefix(number: u64) -> String {
    format!("refused call {number}: ")
}

/// What follows `refusal_note_prefix` when the URL is offered: then the URL, a space and
/// the rest of the note.
pub(crate) fn offered_note_prefix(number: u64) -> String {
    format!("/allow {number} fetches ")
}

/// The `reason` a `refused` record not offered for `/allow` holds, which its note says too:
/// why it is not offered, then the policy's reason after `; `. `refusal_why` reads the
/// first part back: the one writer and the one reader of that shape.
fn not_offered(not: &str, reason: &str) -> String {
    format!("not offered for /allow: {not}; {reason}")
}

/// What a refusal's `reason` (or the rest of its note) says first, before its `; `: the
/// words `/allow N` answers a refusal it cannot allow with.
pub(crate) fn refusal_why(reason: &str) -> &str {
    reason.split_once("; ").map_or(reason, |(why, _)| why)
}

/// A refusal as the owner, the model and the log see it.
struct Shown {
    /// The `· ` line: what was refused and why, the URL whole (or why it is not offered),
    /// and how to allow it.
    line: String,
    /// What the model's tool result says after the reason.
    for_model: String,
    /// The `note`, for the owner to read later.
    note: String,
    /// The typed decision `/allow N` reads (docs/labels.md, 'Refusals and `/allow N`'): a `refused` record,
    /// for a refused fetch or a held reminder.
    refused: Option<Record>,
}

impl Shown {
    fn of(refusal: &Refusal, number: u64) -> Shown {
        let prefix = refusal_note_prefix(number);
        let reason = refusal.reason();
        let refused = |url: &str, reason: String, offered: bool| {
            Some(Record::Refused {
                time: now_rfc3339(),
                call: number,
                url: url.to_string(),
                reason,
                offered,
            })
        };
        let Some(raw) = &refusal.url else {
            return Shown {
                line: clipped(&reason),
                for_model: "Only the owner can run it.".into(),
                note: format!("{prefix}{}", not_offered("no url", &reason)),
                refused: refused("", not_offered("no url", &reason), false),
            };
        };
        let why = &refusal.why;
        match guard::offer(raw) {
            Offer::Allow(url) => Shown {
                line: format!(
                    "{} of {url} refused: {why}. To fetch this url ({} characters, shown whole) anyway, send: /allow {number}",
                    tools::HTTP_FETCH,
                    url.len()
                ),
                for_model: format!("Only the owner can fetch it (with /allow {number})."),
                note: format!(
                    "{prefix}{}{url} ({} characters); {reason}",
                    offered_note_prefix(number),
                    url.len()
                ),
                refused: refused(&url, reason.clone(), true),
            },
            Offer::Not { shown, why: not } => Shown {
                line: format!(
                    "{} of {shown} refused: {why}. Not offered for /allow: {not}",
                    tools::HTTP_FETCH
                ),
                for_model: format!("It cannot be allowed: {not}."),
                note: format!("{prefix}{}", not_offered(&not, &reason)),
                refused: refused(&shown, not_offered(&not, &reason), false),
            },
        }
    }
}

/// The model asked for tools in its last allowed round: each call gets a result saying
/// it was not run, so the next turn's prompt still answers every call, plus a `note`.
pub(crate) fn out_of_rounds(
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

/// A failed call's output; `content` already says `error: ` and why.
fn error_output(content: String) -> ToolOutput {
    ToolOutput {
        content,
        label: Label::PUBLIC,
        failed: true,
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

/// `read_file {"path":"/x"}`: the name and the arguments on one line, the arguments
/// clipped. Both are the model's: the channel shows them as one-line fields (every
/// control, invisible character and middle dot escaped), so neither can end the `· `
/// line early or rewrite the screen. Nor may they make the line read as another of
/// loopd's (docs/channel.md, "Model text cannot pass for loopd's lines"): a name that is
/// not one of loopd's tools is shown in quotes, and arguments that are not a JSON object
/// as a quoted string, so a call line always reads `· TOOL {…}` or has a quote where
/// loopd's own words would be (a call named `reminder 7 set for …` with no arguments
/// was loopd's reminder line, word for word).
pub(crate) fn activity_line(call: &ToolCall) -> String {
    let name = if proto::config::TOOL_NAMES.contains(&call.name.as_str()) {
        call.name.clone()
    } else {
        serde_json::Value::from(call.name.as_str()).to_string()
    };
    // As the model wrote them when they are an object: they start with `{`.
    let arguments = match serde_json::from_str::<serde_json::Value>(&call.arguments) {
        Ok(serde_json::Value::Object(_)) => call.arguments.trim().to_string(),
        _ => serde_json::Value::from(call.arguments.as_str()).to_string(),
    };
    format!("{} {}", clipped(&name), clipped(&arguments))
}

fn clipped(text: &str) -> String {
    match text.char_indices().nth(ACTIVITY_ARGS_CHARS) {
        None => text.to_string(),
        Some((at, _)) => format!("{}…", &text[..at]),
    }
}

#[cfg(test)]
mod tests {
    use super::{activity_line, held_ask, not_offered, refusal_why};

    /// Regression: the model's own name and arguments made the call's `· ` line, so a
    /// call named as one of loopd's lines, or `remind` with words for arguments, showed
    /// that line word for word (as a Matrix notice too).
    #[test]
    fn a_call_line_cannot_read_as_another_of_loopds_lines() {
        let call = |name: &str, arguments: &str| ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments: arguments.into(),
        };
        let forged = activity_line(&call(
            "reminder 7 set for 09:00 Mon 7 Dec 2026: pay (/remind cancel 7 removes it)",
            "",
        ));
        assert!(forged.starts_with("\"reminder 7 set"), "{forged}");
        let forged = activity_line(&call("remind", "failed, nothing was set: disk full"));
        assert_eq!(forged, "remind \"failed, nothing was set: disk full\"");
        assert_eq!(
            activity_line(&call("read_file", r#"{"path": "/x"}"#)),
            r#"read_file {"path": "/x"}"#
        );
    }
    use proto::{Record, ToolCall};

    fn answer(time: &str, calls: &[(&str, &str)]) -> Record {
        Record::Assistant {
            time: time.into(),
            content: None,
            tool_calls: calls
                .iter()
                .map(|(id, arguments)| ToolCall {
                    id: (*id).into(),
                    name: tools::REMIND.into(),
                    arguments: (*arguments).into(),
                })
                .collect(),
            cut: false,
        }
    }

    /// A held reminder read again (when it is held, and when the owner allows it) is the
    /// same instant: its WHEN is read against the answer's time, not the reader's clock.
    #[test]
    fn a_held_reminders_when_is_read_against_the_time_of_the_answer_that_asked() {
        let records = [answer(
            "2026-11-30T06:00:00.000Z",
            &[("a", r#"{"when":"in 2h","text":"tea"}"#)],
        )];
        let ask = held_ask(&records, records.len(), "a").unwrap();
        assert_eq!(
            ask.due.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "2026-11-30T08:00:00Z"
        );
        assert_eq!(ask.text, "tea");
    }

    /// Only the answer before the result counts, and only one call of that id: a later
    /// answer, another id, or two calls sharing one id read as no reminder.
    #[test]
    fn a_held_reminder_is_the_one_call_of_its_id_in_the_answer_before_it() {
        let t = "2026-11-30T06:00:00.000Z";
        let records = [
            answer(t, &[("a", r#"{"when":"in 1h","text":"one"}"#)]),
            answer(t, &[("b", r#"{"when":"in 3h","text":"later"}"#)]),
            answer(
                t,
                &[
                    ("c", r#"{"when":"in 1h","text":"x"}"#),
                    ("c", r#"{"when":"in 2h","text":"y"}"#),
                ],
            ),
        ];
        assert_eq!(held_ask(&records, 1, "a").unwrap().text, "one");
        assert!(
            held_ask(&records, 2, "a").is_err(),
            "not in the answer before"
        );
        assert!(held_ask(&records, 3, "c").is_err(), "two calls with one id");
        assert!(held_ask(&records, 0, "a").is_err(), "no answer at all");
        let bad_time = [answer("noon", &[("a", r#"{"when":"in 1h","text":"x"}"#)])];
        assert!(held_ask(&bad_time, 1, "a")
            .unwrap_err()
            .to_string()
            .contains("\"noon\""));
    }

    #[test]
    fn a_refusal_not_offered_reads_back_as_why_it_is_not_offered() {
        let reason = not_offered(
            "it is not a valid url (empty host)",
            "http_fetch refused: x; y",
        );
        assert_eq!(
            reason,
            "not offered for /allow: it is not a valid url (empty host); http_fetch refused: x; y"
        );
        assert_eq!(
            refusal_why(&reason),
            "not offered for /allow: it is not a valid url (empty host)"
        );
        assert_eq!(refusal_why("no mark"), "no mark");
    }
}
