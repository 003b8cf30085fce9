//! Compaction: starting a new epoch whose head carries a summary of the old one (docs/sessions.md,
//! docs/turn.md). `policy` holds the pure rules, `carry` makes the summary the new epoch carries
//! (the summary call and its fallback), `epoch` the crash-safe write of the new epoch,
//! `tool_summaries` makes the background tool summaries that run before it, and `finish`
//! the order of all of it after a turn.

pub mod carry;
pub mod epoch;
pub mod finish;
pub mod policy;
pub mod tool_summaries;

use crate::open_session::{Session, SessionError};
use crate::prompt::TurnCtx;
use crate::prompts::{self, Prompt, PromptError};
use crate::testhook;
use llama::LlamaError;
use proto::head::{Reason, SummarySource, MAX_EPOCH};
use proto::time::now_rfc3339;
use proto::Record;
use std::fmt;
use std::path::PathBuf;

/// Why a compaction did not start a new epoch. Each names what failed.
#[derive(Debug)]
pub enum CompactError {
    /// A prompt the compaction reads (`compact.md`, `system.md`) is missing.
    Prompt {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The summary call failed for a reason other than context-full.
    Summary(LlamaError),
    /// The model answered the summary call with no text.
    EmptySummary,
    /// Epoch numbers have run out of their six digits.
    TooManyEpochs(u64),
    Store(SessionError),
}

impl fmt::Display for CompactError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompactError::Prompt { path, source } => {
                write!(f, "prompt {}: {source}", path.display())
            }
            CompactError::Summary(e) => write!(f, "summary call: {e}"),
            CompactError::EmptySummary => f.write_str("summary call: the model's answer was empty"),
            CompactError::TooManyEpochs(n) => {
                write!(f, "epoch {n} is the last one file names can hold")
            }
            CompactError::Store(e) => write!(f, "session log: {e}"),
        }
    }
}

impl std::error::Error for CompactError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CompactError::Prompt { source, .. } => Some(source),
            CompactError::Summary(e) => Some(e),
            CompactError::Store(e) => Some(e),
            CompactError::EmptySummary | CompactError::TooManyEpochs(_) => None,
        }
    }
}

impl From<SessionError> for CompactError {
    fn from(e: SessionError) -> CompactError {
        CompactError::Store(e)
    }
}

/// A compaction that happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compacted {
    pub from: u64,
    pub to: u64,
    pub reason: Reason,
    pub source: SummarySource,
    /// Characters in the carried summary.
    pub chars: usize,
}

impl fmt::Display for Compacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match self.source {
            SummarySource::Model => "model",
            SummarySource::Fallback => "fallback",
        };
        write!(
            f,
            "epoch {} → {} (summary from {source}, {} chars)",
            self.from, self.to, self.chars
        )
    }
}

/// Summarises the session's epoch and starts the next one, which becomes current.
/// `system.md` is read now, so a changed one takes effect in the new epoch; the tool
/// schemas are the current ones. On error the old epoch stays current.
pub fn compact(
    ctx: &TurnCtx<'_>,
    session: &mut Session,
    reason: Reason,
) -> Result<Compacted, CompactError> {
    let from = session.epoch();
    if from >= MAX_EPOCH {
        return Err(CompactError::TooManyEpochs(from));
    }
    // Read before the summary call, so a missing file does not waste one.
    let system = prompts::read(ctx.cfg, Prompt::System)
        .map_err(|PromptError { path, source }| CompactError::Prompt { path, source })?;
    let (carry, source, why) = carry::make(ctx, session, reason)?;
    if let Some(why) = why {
        // Written in the old epoch, which the owner reads to see why the new one
        // carries their own words rather than a summary.
        note(session, format!("summary replaced by the fallback: {why}"));
    }
    testhook::abort_at("compact-after-summary");
    let chars = carry.chars().count();
    let head = epoch::next_head(
        session,
        ctx.cfg.channel.owner_class,
        system,
        tools::schemas(),
        carry,
        source,
        reason,
    );
    epoch::start_next(session, head)?;
    let done = Compacted {
        from,
        to: session.epoch(),
        reason,
        source,
        chars,
    };
    plumbing::info!(
        "session {}: compacted ({}): {done}",
        session.id(),
        reason_text(reason)
    );
    Ok(done)
}

/// `compact`, and on failure what docs/turn.md asks: a `note` in the (old, still current)
/// epoch and a `loopd:` error line. The next turn that finds compaction due tries again.
pub fn compact_or_note(
    ctx: &TurnCtx<'_>,
    session: &mut Session,
    reason: Reason,
) -> Result<Compacted, CompactError> {
    let result = compact(ctx, session, reason);
    if let Err(e) = &result {
        plumbing::error!(
            "session {}: compaction of epoch {} ({}) failed: {e}",
            session.id(),
            session.epoch(),
            reason_text(reason)
        );
        note(session, format!("compaction failed: {e}"));
    }
    result
}

/// Appends a `note`; a note that cannot be written is logged, since it only reports.
pub fn note(session: &mut Session, text: String) {
    let record = Record::Note {
        time: now_rfc3339(),
        text,
    };
    if let Err(e) = session.append(record) {
        plumbing::error!("session {}: cannot write a note: {e}", session.id());
    }
}

pub(crate) fn reason_text(reason: Reason) -> &'static str {
    match reason {
        Reason::Threshold => "threshold",
        Reason::ContextFull => "context_full",
        Reason::Manual => "manual",
        Reason::Start => "start",
    }
}
