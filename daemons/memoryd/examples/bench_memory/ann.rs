//! `scripts/bench memory --ann [TEXTS]`: what the two-stage vector search (`embed::store`:
//! sign codes first, the 8-bit codes of the best `RESCORE` after) loses against the exact
//! scan of every 8-bit code, on real embeddings.
//!
//! The texts are real sentences: every record of the evaluation set
//! (`daemons/memoryd/eval/sessions/`), then recombinations (one or two drawn at random,
//! joined) of those records' sentences and of the sentences of this repository's prose (the
//! Markdown documents and the Rust doc comments: a few thousand sentences, for variety the
//! evaluation set's few hundred lack) up to `TEXTS` (default `DEFAULT_TEXTS`), each
//! embedded with the model as memoryd embeds a row. A recombination shares whole sentences
//! with others, so the store is crowded with near neighbours: harder for a coarse stage
//! than a history of distinct records. The queries are the evaluation set's questions and
//! held-out recombinations.
//!
//! recall@10 is the share of the exact scan's top ten (at memoryd's cosine floor) that the
//! two stages return. Recombinations make many rows score alike, so a strict count
//! penalises swapping one equal for another; "as good" counts a returned hit when its
//! exact score is at least the exact tenth's (the two stages score their hits exactly).
//!
//! A sign code's ranking errs by about the same angle whatever the store's size, so the
//! rows crowding in ahead of a true neighbour grow in proportion to the rows: the number
//! rescored here is `RESCORE × TEXTS / 1 000 000`, the same share of the rows as `RESCORE`
//! is of a million, and the table says both.

use super::corpus::Rng;
use memoryd::embed::model::Embedder;
use memoryd::embed::quant::{self, Code};
use memoryd::embed::store::{Near, Store, RESCORE};
use memoryd::embed::vectors::MIN_COSINE;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

pub const DEFAULT_TEXTS: usize = 20_000;

/// Held-out recombinations asked besides the evaluation questions.
const HELD_OUT: usize = 300;

/// Hits compared: loopd's recall asks for ten.
const K: usize = 10;

/// Rows at a million scored by the second stage, for the table.
const AT_A_MILLION: &[usize] = &[1_000, 2_000, 4_000, 8_000, 16_000, 32_000];

/// Texts embedded per call, as the worker batches.
const BATCH: usize = 32;

fn eval_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("eval")
}

/// Every `content` string of the evaluation logs, once each.
fn records(dir: &Path) -> Vec<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for f in files {
        for line in std::fs::read_to_string(&f).unwrap().lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            if let Some(t) = v.get("content").and_then(|c| c.as_str()) {
                if t.split_whitespace().count() >= 3 && seen.insert(t.to_string()) {
                    out.push(t.to_string());
                }
            }
        }
    }
    out
}

fn questions(dir: &Path) -> Vec<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .filter_map(|l| l.split('\t').next().map(str::to_string))
                .filter(|q| !q.is_empty() && !q.starts_with('#'))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// This repository's prose: paragraphs of its Markdown documents and blocks of its Rust
/// doc comments, markup left in (the model reads it as any other text).
fn prose(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().to_string();
            if p.is_dir() {
                if !name.starts_with('.') && name != "target" && name != "fuzz" {
                    dirs.push(p);
                }
            } else if name.ends_with(".md") || name.ends_with(".rs") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let rust = f.extension().is_some_and(|e| e == "rs");
        let mut para = String::new();
        for line in text.lines() {
            let t = line.trim();
            let body = if rust {
                t.strip_prefix("//!")
                    .or_else(|| t.strip_prefix("///"))
                    .map(str::trim)
            } else if t.starts_with(['#', '|', '`']) {
                None
            } else {
                Some(t)
            };
            match body {
                Some(b) if !b.is_empty() => {
                    para.push(' ');
                    para.push_str(b);
                }
                _ => {
                    if !para.trim().is_empty() {
                        out.push(para.trim().to_string());
                    }
                    para.clear();
                }
            }
        }
        if !para.trim().is_empty() {
            out.push(para.trim().to_string());
        }
    }
    out
}

/// The most words of a sentence kept: a chat record's length, and a bound on what the
/// model is given (its cost grows with the text).
const SENTENCE_WORDS: usize = 30;

/// The sentences of the records: split after `.`, `!` or `?`; the longest left out.
fn sentences(records: &[String]) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for r in records {
        let mut start = 0;
        let chars: Vec<(usize, char)> = r.char_indices().collect();
        for (n, &(i, c)) in chars.iter().enumerate() {
            let end = matches!(c, '.' | '!' | '?')
                && chars.get(n + 1).is_none_or(|&(_, next)| next == ' ');
            if end {
                let s = r[start..i + c.len_utf8()].trim();
                if (3..=SENTENCE_WORDS).contains(&s.split_whitespace().count())
                    && seen.insert(s.to_string())
                {
                    out.push(s.to_string());
                }
                start = i + c.len_utf8();
            }
        }
        let s = r[start..].trim();
        if (3..=SENTENCE_WORDS).contains(&s.split_whitespace().count())
            && seen.insert(s.to_string())
        {
            out.push(s.to_string());
        }
    }
    out
}

