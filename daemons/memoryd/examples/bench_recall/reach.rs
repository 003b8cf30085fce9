//! `scripts/bench recall --asked`, the reach beside it: what memory in the turn brings
//! into the prompt against what memoryd's own first `TOP` hits hold, each LoCoMo question
//! asked from a clean prompt of the same index at the same moment. A question counts when
//! any of its evidence turns is among them. loopd's choice is `proto::memory::choose_to_bring`
//! over the hits loopd asks for (`TOP` × `ASK_PER_HIT`), the choice before it (each hit
//! needing half of the question on its own) beside it, and the same choice at lower
//! floors (`FLOORS`). What a lower floor costs is measured beside it (`chance`): the
//! owner's lines of each conversation, asked of the others, bring memory only by chance.
//! `BOXMAKER_BENCH_REACH_DUMP` names a file to write each question's hits to (JSON
//! lines), to see where they part.

use crate::sets::{Judge, Question, ALL, UNANSWERABLE};
use proto::memory::Hit;
use std::collections::BTreeMap;
use std::io::Write;

/// Hits memory in the turn brings (`memory.auto_hits`' default).
const TOP: usize = 3;

/// Hits loopd asks memoryd for per hit it wants (`turn::recollect::ASK_PER_HIT`).
const ASK_PER_HIT: usize = 3;

/// The floor every hit had to reach on its own before (`turn::recollect`, until the
/// choice moved to `proto::memory::choose_to_bring`).
const FLOOR_BEFORE: u16 = 500;

/// Floors for the set the choice is measured at beside loopd's own
/// (`proto::memory::RELEVANCE_FLOOR`, the first): untrusted hits keep theirs.
const FLOORS: [u16; 4] = [500, 450, 400, 333];

fn holds(q: &Question, texts: &[&str]) -> bool {
    match &q.judge {
        Judge::Evidence(ev) => texts.iter().any(|t| ev.contains(*t)),
        Judge::Contains(a) => {
            let a = a.to_lowercase();
            texts.iter().any(|t| t.to_lowercase().contains(&a))
        }
    }
}

/// Per category: questions, and how many had evidence in memoryd's first `TOP`, in what
/// the turn brought before, and in what it brings now.
#[derive(Default)]
struct Counts {
    n: usize,
    top: usize,
    before: usize,
    now: usize,
    /// Per `FLOORS`.
    at: [usize; FLOORS.len()],
}

