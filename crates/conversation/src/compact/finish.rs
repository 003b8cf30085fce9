//! The steps after a turn (docs/turn.md, `finish_turn`), in their order: 1. background tool
//! summaries, while the epoch still holds the results; 2. compaction, when the epoch's
//! last `usage` is over the threshold or the turn ended `SessionFull`. It knows nothing
//! of turns: loopd's `engine` runs a turn, sends its `.`, and then calls `finish` (or,
//! after `SessionFull`, calls it inside the reply block and runs the message again).
//!
//! Each step that makes the owner wait is announced first through `Progress`, so a line
//! arriving meanwhile can be told what it waits for (`· compacting session main: epoch 3
//! → 4`).

use super::policy::{fill, Fill};
use super::{compact_or_note, note, tool_summaries, CompactError, Compacted};
use crate::open_session::Session;
use crate::prompt::TurnCtx;
use proto::head::Reason;
use proto::Record;

/// Told what after-turn work is starting, in words for a `· ` line.
pub trait Progress {
    fn step(&mut self, what: &str);
}

/// A `Progress` nobody watches.
pub struct Quiet;

impl Progress for Quiet {
    fn step(&mut self, _what: &str) {}
}

/// How a declined compaction's `note` starts; one is written per epoch.
pub(crate) const DECLINED_NOTE: &str = "compaction declined: ";

/// What the finish did about the epoch.
#[derive(Debug)]
pub enum Finished {
    /// The epoch goes on.
    Kept,
    Compacted(Compacted),
    /// Compaction was tried and failed (already noted and logged).
    Failed(CompactError),
}

/// Steps 1 and 2. `full` is a turn that ended `SessionFull`: it always compacts, with
/// reason `context_full`; otherwise compaction runs only when due.
pub fn finish(
    ctx: &TurnCtx<'_>,
    session: &mut Session,
    full: bool,
    progress: &mut dyn Progress,
) -> Finished {
    summaries(ctx, session, progress);
    let reason = if full {
        Some(Reason::ContextFull)
    } else {
        reason(ctx, session)
    };
    match reason {
        Some(reason) => {
            progress.step(&format!(
                "compacting session {}: epoch {} → {}",
                session.id(),
                session.epoch(),
                session.epoch().saturating_add(1)
            ));
            match compact_or_note(ctx, session, reason) {
                Ok(done) => Finished::Compacted(done),
                Err(e) => Finished::Failed(e),
            }
        }
        None => Finished::Kept,
    }
}

fn summaries(ctx: &TurnCtx<'_>, session: &mut Session, progress: &mut dyn Progress) {
    let pending = tool_summaries::pending(session.records(), &ctx.cfg.compact.summarise).len();
    if pending == 0 {
        return;
    }
    progress.step(&format!(
        "summarising {pending} tool result{} of session {}",
        if pending == 1 { "" } else { "s" },
        session.id()
    ));
    match tool_summaries::make(ctx, session) {
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
fn reason(ctx: &TurnCtx<'_>, session: &mut Session) -> Option<Reason> {
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

/// Whether an earlier turn of this epoch already declined: the decision is made after
/// every answered turn, so it was made (and noted) before when a turn before the last
/// one left a `usage` record. Read from the records' kinds, never from a note's words.
fn declined_before(records: &[Record]) -> bool {
    let last_turn = records
        .iter()
        .rposition(|r| matches!(r, Record::User { .. }))
        .unwrap_or(0);
    records[..last_turn]
        .iter()
        .any(|r| matches!(r, Record::Usage { .. }))
}
