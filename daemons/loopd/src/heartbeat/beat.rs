//! One heartbeat on the worker thread: read `heartbeat.md` afresh (a missing or empty one
//! is a `loopd:` error and no beat, never a silent stop), run it as a turn with `origin:
//! heartbeat`, then decide from the final answer whether the owner hears about it. The
//! turn's visible output is collected here rather than streamed, since nobody asked for it
//! and it may turn out to be only `HEARTBEAT_OK`; it is returned unrendered, and only the
//! channel turns it into reply-block bytes (`channel::unasked`).

use super::ack;
use crate::engine::Engine;
use conversation::open_session::Session;
use conversation::prompts::{self, Prompt};
use conversation::turn::Sink;
use proto::{Label, Origin, Record, SessionId};
use std::sync::Arc;

/// The most of a heartbeat's reply kept for delivery, in bytes of its reply block. The
/// turn may stream over `loop.max_rounds` rounds, and the block goes to every client of
/// the session and may be held for each busy one, so it is kept to an eighth of one
/// client's hard output allowance: far more than an unasked-for message needs, and never
/// enough to crowd out a client's own replies. The heartbeat keeps one byte more of text
/// than this (a block is never shorter than its text), so the channel can tell that it
/// must cut.
pub(crate) const MAX_BEAT_REPLY: usize = crate::limits::HARD_OUTPUT / 8;

/// The line standing for reminder lines past `MAX_BEAT_REPLY` in an acknowledged beat.
const MORE_REMINDERS: &str = "more reminders were set; /remind lists them";

/// One piece of a turn's visible output, as the turn streamed it: the inbox's piece, so
/// news nobody was there to read waits in the same shape it would have been shown.
pub(crate) use conversation::inbox::Piece;

/// What a heartbeat has to say, unrendered: its pieces in order, at most
/// `MAX_BEAT_REPLY + 1` bytes of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Reply {
    pub(crate) pieces: Vec<Piece>,
}

/// What a heartbeat came to, for the poll loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Beat {
    /// Nothing to deliver: the model acknowledged, or the beat failed (logged either way).
    Quiet,
    /// A reply for the session's clients, shared rather than copied on its way.
    Deliver {
        session: SessionId,
        reply: Arc<Reply>,
        /// The session's context label after the beat: what the news may hold, and
        /// whether it may be a page's words (then it never leaves the box,
        /// docs/reminders.md, 'What the command sees').
        label: Label,
        /// The time of the beat's `user` record: the message is found by it when
        /// `/forget` removes words of the turn (docs/matrix.md, 'Forgetting').
        turn: Option<String>,
    },
}

/// Runs one heartbeat in `session` and says what to deliver, and whether the turn was
/// answered (so its after-turn work is due; the worker runs it after delivering).
pub(crate) fn run(engine: &mut Engine, session: &mut Session) -> (Beat, bool) {
    let text = match prompts::read(engine.cfg(), Prompt::Heartbeat) {
        Ok(text) if !text.trim().is_empty() => text,
        Ok(_) => {
            plumbing::error!(
                "heartbeat: {} is empty; no heartbeat this time",
                Prompt::Heartbeat.path(engine.cfg()).display()
            );
            return (Beat::Quiet, false);
        }
        Err(e) => {
            plumbing::error!("heartbeat: cannot read {e}; no heartbeat this time");
            return (Beat::Quiet, false);
        }
    };
    let mut sink = Collector::default();
    let outcome = engine.turn(session, text.trim_end(), Origin::Heartbeat, None, &mut sink);
    let id = session.id().clone();
    if let Err(e) = outcome {
        plumbing::error!("session {id}: heartbeat failed: {e}");
        return (Beat::Quiet, false);
    }
    // The final answer is what the model said after its last tool activity: taken from
    // the stream rather than the log, which a `SessionFull` rerun moved to a new epoch.
    if ack::is_ack(&sink.last) {
        // The model may say nothing and still have set a reminder: its line is shown
        // all the same, alone (docs/reminders.md, 'The remind tool').
        if sink.must.is_empty() {
            plumbing::info!("session {id}: heartbeat: nothing to report; logged, not delivered");
            return (Beat::Quiet, true);
        }
        plumbing::info!(
            "session {id}: heartbeat: acknowledged; delivering its {} reminder lines",
            sink.must.len()
        );
        let pieces = sink.must.into_iter().map(Piece::Must).collect();
        let beat = Beat::Deliver {
            session: id,
            reply: Arc::new(Reply { pieces }),
            label: session.label(engine.cfg().channel.owner_class),
            turn: turn_time(session),
        };
        return (beat, true);
    }
    if sink.is_blank() {
        plumbing::warn!("session {id}: heartbeat: the model answered nothing; nothing delivered");
        return (Beat::Quiet, true);
    }
    plumbing::info!(
        "session {id}: heartbeat: delivering {} characters",
        sink.text_chars()
    );
    let beat = Beat::Deliver {
        session: id,
        reply: Arc::new(sink.reply),
        label: session.label(engine.cfg().channel.owner_class),
        turn: turn_time(session),
    };
    (beat, true)
}

