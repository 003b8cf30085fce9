//! A newcomer's check: the repository explains itself, and what it says about itself is
//! true. Run on the source, like `layering`:
//!
//! - every reference to a page under `docs/` names an existing page and, when it names
//!   one, an existing heading: `docs/turn.md, 'A cut answer'` in code and scripts (the one
//!   citation form, see docs/README.md, 'Citing these pages'), `docs/turn.md#a-cut-answer`,
//!   and relative Markdown links between pages;
//! - every path and module ARCHITECTURE.md names exists, and every top-level module of
//!   each crate is named in its code map;
//! - two of its invariants that a grep can check: proto opens no file or socket, and
//!   bincode stays in proto's frame codec;
//! - no comment or document cites a document outside the repository: the design notes,
//!   issues and plans the code was built from are not in it, so a newcomer could not
//!   follow such a citation.

use std::fs;
use std::path::{Path, PathBuf};

pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Directories that hold no source of ours: build output, the Python venv, fuzzing state,
/// and the recall evaluation's generated session logs.
const SKIP_DIRS: &[&str] = &[
    "target",
    ".git",
    ".venv",
    "node_modules",
    "corpus",
    "artifacts",
];

/// Files that are generated or data, not text a person wrote.
fn skipped_file(rel: &Path) -> bool {
    let s = rel.to_string_lossy();
    s.contains("eval/sessions/") || s.contains("proptest-regressions/") || s.ends_with(".lock")
}

/// Every UTF-8 text file of the repository, as (path relative to the root, text).
fn text_files() -> Vec<(PathBuf, String)> {
    let root = repo();
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if !SKIP_DIRS.contains(&name.as_str()) {
                    stack.push(path);
                }
            } else if kind.is_file() {
                let rel = path.strip_prefix(&root).unwrap().to_path_buf();
                if skipped_file(&rel) {
                    continue;
                }
                if let Ok(text) = fs::read_to_string(&path) {
                    out.push((rel, text));
                }
            }
        }
    }
    out.sort();
    out
}

/// Whether a file is one whose references are checked: source, scripts, docs, units.
fn is_checked(rel: &Path) -> bool {
    let ext = rel.extension().and_then(|e| e.to_str()).unwrap_or("");
    let in_scripts = rel.starts_with("scripts") || rel.starts_with(".ci");
    matches!(
        ext,
        "rs" | "md" | "sh" | "py" | "toml" | "service" | "socket"
    ) || (in_scripts && ext.is_empty())
}

/// The headings of a Markdown text, outside fenced code blocks, without their `#` marks.
mod docs_refs;
mod greps;
mod map;
