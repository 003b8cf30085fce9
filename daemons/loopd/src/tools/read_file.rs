//! The `read_file {path}` tool: one UTF-8 text file from under `tools.read_file.roots`,
//! labelled by the longest matching `tools.read_file.class` rule.
//!
//! The path is canonicalized (every `..` and symlink resolved by the kernel) and the
//! canonical path must lie under a canonicalized root, component by component; the
//! class rules are matched against that same canonical path, so neither `..` nor a
//! symlink can move a file out of a root or out from under a `secret` rule. The file
//! is then opened with `O_NOFOLLOW` (its last component cannot have become a symlink
//! since the check) and `O_NONBLOCK` (a FIFO cannot hang the turn), and its size is taken
//! from the open file before a byte is read.
//!
//! Left as it is: someone with write access inside a root could swap a directory for a
//! symlink between the check and the open. The threat here is an injected instruction,
//! which can ask for paths but cannot create symlinks.

use proto::config::{ClassRule, ReadFile};
use proto::{DataClass, Label};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// The label of a file no class rule matches (SPEC §4): the owner's files are private,
/// and the owner wrote them, so they are trusted.
pub const DEFAULT_LABEL: Label = Label {
    class: DataClass::Private,
    untrusted: false,
};

/// Why a file was not read. Every message names the path the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadError {
    Relative { path: String },
    OutsideRoots { path: String, roots: String },
    NotFound { path: String },
    Io { path: String, message: String },
    NotAFile { path: String },
    TooLarge { path: String, size: u64, max: u64 },
    Grew { path: String, max: u64 },
    NotUtf8 { path: String },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Relative { path } => write!(f, "{path}: the path must be absolute"),
            ReadError::OutsideRoots { path, roots } => write!(
                f,
                "{path}: outside the readable roots ({roots}), through .. or a symlink or directly"
            ),
            ReadError::NotFound { path } => write!(f, "{path}: no such file"),
            ReadError::Io { path, message } => write!(f, "{path}: {message}"),
            ReadError::NotAFile { path } => write!(f, "{path}: not a regular file"),
            ReadError::TooLarge { path, size, max } => write!(
                f,
                "{path}: the file is {size} bytes, over the limit of {max} (tools.read_file.max_bytes)"
            ),
            ReadError::Grew { path, max } => write!(
                f,
                "{path}: the file grew past the limit of {max} bytes (tools.read_file.max_bytes) while it was read"
            ),
            ReadError::NotUtf8 { path } => {
                write!(f, "{path}: not UTF-8 text (a binary file?), not read")
            }
        }
    }
}

/// Reads `path` under `cfg`. On success, the text and its label. An error that concerns
/// a file already found inside a root carries that file's label too (its size or
/// encoding is a fact about the file); an error before that carries none.
pub fn read(path: &str, cfg: &ReadFile) -> Result<(String, Label), (ReadError, Option<Label>)> {
    let canonical = resolve(path, cfg).map_err(|e| (e, None))?;
    let label = label_for(&canonical, &cfg.class);
    let text = read_bounded(path, &canonical, cfg.max_bytes).map_err(|e| (e, Some(label)))?;
    Ok((text, label))
}

/// The canonical path of `path`, or why it may not be read.
fn resolve(path: &str, cfg: &ReadFile) -> Result<PathBuf, ReadError> {
    let given = Path::new(path);
    if !given.is_absolute() {
        return Err(ReadError::Relative { path: path.into() });
    }
    let outside = || ReadError::OutsideRoots {
        path: path.into(),
        roots: cfg
            .roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    };
    let roots: Vec<PathBuf> = cfg
        .roots
        .iter()
        .filter_map(|r| r.canonicalize().ok())
        .collect();
    // A first, lexical look, so a path plainly outside every root is refused as such
    // without telling the model whether it exists.
    let lexical = normalise(given);
    let plausible = cfg
        .roots
        .iter()
        .chain(&roots)
        .any(|r| lexical.starts_with(normalise(r)));
    if !plausible {
        return Err(outside());
    }
    let canonical = given.canonicalize().map_err(|e| io_error(path, &e))?;
    if !roots.iter().any(|r| canonical.starts_with(r)) {
        return Err(outside());
    }
    Ok(canonical)
}

/// `path` with `.` dropped and `..` applied to the text alone, without touching the disk.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn io_error(path: &str, e: &io::Error) -> ReadError {
    match e.kind() {
        io::ErrorKind::NotFound => ReadError::NotFound { path: path.into() },
        _ => ReadError::Io {
            path: path.into(),
            message: e.to_string(),
        },
    }
}

/// The label of the longest rule whose prefix holds `canonical`, compared component-wise
/// (`/a/secret` does not hold `/a/secrets`). A rule's prefix matches either as written or
/// canonicalized, so a rule written through a symlink still covers the files behind it.
/// Rules of equal length join, so a duplicated prefix can only raise the label.
pub fn label_for(canonical: &Path, rules: &[ClassRule]) -> Label {
    let mut best: Option<(usize, Label)> = None;
    for rule in rules {
        let forms = [Some(rule.prefix.clone()), rule.prefix.canonicalize().ok()];
        let Some(len) = forms
            .iter()
            .flatten()
            .filter(|p| canonical.starts_with(p))
            .map(|p| p.components().count())
            .max()
        else {
            continue;
        };
        let label = Label::new(rule.class, rule.untrusted);
        best = match best {
            Some((l, b)) if l > len => Some((l, b)),
            Some((l, b)) if l == len => Some((l, b.join(label))),
            _ => Some((len, label)),
        };
    }
    best.map_or(DEFAULT_LABEL, |(_, label)| label)
}

fn read_bounded(path: &str, canonical: &Path, max_bytes: u64) -> Result<String, ReadError> {
    let file = open(canonical).map_err(|e| io_error(path, &e))?;
    let meta = file.metadata().map_err(|e| io_error(path, &e))?;
    if !meta.is_file() {
        return Err(ReadError::NotAFile { path: path.into() });
    }
    // Refused by the size the file has now, before any read: a 2 GB file costs one fstat.
    if meta.len() > max_bytes {
        return Err(ReadError::TooLarge {
            path: path.into(),
            size: meta.len(),
            max: max_bytes,
        });
    }
    // The file may grow after the fstat; reading one byte past the limit notices that.
    let mut bytes = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(path, &e))?;
    if bytes.len() as u64 > max_bytes {
        return Err(ReadError::Grew {
            path: path.into(),
            max: max_bytes,
        });
    }
    String::from_utf8(bytes).map_err(|_| ReadError::NotUtf8 { path: path.into() })
}

fn open(canonical: &Path) -> io::Result<File> {
    use nix::fcntl::OFlag;
    let flags = OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_NOCTTY;
    OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits())
        .open(canonical)
}

#[cfg(test)]
mod tests;