fn recombine(rng: &mut Rng, sentences: &[String]) -> String {
    let n = 1 + rng.below(2);
    (0..n)
        .map(|_| sentences[rng.below(sentences.len())].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The codes of `texts`, in their order. Embedded shortest first, so that a batch pads
/// its texts to about their own length (the model's cost grows with the longest).
fn embed_all(model: &Embedder, texts: &[String]) -> Vec<Code> {
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| texts[i].len());
    let mut out = vec![quant::encode(&[0.0; memoryd::embed::DIM]); texts.len()];
    let t = Instant::now();
    for (n, batch) in order.chunks(BATCH).enumerate() {
        let refs: Vec<&str> = batch.iter().map(|&i| texts[i].as_str()).collect();
        for (&i, v) in batch.iter().zip(model.embed(&refs).unwrap()) {
            out[i] = quant::encode(&v);
        }
        if n % 50 == 49 {
            eprintln!(
                "ann: {} of {} embedded ({:.0}/s)…",
                (n + 1) * BATCH,
                texts.len(),
                ((n + 1) * BATCH) as f64 / t.elapsed().as_secs_f64()
            );
        }
    }
    out
}

pub fn run(model_dir: Option<PathBuf>, texts: usize) {
    let Some(dir) = model_dir else {
        println!("no embedding model (scripts/setup-python): the two-stage search's quality is not measured");
        return;
    };
    let model = Embedder::load(&dir).expect("embedding model");
    let eval = eval_dir();
    let records = records(&eval.join("sessions"));
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut sources = records.clone();
    sources.extend(prose(&root));
    let sentences = sentences(&sources);
    let mut rng = Rng::new(0xa11);
    let mut corpus: Vec<String> = records.iter().take(texts).cloned().collect();
    while corpus.len() < texts {
        corpus.push(recombine(&mut rng, &sentences));
    }
    let mut asked = questions(&eval.join("questions"));
    let n_questions = asked.len();
    asked.extend((0..HELD_OUT).map(|_| recombine(&mut rng, &sentences)));

    eprintln!(
        "ann: embedding {} texts ({} records, {} sentences recombined) and {} queries…",
        corpus.len(),
        records.len(),
        sentences.len(),
        asked.len()
    );
    let t = Instant::now();
    let codes = embed_all(&model, &corpus);
    let rate = codes.len() as f64 / t.elapsed().as_secs_f64();
    let queries = embed_all(&model, &asked);
    let mut store = Store::default();
    for (id, code) in codes.iter().enumerate() {
        store.put(id as i64, 0, code);
    }

    let exact: Vec<Vec<Near>> = queries
        .iter()
        .map(|q| store.nearest_exact(q, 0, K, MIN_COSINE))
        .collect();
    let judged = exact.iter().filter(|e| !e.is_empty()).count();

    println!(
        "\n### two-stage vector search against the exact scan ({} real texts: {} records of the \
         evaluation set and recombinations of their {} sentences; {} queries: {} evaluation \
         questions and {} held-out recombinations, {} with an exact top {K} above the floor; \
         embedded at {rate:.0} texts/s)\n",
        store.len(),
        records.len().min(texts),
        sentences.len(),
        queries.len(),
        n_questions,
        HELD_OUT,
        judged
    );
    println!("The rows rescored here are the same share of the rows as RESCORE is of 1 000 000.\n");
    println!("| RESCORE at 1M rows (share of rows) | rescored here | recall@{K}, mean | as good, mean | queries with all {K} | worst query | evaluation questions' recall@{K} |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for &at_million in AT_A_MILLION {
        let rescore = (at_million * store.len()).div_ceil(1_000_000).max(K);
        let mut sum = 0.0;
        let mut sum_good = 0.0;
        let mut sum_eval = 0.0;
        let mut n_eval = 0;
        let mut all = 0;
        let mut worst = 1.0f64;
        for (n, (q, want)) in queries.iter().zip(&exact).enumerate() {
            if want.is_empty() {
                continue;
            }
            let got = store.nearest_two_stage(q, 0, K, MIN_COSINE, rescore);
            let ids: HashSet<i64> = got.iter().map(|n| n.id).collect();
            let found = want.iter().filter(|n| ids.contains(&n.id)).count();
            let r = found as f64 / want.len() as f64;
            sum += r;
            let tenth = want.last().map_or(f32::MAX, |n| n.score);
            let good = got
                .iter()
                .filter(|n| n.score >= tenth)
                .count()
                .min(want.len());
            sum_good += good as f64 / want.len() as f64;
            if n < n_questions {
                sum_eval += r;
                n_eval += 1;
            }
            all += usize::from(found == want.len());
            worst = worst.min(r);
        }
        let mark = if at_million == RESCORE {
            " (memoryd's RESCORE)"
        } else {
            ""
        };
        println!(
            "| {at_million}{mark} ({:.2} %) | {rescore} | {:.3} | {:.3} | {all} of {judged} | {worst:.1} | {:.3} |",
            at_million as f64 / 10_000.0,
            sum / judged.max(1) as f64,
            sum_good / judged.max(1) as f64,
            sum_eval / n_eval.max(1) as f64
        );
    }
}
