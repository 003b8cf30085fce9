//! The one rule for epoch file names, and listing what is on disk. An epoch's files are
//! `epoch-NNNNNN.head.json` and `epoch-NNNNNN.jsonl`, exactly six digits
//! (`proto::head::MAX_EPOCH`); a name is an epoch's only if formatting its number gives
//! the name back, so `epoch-0000001.jsonl` or `epoch-00000x.jsonl` are no one's.

use crate::Error;
use proto::head::{head_file_name, log_file_name};
use proto::SessionId;
use std::collections::BTreeSet;
use std::io;
use std::path::Path;

/// The epoch whose head file is called `name`, or `None` for any other name.
pub fn parse_head_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("epoch-")?.strip_suffix(".head.json")?;
    let epoch = parse_digits(digits)?;
    (head_file_name(epoch) == name).then_some(epoch)
}

/// The epoch whose log is called `name`, or `None` for any other name.
pub fn parse_log_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("epoch-")?.strip_suffix(".jsonl")?;
    let epoch = parse_digits(digits)?;
    (log_file_name(epoch) == name).then_some(epoch)
}

fn parse_digits(digits: &str) -> Option<u64> {
    if digits.len() != 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// What one listing of a session directory found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// Epochs with a head file: the epochs that exist. The current one is the highest.
    pub heads: BTreeSet<u64>,
    /// Epochs with a log file (a log without a head is an epoch that never started).
    pub logs: BTreeSet<u64>,
    /// Entries named like an epoch's files that are symbolic links: never followed, and
    /// neither heads nor logs here, so a reader can name them when it refuses them.
    pub symlinks: Vec<std::path::PathBuf>,
    /// Every other entry: no epoch's file (a temporary, a file set aside by
    /// `leftovers::set_aside`, anything put there by hand), so a reader that must say
    /// what it did not read (`/forget`) can name them.
    pub others: Vec<std::path::PathBuf>,
}

impl Listing {
    /// The current epoch: the highest with a head.
    pub fn current(&self) -> Option<u64> {
        self.heads.last().copied()
    }

    /// Epochs that have both a head and a log, in order.
    pub fn logs_with_heads(&self) -> impl Iterator<Item = u64> + '_ {
        self.logs.iter().copied().filter(|e| self.heads.contains(e))
    }
}

/// Lists the epoch files of the session directory `dir`. A missing directory is a session
/// with no epochs yet. A directory that is a symbolic link is refused, never followed,
/// as its files would be (`lines::open_regular`): a session is a real directory under
/// `sessions/`, so every reader (loopd serving it, memoryd indexing it, `/forget`
/// searching it) sees the same sessions (docs/sessions.md, 'Session ids').
pub fn list(dir: &Path) -> Result<Listing, Error> {
    let mut listing = Listing::default();
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_symlink() => return Err(linked_dir(dir)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(listing),
        _ => {}
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(listing),
        Err(source) => return Err(Error::io("list", dir)(source)),
    };
    for entry in entries {
        let entry = entry.map_err(Error::io("list", dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            listing.others.push(entry.path());
            continue;
        };
        let named = parse_head_name(name).is_some() || parse_log_name(name).is_some();
        // The entry's own type: a link is not followed to see what it points at.
        if named && entry.file_type().is_ok_and(|t| t.is_symlink()) {
            listing.symlinks.push(entry.path());
            continue;
        }
        if let Some(epoch) = parse_head_name(name) {
            listing.heads.insert(epoch);
        } else if let Some(epoch) = parse_log_name(name) {
            listing.logs.insert(epoch);
        } else {
            listing.others.push(entry.path());
        }
    }
    listing.others.sort();
    Ok(listing)
}

/// The error of a session directory that is a symbolic link.
fn linked_dir(dir: &Path) -> Error {
    Error::Io {
        op: "open session directory",
        path: dir.to_path_buf(),
        source: io::Error::new(
            io::ErrorKind::InvalidInput,
            "is a symbolic link; not followed (a session directory must be a real one)",
        ),
    }
}

/// The sessions under `sessions_dir`: subdirectories whose names are session ids, in
/// order. A missing directory holds none.
pub fn sessions(sessions_dir: &Path) -> Result<Vec<SessionId>, Error> {
    sessions_listed(sessions_dir).map(|s| s.ids)
}

/// What one listing of `sessions/` found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sessions {
    /// Subdirectories named like sessions, in order.
    pub ids: Vec<SessionId>,
    /// Entries named like sessions that are symbolic links: never followed (a link could
    /// point anywhere), listed so a reader can say it refused them.
    pub symlinks: Vec<std::path::PathBuf>,
}

