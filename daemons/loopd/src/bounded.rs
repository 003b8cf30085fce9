//! Reading loopd's own text files (config, prompts, epoch heads) with a size cap and without
//! blocking. These reads happen on the turn worker and, for the config and the prompt check
//! at reload, on the poll loop itself, so a FIFO or a device put at one of these paths must
//! be refused rather than waited on, and a huge file refused rather than held.

use nix::fcntl::OFlag;
use std::fs::OpenOptions;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The largest prompt file read (system.md, compact.md, summarise.md, heartbeat.md). A
/// prompt is a few pages written by hand; one past a mebibyte is a mistake, and the model's
/// context could not hold it anyway.
pub const MAX_PROMPT_BYTES: u64 = 1024 * 1024;

/// The largest epoch head read back. A head holds the frozen system prompt, the tool
/// schemas and the carried summary, each far below this; a larger one is damage.
pub const MAX_HEAD_BYTES: u64 = 4 * 1024 * 1024;

/// The largest config file read. A config is a page of TOML; this leaves huge room while
/// keeping a reload on the poll loop from reading something unbounded.
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// Reads the regular file at `path` as UTF-8 text of at most `max` bytes. The file is opened
/// with `O_NONBLOCK`, so opening a FIFO with no writer returns at once, and anything that is
/// not a regular file is refused before a byte is read. The error does not name the path:
/// every caller wraps it in an error that does.
pub fn read_text(path: &Path, max: u64) -> io::Result<String> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits())
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file ({})", kind_of(&meta.file_type())),
        ));
    }
    if meta.len() > max {
        return Err(too_large(max));
    }
    // The size is checked again on what is read, since the file may grow after the fstat.
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_large(max));
    }
    String::from_utf8(bytes)
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
    fn an_oversized_prompt_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("system.md");
        let big = "x".repeat(MAX_PROMPT_BYTES as usize + 1);
        std::fs::write(&path, big).unwrap();
        let err = read_text(&path, MAX_PROMPT_BYTES).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("limit"), "{err}");
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("compact.md");
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let err = read_text(&path, MAX_PROMPT_BYTES).unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");
    }

    #[test]
    fn a_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_text(dir.path(), MAX_PROMPT_BYTES).unwrap_err();
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
