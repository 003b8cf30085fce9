//! The removal on disk: each log the plan names rewritten with the named lines replaced
//! by their `forgotten` records, each named head rewritten with its redacted carry. Every file is
//! replaced atomically (a new file, fsync, rename, fsync the directory), so a crash
//! leaves each one either as it was or as it should be, and applying a plan again gives
//! the same files: that is how a removal cut short is finished.

use super::find::{read_log, whole_lines};
use super::plan::{LogEdit, Plan};
use super::ForgetError;
use crate::testhook::abort_at;
use proto::head::log_file_name;
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

/// The log of `edit.epoch` with each named line replaced by its `forgotten` record. Every other byte
/// (other records, a torn tail) is kept as it was.
fn rewrite_log(dir: &Path, time: &str, edit: &LogEdit) -> Result<(), ForgetError> {
    let name = log_file_name(edit.epoch);
    let path = dir.join(&name);
    let bytes = read_log(&path)?;
    let mut out = Vec::with_capacity(bytes.len());
    let mut edits = edit.lines.iter().peekable();
    let mut kept = 0usize;
    for (line, raw) in (0u64..).zip(whole_lines(&bytes)) {
        kept += raw.len();
        match edits.peek() {
            Some(e) if e.line == line => {
                out.extend_from_slice(e.note_line(time).as_bytes());
                edits.next();
            }
            _ => out.extend_from_slice(raw),
        }
    }
    if let Some(e) = edits.next() {
        return Err(ForgetError::Moved { path, line: e.line });
    }
    // A torn tail is not a record; it is kept for the next open to cut, as it would be.
    out.extend_from_slice(&bytes[kept..]);
    if out == bytes {
        return Ok(());
    }
    let tmp = sessions::atomic::write_temp(dir, &name, &out)?;
    sessions::atomic::rename_into_place(dir, &tmp, &name)?;
    sessions::atomic::sync_dir(dir)?;
    Ok(())
}
