//! Small files replaced atomically: a temporary file beside the target, fsync, rename
//! over the name, fsync the directory. A crash leaves either the old file or the new one,
//! and once `write` returns the new one survives a power cut.

use crate::Error;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `dir/name` atomically and durably.
pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), Error> {
    let tmp = write_temp(dir, name, bytes)?;
    rename_into_place(dir, &tmp, name)?;
    sync_dir(dir)
}

/// The first half of `write`: `bytes` in `dir/<name>.tmp`, fsynced. Nothing that reads
/// the directory takes the temporary name for the real one.
pub fn write_temp(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf, Error> {
    let (mut f, tmp) = create_temp(dir, name)?;
    f.write_all(bytes).map_err(Error::io("write", &tmp))?;
    f.sync_all().map_err(Error::io("fsync", &tmp))?;
    Ok(tmp)
}

/// A new, empty `dir/<name>.tmp` open for writing, for a caller that writes it in parts
/// (`rewrite`); it fsyncs the file before `rename_into_place`.
pub fn create_temp(dir: &Path, name: &str) -> Result<(File, PathBuf), Error> {
    let tmp = dir.join(format!("{name}.tmp"));
    // A temporary left by a crash is ours to replace; but whatever sits at its name is
    // unlinked, not opened: `File::create` would follow a symbolic link put there and
    // write the head into any file the daemon can open. `create_new` then refuses
    // anything that appears at the name meanwhile, link or not.
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(Error::io("remove stale", &tmp)(e))
        }
        _ => {}
    }
    let f = crate::lines::open_regular(
        std::fs::OpenOptions::new().write(true).create_new(true),
        &tmp,
    )
    .map_err(Error::io("create", &tmp))?;
    Ok((f, tmp))
}

/// The second half: the rename that makes the new file visible under `name`. The
/// directory still needs `sync_dir` for the rename to survive a power cut.
pub fn rename_into_place(dir: &Path, tmp: &Path, name: &str) -> Result<(), Error> {
    let target = dir.join(name);
    std::fs::rename(tmp, &target).map_err(Error::io("rename into place", target))
}

/// Makes a directory's entries (a rename, a new file or subdirectory) durable.
pub fn sync_dir(dir: &Path) -> Result<(), Error> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(Error::io("fsync directory", dir))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Regression: the temporary was opened with `File::create`, which follows a link put
    /// at its name, so the write landed in the link's target.
    #[test]
    fn a_link_at_the_temporary_name_is_replaced_and_its_target_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("precious");
        std::fs::write(&target, b"keep me").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("c.tmp")).unwrap();
        write(dir.path(), "c", b"new").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
        assert_eq!(std::fs::read(dir.path().join("c")).unwrap(), b"new");
    }

    #[test]
    fn a_write_replaces_the_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "c", b"one").unwrap();
        write(dir.path(), "c", b"two").unwrap();
        assert_eq!(std::fs::read(dir.path().join("c")).unwrap(), b"two");
        assert!(!dir.path().join("c.tmp").exists());
    }

    #[test]
    fn a_failed_write_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let e = write(&dir.path().join("missing"), "c", b"x").unwrap_err();
        assert!(e.to_string().contains("missing/c.tmp"), "{e}");
    }
}
