//! Writing the next epoch to disk (docs/sessions.md): its head, built from the old epoch and the
//! summary, and its empty log, in an order where a crash at any step leaves either the
//! old epoch current or the new one complete.
//!
//! The order, and why:
//! 0. a head or a log already at the new epoch's names is set aside (renamed, its bytes
//!    kept): it is not the session's, and adopted it would replay records older than the
//!    new head to the model (docs/sessions.md, 'A file in the way of a new epoch'). The
//!    old epoch is still current.
//! 1. the new epoch's log is created (empty). A log without a head is not an epoch, so
//!    the old epoch is still current; opening it first means nothing after the commit
//!    can fail.
//! 2. the head is written under a temporary name and fsynced. Still the old epoch: the
//!    temporary name is not a head's name.
//! 3. the head is renamed into place. This is the commit: the current epoch is the
//!    highest with a head. The session in memory follows at once.
//! 4. the directory is fsynced, so the rename and the new log survive a power cut.

use crate::open_session::{Session, SessionError};
use crate::testhook;
use proto::head::{head_file_name, log_file_name, Head, Reason, SummarySource};
use proto::DataClass;
use sessions::atomic;
use sessions::log::LogFile;

/// The head of the epoch after `session`'s: `system` and `tools` as they are now (a
/// changed `system.md` takes effect here), the summary as `carry`, and as `carry_label`
/// the label of everything the old epoch's context held (the session's label), so a
/// summary of secret or tainted turns stays secret or tainted.
pub(crate) fn next_head(
    session: &Session,
    owner_class: DataClass,
    system: String,
    tools: serde_json::Value,
    carry: String,
    summary_source: SummarySource,
    reason: Reason,
) -> Head {
    Head {
        epoch: session.epoch() + 1,
        started: proto::time::now_rfc3339(),
        system,
        tools,
        carry: Some(carry),
        carry_label: session.label(owner_class),
        reason,
        summary_source,
    }
}

/// Puts `head`'s epoch on disk and makes it the session's current epoch.
pub(crate) fn start_next(session: &mut Session, head: Head) -> Result<(), SessionError> {
    let dir = session.dir().to_path_buf();
    sessions::leftovers::set_aside(&dir, head.epoch)?;
    let (log, records) = LogFile::open(&dir.join(log_file_name(head.epoch)))?;
    testhook::abort_at("compact-after-log-create");
    let name = head_file_name(head.epoch);
    let tmp = atomic::write_temp(&dir, &name, &sessions::head::to_bytes(&head)?)?;
    testhook::abort_at("compact-after-head-temp");
    atomic::rename_into_place(&dir, &tmp, &name)?;
    testhook::abort_at("compact-after-head-rename");
    session.enter(head, log, records);
    // The rename is done and visible; memory must follow the disk whatever happens
    // next. A directory that cannot be fsynced is a failing disk: say so loudly, but
    // the epoch has changed and pretending otherwise would split memory from disk.
    if let Err(e) = atomic::sync_dir(&dir) {
        plumbing::error!(
            "session {}: after starting epoch {}: {e}",
            session.id(),
            session.epoch()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests;
