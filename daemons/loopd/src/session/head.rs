//! Epoch head files: finding the current epoch, reading a head back, and writing a new
//! one atomically before the epoch's first record.

use super::store::write_atomic;
use super::SessionError;
use proto::head::{head_file_name, parse_head_file_name, Head, Reason, SummarySource};
use proto::Label;
use std::path::Path;

/// The highest epoch in `dir` that has a head, or `None` for a session never used.
pub fn current_epoch(dir: &Path) -> Result<Option<u64>, SessionError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(SessionError::Io {
                op: "list",
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    let mut highest = None;
    for entry in entries {
        let entry = entry.map_err(|source| SessionError::Io {
            op: "list",
            path: dir.to_path_buf(),
            source,
        })?;
        let name = entry.file_name();
        if let Some(epoch) = name.to_str().and_then(parse_head_file_name) {
            highest = highest.max(Some(epoch));
        }
    }
    Ok(highest)
}

/// Reads the head of `epoch`, checking that it is the epoch its name says.
pub fn read_head(dir: &Path, epoch: u64) -> Result<Head, SessionError> {
    let path = dir.join(head_file_name(epoch));
    let text =
        plumbing::bounded::read_text(&path, proto::head::MAX_HEAD_BYTES).map_err(|source| {
            SessionError::Io {
                op: "read",
                path: path.clone(),
                source,
            }
        })?;
    let head: Head = serde_json::from_str(&text).map_err(|e| SessionError::BadHead {
        path: path.clone(),
        message: e.to_string(),
    })?;
    if head.epoch != epoch {
        return Err(SessionError::BadHead {
            path,
            message: format!(
                "field `epoch` is {} but the file name says {epoch}",
                head.epoch
            ),
        });
    }
    Ok(head)
}

/// Writes `head` as `epoch-NNNNNN.head.json` in `dir`, atomically.
pub fn write_head(dir: &Path, head: &Head) -> Result<(), SessionError> {
    write_atomic(dir, &head_file_name(head.epoch), &to_bytes(head)?)
}

/// The bytes of a head file: pretty JSON and a final newline, for a person reading it.
pub fn to_bytes(head: &Head) -> Result<Vec<u8>, SessionError> {
    let mut bytes = serde_json::to_vec_pretty(head).map_err(|e| SessionError::BadHead {
        path: head_file_name(head.epoch).into(),
        message: e.to_string(),
    })?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// The head of a session's first epoch. SPEC §3 gives no `summary_source` for epoch 0,
/// which has no summary; it is written as `model` with a null `carry` and a public,
/// trusted `carry_label`, so a reader can treat every head alike.
pub fn epoch_zero(system: String, tools: serde_json::Value) -> Head {
    Head {
        epoch: 0,
        started: proto::time::now_rfc3339(),
        system,
        tools,
        carry: None,
        carry_label: Label::PUBLIC,
        reason: Reason::Start,
        summary_source: SummarySource::Model,
    }
}
