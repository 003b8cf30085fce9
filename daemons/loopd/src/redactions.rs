//! Redactions a `/forget` asks of the Matrix channel, written to disk before any file of
//! the removal changes (`<state_dir>/matrix/redact-<time>.json`, event ids and loopd's
//! own `remind N` / `inbox N` keys, never text): a removal a crash cut short is finished
//! at start from its plan, and these are handed to the channel again then; the channel
//! removes a file once its store holds every redaction it names (docs/matrix.md,
//! 'Forgetting'). Below the worker, which writes them, and the channel, which reads them.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// The largest pending-redactions file read: a removal names at most a few thousand
/// events (ids of under 100 bytes), so anything past this was not written by loopd.
const MAX_PENDING_BYTES: u64 = 4 * 1024 * 1024;

const PENDING: &str = "redact-";

fn dir(state_dir: &Path) -> PathBuf {
    state_dir.join("matrix")
}

/// Why the pending-redactions file of a removal could not be written, naming it.
#[derive(Debug)]
pub(crate) enum RedactionsError {
    CreateDir {
        dir: PathBuf,
        source: io::Error,
    },
    Encode(serde_json::Error),
    Write {
        path: PathBuf,
        source: sessions::Error,
    },
}

impl fmt::Display for RedactionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RedactionsError::CreateDir { dir, source } => {
                write!(f, "cannot create {}: {source}", dir.display())
            }
            RedactionsError::Encode(e) => write!(f, "matrix redactions: {e}"),
            RedactionsError::Write { path, source } => {
                write!(f, "cannot write {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for RedactionsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RedactionsError::CreateDir { source, .. } => Some(source),
            RedactionsError::Encode(e) => Some(e),
            RedactionsError::Write { source, .. } => Some(source),
        }
    }
}

/// The entry of a pending file that names the room event which asked for the removal
/// (`asked <event id>`): that event's command and answer stay in its room when the
/// removal is finished at start, as they do when it is not cut short. Beside the other
/// entries, so a file written before this entry existed reads the same.
const ASKED: &str = "asked ";

/// A removal's pending redactions, as read back.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) path: PathBuf,
    /// The events and keys to redact.
    pub(crate) lines: Vec<String>,
    /// The room event that asked for the removal, when a room did.
    pub(crate) asked_by: Option<String>,
}

/// Writes what a removal asks to redact, durably, before the removal changes a file;
/// `asked_by`: the room event that asked for it, when a room did.
pub(crate) fn pending_write(
    state_dir: &Path,
    lines: &[String],
    asked_by: Option<&str>,
) -> Result<(), RedactionsError> {
    let dir = dir(state_dir);
    if let Err(source) = std::fs::create_dir_all(&dir) {
        return Err(RedactionsError::CreateDir { dir, source });
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = format!("{PENDING}{nanos}.json");
    let mut entries = lines.to_vec();
    entries.extend(asked_by.map(|e| format!("{ASKED}{e}")));
    let bytes = serde_json::to_vec(&entries).map_err(RedactionsError::Encode)?;
    sessions::atomic::write(&dir, &name, &bytes).map_err(|source| RedactionsError::Write {
        path: dir.join(&name),
        source,
    })
}

/// The redactions removals asked for that the store may not hold yet, each with its file.
pub(crate) fn pending(state_dir: &Path) -> Vec<Pending> {
    let Ok(entries) = std::fs::read_dir(dir(state_dir)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with(PENDING) || !name.ends_with(".json") {
            continue;
        }
        match plumbing::bounded::read_text(&path, MAX_PENDING_BYTES)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str::<Vec<String>>(&t).map_err(|e| e.to_string()))
        {
            Ok(entries) => {
                let (asked, lines): (Vec<String>, Vec<String>) =
                    entries.into_iter().partition(|l| l.starts_with(ASKED));
                let asked_by = asked
                    .into_iter()
                    .next()
                    .map(|a| a[ASKED.len()..].to_string());
                out.push(Pending {
                    path,
                    lines,
                    asked_by,
                });
            }
            Err(e) => plumbing::error!("matrix: {}: {e}; left for a look", path.display()),
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}
