//! Reading a whole small file from the poll loop without letting the file decide how long
//! that takes or how much memory it costs. `std::fs::read` would block forever on a FIFO
//! put where a head or the config belongs, and would read a file of any size whole.

use std::fmt;
use std::fs::OpenOptions;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Why a bounded read failed. Messages do not name the path: callers put it in front.
#[derive(Debug)]
pub enum ReadError {
    /// Opening, inspecting or reading failed.
    Io(io::Error),
    /// The path is not a regular file (a FIFO, a device, a directory).
    NotAFile,
    /// The file holds more than `max` bytes.
    TooLarge { max: u64 },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "{e}"),
            ReadError::NotAFile => write!(f, "not a regular file"),
            ReadError::TooLarge { max } => write!(f, "larger than {max} bytes"),
        }
    }
}

impl std::error::Error for ReadError {}

/// Reads the regular file at `path` whole, refusing anything that is not a regular file
/// or that holds more than `max` bytes.
pub fn read(path: &Path, max: u64) -> Result<Vec<u8>, ReadError> {
    // O_NONBLOCK makes opening a FIFO return at once instead of waiting for a writer;
    // it has no effect on reading a regular file, which is all that is read below.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(ReadError::Io)?;
    if !file.metadata().map_err(ReadError::Io)?.is_file() {
        return Err(ReadError::NotAFile);
    }
    let mut bytes = Vec::new();
    // One byte past the limit tells a file at the limit from one over it.
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > max {
        return Err(ReadError::TooLarge { max });
    }
    Ok(bytes)
}

/// Like `read`, for text: bytes that are not UTF-8 are an error.
pub fn read_to_string(path: &Path, max: u64) -> Result<String, ReadError> {
    let bytes = read(path, max)?;
    String::from_utf8(bytes)
        .map_err(|e| ReadError::Io(io::Error::new(io::ErrorKind::InvalidData, e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_file_up_to_the_limit_and_refuses_one_past_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"12345").unwrap();
        assert_eq!(read(&path, 5).unwrap(), b"12345");
        assert!(matches!(
            read(&path, 4),
            Err(ReadError::TooLarge { max: 4 })
        ));
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fifo");
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert!(matches!(read(&path, 10), Err(ReadError::NotAFile)));
    }

    #[test]
    fn a_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(read(dir.path(), 10), Err(ReadError::NotAFile)));
    }

    #[test]
    fn text_that_is_not_utf8_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"\xff").unwrap();
        assert!(read_to_string(&path, 10).is_err());
    }
}
