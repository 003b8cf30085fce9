//! A newcomer's check: the repository explains itself, and what it says about itself is
//! true. Run on the source, like `layering`:
//!
//! - every reference to a page under `docs/` names an existing page and, when it names
//!   one, an existing heading: `docs/turn.md, 'A cut answer'` in code and scripts (the one
//!   citation form, see docs/README.md, 'Citing these pages'), `docs/turn.md#a-cut-answer`,
//!   and relative Markdown links between pages;
//! - every path and module ARCHITECTURE.md names exists, and every module of the five
//!   crates is named in its code map;
//! - two of its invariants that a grep can check: proto opens no file or socket, and
//!   bincode stays in proto's frame codec;
//! - no comment or document cites a document outside the repository: the design notes,
//!   issues and plans the code was built from are not in it, so a newcomer could not
//!   follow such a citation.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
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
fn headings(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    for line in md.lines() {
        let t = line.trim_start();
        for f in ["```", "~~~"] {
            if t.starts_with(f) {
                fence = match fence {
                    Some(open) if open == f => None,
                    None => Some(f),
                    other => other,
                };
            }
        }
        if fence.is_some() || t.starts_with("```") || t.starts_with("~~~") {
            continue;
        }
        let hashes = line.len() - line.trim_start_matches('#').len();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let text = line[hashes..].trim().trim_end_matches('#').trim();
            out.push(text.to_string());
        }
    }
    out
}

/// The anchor a Markdown renderer (GitHub's) gives a heading: lower case, letters, digits,
/// `-` and `_` kept, spaces made `-`, everything else dropped.
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// A page's headings, as cited (exactly, or without backticks) and as anchors (a repeated
/// heading's anchor gets `-1`, `-2`… as renderers do).
struct Page {
    titles: Vec<String>,
    anchors: BTreeSet<String>,
}

impl Page {
    fn read(path: &Path) -> Option<Page> {
        let md = fs::read_to_string(path).ok()?;
        let hs = headings(&md);
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        let mut anchors = BTreeSet::new();
        for h in &hs {
            let base = slug(h);
            let n = seen.entry(base.clone()).or_insert(0);
            anchors.insert(if *n == 0 {
                base.clone()
            } else {
                format!("{base}-{n}")
            });
            *n += 1;
        }
        let mut titles: Vec<String> = hs.iter().map(|h| h.replace('`', "")).collect();
        titles.extend(hs);
        // Longest first, so a heading that begins with another is matched whole.
        titles.sort_by_key(|t| std::cmp::Reverse(t.len()));
        Some(Page { titles, anchors })
    }
}

#[derive(Debug, PartialEq)]
enum Cite {
    Page,
    Anchor(String),
    /// The text after `, '`, comment markers of wrapped lines folded into spaces.
    Heading(String),
}

/// The text after a citation, with a wrapped comment's line breaks and markers (`//!`,
/// `///`, `//`, `#`, `*`) folded into one space, so a heading may wrap.
fn unwrap_comment(rest: &str) -> String {
    let mut out = String::new();
    for (i, line) in rest.lines().take(4).enumerate() {
        let line = if i == 0 {
            line
        } else {
            out.push(' ');
            line.trim_start()
                .trim_start_matches("//!")
                .trim_start_matches("///")
                .trim_start_matches("//")
                .trim_start_matches('#')
                .trim_start_matches('*')
                .trim_start()
        };
        out.push_str(line);
    }
    out
}

/// The references to pages under `docs/` in `text`: (line number, page name, what is cited).
fn doc_refs(text: &str) -> Vec<(usize, String, Cite)> {
    let mut out = Vec::new();
    let prefix = "docs/";
    let mut from = 0;
    while let Some(at) = text[from..].find(prefix).map(|i| from + i) {
        from = at + prefix.len();
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || "_-./".contains(c)) {
            continue;
        }
        let rest = &text[from..];
        let name_len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(rest.len());
        if name_len == 0 || !rest[name_len..].starts_with(".md") {
            continue;
        }
        let name = format!("{}.md", &rest[..name_len]);
        let after = &rest[name_len + 3..];
        let line = text[..at].matches('\n').count() + 1;
        let cite = if let Some(a) = after.strip_prefix('#') {
            let end = a
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(a.len());
            Cite::Anchor(a[..end].to_string())
        } else {
            let folded = unwrap_comment(after);
            match folded.strip_prefix(", '") {
                Some(h) => Cite::Heading(h.to_string()),
                None => Cite::Page,
            }
        };
        out.push((line, name, cite));
    }
    out
}

