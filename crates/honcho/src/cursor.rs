//! The report cursor of one session, `<state_dir>/honcho/<session>.cursor`: where in the
//! session's logs the next unreported turn starts. It is the only state the reporter keeps,
//! so it is written atomically (`sessions::atomic`: temp file, fsync, rename, fsync the
//! directory): after a crash it holds either the old position or the new one, never a
//! torn mix. It is read bounded and non-blocking like every other small file.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

/// A cursor file is three small numbers and, after a forget, that forget's time; anything
/// bigger is not one of ours.
const MAX_CURSOR_BYTES: u64 = 4096;

/// A position in a session's logs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cursor {
    /// The epoch whose log holds the next unreported line.
    pub epoch: u64,
    /// The byte offset of the next unreported line in that epoch's log.
    pub offset: u64,
    /// How many messages of the turn starting at `offset` Honcho already holds. Usually
    /// 0; it is more only when a batch ended inside a turn (a turn whose text was split
    /// into many messages) or when Honcho was found holding part of one after a crash.
    pub done: usize,
}

#[derive(Debug)]
pub enum CursorError {
    Read { path: PathBuf, message: String },
    Parse { path: PathBuf, message: String },
    Write { path: PathBuf, message: String },
}

impl fmt::Display for CursorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CursorError::Read { path, message } => {
                write!(f, "cannot read cursor {}: {message}", path.display())
            }
            CursorError::Parse { path, message } => {
                write!(f, "cursor {} is not valid: {message}", path.display())
            }
            CursorError::Write { path, message } => {
                write!(f, "cannot write cursor {}: {message}", path.display())
            }
        }
    }
}

impl std::error::Error for CursorError {}

/// `<state_dir>/honcho/<session>.cursor`.
pub fn path(state_dir: &Path, session: &str) -> PathBuf {
    state_dir.join("honcho").join(format!("{session}.cursor"))
}

/// The file's form: the cursor, and the id of the log rewrite that last moved it (see
/// `moved`), kept only until the reporter next stores the cursor.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct OnDisk {
    epoch: u64,
    offset: u64,
    #[serde(default)]
    done: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    moved_by: Option<String>,
}

/// The stored cursor, or `None` when the session was never reported.
pub fn load(path: &Path) -> Result<Option<Cursor>, CursorError> {
    Ok(load_marked(path)?.map(|(c, _)| c))
}

/// The stored cursor and the id of the rewrite that moved it, if one did since the
/// reporter last stored it.
pub fn load_marked(path: &Path) -> Result<Option<(Cursor, Option<String>)>, CursorError> {
    let text = match plumbing::bounded::read_text(path, MAX_CURSOR_BYTES) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Err(CursorError::Parse {
                path: path.to_path_buf(),
                message: e.to_string(),
            })
        }
        Err(e) => {
            return Err(CursorError::Read {
                path: path.to_path_buf(),
                message: e.to_string(),
            })
        }
    };
    let d: OnDisk = serde_json::from_str(&text).map_err(|e| CursorError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let c = Cursor {
        epoch: d.epoch,
        offset: d.offset,
        done: d.done,
    };
    Ok(Some((c, d.moved_by)))
}

/// Replaces the stored cursor atomically and durably. Without the directory fsync a power
/// cut could bring back the old cursor and with it a duplicate report.
pub fn store(path: &Path, cursor: &Cursor) -> Result<(), CursorError> {
    store_marked(path, cursor, None)
}

/// [`store`], with the id of the rewrite that moved the cursor.
pub fn store_marked(
    path: &Path,
    cursor: &Cursor,
    moved_by: Option<&str>,
) -> Result<(), CursorError> {
    let write_err = |message: String| CursorError::Write {
        path: path.to_path_buf(),
        message,
    };
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return Err(write_err("not a file path".into()));
    };
    fs::create_dir_all(dir).map_err(|e| write_err(format!("{}: {e}", dir.display())))?;
    let d = OnDisk {
        epoch: cursor.epoch,
        offset: cursor.offset,
        done: cursor.done,
        moved_by: moved_by.map(str::to_string),
    };
    let mut text = serde_json::to_string(&d).map_err(|e| write_err(e.to_string()))?;
    text.push('\n');
    sessions::atomic::write(dir, name, text.as_bytes()).map_err(|e| write_err(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_cursor_is_none_and_a_stored_one_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = path(dir.path(), "main");
        assert_eq!(load(&p).unwrap(), None);
        let c = Cursor {
            epoch: 2,
            offset: 1234,
            done: 1,
        };
        store(&p, &c).unwrap();
        assert_eq!(load(&p).unwrap(), Some(c));
        assert!(!p.with_extension("cursor.tmp").exists());
    }

    #[test]
    fn a_damaged_cursor_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = path(dir.path(), "main");
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, "{\"epoch\": \"x\"}").unwrap();
        let e = load(&p).unwrap_err().to_string();
        assert!(e.contains("main.cursor"), "{e}");
    }
}
