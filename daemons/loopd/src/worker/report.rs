//! How the worker reports to the poll loop: a turn's streamed output as events
//! (`EventSink`), the after-turn step the next job waits for (`Waiting`), and the log line
//! and last reply text of a finished turn (`done_line`).

use super::{Event, Failure, JobId, Notifier, Reply};
use crate::engine::EngineError;
use conversation::compact::finish::Progress;
use conversation::turn::Sink;
use proto::SessionId;

/// The log line of a finished turn, and the reply's last text (empty, or the error).
pub(super) fn done_line(
    session_id: &SessionId,
    outcome: Result<conversation::turn::TurnDone, EngineError>,
    secs: f64,
) -> Reply {
    match outcome {
        Ok(done) => {
            let tokens = done.last.map_or_else(
                || "no usage".to_string(),
                |u| {
                    format!(
                        "cache {} + prompt {} + predicted {} tokens",
                        u.cache_n, u.prompt_n, u.predicted_n
                    )
                },
            );
            plumbing::info!(
                "session {session_id}: turn done in {secs:.2} s: {} rounds, {} tool calls, {tokens}",
                done.rounds,
                done.tool_calls
            );
            Ok(String::new())
        }
        Err(e) if e.is_session_full() => {
            plumbing::warn!("session {session_id}: turn ended: {e}");
            Err(Failure::Turn(e))
        }
        Err(e) => {
            plumbing::error!("session {session_id}: turn failed after {secs:.2} s: {e}");
            Err(Failure::Turn(e))
        }
    }
}

/// Tells the poll loop what after-turn step the next job waits for.
pub(super) struct Waiting<'a> {
    pub(super) notify: &'a Notifier,
    pub(super) board: &'a conversation::status::Board,
    pub(super) said: bool,
}

impl Progress for Waiting<'_> {
    fn step(&mut self, what: &str) {
        self.said = true;
        self.board.after_turn_started(what);
        self.notify.send(Event::Waiting(Some(what.to_string())));
    }
}

/// Streams a turn's output to the poll loop as events for job `id`.
pub(super) struct EventSink<'a> {
    pub(super) id: JobId,
    pub(super) notify: &'a Notifier,
}

impl Sink for EventSink<'_> {
    fn text(&mut self, text: &str) {
        self.notify.send(Event::Text {
            id: self.id,
            text: text.to_string(),
        });
    }

    fn activity(&mut self, line: &str) {
        self.notify.send(Event::Activity {
            id: self.id,
            line: line.to_string(),
        });
    }
}