/// Relative Markdown links to `.md` files or anchors: (line, target as written).
fn md_links(md: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in md.lines().enumerate() {
        let mut from = 0;
        while let Some(at) = line[from..].find("](").map(|j| from + j) {
            let rest = &line[at + 2..];
            from = at + 2;
            let Some(end) = rest.find(')') else { continue };
            let target = &rest[..end];
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let file = target.split('#').next().unwrap_or("");
            if file.is_empty() || file.ends_with(".md") {
                out.push((i + 1, target.to_string()));
            }
        }
    }
    out
}

/// What is wrong with citing `cite` of page `path`, if anything.
fn check_cite(
    path: &Path,
    cite: &Cite,
    pages: &mut BTreeMap<PathBuf, Option<Page>>,
) -> Option<String> {
    let page = pages
        .entry(path.to_path_buf())
        .or_insert_with(|| Page::read(path));
    let Some(page) = page else {
        return Some("no such page".into());
    };
    match cite {
        Cite::Page => None,
        Cite::Anchor(a) => {
            (!page.anchors.contains(a)).then(|| format!("no heading with anchor #{a}"))
        }
        Cite::Heading(h) => {
            let found = page.titles.iter().any(|t| h.starts_with(&format!("{t}'")));
            (!found).then(|| {
                let shown: String = h.chars().take(60).collect();
                format!("no heading matching '{shown}…'")
            })
        }
    }
}

