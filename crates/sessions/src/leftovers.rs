//! What a failed epoch start or session creation leaves in a session directory (a full
//! disk, a crash between steps): the head still under its temporary name
//! (`epoch-NNNNNN.head.json.tmp`) and the empty log of an epoch whose head never landed.
//! Neither is an epoch (the current epoch is the highest with a head), so both are
//! removed at loopd's next start (`remove_all`). A log past the current epoch that holds bytes is not
//! ours to judge: it is left alone with a warning.

use crate::epochs::{parse_head_name, parse_log_name};
use proto::head::head_file_name;
use std::path::Path;

/// Cleans every session directory under `sessions_dir`. Failures are logged and skipped:
/// a leftover costs a few bytes, never correctness, so it must not stop loopd starting.
pub fn remove_all(sessions_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(sessions_dir) else {
        return; // No sessions yet, or unreadable: opening a session will say which.
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            remove_in(&entry.path());
        }
    }
}

/// Removes one session directory's leftovers; returns the names removed.
pub fn remove_in(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    let current = names.iter().filter_map(|n| parse_head_name(n)).max();
    let mut removed = Vec::new();
    for name in &names {
        let path = dir.join(name);
        let leftover = if let Some(head) = name.strip_suffix(".tmp") {
            parse_head_name(head).is_some()
        } else if let Some(epoch) = parse_log_name(name) {
            let after_current = current.is_none_or(|c| epoch > c);
            let empty = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() == 0);
            if after_current && !empty {
                plumbing::warn!(
                    "{}: a log with no {} beside it and bytes in it; left alone",
                    path.display(),
                    head_file_name(epoch)
                );
            }
            after_current && empty
        } else {
            false
        };
        if !leftover {
            continue;
        }
        match std::fs::remove_file(&path) {
            Ok(()) => {
                plumbing::notice!(
                    "{}: removed, left by an epoch start that did not finish",
                    path.display()
                );
                removed.push(name.clone());
            }
            Err(e) => plumbing::warn!("{}: cannot remove a leftover: {e}", path.display()),
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temporary_head_and_an_empty_log_past_the_current_epoch_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        for (name, bytes) in [
            ("epoch-000000.head.json", "{}"),
            ("epoch-000000.jsonl", ""),
            ("epoch-000001.head.json.tmp", "{"),
            ("epoch-000001.jsonl", ""),
            ("epoch-000002.jsonl", "{\"type\":\"note\"}\n"),
            ("notes.txt", ""),
        ] {
            std::fs::write(p.join(name), bytes).unwrap();
        }
        let mut removed = remove_in(p);
        removed.sort();
        assert_eq!(
            removed,
            ["epoch-000001.head.json.tmp", "epoch-000001.jsonl"]
        );
        for kept in [
            "epoch-000000.head.json",
            "epoch-000000.jsonl",
            "epoch-000002.jsonl",
            "notes.txt",
        ] {
            assert!(p.join(kept).exists(), "{kept}");
        }
    }

    #[test]
    fn a_session_whose_first_head_never_landed_loses_its_temporary_head_and_empty_log() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::write(p.join("epoch-000000.head.json.tmp"), "").unwrap();
        std::fs::write(p.join("epoch-000000.jsonl"), "").unwrap();
        assert_eq!(remove_in(p).len(), 2);
        assert_eq!(std::fs::read_dir(p).unwrap().count(), 0);
    }
}
