//! `scripts/bench memory`: memoryd's index against a bare FTS5 table doing the same work.
//!
//! Indexing: 1 000 000 generated log records (or the count given as the first argument)
//! caught up by memoryd's `Index` from real log files, against a plain rusqlite loop
//! inserting the same texts into `fts5(text)` in transactions of `BARE_BATCH` rows with
//! the same pragmas and memoryd's tokenizer. Recall: two sets of 1 000 queries, one to
//! three bare words, and questions in natural words (one to three vocabulary words
//! wrapped in a question's stop words: "what did I say about X and Y?"); memoryd's
//! catch-up check plus search against bare FTS5 running the plain expressions of the
//! same `query::Query` as `MATCH … ORDER BY bm25 LIMIT`: the all-words AND first, the OR
//! of the words when that does not fill the hits, as memoryd does for words in fewer than
//! `index::common_words::COMMON_ROWS` rows (for commoner ones memoryd plans otherwise).
//! Both run for two layouts of the logs (see `corpus::Layout`). Peak memory is how far
//! the process's high-water RSS rose above its RSS at the start of each indexing run.
//! Prints a markdown table. `--index-only` after the count stops after the indexing runs
//! (for trying an indexing change in a minute rather than half an hour), `--sequential`
//! runs that layout only, `--slowest` lists each set's ten slowest searches on stderr.
//! `--ann [TEXTS]` instead measures what the two-stage vector search loses against the
//! exact scan on real embeddings (see `ann`); `--backfill [RECORDS]` times the real
//! daemon's backfill end to end (see `backfill`); `--long [ROWS]` times recall among
//! long pasted documents, as memory in the turn asks it (see `long`).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod ann;
mod backfill;
mod before;
mod corpus;
mod long;
mod scan;
mod speed;
mod vectors;

use corpus::{Layout, Rng, Words};
use memoryd::index::{Budget, Index, TOKENIZER};
use memoryd::query;
use proto::label::DataClass;
use std::time::{Duration, Instant};

const QUERIES: usize = 1_000;
/// Rows per transaction in the bare loop, about what one of memoryd's 1 MiB chunks holds.
const BARE_BATCH: usize = 8_192;
/// Hits asked for per recall, as loopd's tool would.
const LIMIT: u32 = 10;

/// How people wrap the words they look for; `{}` is a vocabulary word.
const QUESTIONS: &[&str] = &[
    "what did I say about {}?",
    "when is the {} with {}?",
    "do you remember the {} {}",
    "where did I put my {}",
    "what is the {} for {} and {}?",
    "can you find the {} I mentioned",
    "who told me about {} {}",
    "{} {}",
];

struct Recall {
    name: &'static str,
    ours: Vec<Duration>,
    bare: Vec<Duration>,
    search_only: Vec<Duration>,
}

struct Run {
    rows: usize,
    index: (Duration, Duration),
    peak_kib: (u64, u64),
    recall: Vec<Recall>,
    catch_up_only: Vec<Duration>,
    tidy: Duration,
    /// The vector half, measured on the sequential layout's index only.
    vectors: Option<vectors::VectorRun>,
}

