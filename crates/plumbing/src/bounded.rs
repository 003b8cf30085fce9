//! Reading a daemon's own small files (config, prompts, epoch heads) with a size cap and
//! without blocking. Some of these reads happen on the poll loop itself (the config and
//! prompt checks at reload, memoryd's head reads), so a FIFO or a device put at one of
//! these paths must be refused rather than waited on, and a huge file refused rather than
//! held. The limits are the callers': each names its own with its reason.

use nix::fcntl::OFlag;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Reads the regular file at `path` whole, at most `max` bytes. The file is opened with
/// `O_NONBLOCK`, so opening a FIFO with no writer returns at once, and anything that is
/// not a regular file is refused before a byte is read. The error does not name the path:
/// every caller wraps it in an error that does.
pub fn read(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    // The owner's config and prompts may well be links (into /etc, a dotfiles repo).
    let file = open_regular(OpenOptions::new().read(true), path, Links::Follow)?;
    if file.metadata()?.len() > max {
        return Err(too_large(max));
    }
    // The size is checked again on what is read, since the file may grow after the fstat.
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_large(max));
    }
    Ok(bytes)
}

/// Whether `open_regular` follows a symbolic link at the path itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    Follow,
    /// Refused with "is a symbolic link; not followed": for files whose place is the
    /// daemon's own (session logs), where a link could make it read any file it can open.
    Refuse,
}

/// Opens `options` at `path` with `O_NONBLOCK` (so opening a FIFO with no writer returns
/// at once) and `O_NOCTTY`, and refuses anything that is not a regular file before a byte
/// is read or written. The one place both daemons open a file that someone else may have
/// put there.
pub fn open_regular(options: &mut OpenOptions, path: &Path, links: Links) -> io::Result<File> {
    let mut flags = OFlag::O_NONBLOCK | OFlag::O_NOCTTY;
    if links == Links::Refuse {
        flags |= OFlag::O_NOFOLLOW;
    }
    let file = options.custom_flags(flags.bits()).open(path).map_err(|e| {
        // O_NOFOLLOW on a link fails with ELOOP, whose message ("too many levels of
        // symbolic links") would mislead.
        if links == Links::Refuse && e.raw_os_error() == Some(nix::libc::ELOOP) {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "is a symbolic link; not followed",
            )
        } else {
            e
        }
    })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file ({})", kind_of(&meta.file_type())),
        ));
    }
    Ok(file)
}

/// Like `read`, for text: bytes that are not UTF-8 are an error.
pub fn read_text(path: &Path, max: u64) -> io::Result<String> {
    String::from_utf8(read(path, max)?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("not UTF-8: {e}")))
}

fn too_large(max: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("larger than the {max}-byte limit"),
    )
}

fn kind_of(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_within_the_limit_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.md");
        std::fs::write(&path, "0123456789").unwrap();
        assert_eq!(read_text(&path, 10).unwrap(), "0123456789");
    }

    #[test]
    fn an_oversized_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("system.md");
        let big = "x".repeat(1025);
        std::fs::write(&path, big).unwrap();
        let err = read_text(&path, 1024).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("limit"), "{err}");
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("compact.md");
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let err = read_text(&path, 1024).unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");
    }

    #[test]
    fn a_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_text(dir.path(), 1024).unwrap_err();
        assert!(err.to_string().contains("directory"), "{err}");
    }

    #[test]
    fn text_that_is_not_utf8_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.md");
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        let err = read_text(&path, 10).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }
}
