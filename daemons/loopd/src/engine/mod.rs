//! The whole turn as the owner lives it (SPEC §4), above both `turn` and `compact`:
//! `turn` runs the model's rounds, and when it ends `SessionFull` the compaction and the
//! rerun happen here, inside the reply block, since they make the answer. Everything
//! else that follows a turn (tool summaries, a compaction at the threshold) is `after`,
//! which the worker runs once the block's `.` is out. `slots` keeps the main slot's
//! cache across llama.cpp restarts and across sessions.
//!
//! Layers: worker → engine → {turn, compact} → {prompt, session, llama, tools, memory}.

pub mod slots;

use crate::compact::finish::{finish, After, Progress, Quiet};
use crate::compact::note;
use crate::prompt::TurnCtx;
use crate::session::Session;
use crate::turn::{run_turn, Sink, TurnDone, TurnError};
use proto::Origin;
use slots::Keeper;

/// A whole turn up to its answer: `run_turn`, and after a `SessionFull` the compaction
/// and the message once more in the new epoch, streaming to the same `sink`, so the
/// block holds only the answer, as for any turn. When it returns `Ok`, the caller sends the `.`
/// and then runs `after`.
pub fn turn(
    ctx: &TurnCtx<'_>,
    keeper: &mut Keeper,
    session: &mut Session,
    text: &str,
    origin: Origin,
    sink: &mut dyn Sink,
) -> Result<TurnDone, TurnError> {
    let outcome = one_turn(ctx, keeper, session, text, origin, sink);
    let Err(TurnError::SessionFull(message)) = outcome else {
        return outcome;
    };
    let from = session.epoch();
    let after = finish(ctx, session, true, &mut Quiet);
    keeper.main_used(session.id(), from);
    match after {
        After::Compacted(done) => {
            keeper.epoch_ended(ctx, session.id(), done.from);
            plumbing::info!(
                "session {}: context full; {done}; asking again in the new epoch",
                session.id()
            );
            match one_turn(ctx, keeper, session, text, origin, sink) {
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
        // `finish` always compacts after `SessionFull`; should that change, the plain
        // error still reaches the client.
        After::Kept => Err(TurnError::SessionFull(message)),
    }
}

/// What follows a turn that was answered, after its `.`: tool summaries and, when due,
/// compaction (each announced to `progress` first), then the memoryd nudge.
pub fn after(
    ctx: &TurnCtx<'_>,
    keeper: &mut Keeper,
    session: &mut Session,
    progress: &mut dyn Progress,
) {
    let from = session.epoch();
    match finish(ctx, session, false, progress) {
        After::Compacted(done) => {
            keeper.main_used(session.id(), from);
            keeper.epoch_ended(ctx, session.id(), done.from);
        }
        After::Failed(_) => keeper.main_used(session.id(), from),
        After::Kept => {}
    }
    nudge(ctx, session);
}

/// Tells memoryd the session's log grew; a turn that failed still wrote records.
pub fn nudge(ctx: &TurnCtx<'_>, session: &Session) {
    crate::memory::nudge(ctx.cfg.memory.socket.clone(), session.id().to_string());
}

/// `run_turn` with the main slot brought back first (`Keeper::before_turn`) and what the
/// turn did to the slot noted after.
fn one_turn(
    ctx: &TurnCtx<'_>,
    keeper: &mut Keeper,
    session: &mut Session,
    text: &str,
    origin: Origin,
    sink: &mut dyn Sink,
) -> Result<TurnDone, TurnError> {
    keeper.before_turn(ctx, session.id(), session.epoch());
    let outcome = run_turn(ctx, session, text, origin, sink);
    keeper.after_turn(session.id(), session.epoch(), &outcome);
    outcome
}
