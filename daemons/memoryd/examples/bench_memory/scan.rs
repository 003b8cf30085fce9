//! `--scan [ROWS]`: the vector half of a recall at a given history size, without building
//! the text index first (a million records of it take half an hour). One synthetic code a
//! row (random unit vectors: the scan costs the same whatever they hold) put in a `Store`
//! as memoryd loads it; then queries through `Store::nearest`, as a recall runs it (the
//! exact scan up to `EXACT_UP_TO` rows, two stages above), beside the exact scan of every
//! code, and the real model embedding each query on its own.

use super::corpus::Rng;
use super::{ms, pct};
use memoryd::embed::model::Embedder;
use memoryd::embed::quant::{self, Code};
use memoryd::embed::store::{Store, EXACT_UP_TO, RESCORE};
use memoryd::embed::vectors::MIN_COSINE;
use std::path::Path;
use std::time::{Duration, Instant};

/// Rows by default: the history size the recall budget is set for.
pub const DEFAULT_ROWS: usize = 1_000_000;

/// Queries timed per measure (after `WARM` untimed): enough for a p99 of twos and threes.
const QUERIES: usize = 300;
const WARM: usize = 20;

/// Hits asked of the vector half, as a recall asks.
const K: usize = 50;

/// Questions for the query embedding, the length people ask with.
pub const QUESTIONS: &[&str] = &[
    "what did I say about the dentist?",
    "when is Maria's birthday",
    "where did I put the spare key to the garden shed?",
    "what was the name of the plumber we used last spring and his number",
    "do you remember the restaurant in Lisbon we liked",
    "what did the doctor say about my knee after the scan in October?",
];

pub fn run(dir: Option<&Path>, rows: usize) {
    eprintln!("scan: {rows} random codes…");
    let mut rng = Rng::new(42);
    let mut store = Store::default();
    for id in 0..rows {
        store.put(
            id as i64,
            1,
            &quant::encode(&super::vectors::unit(&mut rng)),
        );
    }
    let queries: Vec<Code> = (0..QUERIES + WARM)
        .map(|_| quant::encode(&super::vectors::unit(&mut rng)))
        .collect();
    eprintln!("scan: queries…");
    let used = timed(&queries, |q| store.nearest(q, 1, K, MIN_COSINE).len());
    let exact = timed(&queries, |q| store.nearest_exact(q, 1, K, MIN_COSINE).len());
    // Rescoring only the `K` asked for: the sign-code stage's own cost.
    let signs = timed(&queries, |q| {
        store.nearest_two_stage(q, 1, K, MIN_COSINE, K).len()
    });
    let embedding = dir.map(|d| {
        let model = Embedder::load(d).expect("embedding model");
        let texts: Vec<&str> = (0..QUERIES + WARM)
            .map(|i| QUESTIONS[i % QUESTIONS.len()])
            .collect();
        timed(&texts, |q| model.embed(&[q]).map_or(0, |v| v.len()))
    });
    let search = if rows > EXACT_UP_TO {
        format!("two stages: sign codes, {RESCORE} rescored")
    } else {
        "exact scan".to_string()
    };
    println!("\n### the vector half at {rows} rows ({QUERIES} queries, k {K})\n");
    println!("| measure | p50 | p99 |");
    println!("|---|---:|---:|");
    let line = |name: &str, d: &[Duration]| {
        println!(
            "| {name} | {:.2} ms | {:.2} ms |",
            ms(pct(d, 0.5)),
            ms(pct(d, 0.99))
        );
    };
    line(
        &format!("vector search as recall runs it ({search})"),
        &used,
    );
    if rows > EXACT_UP_TO {
        line("of which the sign-code stage (rescoring only k)", &signs);
    }
    line("exact scan of every 8-bit code (reference)", &exact);
    match &embedding {
        Some(e) => {
            line("the query's embedding (real model, one thread)", e);
            let sum: Vec<Duration> = used.iter().zip(e).map(|(a, b)| *a + *b).collect();
            line("embedding + vector search (each percentile's sum)", &sum);
        }
        None => println!("| the query's embedding | no model | |"),
    }
}

/// Runs `f` on every item, the first `WARM` untimed; the timed latencies sorted.
fn timed<T>(items: &[T], mut f: impl FnMut(&T) -> usize) -> Vec<Duration> {
    let mut out: Vec<Duration> = items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| {
            let t = Instant::now();
            std::hint::black_box(f(item));
            (i >= WARM).then(|| t.elapsed())
        })
        .collect();
    out.sort_unstable();
    out
}