/// The time of the beat's own `user` record: the last heartbeat line of the epoch the
/// turn ended in (a `SessionFull` rerun writes it again in the new epoch).
fn turn_time(session: &Session) -> Option<String> {
    session.records().iter().rev().find_map(|r| match r {
        Record::User {
            origin: Origin::Heartbeat,
            time,
            ..
        } => Some(time.clone()),
        _ => None,
    })
}

/// Collects a turn's visible output, bounded, and the last round's answer.
#[derive(Default)]
struct Collector {
    reply: Reply,
    /// Bytes of text in `reply`; nothing more is kept once it is past `MAX_BEAT_REPLY`.
    kept: usize,
    /// The text streamed since the last activity line: the last round's answer.
    last: String,
    /// The lines the owner must read even when the answer is an acknowledgement, each
    /// bounded as an activity piece is.
    must: Vec<String>,
}

impl Collector {
    fn keep(&mut self, text: &str, piece: fn(String) -> Piece) {
        let room = (MAX_BEAT_REPLY + 1).saturating_sub(self.kept);
        if room == 0 {
            return;
        }
        let mut cut = text.len().min(room);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        self.kept += cut;
        self.reply.pieces.push(piece(text[..cut].to_string()));
    }

    /// Characters of text kept, every round's: what is delivered (the last round's
    /// answer alone is empty when a line, such as the answer's cut, followed it).
    fn text_chars(&self) -> usize {
        self.reply
            .pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.chars().count(),
                Piece::Activity(_) | Piece::Must(_) => 0,
            })
            .sum()
    }

    /// Whether there is nothing to show but white space (activity lines are something).
    fn is_blank(&self) -> bool {
        self.reply.pieces.iter().all(|p| match p {
            Piece::Text(t) => t.trim().is_empty(),
            Piece::Activity(_) | Piece::Must(_) => false,
        })
    }
}

impl Sink for Collector {
    fn text(&mut self, text: &str) {
        self.keep(text, Piece::Text);
        self.last.push_str(text);
    }

    fn activity(&mut self, line: &str) {
        self.keep(line, Piece::Activity);
        self.last.clear();
    }

    fn must_show(&mut self, line: &str) {
        self.last.clear();
        // Bounded as the reply is, but apart from its text, so no answer however long
        // crowds a reminder line out; past the bound `/remind` lists the rest.
        let held: usize = self.must.iter().map(String::len).sum();
        let shown = if held + line.len() <= MAX_BEAT_REPLY {
            line
        } else if self.must.last().is_none_or(|l| l != MORE_REMINDERS) {
            MORE_REMINDERS
        } else {
            return;
        };
        self.must.push(shown.to_string());
        self.reply.pieces.push(Piece::Must(shown.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a reminder line after an answer past `MAX_BEAT_REPLY` was dropped
    /// with the rest of the text, so a page asking for a long answer first hid it.
    #[test]
    fn a_reminder_line_after_a_long_answer_is_kept() {
        let mut t = Collector::default();
        t.text(&"x".repeat(MAX_BEAT_REPLY + 10));
        t.must_show("reminder 3 set for 09:00 Tue 8 Dec");
        assert_eq!(
            t.reply.pieces.last(),
            Some(&Piece::Must("reminder 3 set for 09:00 Tue 8 Dec".into()))
        );
    }

    #[test]
    fn the_last_round_is_the_answer() {
        let mut t = Collector::default();
        t.text("Let me look.");
        t.activity("read_file {\"path\":\"/x\"}");
        t.text("HEARTBEAT_");
        t.text("OK");
        assert!(ack::is_ack(&t.last));
        assert_eq!(t.reply.pieces.len(), 4);
    }

    #[test]
    fn an_answer_before_the_tools_is_not_the_final_one() {
        let mut t = Collector::default();
        t.text("HEARTBEAT_OK");
        t.activity("stopped: loop.max_rounds (1) was spent");
        assert!(!ack::is_ack(&t.last));
        assert!(!t.is_blank());
    }

    #[test]
    fn what_is_kept_is_bounded_and_the_final_answer_still_seen() {
        let mut t = Collector::default();
        let line = format!("{}\n", "y".repeat(1023));
        for _ in 0..(MAX_BEAT_REPLY / line.len() + 10) {
            t.text(&line);
            t.activity("read_file {}");
        }
        t.text("HEARTBEAT_OK");
        assert!(ack::is_ack(&t.last));
        assert_eq!(t.kept, MAX_BEAT_REPLY + 1);
    }
}
