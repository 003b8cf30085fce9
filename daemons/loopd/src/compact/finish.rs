//! What happens after a turn (SPEC §4, `finish_turn`), in its order: 1. background tool
//! summaries, while the epoch still holds the results; 2. compaction, when the epoch's
//! last `usage` is over the threshold or the turn ended `SessionFull`; 3. after a
//! `SessionFull` compaction, the same message once more in the new epoch. Then memoryd
//! is nudged.
//!
//! The rerun never loops: its own `SessionFull` ends the turn with an error and a
//! `note`, and a threshold compaction right after a compaction is declined (see
//! `policy::Fill::OverFromStart`).
//!
//! The owner's first attempt stays in the old epoch as its last `user` record, with no
//! answer after it; the summary call (or the fallback, whose newest text it is) sees it,
//! and the rerun appends it again as the new epoch's first record, where it is answered.
//! The carry may so mention the message the next prompt then asks; that repeat is the
//! price of a summary that covers the whole epoch, as SPEC §4 has it.

use super::policy::{fill, Fill};
use super::{compact_or_note, note, summarise, Compacted};
use crate::session::Session;
use crate::turn::{run_turn, Sink, TurnCtx, TurnDone, TurnError};
use proto::head::Reason;
use proto::{Origin, Record};

/// How a declined compaction's `note` starts; one is written per epoch.
pub const DECLINED_NOTE: &str = "compaction declined: ";

/// What the finish did about the epoch.
#[derive(Debug)]
pub enum After {
    /// The epoch goes on.
    Kept,
    Compacted(Compacted),
    /// Compaction was tried and failed (already noted and logged).
    Failed(String),
}

/// Steps 1 and 2, then the nudge. `SessionFull` compacts unless this finishes a rerun.
pub fn finish(
    ctx: &TurnCtx<'_>,
    session: &mut Session,
    outcome: &Result<TurnDone, TurnError>,
    rerun: bool,
) -> After {
    let full = matches!(outcome, Err(TurnError::SessionFull(_)));
    let after = if outcome.is_ok() || full {
        summaries(ctx, session);
        match reason(ctx, session, full, rerun) {
            Some(reason) => match compact_or_note(ctx, session, reason) {
                Ok(done) => After::Compacted(done),
                Err(e) => After::Failed(e.to_string()),
            },
            None => After::Kept,
        }
    } else {
        After::Kept
    };
    crate::memory::nudge(ctx.cfg.memory.socket.clone(), session.id().to_string());
    after
}

/// A whole turn: `run_turn`, `finish`, and after a `SessionFull` that compacted, the
/// message once more in the new epoch, streaming to the same `sink`, so the client's one
/// reply block holds the answer.
pub fn run_and_finish(
    ctx: &TurnCtx<'_>,
    session: &mut Session,
    text: &str,
    origin: Origin,
    sink: &mut dyn Sink,
) -> Result<TurnDone, TurnError> {
    let outcome = run_turn(ctx, session, text, origin, sink);
    let after = finish(ctx, session, &outcome, false);
    let Err(TurnError::SessionFull(message)) = outcome else {
        return outcome;
    };
    match after {
        After::Compacted(done) => {
            plumbing::info!(
                "session {}: context full; {done}; asking again in the new epoch",
                session.id()
            );
            let again = run_turn(ctx, session, text, origin, sink);
            finish(ctx, session, &again, true);
            match again {
                Err(TurnError::SessionFull(m)) => {
                    note(
                        session,
                        format!(
                            "context full even after compaction; the message was not answered: {m}"
                        ),
                    );
                    Err(TurnError::StillFull {
                        from: done.from,
                        to: done.to,
                        message: m,
                    })
                }
                other => other,
            }
        }
        After::Failed(why) => Err(TurnError::CompactFailed { message, why }),
        // `finish` always compacts after a first `SessionFull`; should that change, the
        // plain error still reaches the client.
        After::Kept => Err(TurnError::SessionFull(message)),
    }
}

fn summaries(ctx: &TurnCtx<'_>, session: &mut Session) {
    match summarise::missing(ctx, session) {
        Ok(s) if s.written + s.skipped > 0 => plumbing::info!(
            "session {}: tool summaries: {} written, {} skipped",
            session.id(),
            s.written,
            s.skipped
        ),
        Ok(_) => {}
        Err(e) => plumbing::error!("session {}: tool summaries: {e}", session.id()),
    }
}

/// Why to compact now, if at all.
fn reason(ctx: &TurnCtx<'_>, session: &mut Session, full: bool, rerun: bool) -> Option<Reason> {
    if full {
        return (!rerun).then_some(Reason::ContextFull);
    }
    let cfg = ctx.cfg;
    let carried = session.carry().is_some();
    match fill(
        session.records(),
        carried,
        cfg.compact.threshold,
        cfg.expect.n_ctx,
    ) {
        Fill::Room => None,
        Fill::Due => Some(Reason::Threshold),
        Fill::OverFromStart => {
            let used = session
                .last_usage()
                .map_or(0, |u| u.cache_n.saturating_add(u.prompt_n));
            let n_ctx = cfg.expect.n_ctx;
            plumbing::warn!(
                "session {}: epoch {} holds {used} of {n_ctx} tokens, over the compaction threshold {}, but was over it from its first completion; not compacting its summary again",
                session.id(),
                session.epoch(),
                cfg.compact.threshold,
            );
            if !declined_before(session.records()) {
                note(
                    session,
                    format!(
                        "{DECLINED_NOTE}epoch {} was over the threshold {} from its first completion ({used} of {n_ctx} tokens now); compacting again would only summarise the summary, so it compacts when the context is full",
                        session.epoch(),
                        cfg.compact.threshold,
                    ),
                );
            }
            None
        }
    }
}

fn declined_before(records: &[Record]) -> bool {
    records.iter().any(|r| match r {
        Record::Note { text, .. } => text.starts_with(DECLINED_NOTE),
        Record::User { .. }
        | Record::Assistant { .. }
        | Record::ToolResult { .. }
        | Record::ToolSummary { .. }
        | Record::Usage { .. } => false,
    })
}
