//! One loopd per state directory (docs/systemd.md, 'One loopd per state directory'):
//! loopd is the one writer of the files under `state_dir`, so at start it takes an
//! exclusive `flock` on `<state_dir>/loopd.lock`, without waiting, and holds it until the
//! process ends. A second loopd on the same directory finds it taken and refuses to
//! start, before it touches a file or a socket. The kernel drops the lock when the
//! process ends however it ends (`kill -9` included), so a restart never finds a stale
//! one.

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use std::fmt;
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The lock file's name in the state directory.
pub(crate) const LOCK_FILE: &str = "loopd.lock";

/// The most of the lock file read back for the holder's pid: a pid and a newline are at
/// most 11 bytes, and a file someone else wrote into is not read whole.
const MAX_PID_TEXT: u64 = 32;

/// The state directory's lock, held while this value lives.
#[derive(Debug)]
pub struct StateLock {
    _held: Flock<File>,
}

/// Why the state directory could not be locked.
#[derive(Debug)]
pub enum LockError {
    /// The state directory did not exist and could not be made.
    Dir { dir: PathBuf, source: io::Error },
    /// The lock file could not be opened or created.
    Open { path: PathBuf, source: io::Error },
    /// Another process holds the lock: another loopd, whose pid the file names when it
    /// could be read.
    Held { dir: PathBuf, pid: Option<u32> },
    /// `flock` failed for another reason (a file system without locks).
    Lock { path: PathBuf, source: Errno },
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockError::Dir { dir, source } => {
                write!(
                    f,
                    "cannot make the state directory {}: {source}",
                    dir.display()
                )
            }
            LockError::Open { path, source } => {
                write!(
                    f,
                    "cannot open the state directory's lock {}: {source}",
                    path.display()
                )
            }
            LockError::Held { dir, pid } => {
                let who = pid.map_or_else(String::new, |pid| format!(" (pid {pid})"));
                write!(
                    f,
                    "another loopd{who} holds the state directory {}: only one loopd may write it; stop that one, or give this one another state_dir",
                    dir.display()
                )
            }
            LockError::Lock { path, source } => {
                write!(
                    f,
                    "cannot lock the state directory's lock {}: {source}",
                    path.display()
                )
            }
        }
    }
}

impl std::error::Error for LockError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LockError::Dir { source, .. } | LockError::Open { source, .. } => Some(source),
            LockError::Lock { source, .. } => Some(source),
            LockError::Held { .. } => None,
        }
    }
}

/// Locks `state_dir` (made, owner only, if missing) for this process, or says who holds
/// it. The pid written into the file is for that message only: the lock is the `flock`.
pub fn take(state_dir: &Path) -> Result<StateLock, LockError> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(state_dir)
        .map_err(|source| LockError::Dir {
            dir: state_dir.to_path_buf(),
            source,
        })?;
    let path = state_dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        // Close-on-exec, so a child (the notify command) never holds the lock after loopd
        // is gone (docs/systemd.md, 'Descriptors'); the standard library sets it anyway.
        // No symlink is followed to a lock elsewhere.
        .custom_flags(nix::libc::O_CLOEXEC | nix::libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|source| LockError::Open {
            path: path.clone(),
            source,
        })?;
    let held = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(held) => held,
        Err((file, Errno::EWOULDBLOCK)) => {
            return Err(LockError::Held {
                dir: state_dir.to_path_buf(),
                pid: holder(file),
            })
        }
        Err((_, source)) => return Err(LockError::Lock { path, source }),
    };
    if let Err(e) = write_pid(&held) {
        plumbing::warn!(
            "{}: cannot write loopd's pid into it: {e}; the lock is held all the same",
            path.display()
        );
    }
    Ok(StateLock { _held: held })
}

impl StateLock {
    /// Keeps the lock until the process exits: the turn worker may still be writing a
    /// record after the poll loop has ended (docs/systemd.md, 'Stop'), so the lock is
    /// never released before the kernel releases it at exit.
    pub fn keep_until_exit(self) {
        std::mem::forget(self);
    }
}

/// This process's pid, as the file's whole text.
fn write_pid(file: &File) -> io::Result<()> {
    file.set_len(0)?;
    let mut writer = file;
    writer.write_all(format!("{}\n", std::process::id()).as_bytes())
}

/// The pid the holder wrote into the lock file, when it reads as one.
fn holder(file: File) -> Option<u32> {
    let mut text = String::new();
    file.take(MAX_PID_TEXT).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_second_lock_on_one_state_directory_is_refused_naming_it_and_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let first = take(dir.path()).unwrap();
        let e = take(dir.path()).unwrap_err();
        let said = e.to_string();
        assert!(matches!(e, LockError::Held { .. }), "{said}");
        assert!(
            said.contains("another loopd")
                && said.contains(&dir.path().display().to_string())
                && said.contains(&format!("(pid {})", std::process::id())),
            "{said}"
        );
        drop(first);
        take(dir.path()).expect("free again once the holder is gone");
    }

    #[test]
    fn a_missing_state_directory_is_made_owner_only_with_the_lock_file_owner_only_and_close_on_exec(
    ) {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("new").join("state");
        let lock = take(&state).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&state), 0o700);
        assert_eq!(mode(&state.join(LOCK_FILE)), 0o600);
        let flags =
            nix::fcntl::fcntl(lock._held.as_raw_fd(), nix::fcntl::FcntlArg::F_GETFD).unwrap();
        assert_ne!(flags & nix::libc::FD_CLOEXEC, 0, "a child would inherit it");
    }

    #[test]
    fn a_lock_file_without_a_pid_still_refuses_naming_no_pid() {
        let dir = tempfile::tempdir().unwrap();
        let _first = take(dir.path()).unwrap();
        std::fs::write(dir.path().join(LOCK_FILE), "not a pid").unwrap();
        let said = take(dir.path()).unwrap_err().to_string();
        assert!(
            said.starts_with("another loopd holds the state directory"),
            "{said}"
        );
    }
}