/// `sessions`, with the symbolic links named like sessions that it passed over.
pub fn sessions_listed(sessions_dir: &Path) -> Result<Sessions, Error> {
    let entries = match std::fs::read_dir(sessions_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Sessions::default()),
        Err(source) => return Err(Error::io("list", sessions_dir)(source)),
    };
    let mut found = Sessions::default();
    for entry in entries.filter_map(Result::ok) {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let Ok(id) = SessionId::parse(&name) else {
            continue;
        };
        // `DirEntry::file_type` does not follow links.
        match entry.file_type() {
            Ok(t) if t.is_dir() => found.ids.push(id),
            Ok(t) if t.is_symlink() => found.symlinks.push(entry.path()),
            _ => {}
        }
    }
    found.ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    found.symlinks.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn epoch_names_have_exactly_six_digits() {
        assert_eq!(parse_head_name("epoch-000003.head.json"), Some(3));
        assert_eq!(parse_log_name("epoch-000012.jsonl"), Some(12));
        assert_eq!(parse_log_name("epoch-999999.jsonl"), Some(999_999));
        for bad in [
            "epoch-3.head.json",
            "epoch-00000x.head.json",
            "epoch-0000003.head.json",
            "epoch-000003.jsonl",
            "epoch-000003.head.json.tmp",
        ] {
            assert_eq!(parse_head_name(bad), None, "{bad}");
        }
        for bad in [
            "epoch-0.jsonl",
            "epoch-1234567.jsonl",
            "epoch-000000.head.json",
            "epoch-00000a.jsonl",
            "x.jsonl",
        ] {
            assert_eq!(parse_log_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_listing_finds_heads_and_logs_and_a_missing_dir_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(list(&dir.path().join("none")).unwrap(), Listing::default());
        for name in [
            "epoch-000000.head.json",
            "epoch-000000.jsonl",
            "epoch-000001.head.json.tmp",
            "epoch-000001.jsonl",
            "epoch-000002.head.json",
            "notes.txt",
        ] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let l = list(dir.path()).unwrap();
        assert_eq!(l.current(), Some(2));
        assert_eq!(l.logs_with_heads().collect::<Vec<_>>(), vec![0]);
    }

    #[test]
    fn only_directories_named_like_sessions_are_sessions() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("main")).unwrap();
        std::fs::create_dir(dir.path().join("bad name!")).unwrap();
        std::fs::write(dir.path().join("file"), b"").unwrap();
        let found = sessions(dir.path()).unwrap();
        assert_eq!(
            found.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
            ["main"]
        );
    }

    #[test]
    fn symlinked_sessions_and_epoch_files_are_named_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("main")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("linked")).unwrap();
        let found = sessions_listed(dir.path()).unwrap();
        assert_eq!(found.ids.len(), 1);
        assert_eq!(found.symlinks, vec![dir.path().join("linked")]);
        let main = dir.path().join("main");
        std::fs::write(main.join("epoch-000000.head.json"), b"").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", main.join("epoch-000000.jsonl")).unwrap();
        let l = list(&main).unwrap();
        assert!(l.logs.is_empty());
        assert_eq!(l.symlinks, vec![main.join("epoch-000000.jsonl")]);
        // A linked session directory is refused by name, never listed through.
        let e = list(&dir.path().join("linked")).unwrap_err().to_string();
        assert!(
            e.contains("linked: is a symbolic link; not followed"),
            "{e}"
        );
    }

    #[test]
    fn entries_that_are_no_epochs_file_are_listed_apart() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "epoch-000000.head.json",
            "epoch-000000.jsonl",
            "epoch-000001.jsonl.stray-1700000000",
            "epoch-000001.head.json.tmp",
            "notes.txt",
        ] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let l = list(dir.path()).unwrap();
        let others: Vec<_> = l
            .others
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(
            others,
            [
                "epoch-000001.head.json.tmp",
                "epoch-000001.jsonl.stray-1700000000",
                "notes.txt"
            ]
        );
    }
}
