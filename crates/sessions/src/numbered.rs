//! A numbered store: one small JSON file under the state directory whose entries carry
//! numbers that are never reused (the reminders' book, the inbox). Read whole and bounded
//! at start, replaced atomically on every change (`atomic`), so a crash leaves the old
//! file or the new one. What the file holds is its owner's; this module owns how it is
//! read and written and what can go wrong doing so.

use crate::atomic;
use crate::Error;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// A store's file could not be read, understood or written.
#[derive(Debug)]
pub enum StoreError {
    /// The file is there but cannot be read whole within its bound.
    Read {
        what: &'static str,
        path: PathBuf,
        err: io::Error,
    },
    /// The file is not what its owner writes.
    Parse {
        what: &'static str,
        path: PathBuf,
        err: serde_json::Error,
    },
    Encode {
        what: &'static str,
        err: serde_json::Error,
    },
    /// The state directory cannot be made.
    Dir { path: PathBuf, err: io::Error },
    /// The atomic replace failed; the old file stands.
    Write { path: PathBuf, err: Error },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Read { what, path, err } => {
                write!(f, "{what} file {}: {err}", path.display())
            }
            StoreError::Parse { what, path, err } => {
                write!(f, "{what} file {}: {err}", path.display())
            }
            StoreError::Encode { what, err } => write!(f, "{what}: cannot encode: {err}"),
            StoreError::Dir { path, err } => write!(f, "cannot write {}: {err}", path.display()),
            StoreError::Write { path, err } => write!(f, "cannot write {}: {err}", path.display()),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Read { err, .. } | StoreError::Dir { err, .. } => Some(err),
            StoreError::Parse { err, .. } | StoreError::Encode { err, .. } => Some(err),
            StoreError::Write { err, .. } => Some(err),
        }
    }
}

/// One store file: `name` under a state directory, `what` naming it in errors (the
/// reminders, the inbox), read at most `max_bytes`.
#[derive(Clone, Copy, Debug)]
pub struct Store {
    pub name: &'static str,
    pub what: &'static str,
    pub max_bytes: u64,
}

impl Store {
    /// Reads the file under `dir`; none yet is `T::default()`. A file that cannot be read
    /// whole is an error naming it: starting empty would drop what it holds.
    pub fn load<T: DeserializeOwned + Default>(&self, dir: &Path) -> Result<T, StoreError> {
        let path = dir.join(self.name);
        match plumbing::bounded::read_text(&path, self.max_bytes) {
            Ok(text) => serde_json::from_str(&text).map_err(|err| StoreError::Parse {
                what: self.what,
                path,
                err,
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(T::default()),
            Err(err) => Err(StoreError::Read {
                what: self.what,
                path,
                err,
            }),
        }
    }

    /// Replaces the file under `dir` with `value`, durably (pretty-printed: an owner may
    /// read it).
    pub fn save<T: Serialize>(&self, dir: &Path, value: &T) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(value).map_err(|err| StoreError::Encode {
            what: self.what,
            err,
        })?;
        let path = dir.join(self.name);
        if let Err(err) = std::fs::create_dir_all(dir) {
            return Err(StoreError::Dir { path, err });
        }
        atomic::write(dir, self.name, &bytes).map_err(|err| StoreError::Write { path, err })
    }
}

/// The next number to give, past every number in use: numbers are never reused, even
/// after a hand edit left the file's `next` behind.
pub fn next_number(next: u64, in_use: impl IntoIterator<Item = u64>) -> u64 {
    let top = in_use.into_iter().max().unwrap_or(0);
    next.max(top.saturating_add(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STORE: Store = Store {
        name: "things.json",
        what: "things",
        max_bytes: 64,
    };

    #[test]
    fn no_file_is_empty_and_a_saved_value_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let empty: Vec<u64> = STORE.load(dir.path()).unwrap();
        assert!(empty.is_empty());
        STORE.save(dir.path(), &vec![1u64, 2]).unwrap();
        let back: Vec<u64> = STORE.load(dir.path()).unwrap();
        assert_eq!(back, vec![1, 2]);
    }

    #[test]
    fn a_file_past_its_bound_or_not_json_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("things.json"), "[").unwrap();
        let e = STORE.load::<Vec<u64>>(dir.path()).unwrap_err();
        assert!(e.to_string().starts_with("things file "), "{e}");
        std::fs::write(dir.path().join("things.json"), "1".repeat(65)).unwrap();
        let e = STORE.load::<Vec<u64>>(dir.path()).unwrap_err();
        assert!(matches!(e, StoreError::Read { .. }), "{e}");
    }

    #[test]
    fn numbers_are_never_reused() {
        assert_eq!(next_number(1, [4, 2]), 5);
        assert_eq!(next_number(9, [4]), 9);
        assert_eq!(next_number(1, []), 1);
    }
}
