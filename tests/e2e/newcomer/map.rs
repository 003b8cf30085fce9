//! ARCHITECTURE.md's paths and modules exist, and its code map names every module.

use super::*;
use std::fs;
use std::path::{Path, PathBuf};

/// ARCHITECTURE.md cut into its sections: (heading, the directories it maps, its text).
fn architecture() -> Vec<(String, Vec<PathBuf>, String)> {
    let md = fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap();
    let mut out: Vec<(String, Vec<PathBuf>, String)> = Vec::new();
    let mut fence = false;
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        if let Some(h) = line
            .strip_prefix("## ")
            .or_else(|| line.strip_prefix("### "))
        {
            let roots = backticked(h)
                .into_iter()
                .filter(|t| t.ends_with('/'))
                .map(|t| repo().join(t.trim_end_matches('/')))
                .collect();
            out.push((h.to_string(), roots, String::new()));
        } else if let Some(last) = out.last_mut() {
            last.2.push_str(line);
            last.2.push('\n');
        }
    }
    out
}

/// The `code` spans of a text.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_string())
        .collect()
}

/// Every file and directory under `dir`, relative paths with `/`.
pub(super) fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if SKIP_DIRS.contains(&name.as_str()) {
                continue;
            }
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                out.push(format!("{rel}/"));
                stack.push(p);
            } else {
                out.push(rel);
            }
        }
    }
    out
}

fn looks_like_path(t: &str) -> bool {
    let plain = !t.contains(['<', '*', ' ', '{', '$']) && !t.starts_with('/') && !t.contains("::");
    let pathy = t.contains('/')
        || [".rs", ".md", ".toml", ".py", ".sh"]
            .iter()
            .any(|e| t.ends_with(e));
    plain && pathy
}

#[test]
fn every_path_architecture_md_names_exists() {
    let root = repo();
    let everything = tree(&root);
    let mut missing = Vec::new();
    for (heading, roots, text) in architecture() {
        let bases: Vec<PathBuf> = if roots.is_empty() {
            vec![root.clone()]
        } else {
            roots
        };
        for token in backticked(&text).into_iter().filter(|t| looks_like_path(t)) {
            let dir_wanted = token.ends_with('/');
            let bare = token.trim_end_matches('/');
            let direct = std::iter::once(root.clone())
                .chain(bases.iter().cloned())
                .chain(bases.iter().map(|b| b.join("src")))
                .any(|b| b.join(bare).exists() && (!dir_wanted || b.join(bare).is_dir()));
            let suffix = format!("/{bare}{}", if dir_wanted { "/" } else { "" });
            let beneath = bases.iter().any(|b| {
                let under = b
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                everything
                    .iter()
                    .any(|p| p.starts_with(&under) && format!("/{p}").ends_with(&suffix))
            });
            if !(direct || beneath) {
                missing.push(format!("{heading}: `{token}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist:\n{}",
        missing.join("\n")
    );
}

/// The crates whose modules the code map must name, as their directories.
const CRATES: &[&str] = &[
    "crates/proto",
    "crates/plumbing",
    "crates/sessions",
    "daemons/loopd",
    "daemons/memoryd",
];

fn crate_src(name: &str) -> Option<PathBuf> {
    CRATES
        .iter()
        .find(|c| c.rsplit('/').next() == Some(name))
        .map(|c| repo().join(c).join("src"))
}

/// Whether module path `segments` resolves from `src`: each segment a module (`x.rs` or
/// `x/mod.rs`) until the first that is not, which and every later one must be a name
/// that occurs in the last module's source.
fn resolves(src: &Path, segments: &[&str]) -> bool {
    let mut dir = src.to_path_buf();
    let mut file = src.join("lib.rs");
    for (i, seg) in segments.iter().enumerate() {
        let as_file = dir.join(format!("{seg}.rs"));
        let as_dir = dir.join(seg).join("mod.rs");
        if as_file.is_file() || as_dir.is_file() {
            file = if as_file.is_file() { as_file } else { as_dir };
            dir = dir.join(seg);
            continue;
        }
        let Ok(code) = fs::read_to_string(&file) else {
            return false;
        };
        return segments[i..].iter().all(|s| {
            code.match_indices(s).any(|(at, _)| {
                let before = code[..at].chars().next_back();
                let after = code[at + s.len()..].chars().next();
                let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                !ident(before) && !ident(after)
            })
        });
    }
    true
}

#[test]
fn every_module_path_architecture_md_names_exists() {
    let mut missing = Vec::new();
    let tests_src = repo().join("tests/e2e");
    for (heading, roots, text) in architecture() {
        let section_src: Vec<PathBuf> = roots.iter().map(|r| r.join("src")).collect();
        for token in backticked(&text) {
            let std_item = token.starts_with("std::") || token.starts_with("core::");
            if !token.contains("::") || token.contains([' ', '{', '(', '<']) || std_item {
                continue;
            }
            let segments: Vec<&str> = token.split("::").collect();
            let ok = match crate_src(segments[0]) {
                Some(src) => resolves(&src, &segments[1..]),
                None => section_src
                    .iter()
                    .chain(
                        CRATES
                            .iter()
                            .map(|c| repo().join(c).join("src"))
                            .collect::<Vec<_>>()
                            .iter(),
                    )
                    .chain(std::iter::once(&tests_src))
                    .any(|src| resolves(src, &segments)),
            };
            if !ok {
                missing.push(format!("{heading}: `{token}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names modules or items that do not exist:\n{}",
        missing.join("\n")
    );
}

/// Whether `rel` (relative to a crate's `src/`) is test-only code, which the map leaves out.
pub(super) fn is_test_module(rel: &Path) -> bool {
    rel.components().any(|c| {
        let c = c.as_os_str().to_string_lossy();
        c == "tests" || c == "tests.rs" || c.starts_with("tests_")
    })
}

#[test]
fn the_code_map_names_every_module_of_every_crate() {
    let sections = architecture();
    let mut unnamed = Vec::new();
    for krate in CRATES {
        let dir = repo().join(krate);
        let Some((_, _, text)) = sections.iter().find(|(_, roots, _)| roots.contains(&dir)) else {
            unnamed.push(format!("{krate}: no section of its own"));
            continue;
        };
        for rel in tree(&dir.join("src")) {
            let path = Path::new(&rel);
            if !rel.ends_with(".rs") || is_test_module(path) || rel == "lib.rs" || rel == "main.rs"
            {
                continue;
            }
            let name = if path.file_name().is_some_and(|f| f == "mod.rs") {
                let parent = path.parent().and_then(|p| p.file_name()).unwrap();
                format!("{}/", parent.to_string_lossy())
            } else {
                path.file_name().unwrap().to_string_lossy().into_owned()
            };
            let named = text
                .match_indices(&format!("{name}`"))
                .any(|(at, _)| matches!(text[..at].chars().next_back(), Some('`') | Some('/')));
            if !named {
                unnamed.push(format!("{krate}/src/{rel} (as `{name}`)"));
            }
        }
    }
    assert!(
        unnamed.is_empty(),
        "modules ARCHITECTURE.md's code map does not name:\n{}",
        unnamed.join("\n")
    );
}
