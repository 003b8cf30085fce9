//! The `read_file {path}` tool: one UTF-8 text file from under `tools.read_file.roots`,
//! labelled by the longest matching `tools.read_file.class` rule.
//!
//! The path is canonicalized (every `..` and symlink resolved by the kernel) and the
//! canonical path must lie under a canonicalized root, component by component; the
//! class rules are matched against that same canonical path, so neither `..` nor a
//! symlink can move a file out of a root or out from under a `secret` rule. The file
//! is then opened beneath the root's own directory by that canonical path, with no
//! symlink followed on the way (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`,
//! or, where the kernel lacks it, a walk opening one component at a time with
//! `O_NOFOLLOW`), so swapping a directory for a symlink between the check and the open
//! makes the open fail instead of escaping; `O_NONBLOCK` keeps a FIFO from hanging the
//! turn, and the size is taken from the open file before a byte is read.
//!
//! A hard link has no single path: the same file could sit under a `secret` rule and,
//! linked, under a `private` one. Rather than guess which rule is the true one, a file
//! with more than one link is refused (`st_nlink > 1`).

use proto::config::{ClassRule, ReadFile};
use proto::{DataClass, Label};
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// The label of a file no class rule matches (docs/labels.md): the owner's files are private,
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
    HardLinked { path: String, links: u64 },
    Moved { path: String },
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
            ReadError::HardLinked { path, links } => write!(
                f,
                "{path}: the file has {links} hard links, so its class cannot be told from one path; not read"
            ),
            ReadError::Moved { path } => write!(
                f,
                "{path}: a directory on the path was replaced by a symlink or moved while it was opened; not read"
            ),
        }
    }
}

/// Reads `path` under `cfg`. On success, the text and its label. An error that concerns
/// a file already found inside a root carries that file's label too (its size or
/// encoding is a fact about the file); an error before that carries none.
pub fn read(path: &str, cfg: &ReadFile) -> Result<(String, Label), (ReadError, Option<Label>)> {
    let (root, canonical) = resolve(path, cfg).map_err(|e| (e, None))?;
    let label = label_for(&canonical, &cfg.class);
    let text =
        read_bounded(path, &root, &canonical, cfg.max_bytes).map_err(|e| (e, Some(label)))?;
    Ok((text, label))
}

/// The canonical root holding `path` and the canonical path, or why it may not be read.
fn resolve(path: &str, cfg: &ReadFile) -> Result<(PathBuf, PathBuf), ReadError> {
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
    // The deepest root holding it: nested roots open beneath the nearest one.
    let Some(root) = roots
        .iter()
        .filter(|r| canonical.starts_with(r))
        .max_by_key(|r| r.components().count())
    else {
        return Err(outside());
    };
    Ok((root.clone(), canonical))
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

fn read_bounded(
    path: &str,
    root: &Path,
    canonical: &Path,
    max_bytes: u64,
) -> Result<String, ReadError> {
    let file = open_beneath(root, canonical).map_err(|e| match e.raw_os_error() {
        // ELOOP: a symlink on the way; EXDEV: the path left the root; ENOTDIR: a
        // directory became something else. Each means the tree changed since the check.
        Some(libc_errno) if MOVED.contains(&libc_errno) => ReadError::Moved { path: path.into() },
        _ => io_error(path, &e),
    })?;
    let meta = file.metadata().map_err(|e| io_error(path, &e))?;
    if !meta.is_file() {
        return Err(ReadError::NotAFile { path: path.into() });
    }
    if meta.nlink() > 1 {
        return Err(ReadError::HardLinked {
            path: path.into(),
            links: meta.nlink(),
        });
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

/// The errors of an open beneath the root that mean the tree changed under it.
const MOVED: [i32; 3] = [
    rustix::io::Errno::LOOP.raw_os_error(),
    rustix::io::Errno::XDEV.raw_os_error(),
    rustix::io::Errno::NOTDIR.raw_os_error(),
];

/// Opens `canonical` (which lies under `root`) for reading, beneath `root`'s directory,
/// following no symlink on the way.
fn open_beneath(root: &Path, canonical: &Path) -> io::Result<File> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    let rel = canonical
        .strip_prefix(root)
        .map_err(|_| io::Error::from_raw_os_error(rustix::io::Errno::XDEV.raw_os_error()))?;
    let dir = rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let file_flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    if rel.as_os_str().is_empty() {
        // The root itself: a directory, refused as not a regular file by the caller.
        return Ok(File::from(rustix::fs::openat(
            &dir,
            ".",
            file_flags,
            Mode::empty(),
        )?));
    }
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    match rustix::fs::openat2(&dir, rel, file_flags, Mode::empty(), resolve) {
        Ok(fd) => Ok(File::from(fd)),
        // No openat2 here (before Linux 5.6, or a seccomp filter): the walk does the same.
        Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => {
            walk_beneath(dir, rel, file_flags).map(File::from)
        }
        Err(e) => Err(e.into()),
    }
}

/// Opens `rel` beneath `dir` one component at a time, each with `O_NOFOLLOW`: a component
/// that is a symlink fails with `ELOOP` (or `ENOTDIR`) rather than being followed. `rel`
/// is part of a canonical path, so it holds no `..` or `.`.
fn walk_beneath(
    dir: std::os::fd::OwnedFd,
    rel: &Path,
    file_flags: rustix::fs::OFlags,
) -> io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    let parts: Vec<Component<'_>> = rel.components().collect();
    let mut dir = dir;
    for (i, part) in parts.iter().enumerate() {
        let Component::Normal(name) = part else {
            return Err(io::Error::from_raw_os_error(
                rustix::io::Errno::XDEV.raw_os_error(),
            ));
        };
        if i + 1 == parts.len() {
            return Ok(rustix::fs::openat(&dir, *name, file_flags, Mode::empty())?);
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        dir = rustix::fs::openat(&dir, *name, flags, Mode::empty())?;
    }
    Err(io::Error::from_raw_os_error(
        rustix::io::Errno::NOENT.raw_os_error(),
    ))
}

#[cfg(test)]
mod tests;
