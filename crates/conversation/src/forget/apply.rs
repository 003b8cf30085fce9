//! The removal on disk: each log the plan names rewritten with the named lines replaced
//! by their `forgotten` records, each named head rewritten with its redacted carry. Every file is
//! replaced atomically (a new file, fsync, rename, fsync the directory), so a crash
//! leaves each one either as it was or as it should be, and applying a plan again gives
//! the same files: that is how a removal cut short is finished.

use super::plan::{LogEdit, Plan};
use super::ForgetError;
use crate::testhook::abort_at;
use proto::head::log_file_name;
use sessions::rewrite::Rewrite;
use std::path::Path;

/// Writes `plan` and then makes every change it names to the session under
/// `sessions_dir`, as the worker does for each session of a removal (all plans written
/// first). The plan file stays until `plan::remove`.
#[cfg(test)]
pub fn run(state_dir: &Path, sessions_dir: &Path, plan: &Plan) -> Result<(), ForgetError> {
    super::plan::write(state_dir, plan)?;
    abort_at("forget-after-plan");
    files(sessions_dir, plan)
}

/// The changes of `plan` to the files, idempotent.
pub fn files(sessions_dir: &Path, plan: &Plan) -> Result<(), ForgetError> {
    let dir = sessions_dir.join(&plan.session);
    for log in &plan.logs {
        rewrite_log(&dir, &plan.time, log)?;
        abort_at("forget-after-log");
    }
    for edit in &plan.carries {
        let mut head = sessions::head::read(&dir, edit.epoch)?;
        if head.carry.as_deref() != Some(edit.carry.as_str()) {
            head.carry = Some(edit.carry.clone());
            sessions::head::write(&dir, &head)?;
        }
    }
    abort_at("forget-after-heads");
    Ok(())
}

/// The log of `edit.epoch` with each named line replaced by its `forgotten` record, through
/// `sessions::rewrite`: every other byte (other records, a torn tail) is kept as it was,
/// and a log already so is left alone.
fn rewrite_log(dir: &Path, time: &str, edit: &LogEdit) -> Result<(), ForgetError> {
    let name = log_file_name(edit.epoch);
    let moved = |line| ForgetError::Moved {
        path: dir.join(&name),
        line,
    };
    let mut edits = edit.lines.iter().peekable();
    let Some(mut log) = Rewrite::open(dir, &name)? else {
        return match edits.next() {
            Some(e) => Err(moved(e.line)),
            None => Ok(()),
        };
    };
    while let Some(seen) = log.next_record()? {
        match edits.peek() {
            Some(e) if e.line == seen.line => {
                log.replace(&e.note_line(time))?;
                edits.next();
            }
            // A named line that was not a record: the log changed under the plan.
            Some(e) if e.line < seen.line => return Err(moved(e.line)),
            _ => log.keep()?,
        }
    }
    // Dropped unwritten when a named line is missing: the log stays as it was.
    if let Some(e) = edits.next() {
        return Err(moved(e.line));
    }
    log.commit()?;
    Ok(())
}
