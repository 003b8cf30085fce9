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
use std::sync::Arc;

/// The most of a heartbeat's reply text kept for delivery. The turn may stream over
/// `loop.max_rounds` rounds, and the block goes to every client of the session and may be
/// held for each busy one, so it is kept to an eighth of one client's output allowance:
/// far more than an unasked-for message needs, and never enough to crowd out a client's
/// own replies.
pub const MAX_BEAT_REPLY: usize = crate::HARD_OUTPUT / 8;

/// The line that ends a heartbeat reply cut at `MAX_BEAT_REPLY`, so the owner knows.
pub const TRUNCATED: &str = "[truncated]";

/// What a heartbeat came to, for the poll loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Beat {
    /// Nothing to deliver: the model acknowledged, or the beat failed (logged either way).
    Quiet,
    /// A whole reply block (dot-stuffed, ending in `.`) for the session's clients, shared
    /// rather than copied while it waits for each of them.
    Deliver { session: SessionId, block: Arc<str> },
}

/// Runs one heartbeat in `session` and says what to deliver.
pub fn run(ctx: &TurnCtx<'_>, session: &mut Session) -> Beat {
    let path = ctx.cfg.prompt_path(PROMPT);
    let text = match plumbing::bounded::read_text(&path, crate::MAX_PROMPT_BYTES) {
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
        block: sink.finish().into(),
    }
}

/// Collects a turn's visible output as one reply block, the way a client asking for it
/// would have seen it streamed.
#[derive(Default)]
struct Transcript {
    block: Block,
    out: String,
    /// Set once `out` reached `MAX_BEAT_REPLY`; nothing more is added to it after that.
    truncated: bool,
    /// The text streamed since the last activity line: the last round's answer.
    last: String,
}

impl Transcript {
    fn finish(mut self) -> String {
        if self.truncated {
            if !self.out.is_empty() && !self.out.ends_with('\n') {
                self.out.push('\n');
            }
            self.out.push_str(TRUNCATED);
            self.out.push_str("\n.\n");
            return self.out;
        }
        self.block.end(&mut self.out);
        self.out
    }

    /// Cuts `out` back to `MAX_BEAT_REPLY` once it has grown past it.
    fn cap(&mut self) {
        if self.out.len() <= MAX_BEAT_REPLY {
            return;
        }
        let mut cut = MAX_BEAT_REPLY;
        while !self.out.is_char_boundary(cut) {
            cut -= 1;
        }
        self.out.truncate(cut);
        // A cut just after the first `.` of a dot-stuffed line would leave a line holding
        // only `.`, which ends the block early; that line is dropped.
        let line_start = self.out.rfind('\n').map_or(0, |i| i + 1);
        if &self.out[line_start..] == "." {
            self.out.truncate(line_start);
        }
        self.truncated = true;
    }
}

impl Sink for Transcript {
    fn text(&mut self, text: &str) {
        if !self.truncated {
            self.block.text(text, &mut self.out);
            self.cap();
        }
        self.last.push_str(text);
    }

    fn activity(&mut self, line: &str) {
        if !self.truncated {
            self.block.lines(&format!("· {line}"), &mut self.out);
            self.cap();
        }
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

    /// Regression: the transcript kept everything streamed over all rounds, and the block
    /// is held once per client. It is now cut at `MAX_BEAT_REPLY` with a marker line, and
    /// still ends as one well-formed block.
    #[test]
    fn a_long_heartbeat_reply_is_capped_with_a_truncated_marker() {
        let mut t = Transcript::default();
        let line = format!("{}\n", "y".repeat(1023));
        for _ in 0..(MAX_BEAT_REPLY / line.len() + 10) {
            t.text(&line);
            t.activity("read_file {}");
        }
        t.text("HEARTBEAT_OK");
        assert!(ack::is_ack(&t.last), "the final answer is still seen");
        let block = t.finish();
        assert!(block.len() <= MAX_BEAT_REPLY + TRUNCATED.len() + 4);
        assert!(
            block.ends_with(&format!("\n{TRUNCATED}\n.\n")),
            "{}",
            &block[block.len() - 40..]
        );
        assert_eq!(block.lines().filter(|l| *l == ".").count(), 1);
    }

    #[test]
    fn a_cut_inside_a_dot_stuffed_line_does_not_end_the_block_early() {
        let mut t = Transcript::default();
        let mut head = "z".repeat(MAX_BEAT_REPLY - 2);
        head.push('\n');
        t.text(&head);
        // Stuffed to `..more`, whose first `.` is the last byte within the cap.
        t.text(".more\n");
        let block = t.finish();
        assert_eq!(
            block.lines().filter(|l| *l == ".").count(),
            1,
            "only the terminator"
        );
        assert!(block.ends_with(&format!("z\n{TRUNCATED}\n.\n")));
    }
}