#[test]
fn every_reference_to_a_docs_page_names_an_existing_page_and_heading() {
    let root = repo();
    let mut pages = BTreeMap::new();
    let mut broken = Vec::new();
    let mut seen = 0;
    for (rel, text) in text_files() {
        if !is_checked(&rel) {
            continue;
        }
        for (line, name, cite) in doc_refs(&text) {
            seen += 1;
            if let Some(why) = check_cite(&root.join("docs").join(&name), &cite, &mut pages) {
                broken.push(format!("{}:{line}: docs/{name}: {why}", rel.display()));
            }
        }
        if rel.extension().is_some_and(|e| e == "md") {
            let dir = rel.parent().unwrap_or(Path::new(""));
            for (line, target) in md_links(&text) {
                seen += 1;
                let (file, anchor) = match target.split_once('#') {
                    Some((f, a)) => (f, Some(a)),
                    None => (target.as_str(), None),
                };
                let path = if file.is_empty() {
                    root.join(&rel)
                } else {
                    root.join(dir).join(file)
                };
                let cite = anchor.map_or(Cite::Page, |a| Cite::Anchor(a.to_string()));
                if let Some(why) = check_cite(&path, &cite, &mut pages) {
                    broken.push(format!("{}:{line}: ({target}): {why}", rel.display()));
                }
            }
        }
    }
    assert!(
        seen > 0,
        "found no reference at all: is the scan looking in the right place?"
    );
    assert!(
        broken.is_empty(),
        "references that do not resolve:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_reference_scanner_reads_each_citation_form() {
    let d = "docs/";
    let text = format!(
        "// ({d}turn.md, 'A cut\n// answer') and {d}labels.md#the-context-label,\n\
         see {d}sessions.md. Not x{d}a.md, nor {d}, nor {d}b.txt."
    );
    let refs = doc_refs(&text);
    assert_eq!(refs.len(), 3, "{refs:?}");
    assert_eq!(refs[0].1, "turn.md");
    assert!(matches!(&refs[0].2, Cite::Heading(h) if h.starts_with("A cut answer')")));
    assert_eq!(refs[1].2, Cite::Anchor("the-context-label".into()));
    assert_eq!((refs[2].0, refs[2].2 == Cite::Page), (3, true));
    assert_eq!(slug("Refusals and `/allow N`"), "refusals-and-allow-n");
    assert_eq!(slug("The owner's class"), "the-owners-class");
    assert_eq!(slug("`http_fetch` rules"), "http_fetch-rules");
}

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
fn tree(dir: &Path) -> Vec<String> {
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
    "proto",
    "daemons/plumbing",
    "daemons/sessions",
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
fn is_test_module(rel: &Path) -> bool {
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

/// The non-test code of the `.rs` files under `dir`: each file up to its `#[cfg(test)]`.
fn production_code(dir: &Path) -> Vec<(String, String)> {
    tree(dir)
        .into_iter()
        .filter(|rel| rel.ends_with(".rs") && !is_test_module(Path::new(rel)))
        .filter_map(|rel| {
            let code = fs::read_to_string(dir.join(&rel)).ok()?;
            let end = code.find("#[cfg(test)]").unwrap_or(code.len());
            Some((rel, code[..end].to_string()))
        })
        .collect()
}

#[test]
fn proto_opens_no_file_or_socket() {
    let io = [
        "std::fs",
        "std::net",
        "os::unix::net",
        "File::",
        "OpenOptions",
        "UnixStream",
        "TcpStream",
        "mio::",
    ];
    let mut found = Vec::new();
    for (rel, code) in production_code(&repo().join("proto/src")) {
        for word in io {
            if code.contains(word) {
                found.push(format!("proto/src/{rel}: {word}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "proto does its own I/O:\n{}",
        found.join("\n")
    );
}

#[test]
fn bincode_is_used_only_by_the_frame_codec() {
    let word = concat!("bin", "code");
    let allowed = [
        "proto/src/frame.rs",
        "proto/src/frame/tests.rs",
        "tests/e2e/newcomer.rs",
    ];
    let mut found = Vec::new();
    for (rel, text) in text_files() {
        let rel_s = rel.to_string_lossy();
        let code_file = rel_s.ends_with(".rs");
        let manifest = rel_s.ends_with("Cargo.toml")
            && !["Cargo.toml", "proto/Cargo.toml"].contains(&rel_s.as_ref());
        if (code_file || manifest) && !allowed.contains(&rel_s.as_ref()) && text.contains(word) {
            found.push(rel_s.into_owned());
        }
    }
    assert!(
        found.is_empty(),
        "{word} outside proto's frame codec:\n{}",
        found.join("\n")
    );
}

/// Phrases that cite a document outside the repository, built from pieces so this file
/// does not match itself: the design document by name or section sign, issue numbers, and
/// the planning notes ("seeds") by name or number.
fn outside_citations(text: &str) -> Vec<String> {
    let spec = concat!("SP", "EC");
    let section = '\u{a7}';
    let lower = text.to_lowercase();
    let mut hits = Vec::new();
    for (at, _) in text.match_indices(spec) {
        let before = text[..at].chars().next_back();
        let after = text[at + spec.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        if !word(before) && !word(after) {
            hits.push(spec.to_string());
        }
    }
    if text.contains(section) {
        hits.push(section.to_string());
    }
    for word in [concat!("iss", "ue"), concat!("iss", "ues")] {
        for (at, _) in lower.match_indices(&format!("{word} ")) {
            let rest = lower[at + word.len() + 1..].trim_start_matches('#');
            if rest.starts_with(|c: char| c.is_ascii_digit()) {
                hits.push(format!("{word} N"));
            }
        }
    }
    let seed = concat!("se", "ed");
    for (at, _) in lower.match_indices(seed) {
        let rest = &lower[at + seed.len()..];
        let numbered = rest
            .trim_start_matches('s')
            .trim_start_matches([' ', '`'])
            .starts_with(|c: char| c.is_ascii_digit());
        let plural = rest.starts_with('s') && !rest[1..].starts_with(|c: char| c.is_alphanumeric());
        let the = lower[..at].ends_with("the ") && !rest.starts_with(|c: char| c.is_alphanumeric());
        if numbered || plural || the {
            hits.push(format!("{seed}…"));
        }
    }
    hits
}

#[test]
fn the_citation_finder_tells_a_planning_note_from_a_random_seed() {
    let s = concat!("SP", "EC");
    let e = concat!("se", "ed");
    assert!(!outside_citations(&format!("// see {s} \u{a7}4")).is_empty());
    assert!(!outside_citations(&format!("// {e}s 000, 001")).is_empty());
    assert!(!outside_citations(&format!("// the {e}'s numbers")).is_empty());
    assert!(!outside_citations(&format!("// ({e} `003_ab`)")).is_empty());
    assert!(!outside_citations(&format!("// {} 12", concat!("iss", "ue"))).is_empty());
    assert!(outside_citations(&format!("let {e} = 7; for {e} in 0..4 {{}} // a {e}")).is_empty());
    assert!(outside_citations("// the specs' fields; an issue with ranking").is_empty());
}

#[test]
fn no_comment_or_document_cites_a_document_outside_the_repository() {
    let mut found = Vec::new();
    for (rel, text) in text_files() {
        if !is_checked(&rel) || rel == Path::new("tests/e2e/newcomer.rs") {
            continue;
        }
        for (i, line) in text.lines().enumerate() {
            for hit in outside_citations(line) {
                found.push(format!("{}:{}: {hit}", rel.display(), i + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "citations of documents outside the repository (cite docs/ instead):\n{}",
        found.join("\n")
    );
}