/// Asks every question of `ask` (its hits, best first, at most `TOP` × `ASK_PER_HIT`)
/// and prints the table.
pub fn run(title: &str, questions: &[Question], ask: &dyn Fn(&str) -> Vec<Hit>) {
    let mut by: BTreeMap<String, Counts> = BTreeMap::new();
    let mut dump =
        std::env::var_os("BOXMAKER_BENCH_REACH_DUMP").map(|p| std::fs::File::create(p).unwrap());
    for q in questions {
        let hits = ask(&q.text);
        let top: Vec<&str> = hits.iter().take(TOP).map(|h| h.text.as_str()).collect();
        let before: Vec<&str> = hits
            .iter()
            .filter(|h| h.relevance >= FLOOR_BEFORE)
            .take(TOP)
            .map(|h| h.text.as_str())
            .collect();
        let chosen = proto::memory::choose_to_bring(&hits, TOP);
        let now: Vec<&str> = chosen.iter().map(|&i| hits[i].text.as_str()).collect();
        let (t, b, n) = (holds(q, &top), holds(q, &before), holds(q, &now));
        let at = FLOORS.map(|floor| {
            let chosen = proto::memory::choose_to_bring_at(&hits, TOP, floor);
            let texts: Vec<&str> = chosen.iter().map(|&i| hits[i].text.as_str()).collect();
            holds(q, &texts)
        });
        for c in [q.category.as_str(), ALL] {
            if c == ALL && q.category == UNANSWERABLE {
                continue;
            }
            let e = by.entry(c.to_string()).or_default();
            e.n += 1;
            e.top += usize::from(t);
            e.before += usize::from(b);
            e.now += usize::from(n);
            for (k, held) in at.iter().enumerate() {
                e.at[k] += usize::from(*held);
            }
        }
        if let Some(f) = &mut dump {
            let line = serde_json::json!({
                "question": q.text, "category": q.category,
                "top": t, "before": b, "now": n,
                "hits": hits.iter().map(|h| serde_json::json!({
                    "relevance": h.relevance, "evidence": holds(q, &[h.text.as_str()]),
                    "text": h.text.chars().take(160).collect::<String>(),
                })).collect::<Vec<_>>(),
            });
            writeln!(f, "{line}").unwrap();
        }
    }
    println!("## {title}: memory in the turn against memoryd's first {TOP} (any evidence turn)\n");
    println!("| category | n | memoryd's first {TOP} | the turn before | the turn now |");
    println!("|---|---:|---:|---:|---:|");
    for (c, e) in &by {
        let r = |x: usize| x as f64 / e.n as f64;
        println!(
            "| {c} | {} | {:.3} | {:.3} | {:.3} |",
            e.n,
            r(e.top),
            r(e.before),
            r(e.now)
        );
    }
    println!();
    println!("## {title}: the choice at other floors (any evidence turn)\n");
    let heads: Vec<String> = FLOORS.iter().map(|f| format!("floor {f}")).collect();
    println!(
        "| category | n | memoryd's first {TOP} | {} |",
        heads.join(" | ")
    );
    println!("|---|---:|---:|{}", "---:|".repeat(FLOORS.len()));
    for (c, e) in &by {
        let r = |x: usize| format!("{:.3}", x as f64 / e.n as f64);
        let cells: Vec<String> = e.at.iter().map(|&x| r(x)).collect();
        println!("| {c} | {} | {} | {} |", e.n, r(e.top), cells.join(" | "));
    }
    println!();
}

/// Hits asked per line when measuring `chance`: enough that the first `ASKED` of other
/// conversations remain once the line's own are taken out.
const CHANCE_ASKED: u32 = 40;

/// What a floor costs: each owner line of every conversation (`lines`: conversation,
/// line) asked of the other conversations alone (the line's own conversation's hits
/// taken out of memoryd's answer, the rest kept in its order), where nothing is about the
/// line but by chance: the share of lines that bring memory at each of `FLOORS`, and the
/// hits they bring.
pub fn chance(title: &str, lines: &[(String, String)], ask: &dyn Fn(&str, u32) -> Vec<Hit>) {
    let mut brought = [0usize; FLOORS.len()];
    let mut hits_brought = [0usize; FLOORS.len()];
    for (conversation, line) in lines {
        let hits: Vec<Hit> = ask(line, CHANCE_ASKED)
            .into_iter()
            .filter(|h| &h.session != conversation)
            .take(ASKED as usize)
            .collect();
        for (k, &floor) in FLOORS.iter().enumerate() {
            let chosen = proto::memory::choose_to_bring_at(&hits, TOP, floor);
            brought[k] += usize::from(!chosen.is_empty());
            hits_brought[k] += chosen.len();
        }
    }
    println!(
        "## {title}: memory brought by chance, {} owner lines each asked of the other conversations\n",
        lines.len()
    );
    println!("| floor | lines bringing memory | hits brought a line |");
    println!("|---:|---:|---:|");
    let n = lines.len().max(1) as f64;
    for (k, floor) in FLOORS.iter().enumerate() {
        println!(
            "| {floor} | {:.3} | {:.2} |",
            brought[k] as f64 / n,
            hits_brought[k] as f64 / n
        );
    }
    println!();
}

/// Hits loopd asks for per recall of memory in the turn.
pub const ASKED: u32 = (TOP * ASK_PER_HIT) as u32;
