//! One heartbeat on the worker thread: read `heartbeat.md` afresh (a missing or empty one
//! is a `loopd:` error and no beat, never a silent stop), run it as a turn with `origin:
//! heartbeat`, then decide from the final answer whether the owner hears about it. The
//! turn's visible output is rendered into a reply block here rather than streamed, since
//! nobody asked for it and it may turn out to be only `HEARTBEAT_OK`.

use super::{ack, PROMPT};
use crate::channel::reply::Block;
use crate::session::Session;
use crate::turn::{self, Sink, TurnCtx};
use proto::{Origin, Record, SessionId};

/// What a heartbeat came to, for the poll loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Beat {
    /// Nothing to deliver: the model acknowledged, or the beat failed (logged either way).
    Quiet,
    /// A whole reply block (dot-stuffed, ending in `.`) for the session's clients.
    Deliver { session: SessionId, block: String },
}

/// Runs one heartbeat in `session` and says what to deliver.
pub fn run(ctx: &TurnCtx<'_>, session: &mut Session) -> Beat {
    let path = ctx.cfg.prompt_path(PROMPT);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) if !text.trim().is_empty() => text,
        Ok(_) => {
            plumbing::error!(
                "heartbeat: {} is empty; no heartbeat this time",
                path.display()
            );
            return Beat::Quiet;
        }
        Err(e) => {
            plumbing::error!(
                "heartbeat: cannot read {}: {e}; no heartbeat this time",
                path.display()
            );
            return Beat::Quiet;
        }
    };
    let mut sink = Transcript::default();
    let outcome = turn::run_turn(ctx, session, text.trim_end(), Origin::Heartbeat, &mut sink);
    // Taken before `finish_turn`, which may start a new epoch with no records.
    let answer = final_answer(session.records());
    turn::finish_turn(ctx, session, &outcome);
    let id = session.id().clone();
    if let Err(e) = outcome {
        plumbing::error!("session {id}: heartbeat failed: {e}");
        return Beat::Quiet;
    }
    if ack::is_ack(&answer) {
        plumbing::info!("session {id}: heartbeat: nothing to report; logged, not delivered");
        return Beat::Quiet;
    }
    if sink.out.trim().is_empty() {
        plumbing::warn!("session {id}: heartbeat: the model answered nothing; nothing delivered");
        return Beat::Quiet;
    }
    plumbing::info!(
        "session {id}: heartbeat: delivering {} characters",
        answer.chars().count()
    );
    Beat::Deliver {
        session: id,
        block: sink.finish(),
    }
}

/// The content of the last `assistant` record: the turn's final answer.
pub fn final_answer(records: &[Record]) -> String {
    records
        .iter()
        .rev()
        .find_map(|r| match r {
            Record::Assistant { content, .. } => Some(content.clone().unwrap_or_default()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Collects a turn's visible output as one reply block, the way a client asking for it
/// would have seen it streamed.
#[derive(Default)]
struct Transcript {
    block: Block,
    out: String,
}

impl Transcript {
    fn finish(mut self) -> String {
        self.block.end(&mut self.out);
        self.out
    }
}

impl Sink for Transcript {
    fn text(&mut self, text: &str) {
        self.block.text(text, &mut self.out);
    }

    fn activity(&mut self, line: &str) {
        self.block.lines(&format!("· {line}"), &mut self.out);
    }
}
