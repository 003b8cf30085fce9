//! `scripts/bench recall`: how often memoryd's recall finds the answer to a question,
//! against plain SQLite FTS5 on the same rows, on the evaluation set in `eval/`.
//!
//! The owner's past sessions (`eval/sessions/`, real heads and epoch logs, written by
//! `eval/make.py`) are indexed by memoryd's own `Index`; the bare baselines get exactly
//! the rows memoryd indexed. Each question set (`eval/questions/*.tsv`, one table each)
//! is asked of every system, and a hit answers when its text contains the question's
//! answer string (case-insensitively). Printed per set: recall@1, recall@5 and MRR@10.
//!
//! Adding a column is adding a `System`; adding a set is adding a `.tsv` file.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod metrics;
mod systems;
mod vectors;

use metrics::Scores;
use std::path::{Path, PathBuf};

/// Hits asked for per question: MRR is counted to this depth.
const DEPTH: usize = 10;

/// A question to the texts of its hits, best first.
pub type Ask<'a> = Box<dyn FnMut(&str) -> Vec<String> + 'a>;

/// One ranked retriever: a name for its column, and a function from a question to the
/// texts of its hits, best first.
pub struct System<'a> {
    pub name: &'static str,
    pub ask: Ask<'a>,
}

/// A question and the string its answer contains.
struct Question {
    text: String,
    answer: String,
}

fn main() {
    let eval = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval");
    let state = tempfile::tempdir().unwrap();
    copy_dir(&eval.join("sessions"), &state.path().join("sessions"));
    let world = systems::World::build(state.path());
    let vec_world = vectors::VecWorld::build(state.path());
    let mut systems = world.systems(DEPTH);
    if let Some(v) = &vec_world {
        systems.extend(v.systems(DEPTH));
        if std::env::args().any(|a| a == "--sweep") {
            systems.extend(v.sweep(DEPTH));
        }
    }
    let verbose = std::env::args().any(|a| a == "--misses");

    let mut sets: Vec<PathBuf> = std::fs::read_dir(eval.join("questions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "tsv"))
        .collect();
    sets.sort();
    println!(
        "{} records in {} logs ({} indexed rows), answers counted to depth {DEPTH}\n",
        world.records, world.logs, world.rows
    );
    for set in sets {
        let questions = read_questions(&set);
        let name = set.file_stem().unwrap().to_string_lossy().to_string();
        let scores: Vec<Scores> = systems
            .iter_mut()
            .map(|s| {
                let mut sc = Scores::default();
                for q in &questions {
                    let hits = (s.ask)(&q.text);
                    let at = metrics::first_answer(&hits, &q.answer, DEPTH);
                    if verbose && at != Some(0) {
                        eprintln!("{} · {:?} -> {at:?}: {:?}", s.name, q.text, hits.first());
                    }
                    sc.add(at);
                }
                sc
            })
            .collect();
        println!("### {name}: {} questions\n", questions.len());
        let head: Vec<&str> = systems.iter().map(|s| s.name).collect();
        println!("| measure | {} |", head.join(" | "));
        println!("|---|{}", "---:|".repeat(head.len()));
        for (measure, f) in [
            ("recall@1", Scores::recall_at as fn(&Scores, usize) -> f64),
            ("recall@5", Scores::recall_at),
        ] {
            let k = if measure == "recall@1" { 1 } else { 5 };
            let cells: Vec<String> = scores.iter().map(|s| format!("{:.3}", f(s, k))).collect();
            println!("| {measure} | {} |", cells.join(" | "));
        }
        let cells: Vec<String> = scores.iter().map(|s| format!("{:.3}", s.mrr())).collect();
        println!("| MRR@{DEPTH} | {} |\n", cells.join(" | "));
    }
}

fn read_questions(path: &Path) -> Vec<Question> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (q, a) = l
                .split_once('\t')
                .unwrap_or_else(|| panic!("{}: no tab in {l:?}", path.display()));
            Question {
                text: q.trim().to_string(),
                answer: a.trim().to_string(),
            }
        })
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}
