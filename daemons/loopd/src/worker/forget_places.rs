//! The places a removal reaches besides the open session and the slots, each said in
//! words for the reply: the session's rewritten files, memoryd's index, Honcho (the
//! reporter's cursor moved with the lines, then what Honcho's API allows), and the
//! Matrix homeserver.

use conversation::forget::plan::Plan;
use honcho::pause::Paused;
use proto::memory::LogRef;
use proto::SessionId;

/// Each rewritten place of the session's files, in words.
pub(super) fn file_places(plan: &Plan) -> Vec<String> {
    let mut places = Vec::new();
    for log in &plan.logs {
        let lines: Vec<String> = log.lines.iter().map(|l| (l.line + 1).to_string()).collect();
        places.push(format!(
            "session log of epoch {}: line {} replaced by a forgotten record (file rewritten)",
            log.epoch,
            lines.join(", ")
        ));
    }
    for c in &plan.carries {
        places.push(format!(
            "carried summary of epoch {}: redacted (head rewritten)",
            c.epoch
        ));
    }
    places
}

/// memoryd told to drop its rows of the session's `epochs`, in words; when it cannot be
/// told, it re-reads the rewritten logs at its next catch-up.
pub(super) fn memoryd_forget(
    cfg: &proto::config::Config,
    session: &SessionId,
    epochs: &[u64],
) -> String {
    let logs = epochs
        .iter()
        .map(|&epoch| LogRef {
            session: session.to_string(),
            epoch,
        })
        .collect();
    match conversation::memory::forget(&cfg.memory.socket, logs) {
        Ok(rows) => format!("memoryd: {rows} rows removed from its index"),
        Err(e) => {
            plumbing::warn!("session {session}: forget: memoryd: {e}");
            format!("memoryd was not told ({e}): it re-reads the rewritten logs when it next catches up")
        }
    }
}

/// Honcho's part of a removal: the reporter's cursor moved with the rewritten lines
/// (once, however often the plan is applied), then what Honcho's API allows done for the
/// forgotten records (`honcho::forget`), each by the offset it had when it was reported.
/// Returns the sentences for the reply and whether the cursor is where it should be.
/// The calls are blocking, each bounded by the Honcho client's timeouts.
pub(super) fn honcho_forget(
    cfg: &proto::config::Config,
    session: &SessionId,
    plan: &Plan,
    words: Option<&str>,
    paused: Option<&Paused>,
) -> (Vec<String>, bool) {
    let mut said = Vec::new();
    let moved = match honcho::moved::move_cursor(&cfg.state_dir, session.as_str(), &plan.rewrite())
    {
        Ok(_) => {
            if let Some(p) = paused {
                p.reload(session.as_str());
            }
            true
        }
        Err(e) => {
            plumbing::error!("session {session}: forget: {e}");
            said.push(format!(
                "Honcho reports of this session wait: the report cursor could not be moved past the rewritten lines ({e}); loopd tries again at its next start"
            ));
            false
        }
    };
    if let Some(done) =
        honcho::forget::forget(&cfg.honcho, session.as_str(), &plan.reported(), words)
    {
        plumbing::info!(
            "session {session}: forget: Honcho keeps {} messages of it{}",
            done.messages_left.len(),
            if done.failed.is_some() {
                ", not finished"
            } else {
                ""
            }
        );
        said.push(done.sentence());
        if honcho::post_under_way(&cfg.state_dir, session.as_str()) {
            said.push("A report of this session to Honcho had not been answered yet: what it carries may still reach Honcho (the reporter never posts it twice, and never posts what is forgotten from now on).".to_string());
        }
    }
    (said, moved)
}

/// What the answer to a removal says of the rooms (docs/matrix.md, 'Forgetting'): how
/// many of the owner's room messages held the text (`room_lines`), and what the homeserver
/// may still keep.
pub(super) fn matrix_said(room_lines: usize) -> String {
    let what = if room_lines == 0 {
        "any room event that showed it (a reminder, an inbox message, an /allow answer, a /recall or /inbox and its answer, a /forget list) is"
            .to_string()
    } else {
        format!(
            "{} from a room, loopd's replies to {}, any room event that showed a removed reminder or inbox message, and the rooms' /recall and /inbox commands, /forget lists and their answers are",
            plural(room_lines, "message", "messages"),
            if room_lines == 1 { "it" } else { "them" }
        )
    };
    format!(
        "\nMatrix: {what} being redacted on the homeserver. It may keep a redacted event's content for its redaction_retention_period (7 days by default in Synapse), and copies already on your devices are out of reach. Your own messages are redacted only where boxmaker may redact others' events in the room; otherwise delete them in your client."
    )
}

/// `n` and the word for that many.
pub(super) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
