//! The steps after a turn (docs/turn.md, `finish_turn`), in their order: 1. background tool
//! summaries, while the epoch still holds the results; 2. compaction, when the epoch's
//! last `usage` is over the threshold or the turn ended `SessionFull`. It knows nothing
//! of turns: loopd's `engine` runs a turn, sends its `.`, and then calls `finish` (or,
//! after `SessionFull`, calls it inside the reply block and runs the message again).
//!
//! Each step that makes the owner wait is announced first through `Progress`, so a line
//! arriving meanwhile can be told what it waits for (`· compacting session main: epoch 3
//! → 4`).

use super::policy::due;
use super::{compact_or_note, tool_summaries, CompactError, Compacted};
use crate::open_session::Session;
use crate::prompt::TurnCtx;
use proto::head::Reason;

/// Told what after-turn work is starting, in words for a `· ` line.
pub trait Progress {
    fn step(&mut self, what: &str);
}

/// A `Progress` nobody watches.
pub struct Quiet;

impl Progress for Quiet {
    fn step(&mut self, _what: &str) {}
}

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

/// Why to compact now, if at all: the epoch's last `usage` is at or over the threshold,
/// whatever the epoch started from. An epoch whose carried summary already fills it past
/// the threshold compacts again after its next turn, by the same rule; the
/// journal says so each time, since every turn then costs a summary call and the remedy
/// is in the config (docs/turn.md, 'Compaction').
fn reason(ctx: &TurnCtx<'_>, session: &Session) -> Option<Reason> {
    let cfg = ctx.cfg;
    let (threshold, n_ctx) = (cfg.compact.threshold, cfg.expect.n_ctx);
    let usage = session.last_usage()?;
    if !due(usage.cache_n, usage.prompt_n, threshold, n_ctx) {
        return None;
    }
    let first_due = session
        .first_usage()
        .is_some_and(|u| due(u.cache_n, u.prompt_n, threshold, n_ctx));
    if session.carry().is_some() && first_due {
        plumbing::warn!(
            "session {}: epoch {} was over the compaction threshold {threshold} of {n_ctx} tokens from its first completion, so it compacts after every turn: raise expect.n_ctx or compact.threshold, or lower compact.summary_chars",
            session.id(),
            session.epoch(),
        );
    }
    Some(Reason::Threshold)
}
