//! What the compiler cannot see of the dependency rule (ARCHITECTURE.md, the layers
//! invariants under `crates/conversation/` and `daemons/loopd/`): the order of modules
//! inside one crate. Between crates, each `Cargo.toml` keeps it (`newcomer::map`). Every
//! `crate::…` and `super::…` path in `daemons/*/src` and `crates/*/src` is an edge between
//! two sibling modules (the children of the two paths' common parent), the edges form a
//! graph per parent, and the test fails on a cycle anywhere, on an edge that points up or
//! sideways in a layered crate's `LAYERED` list, or on a module of a layered crate using an
//! item of its crate root (which belongs to no layer, so an edge through it would not be
//! seen). A parent using its own children, or a child its parent module's items, is not an
//! edge. Test-only files (`tests.rs`, `tests_*.rs`, `…/tests/…`) are left out: a test may
//! reach wherever it needs to.
//!
//! `cargo test -p e2e -- layering --nocapture` prints the graph.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// loopd's top-level modules by layer, highest first. A module may use only modules in
/// layers below its own. The conversation crate sits below all of them, where the compiler
/// keeps it; what it cannot see is the order among loopd's own modules.
const LOOPD_LAYERS: &[&[&str]] = &[
    // The socket's Service: lines in, reply blocks out. The only renderer of reply bytes.
    &["channel"],
    // The Matrix channel's threads and files: HTTP off the poll loop, the store, reading
    // a room's reply blocks back. The channel makes rooms its clients through it.
    &["matrix"],
    // The one thread that owns open sessions and runs jobs in order.
    &["worker"],
    // What the worker runs besides a turn: a heartbeat decides and returns what to
    // deliver, unrendered.
    &["heartbeat"],
    // The one owner of the client, the slot keeper and the configuration in force: the
    // whole turn, what follows it (and the `SessionFull` rerun), `/compact`.
    &["engine"],
    // The channel's limits, which the heartbeat bounds its replies by too; the pending
    // redactions file a removal writes (the worker) and the Matrix channel reads; the
    // state directory's lock, which start-up takes before anything else touches it.
    &["limits", "redactions", "state_lock"],
];

/// The conversation crate's top-level modules by layer, highest first (its `lib.rs` says
/// the same): one crate to the compiler, so the order inside it is kept here.
const CONVERSATION_LAYERS: &[&[&str]] = &[
    // `/allow N`: a refused fetch run as the owner's, logged as a tool call.
    &["allow"],
    // `/forget`: finding a text in a session's files and removing it from them, with the
    // plan that lets a crash be finished.
    &["forget"],
    // A turn, and everything after it; neither uses the other.
    &["turn", "compact"],
    // What every model call on an epoch shares: the replayed prompt, the turn context.
    &["prompt"],
    // Views over what a turn is made of: the status board (of a session) and the
    // `recall` tool (the memoryd client's answer as a tool's output).
    &["status", "recall"],
    // What a turn is made of (the tools, the reminders and the Honcho reporter are crates
    // of their own, below: the compiler keeps them there).
    &["open_session", "memory"],
    // The inbox of unasked messages (with the notify command): a file of its own.
    &["inbox"],
    // Leaves every layer may use: test hooks, and the one reader of the prompt files.
    &["testhook", "prompts"],
];

/// The crates whose top-level modules are layered, with their layers.
const LAYERED: &[(&str, &[&[&str]])] = &[
    ("loopd", LOOPD_LAYERS),
    ("conversation", CONVERSATION_LAYERS),
];

