//! What a failed epoch start or session creation leaves in a session directory (a full
//! disk, a crash between steps): the head still under its temporary name
//! (`epoch-NNNNNN.head.json.tmp`) and the empty log of an epoch whose head never landed.
//! Neither is an epoch (the current epoch is the highest with a head), so both are
//! removed at loopd's next start (`remove_all`). A log past the current epoch that holds bytes is not
//! ours to judge: it is left alone with a warning, and set aside (`set_aside`) if the
//! session ever reaches its epoch, so a new epoch never adopts it (docs/sessions.md, 'A
//! file in the way of a new epoch').

use crate::atomic;
use crate::epochs::{parse_head_name, parse_log_name};
use crate::Error;
use proto::head::{head_file_name, log_file_name};
use std::io;
use std::path::{Path, PathBuf};

/// What a file set aside is renamed with: `<name>.stray-<unix seconds>`. No reader takes
/// the new name for an epoch's file (`epochs` parses names exactly), and the time says
/// when it was found in the way.
pub const STRAY_MARK: &str = ".stray-";

/// Names `set_aside` tries for one file (`.stray-T`, `.stray-T-2`, …) before it gives up:
/// only files put there by hand share a second, so a few suffice, and a bound keeps a
/// directory full of such names from holding a new epoch in a loop.
const MAX_STRAY_NAMES: u32 = 100;

/// Whether `name` is a file `set_aside` renamed.
pub fn is_set_aside(name: &str) -> bool {
    name.split_once(STRAY_MARK).is_some_and(|(epoch_file, _)| {
        parse_log_name(epoch_file).is_some() || parse_head_name(epoch_file).is_some()
    })
}

/// Before epoch `epoch` starts in the session directory `dir`: whatever already sits at
/// its head's or its log's name is not the session's (the current epoch is lower) and
/// must not become part of the new epoch, which would replay its records to the model and
/// keep them as its own. Each is renamed to `<name>.stray-<unix seconds>`, its bytes
/// kept, with a warning naming both paths; the directory is fsynced when anything moved.
/// An empty regular log is left where it is: it holds nothing, and is what a start of
/// this epoch that failed earlier left (the new epoch opens it as its empty log).
/// Returns the moves, from and to.
pub fn set_aside(dir: &Path, epoch: u64) -> Result<Vec<(PathBuf, PathBuf)>, Error> {
    let mut moved = Vec::new();
    for name in [log_file_name(epoch), head_file_name(epoch)] {
        let path = dir.join(&name);
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io("stat", &path)(e)),
        };
        let empty_log = parse_log_name(&name).is_some() && meta.is_file() && meta.len() == 0;
        if empty_log {
            continue;
        }
        let to = stray_name(dir, &name)?;
        // The name was free a moment ago; only loopd's worker writes in a session
        // directory, so nothing else takes it between the look and the rename.
        std::fs::rename(&path, &to).map_err(Error::io("set aside", &path))?;
        plumbing::warn!(
            "{}: not the session's, and in the way of its new epoch {epoch}: set aside as {}, its bytes kept; the new epoch starts without it",
            path.display(),
            to.display()
        );
        moved.push((path, to));
    }
    if !moved.is_empty() {
        atomic::sync_dir(dir)?;
    }
    Ok(moved)
}

/// A free name `<name>.stray-<unix seconds>[-N]` in `dir`.
fn stray_name(dir: &Path, name: &str) -> Result<PathBuf, Error> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for n in 1..=MAX_STRAY_NAMES {
        let candidate = match n {
            1 => dir.join(format!("{name}{STRAY_MARK}{secs}")),
            n => dir.join(format!("{name}{STRAY_MARK}{secs}-{n}")),
        };
        match std::fs::symlink_metadata(&candidate) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(candidate),
            Err(e) => return Err(Error::io("stat", &candidate)(e)),
            Ok(_) => {}
        }
    }
    Err(Error::Io {
        op: "set aside",
        path: dir.join(name),
        source: io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{MAX_STRAY_NAMES} names for it set aside this second are all taken"),
        ),
    })
}

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
                    "{}: a log with no {} beside it and bytes in it; left alone (set aside if the session reaches epoch {epoch}, never made part of it)",
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
    fn what_is_in_the_way_of_a_new_epoch_is_renamed_aside_and_keeps_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::write(p.join("epoch-000003.jsonl"), "stray\n").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", p.join("epoch-000003.head.json")).unwrap();
        let moved = set_aside(p, 3).unwrap();
        assert_eq!(moved.len(), 2);
        for (from, to) in &moved {
            assert!(std::fs::symlink_metadata(from).is_err(), "{from:?}");
            let name = to.file_name().unwrap().to_str().unwrap();
            assert!(is_set_aside(name), "{name}");
            assert_eq!(
                crate::epochs::parse_log_name(name).or(parse_head_name(name)),
                None
            );
        }
        assert_eq!(std::fs::read(&moved[0].1).unwrap(), b"stray\n");
        assert!(std::fs::symlink_metadata(&moved[1].1)
            .unwrap()
            .file_type()
            .is_symlink());
        // Another one in the same second gets a name of its own.
        std::fs::write(p.join("epoch-000003.jsonl"), "again\n").unwrap();
        let again = set_aside(p, 3).unwrap();
        assert_eq!(again.len(), 1);
        assert_ne!(again[0].1, moved[0].1);
        assert_eq!(std::fs::read(&moved[0].1).unwrap(), b"stray\n");
        // Nothing there, or only an empty log: nothing to move.
        std::fs::write(p.join("epoch-000003.jsonl"), "").unwrap();
        assert!(set_aside(p, 3).unwrap().is_empty());
        assert!(set_aside(p, 4).unwrap().is_empty());
        assert!(!is_set_aside("notes.stray-1"));
        // Set-aside names are no leftovers either: they stay.
        assert!(remove_in(p).iter().all(|n| !is_set_aside(n)));
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
