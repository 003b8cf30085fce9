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
pub(super) const CRATES: &[&str] = &[
    "proto",
    "crates/plumbing",
    "crates/sessions",
    "crates/memoryd-kernels",
    "crates/llama",
    "crates/remind",
    "crates/tools",
    "crates/honcho",
    "crates/matrix",
    "crates/conversation",
    "daemons/loopd",
    "daemons/memoryd",
];

/// Every crate of the workspace under `crates/` or `daemons/` is in `CRATES`, so a crate
/// split out of a daemon cannot leave the map's checks (its modules named, its
/// dependencies only on crates above it) behind.
#[test]
fn every_library_and_daemon_of_the_workspace_is_in_the_map() {
    let toml = fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let members = toml
        .lines()
        .find_map(|l| l.strip_prefix("members = "))
        .expect("the workspace's members line");
    let missing: Vec<&str> = members
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|m| m.starts_with("crates/") || m.starts_with("daemons/") || *m == "proto")
        .filter(|m| !CRATES.contains(m))
        .collect();
    assert!(
        missing.is_empty(),
        "workspace crates missing from CRATES (and from ARCHITECTURE.md's code map): {missing:?}"
    );
}

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

/// The map is drawn at the level of crates: each crate has a section of its own, and each
/// production file says what it owns in a `//!` header, so the map need not list files
/// (a list of files repeating those headers goes stale).
#[test]
fn every_crate_has_a_section_and_every_file_a_header() {
    let sections = architecture();
    let mut missing = Vec::new();
    for krate in CRATES {
        let dir = repo().join(krate);
        if !sections.iter().any(|(_, roots, _)| roots.contains(&dir)) {
            missing.push(format!("{krate}: no section of its own"));
        }
        let src = dir.join("src");
        for rel in tree(&src) {
            let path = Path::new(&rel);
            if !rel.ends_with(".rs") || is_test_module(path) {
                continue;
            }
            let text = fs::read_to_string(src.join(path)).unwrap_or_default();
            if !text.starts_with("//!") {
                missing.push(format!("{krate}/src/{rel}: no //! header"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "the code map or a file's header is missing:\n{}",
        missing.join("\n")
    );
}

/// ARCHITECTURE.md's rule for crates: each depends (outside its tests) only on the crates
/// listed before it in its code map, which `CRATES` follows, so the compiler keeps the
/// layers the map draws.
#[test]
fn a_crate_depends_only_on_crates_above_it_in_the_map() {
    let names: Vec<String> = CRATES
        .iter()
        .map(|c| {
            let toml = fs::read_to_string(repo().join(c).join("Cargo.toml")).unwrap();
            let name = toml
                .lines()
                .find_map(|l| l.strip_prefix("name = "))
                .unwrap()
                .trim_matches('"');
            name.to_string()
        })
        .collect();
    let mut wrong = Vec::new();
    for (i, c) in CRATES.iter().enumerate() {
        let toml = fs::read_to_string(repo().join(c).join("Cargo.toml")).unwrap();
        let mut in_deps = false;
        for line in toml.lines() {
            if line.starts_with('[') {
                in_deps = line.trim() == "[dependencies]";
                continue;
            }
            let dep = line.split(['=', '.', ' ']).next().unwrap_or("").trim();
            if !in_deps || dep.is_empty() {
                continue;
            }
            if let Some(j) = names.iter().position(|n| n == dep) {
                if j >= i {
                    wrong.push(format!("{} depends on {dep}, listed after it", names[i]));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