#[derive(Default)]
struct Graph {
    /// parent module path (crate first) -> child -> children it uses
    groups: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>>,
    /// In a layered crate, each use of an item of the crate root by one of its modules:
    /// (crate, top-level module, item).
    root_items: BTreeSet<(String, String, String)>,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn is_test_file(rel: &Path) -> bool {
    rel.iter().any(|c| {
        let c = c.to_string_lossy();
        c == "tests" || c == "tests.rs" || c.starts_with("tests_")
    })
}

/// The module path of a source file, relative to `src/`: `channel/mod.rs` is
/// `[channel]`, `compact/epoch.rs` is `[compact, epoch]`, `lib.rs` is `[]`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.strip_suffix(".rs").unwrap_or(&last).to_string();
    if stem != "mod" && stem != "lib" && stem != "main" {
        parts.push(stem);
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The code of a line without its `//` comment (doc comments name paths in backticks).
fn code_of(line: &str) -> &str {
    let t = line.trim_start();
    if t.starts_with("//") {
        return "";
    }
    match line.find(" //") {
        Some(i) => &line[..i],
        None => line,
    }
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first segments of the paths a brace group names: `{a::b, c, d::{e}}` gives a, c, d.
fn brace_heads(s: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0usize;
    let mut start = true;
    for (i, c) in s.char_indices() {
        match c {
            '{' => {
                depth += 1;
                if depth == 1 {
                    start = true;
                }
                continue;
            }
            '}' => {
                if depth <= 1 {
                    break;
                }
                depth -= 1;
            }
            ',' if depth == 1 => start = true,
            c if depth == 1 && start && (c.is_alphanumeric() || c == '_') => {
                heads.push(ident_at(&s[i..]).to_string());
                start = false;
            }
            _ => {}
        }
    }
    heads
}

/// Every absolute module path `code` names through `crate::` or `super::`, as the first
/// segment after the resolved prefix.
fn targets(module: &[String], code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let rest = &code[i..];
        let prev_ident = i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let (base, after): (Vec<String>, &str) = if !prev_ident && rest.starts_with("crate::") {
            (Vec::new(), &rest["crate::".len()..])
        } else if !prev_ident && rest.starts_with("super::") {
            // `super` of `a/b.rs` (module [a, b]) is [a]; of `a/mod.rs` (module [a]) it is
            // [] too, since a mod.rs file is the module itself.
            let mut base = module.to_vec();
            base.pop();
            let mut after = &rest["super::".len()..];
            while let Some(more) = after.strip_prefix("super::") {
                base.pop();
                after = more;
            }
            (base, after)
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let heads = if after.starts_with('{') {
            brace_heads(after)
        } else {
            vec![ident_at(after).to_string()]
        };
        for h in heads {
            if !h.is_empty() && h != "self" {
                let mut t = base.clone();
                t.push(h);
                out.push(t);
            }
        }
        i += rest.len() - after.len();
    }
    out
}

fn build() -> (Graph, BTreeMap<String, BTreeSet<Vec<String>>>) {
    let mut graph = Graph::default();
    let mut modules: BTreeMap<String, BTreeSet<Vec<String>>> = BTreeMap::new();
    let mut daemons: Vec<_> = ["daemons", "crates"]
        .iter()
        .flat_map(|d| fs::read_dir(repo().join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    daemons.sort();
    for daemon in daemons {
        let krate = daemon.file_name().unwrap().to_string_lossy().into_owned();
        let src = daemon.join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let known = modules.entry(krate.clone()).or_default();
        for f in &files {
            let rel = f.strip_prefix(&src).unwrap();
            if !is_test_file(rel) {
                known.insert(module_of(rel));
            }
        }
        for f in files {
            let rel = f.strip_prefix(&src).unwrap().to_path_buf();
            if is_test_file(&rel) {
                continue;
            }
            let from = module_of(&rel);
            let text = fs::read_to_string(&f).unwrap();
            // Stop at an inline `#[cfg(test)] mod tests {`: what follows is test code.
            let text = text
                .split("#[cfg(test)]\nmod tests {")
                .next()
                .unwrap_or_default();
            for line in text.lines() {
                for to in targets(&from, code_of(line)) {
                    // Only paths that name one of the crate's modules are edges; an item
                    // of the crate root is noted apart, where the crate is layered.
                    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
                    if common >= from.len() || common >= to.len() {
                        continue; // parent -> child or child -> parent's items
                    }
                    let a = from[common].clone();
                    let b = to[common].clone();
                    let mut sibling = to[..=common].to_vec();
                    if !known.contains(&sibling) {
                        // Through `crate::` only: a line is read as its file's module, so
                        // an inline module's `super::` would be taken for the root.
                        let through_crate = code_of(line).contains(&format!("crate::{b}"));
                        if common == 0 && through_crate && layers_of(&krate).is_some() {
                            graph.root_items.insert((krate.clone(), a, b));
                        }
                        continue;
                    }
                    sibling.pop();
                    let mut parent = vec![krate.clone()];
                    parent.extend(sibling);
                    graph
                        .groups
                        .entry(parent)
                        .or_default()
                        .entry(a)
                        .or_default()
                        .insert(b);
                }
            }
        }
    }
    (graph, modules)
}

fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Each cycle is reported once, from its smallest node.
    let mut found = Vec::new();
    fn walk(
        edges: &BTreeMap<String, BTreeSet<String>>,
        start: &str,
        at: &str,
        path: &mut Vec<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        for next in edges.get(at).into_iter().flatten() {
            if next == start {
                let mut c = path.clone();
                c.push(start.to_string());
                found.push(c);
            } else if next.as_str() > start && !path.contains(next) {
                path.push(next.clone());
                walk(edges, start, next, path, found);
                path.pop();
            }
        }
    }
    for start in edges.keys() {
        let mut path = vec![start.clone()];
        walk(edges, start, start, &mut path, &mut found);
    }
    found
}

fn layers_of(krate: &str) -> Option<&'static [&'static [&'static str]]> {
    LAYERED.iter().find(|(k, _)| *k == krate).map(|(_, l)| *l)
}

#[test]
fn modules_import_only_down_the_layers_and_without_cycles() {
    let (graph, _) = build();
    let mut problems = Vec::new();
    println!("module graph (parent: module -> modules it uses)");
    for (parent, edges) in &graph.groups {
        println!("{}:", parent.join("::"));
        for (from, tos) in edges {
            let tos: Vec<&str> = tos.iter().map(String::as_str).collect();
            println!("  {from} -> {}", tos.join(", "));
        }
        for c in cycles(edges) {
            problems.push(format!(
                "cycle in {}: {}",
                parent.join("::"),
                c.join(" -> ")
            ));
        }
        let Some(layers) = layers_of(&parent[0]).filter(|_| parent.len() == 1) else {
            continue;
        };
        let layer_of = |m: &str| layers.iter().position(|l| l.contains(&m));
        for (from, tos) in edges {
            for to in tos {
                let rule = match (layer_of(from), layer_of(to)) {
                    (Some(a), Some(b)) if a < b => continue,
                    (Some(_), Some(_)) => "points up or sideways in its layers",
                    (None, _) => "the first is in no layer",
                    (_, None) => "the second is in no layer",
                };
                problems.push(format!("{}: {from} -> {to}: {rule}", parent[0]));
            }
        }
    }
    for (krate, from, item) in &graph.root_items {
        problems.push(format!(
            "{krate}: {from} uses the crate root's {item}, which is in no layer: move it \
             into a module of the layer it belongs to"
        ));
    }
    assert!(
        problems.is_empty(),
        "the dependency rule is broken:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_checker_sees_crate_super_and_brace_paths() {
    let m: Vec<String> = vec!["index".into(), "catchup".into()];
    let t = targets(&m, "use super::ingest::{FileState, Outcome};");
    assert_eq!(t, vec![vec!["index".to_string(), "ingest".to_string()]]);
    let t = targets(&m, "use crate::{a::b, c, d::{e, f}};");
    assert_eq!(
        t,
        vec![vec!["a".to_string()], vec!["c".into()], vec!["d".into()]]
    );
    assert!(targets(&m, code_of("let x = supercrate::y; // crate::z")).is_empty());
    assert!(targets(&m, code_of("/// see crate::z")).is_empty());
}
