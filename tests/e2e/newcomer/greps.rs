//! What a grep can check: proto does no I/O, `sessions` opens files only through
//! `open_regular`, bincode stays in the frame codec, and no
//! comment or document cites a document outside the repository, and no benchmark hides
//! in the test binary as an ignored test.

use super::map::{is_test_module, tree, CRATES};
use super::*;
use std::fs;
use std::path::Path;

/// The non-test code of the `.rs` files under `dir`: each file without its
/// `#[cfg(test)]` items (a `mod x;` line or a braced block), so a test module declared
/// near the top of a file does not hide the code after it.
fn production_code(dir: &Path) -> Vec<(String, String)> {
    tree(dir)
        .into_iter()
        .filter(|rel| rel.ends_with(".rs") && !is_test_module(Path::new(rel)))
        .filter_map(|rel| {
            let code = fs::read_to_string(dir.join(&rel)).ok()?;
            Some((rel, without_test_items(&code)))
        })
        .collect()
}

/// `code` with every item gated by `#[cfg(test)]` cut out: the item ends at its first
/// `;` outside braces, or where the braces it opens close. Braces inside string and
/// character literals are not counted.
fn without_test_items(code: &str) -> String {
    const GATE: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find(GATE) {
        out.push_str(&rest[..at]);
        rest = &rest[at + GATE.len()..];
        let mut depth = 0usize;
        let mut chars = rest.char_indices().peekable();
        let mut end = rest.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    while let Some((_, c)) = chars.next() {
                        match c {
                            '\\' => {
                                chars.next();
                            }
                            '"' => break,
                            _ => {}
                        }
                    }
                }
                '\'' => {
                    // A character literal such as '{' (a lifetime has no closing quote
                    // within three characters, and its braces count as code).
                    let ahead: String = rest[i + 1..].chars().take(3).collect();
                    if let Some(close) = ahead.find('\'') {
                        for _ in 0..ahead[..=close].chars().count() {
                            chars.next();
                        }
                    }
                }
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[test]
fn test_items_are_cut_and_the_code_after_them_is_kept() {
    let code = "use a;\n#[cfg(test)]\nmod tests;\nfn kept() { let s = \"}\"; }\n#[cfg(test)]\nmod inline {\n    fn f() { '{'; }\n}\nfn also_kept() {}\n";
    let cut = without_test_items(code);
    assert!(cut.contains("fn kept()"), "{cut}");
    assert!(cut.contains("fn also_kept()"), "{cut}");
    assert!(!cut.contains("mod tests"), "{cut}");
    assert!(!cut.contains("fn f()"), "{cut}");
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

/// ARCHITECTURE.md's invariant on `sessions`: its files are opened only through
/// `open_regular` (no FIFO, device or link followed), so no other way to open one exists.
#[test]
fn the_sessions_crate_opens_files_only_through_open_regular() {
    let mut found = Vec::new();
    for (rel, code) in production_code(&repo().join("crates/sessions/src")) {
        for (n, line) in code.lines().enumerate() {
            let code_part = line.split("//").next().unwrap_or("");
            let opens = code_part.contains("File::create")
                || (code_part.contains("File::open") && !code_part.contains("File::open(dir)"))
                || code_part.contains("fs::read(")
                || code_part.contains("fs::read_to_string(")
                || (code_part.contains("OpenOptions::new()")
                    && !code
                        .lines()
                        .skip(n.saturating_sub(2))
                        .take(3)
                        .any(|l| l.contains("open_regular(")));
            if opens {
                found.push(format!(
                    "crates/sessions/src/{rel}:{}: {}",
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "sessions opens a file around open_regular:\n{}",
        found.join("\n")
    );
}

/// Regression: `/forget` kept its own copy of the torn-tail rule and of record parsing
/// and read whole logs with no cap. ARCHITECTURE.md's invariant on `sessions`: no crate
/// but proto (which defines the record line, and opens no file) parses a record line or
/// splits a log into lines itself; the bounded reader in `sessions::lines` is the only one.
///
/// Regression too: the check named `daemons/plumbing` after plumbing had moved to
/// `crates/`, so it read nothing there; it now takes every crate of the code map, and a
/// crate whose `src/` is missing fails it.
#[test]
fn only_the_sessions_crate_reads_record_lines() {
    let parse = concat!("Record::", "from_line");
    let split = concat!("split_inclusive(|b| *b == b'", "\\n')");
    let mut found = Vec::new();
    for krate in CRATES {
        if ["proto", "crates/sessions"].contains(krate) {
            continue;
        }
        let src = repo().join(krate).join("src");
        assert!(src.is_dir(), "{krate}/src: no such directory");
        for (rel, code) in production_code(&src) {
            for word in [parse, split] {
                if code.contains(word) {
                    found.push(format!("{krate}/src/{rel}: {word}"));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "record lines read outside sessions:\n{}",
        found.join("\n")
    );
}

#[test]
fn bincode_is_used_only_by_the_frame_codec() {
    let word = concat!("bin", "code");
    let allowed = [
        "proto/src/frame.rs",
        "proto/src/frame/tests.rs",
        "tests/e2e/newcomer/greps.rs",
        // The check's own description of what it checks.
        "tests/e2e/newcomer/mod.rs",
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
        if !is_checked(&rel) || rel.starts_with("tests/e2e/newcomer") {
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

/// Regression: benchmarks were ignored tests, so every test run compiled and listed
/// them and `--ignored` ran them as tests. They are compiled only with the e2e crate's
/// `bench` feature now (docs/testing.md, 'Benchmarks'); the forgetting benchmark is the
/// one still to move.
#[test]
fn no_benchmark_hides_in_the_test_binary_as_an_ignored_test() {
    let ignore = concat!("#[", "ignore");
    let found: Vec<String> = text_files()
        .into_iter()
        .filter(|(rel, _)| rel.extension().is_some_and(|e| e == "rs"))
        .filter(|(_, text)| text.contains(ignore))
        .map(|(rel, _)| rel.display().to_string())
        .collect();
    assert!(
        found.is_empty(),
        "ignored tests (a benchmark belongs behind the bench feature):\n{}",
        found.join("\n")
    );
}

/// The chat-template tags `neutralise` breaks, as a line would hold them whole: each of
/// its tag names opened and closed (in lower case, as templates write them).
fn whole_tags() -> Vec<String> {
    proto::neutralise::TAG_NAMES
        .iter()
        .flat_map(|t| [format!("<{t}>"), format!("</{t}>")])
        .collect()
}

/// Whether `line` holds a special token whole: `<|`, a name of lower-case letters, digits
/// and `_`, then `|>`.
fn special_token(line: &str) -> Option<&str> {
    let mut rest = line;
    while let Some(at) = rest.find("<|") {
        let after = &rest[at + 2..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(after.len());
        if name_len > 0 && after[name_len..].starts_with("|>") {
            return Some(&rest[at..at + 2 + name_len + 2]);
        }
        rest = after;
    }
    None
}

/// No source file or script holds a chat-template tag whole (docs/turn.md, 'The prompt
/// and replay'): such a file read by a tool, or quoted in a test's prompt, would carry
/// a live control sequence. Templates and the model's worked examples (`.jinja`, `.md`)
/// are data the server and model must read whole.
#[test]
fn no_source_file_holds_a_chat_template_tag_whole() {
    let tags = whole_tags();
    let mut found = Vec::new();
    for (rel, text) in text_files() {
        let ext = rel.extension().and_then(|e| e.to_str()).unwrap_or("");
        let script = rel.starts_with("scripts") || rel.starts_with(".ci");
        if !(matches!(ext, "rs" | "py" | "sh") || (script && ext.is_empty())) {
            continue;
        }
        for (i, line) in text.lines().enumerate() {
            let tag = tags
                .iter()
                .map(String::as_str)
                .find(|t| line.contains(t))
                .or_else(|| special_token(line));
            if let Some(tag) = tag {
                found.push(format!("{}:{}: {tag}", rel.display(), i + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "chat-template tags written whole (build them from pieces):\n{}",
        found.join("\n")
    );
}