fn main() {
    // candle's encoder, the reference measured against, would spread its matrix products
    // over every core through rayon; one rayon thread each keeps its threads the ones
    // the old path shares passes among, as memoryd's own encoder does.
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        std::env::set_var("RAYON_NUM_THREADS", "1");
    }
    // A mode's count, the second argument (`1_000_000` allowed), or its default.
    let count = |what: &str, default: usize| -> usize {
        std::env::args()
            .nth(2)
            .map(|a| a.replace('_', "").parse().expect(what))
            .unwrap_or(default)
    };
    let model = || vectors::model_dir().expect("the embedding model (scripts/setup-python)");
    match std::env::args().nth(1).as_deref() {
        Some("--speed") => {
            let texts = count("text count", speed::DEFAULT_TEXTS);
            speed::print(&speed::measure(&model(), texts, true));
            return;
        }
        Some("--scan") => {
            let rows = count("row count", scan::DEFAULT_ROWS);
            scan::run(vectors::model_dir().as_deref(), rows);
            return;
        }
        Some("--backfill") => {
            let records = count("record count", backfill::DEFAULT_RECORDS);
            backfill::run(&model(), records);
            return;
        }
        Some("--long") => {
            long::run(count("row count", long::DEFAULT_ROWS));
            return;
        }
        Some("--ann") => {
            let texts = count("text count", ann::DEFAULT_TEXTS);
            ann::run(vectors::model_dir(), texts);
            return;
        }
        _ => {}
    }
    let records: usize = std::env::args()
        .nth(1)
        .map(|a| a.replace('_', "").parse().expect("record count"))
        .unwrap_or(1_000_000);
    let index_only = std::env::args().any(|a| a == "--index-only");
    let mut rng = Rng::new(0x5eed);
    let words = Words::new(&mut rng);
    let queries: Vec<String> = (0..QUERIES)
        .map(|_| {
            let n = 1 + rng.below(3);
            (0..n)
                .map(|_| words.pick(&mut rng))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let questions: Vec<String> = (0..QUERIES)
        .map(|_| {
            let template = QUESTIONS[rng.below(QUESTIONS.len())];
            let mut q = String::new();
            for (i, piece) in template.split("{}").enumerate() {
                if i > 0 {
                    q.push_str(words.pick(&mut rng));
                }
                q.push_str(piece);
            }
            q
        })
        .collect();
    let sets = [("words", &queries), ("questions", &questions)];
    let sets: &[(&'static str, &Vec<String>)] = if index_only { &[] } else { &sets };
    let layouts: &[Layout] = if std::env::args().any(|a| a == "--sequential") {
        &[Layout::Sequential]
    } else {
        &[Layout::Sequential, Layout::Interleaved]
    };
    let runs: Vec<(Layout, Run)> = layouts
        .iter()
        .copied()
        .map(|layout| (layout, run(records, layout, &words, sets)))
        .collect();

    let rows = runs[0].1.rows;
    println!(
        "{records} log records ({rows} indexed rows), {QUERIES} queries per set, limit {LIMIT}, \
         tokenizer `{TOKENIZER}` on both sides\n"
    );
    println!("| layout | measure | memoryd | bare FTS5 | ratio |");
    println!("|---|---|---:|---:|---:|");
    for (layout, r) in &runs {
        let l = format!("{layout:?}").to_lowercase();
        let (ours, bare) = r.index;
        println!(
            "| {l} | index | {:.1} s, {:.0} records/s | {:.1} s, {:.0} texts/s | {:.2} |",
            ours.as_secs_f64(),
            records as f64 / ours.as_secs_f64(),
            bare.as_secs_f64(),
            r.rows as f64 / bare.as_secs_f64(),
            ours.as_secs_f64() / bare.as_secs_f64()
        );
        println!(
            "| {l} | segment merge after catch-up (start-up timer, not in index) | {:.1} s | | |",
            r.tidy.as_secs_f64()
        );
        for set in &r.recall {
            for (name, p) in [("p50", 0.50), ("p99", 0.99)] {
                let (a, b) = (pct(&set.ours, p), pct(&set.bare, p));
                println!(
                    "| {l} | recall {name}, {} | {:.2} ms | {:.2} ms | {:.2} |",
                    set.name,
                    ms(a),
                    ms(b),
                    a.as_secs_f64() / b.as_secs_f64()
                );
            }
            println!(
                "| {l} | of which search / catch-up check, p50, {} | {:.2} ms / {:.3} ms | | |",
                set.name,
                ms(pct(&set.search_only, 0.5)),
                ms(pct(&r.catch_up_only, 0.5))
            );
        }
        println!(
            "| {l} | peak RSS growth while indexing | {} MiB | {} MiB | |",
            r.peak_kib.0 / 1024,
            r.peak_kib.1 / 1024
        );
    }
    for (_, r) in &runs {
        if let Some(v) = &r.vectors {
            vectors::print(v);
            return;
        }
    }
    println!("\npeak RSS of the whole run: {} MiB", peak_kib() / 1024);
}

fn run(
    records: usize,
    layout: Layout,
    words: &Words,
    sets: &[(&'static str, &Vec<String>)],
) -> Run {
    let dir = tempfile::Builder::new()
        .prefix("bench-memory")
        .tempdir()
        .unwrap();
    let mut rng = Rng::new(0xc0ffee);
    eprintln!("{layout:?}: writing {records} records of session logs…");
    let texts = corpus::write_logs(dir.path(), records, layout, words, &mut rng);

    eprintln!("{layout:?}: memoryd index…");
    reset_peak();
    let base = rss_kib();
    let mut index = Index::open(dir.path(), DataClass::Private).unwrap();
    let t = Instant::now();
    index.catch_up(Budget::UNLIMITED).unwrap();
    let ours_index = t.elapsed();
    // What the start-up timer does once the backlog is in, off the request path.
    let t = Instant::now();
    index.tidy_if_due().unwrap();
    let tidy = t.elapsed();
    let ours_peak = peak_kib().saturating_sub(base);
    let rows = index.status().unwrap().rows as usize;
    assert_eq!(rows, texts.len(), "memoryd indexed every text");

    eprintln!("{layout:?}: bare FTS5 index…");
    reset_peak();
    let base = rss_kib();
    let mut bare = bare_connection(&dir.path().join("bare.sqlite"));
    let t = Instant::now();
    for batch in texts.chunks(BARE_BATCH) {
        let tx = bare.transaction().unwrap();
        {
            let mut insert = tx
                .prepare_cached("INSERT INTO t (text) VALUES (?1)")
                .unwrap();
            for text in batch {
                insert.execute([text]).unwrap();
            }
        }
        tx.commit().unwrap();
    }
    let bare_index = t.elapsed();
    let bare_peak = peak_kib().saturating_sub(base);
    drop(texts);

    eprintln!("{layout:?}: recall…");
    let mut stmt = bare
        .prepare("SELECT rowid, text FROM t WHERE t MATCH ?1 ORDER BY bm25(t) LIMIT ?2")
        .unwrap();
    let mut recall = Vec::new();
    for (name, queries) in sets {
        let ours = latencies(queries, |q| {
            index.catch_up(Budget::UNLIMITED).unwrap();
            index.search(q, DataClass::Private, LIMIT).unwrap().len()
        });
        if std::env::args().any(|a| a == "--slowest") {
            slowest(&index, words, name, queries);
        }
        let search_only = latencies(queries, |q| {
            index.search(q, DataClass::Private, LIMIT).unwrap().len()
        });
        // The same expressions memoryd runs: all the words first, any of them when
        // those do not fill the hits.
        let theirs = latencies(queries, |q| {
            let Some(parsed) = query::parse(q) else {
                return 0;
            };
            let mut n = 0;
            if let Some(all) = parsed.all_expression() {
                n = stmt
                    .query_map(rusqlite::params![all, LIMIT], |r| r.get::<_, String>(1))
                    .unwrap()
                    .count();
            }
            if n < LIMIT as usize {
                n += stmt
                    .query_map(rusqlite::params![parsed.expression(), LIMIT], |r| {
                        r.get::<_, String>(1)
                    })
                    .unwrap()
                    .count();
            }
            n
        });
        recall.push(Recall {
            name,
            ours,
            bare: theirs,
            search_only,
        });
    }
    if sets.is_empty() {
        return Run {
            vectors: None,
            rows,
            index: (ours_index, bare_index),
            peak_kib: (ours_peak, bare_peak),
            recall,
            catch_up_only: Vec::new(),
            tidy,
        };
    }
    let catch_up_only = latencies(sets[0].1, |_| {
        index.catch_up(Budget::UNLIMITED).unwrap();
        0
    });
    let vectors = (layout == Layout::Sequential).then(|| vectors::measure(&index, sets[1].1));
    Run {
        vectors,
        rows,
        index: (ours_index, bare_index),
        peak_kib: (ours_peak, bare_peak),
        recall,
        catch_up_only,
        tidy,
    }
}

fn bare_connection(path: &std::path::Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
    conn.execute_batch(&format!(
        "CREATE VIRTUAL TABLE t USING fts5(text, tokenize = '{TOKENIZER}')"
    ))
    .unwrap();
    conn
}

/// `--slowest`: the ten slowest searches of a set on stderr, each word with its rank in
/// the vocabulary (1 is the commonest), to see what the tail of the latencies is made of.
fn slowest(index: &Index, words: &Words, set: &str, queries: &[String]) {
    let mut timed: Vec<(Duration, &String)> = queries
        .iter()
        .map(|q| {
            let t = Instant::now();
            std::hint::black_box(index.search(q, DataClass::Private, LIMIT).unwrap());
            (t.elapsed(), q)
        })
        .collect();
    timed.sort_unstable_by_key(|t| std::cmp::Reverse(t.0));
    for (d, q) in timed.iter().take(10) {
        let ranks: Vec<String> = q
            .split(|c: char| !c.is_alphanumeric())
            .filter_map(|w| words.rank(w).map(|r| format!("{w}#{r}")))
            .collect();
        eprintln!(
            "slowest {set}: {:8.2} ms  {q:?}  {}",
            ms(*d),
            ranks.join(" ")
        );
    }
}

/// Runs the first hundred queries once to warm the caches, then all of them timed;
/// returns the latencies sorted.
fn latencies(queries: &[String], mut run: impl FnMut(&str) -> usize) -> Vec<Duration> {
    for q in queries.iter().take(100) {
        std::hint::black_box(run(q));
    }
    let mut out: Vec<Duration> = queries
        .iter()
        .map(|q| {
            let t = Instant::now();
            std::hint::black_box(run(q));
            t.elapsed()
        })
        .collect();
    out.sort_unstable();
    out
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Resets the high-water RSS mark (Linux: `5` to `clear_refs`), so each phase's peak is
/// its own. Where that is refused the peak simply covers the run so far.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The high-water RSS in KiB.
fn peak_kib() -> u64 {
    status_kib("VmHWM:")
}

/// The RSS now, in KiB: the base a phase's peak is measured from, since the corpus the
/// bench holds for the bare loop is not memory either side uses.
fn rss_kib() -> u64 {
    status_kib("VmRSS:")
}

fn status_kib(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}
