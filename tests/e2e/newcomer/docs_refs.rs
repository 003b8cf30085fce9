//! Every reference to a page under `docs/` names an existing page and heading.

use super::*;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

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
            // A heading is cited in single or double quotes.
            match folded
                .strip_prefix(", '")
                .or_else(|| folded.strip_prefix(", \""))
            {
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
            let found = page
                .titles
                .iter()
                .any(|t| h.starts_with(&format!("{t}'")) || h.starts_with(&format!("{t}\"")));
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
