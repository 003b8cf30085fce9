//! One heartbeat on the worker thread: read `heartbeat.md` afresh (a missing or empty one
//! is a `loopd:` error and no beat, never a silent stop), run it as a turn with `origin:
//! heartbeat`, then decide from the final answer whether the owner hears about it. The
//! turn's visible output is rendered into a reply block here rather than streamed, since
//! nobody asked for it and it may turn out to be only `HEARTBEAT_OK`.

use super::{ack, PROMPT};
use crate::channel::reply::Block;
use crate::session::Session;
use crate::turn::{self, Sink, TurnCtx};
use proto::{Origin, SessionId};

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
    turn::finish_turn(ctx, session, &outcome);
    let id = session.id().clone();
    if let Err(e) = outcome {
        plumbing::error!("session {id}: heartbeat failed: {e}");
        return Beat::Quiet;
    }
    // The final answer is what the model said after its last tool activity: taken from
    // the stream rather than the log, which `finish_turn` may have moved to a new epoch.
    if ack::is_ack(&sink.last) {
        plumbing::info!("session {id}: heartbeat: nothing to report; logged, not delivered");
        return Beat::Quiet;
    }
    if sink.out.trim().is_empty() {
        plumbing::warn!("session {id}: heartbeat: the model answered nothing; nothing delivered");
        return Beat::Quiet;
    }
    plumbing::info!(
        "session {id}: heartbeat: delivering {} characters",
        sink.last.chars().count()
    );
    Beat::Deliver {
        session: id,
        block: sink.finish(),
    }
}

/// Collects a turn's visible output as one reply block, the way a client asking for it
/// would have seen it streamed.
#[derive(Default)]
struct Transcript {
    block: Block,
    out: String,
    /// The text streamed since the last activity line: the last round's answer.
    last: String,
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
        self.last.push_str(text);
    }

    fn activity(&mut self, line: &str) {
        self.block.lines(&format!("· {line}"), &mut self.out);
        self.last.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transcript_is_a_reply_block_and_its_last_round_the_answer() {
        let mut t = Transcript::default();
        t.text("Let me look.");
        t.activity("read_file {\"path\":\"/x\"}");
        t.text("HEARTBEAT_");
        t.text("OK");
        assert!(ack::is_ack(&t.last));
        assert_eq!(
            t.finish(),
            "Let me look.\n· read_file {\"path\":\"/x\"}\nHEARTBEAT_OK\n.\n"
        );
    }

    #[test]
    fn an_answer_before_the_tools_is_not_the_final_one() {
        let mut t = Transcript::default();
        t.text("HEARTBEAT_OK");
        t.activity("stopped: loop.max_rounds (1) was spent");
        assert!(!ack::is_ack(&t.last));
        assert_eq!(
            t.finish(),
            "HEARTBEAT_OK\n· stopped: loop.max_rounds (1) was spent\n.\n"
        );
    }
}
