//! The vector half at scale, on the sequential run's index: one synthetic code per row
//! (random unit vectors: the scan costs the same whatever the vectors hold), stored in the
//! index database as memoryd stores them, loaded into memory as memoryd loads them, then
//! recalls with the real model embedding each query, as memoryd makes them (the two
//! halves side by side, `hybrid::recall_beside`) and on one thread, as it made them
//! before. The search in memory is measured
//! both ways `embed::store` has: the exact scan of every 8-bit code, and the two stages
//! (sign codes, then the `RESCORE` best scored exactly) that memoryd uses above
//! `EXACT_UP_TO` rows. Beside them, the same codes scanned from SQLite on every query: the
//! storage choice. Beside those, a request's wake with every row queued (as after an
//! upgrade): the SQL of the tick it brings forward (the queue's newest ids at the bound
//! of one look, and the counts' one row) against the two tables counted whole, as each
//! wake had them counted before. The
//! embedding speed is `speed`'s table (the worker's path against the GEMM bound,
//! candle's encoder before and ONNX Runtime). What the two stages lose is measured on
//! real embeddings by `--ann` (see `ann`).

use super::corpus::Rng;
use super::{latencies, ms, pct, peak_kib, rss_kib};
use memoryd::embed::model::Embedder;
use memoryd::embed::quant::{self, Code};
use memoryd::embed::store::{Store, EXACT_UP_TO, RESCORE};
use memoryd::embed::table;
use memoryd::embed::vectors::{Asker, MAX_QUEUE_READ};
use memoryd::embed::worker::JOB_QUEUE;
use memoryd::embed::DIM;
use memoryd::hybrid::Request;
use memoryd::index::Index;
use proto::label::DataClass;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Queries for the scan from SQLite: each reads every code, so a few are enough.
const SQLITE_SCANS: usize = 5;

/// Wakes timed each way: the whole count is tens of milliseconds at a million rows, so
/// a few dozen are enough for a p99 and stay under a few seconds.
const WAKES: usize = 30;

/// Word pieces stored a row (`embed::late`): LoCoMo's turns hold 28.7 on average.
const PIECES_PER_ROW: usize = 29;

pub struct VectorRun {
    pub rows: usize,
    pub speed: Option<super::speed::Speed>,
    pub fill: Duration,
    pub load: Duration,
    pub store_mib: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// With every row's pieces stored too (`embed::late`).
    pub bytes_pieces: u64,
    pub scan: Vec<Duration>,
    pub two_stage: Vec<Duration>,
    pub sqlite_scan: Vec<Duration>,
    /// A request's wake, every row queued: the SQL of the tick it brings forward (the
    /// newest `MAX_QUEUE_READ` queued ids read by `table::next_jobs`, and the counts' one
    /// row, `table::counts`) and the two tables counted whole, as the wake made each tick
    /// count them before.
    pub wake: (Vec<Duration>, Vec<Duration>),
    pub hybrid: Option<Hybrid>,
}

/// Recalls with the real model, each timed over the same queries.
pub struct Hybrid {
    /// With vectors, as memoryd recalls: the halves side by side, late interaction.
    pub beside: Vec<Duration>,
    /// The same recall on one thread: the embedding and the codes' scan, then the words.
    pub one_thread: Vec<Duration>,
    /// Lexical alone.
    pub without: Vec<Duration>,
    /// The query's embedding alone.
    pub embedding: Vec<Duration>,
    /// With vectors on one thread, without late interaction (the merge's order).
    pub merge: Vec<Duration>,
}

pub fn model_dir() -> Option<PathBuf> {
    let venv = std::env::var_os("BOXMAKER_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv"));
    let dir = venv.join("share").join("all-minilm-l6-v2");
    dir.join("model.safetensors").exists().then_some(dir)
}

pub fn unit(rng: &mut Rng) -> [f32; DIM] {
    let mut v = [0f32; DIM];
    for x in v.iter_mut() {
        // A sum of uniforms is near enough to Gaussian for directions spread evenly.
        *x = (0..4)
            .map(|_| (rng.next() % 2001) as f32 / 1000.0 - 1.0)
            .sum();
    }
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
    v
}

fn db_bytes(db: &Path) -> u64 {
    ["", "-wal"]
        .iter()
        .map(|s| {
            let mut p = db.as_os_str().to_owned();
            p.push(s);
            std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
        })
        .sum()
}

pub fn measure(index: &Index, queries: &[String]) -> VectorRun {
    let conn = index.conn();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    let bytes_before = db_bytes(index.db_path());
    let model = model_dir().map(|d| Embedder::load(&d).expect("embedding model"));
    if model.is_none() {
        eprintln!(
            "no embedding model (scripts/setup-python): throughput and recall with vectors skipped"
        );
    }

    let speed = model_dir().map(|d| super::speed::measure(&d, super::speed::DEFAULT_TEXTS, true));

    eprintln!("vectors: storing one code per row…");
    let t = Instant::now();
    table::prepare(conn, "bench").unwrap();
    let ids: Vec<i64> = conn
        .prepare("SELECT id FROM docs_content")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut rng = Rng::new(42);
    for chunk in ids.chunks(8_192) {
        let tx = conn.unchecked_transaction().unwrap();
        {
            // An upsert, as `table::store` writes: a REPLACE would be counted twice by
            // the count triggers on an index that already has the codes.
            let mut put = tx
                .prepare_cached(
                    "INSERT INTO vecs (id, class, code) VALUES (?1, 1, ?2)
                     ON CONFLICT (id) DO UPDATE SET code = excluded.code",
                )
                .unwrap();
            for &id in chunk {
                put.execute(rusqlite::params![
                    id,
                    quant::to_bytes(&quant::encode(&unit(&mut rng)))
                ])
                .unwrap();
            }
        }
        tx.execute("DELETE FROM embed_queue", []).unwrap();
        tx.commit().unwrap();
    }
    let fill = t.elapsed();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    let bytes_after = db_bytes(index.db_path());
    eprintln!("vectors: storing {PIECES_PER_ROW} pieces a row…");
    for chunk in ids.chunks(8_192) {
        let tx = conn.unchecked_transaction().unwrap();
        {
            let mut put = tx
                .prepare_cached("INSERT OR REPLACE INTO vec_pieces (id, pieces) VALUES (?1, ?2)")
                .unwrap();
            for &id in chunk {
                let pieces: Vec<_> = (0..PIECES_PER_ROW)
                    .map(|_| memoryd::embed::late::sign_code(&unit(&mut rng)))
                    .collect();
                put.execute(rusqlite::params![
                    id,
                    memoryd::embed::late::to_bytes(&pieces)
                ])
                .unwrap();
            }
        }
        tx.commit().unwrap();
    }
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    let bytes_pieces = db_bytes(index.db_path());

    eprintln!("vectors: a request's wake, every row queued…");
    // Every row queued again, as after an upgrade (each keeps its code and waits for its
    // pieces): the most a tick's look at the queue and the count of it can face.
    conn.execute(
        "INSERT OR IGNORE INTO embed_queue (id) SELECT id FROM docs_content",
        [],
    )
    .unwrap();
    let counted = table::Counts {
        stored: table::stored(conn).unwrap(),
        pending: table::pending(conn).unwrap(),
    };
    assert_eq!(
        table::counts(conn).unwrap(),
        counted,
        "the kept counts are exact"
    );
    let wake = |f: &dyn Fn() -> u64| -> Vec<Duration> {
        let mut d: Vec<Duration> = (0..WAKES)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(f());
                t.elapsed()
            })
            .collect();
        d.sort_unstable();
        d
    };
    assert_eq!(counted.pending, ids.len() as u64);
    // The SQL of the tick a wake brings forward, at its bound: the newest
    // `MAX_QUEUE_READ` queued ids read with their rows (`JOB_QUEUE` of them handed on, the
    // rest passed over as the rows in flight and set aside are), then the counts' row.
    let passed_over = MAX_QUEUE_READ - JOB_QUEUE;
    let kept = wake(&|| {
        let jobs = table::next_jobs(conn, JOB_QUEUE, |_| false, passed_over).unwrap();
        let c = table::counts(conn).unwrap();
        jobs.len() as u64 + c.stored + c.pending
    });
    let scanned = wake(&|| table::stored(conn).unwrap() + table::pending(conn).unwrap());
    conn.execute("DELETE FROM embed_queue", []).unwrap();

    eprintln!("vectors: loading them as memoryd does…");
    let base = rss_kib();
    let t = Instant::now();
    let mut store = Store::default();
    let mut after = i64::MIN;
    while let (codes, Some(last)) =
        table::load_slice(conn, after, memoryd::embed::vectors::LOAD_SLICE).unwrap()
    {
        for (id, class, code) in &codes {
            store.put(*id, u8::try_from(*class).unwrap(), code);
        }
        after = last;
    }
    let load = t.elapsed();
    let store_mib = rss_kib().saturating_sub(base) / 1024;
    assert_eq!(store.len(), ids.len());

    eprintln!("vectors: scans…");
    let mut qrng = Rng::new(99);
    let qcodes: Vec<Code> = (0..queries.len())
        .map(|_| quant::encode(&unit(&mut qrng)))
        .collect();
    let mut i = 0;
    let scan = latencies(queries, |_| {
        i = (i + 1) % qcodes.len();
        store
            .nearest_exact(&qcodes[i], 1, 50, memoryd::embed::vectors::MIN_COSINE)
            .len()
    });
    let two_stage = latencies(queries, |_| {
        i = (i + 1) % qcodes.len();
        store
            .nearest_two_stage(
                &qcodes[i],
                1,
                50,
                memoryd::embed::vectors::MIN_COSINE,
                RESCORE,
            )
            .len()
    });
    // Not `latencies`: its hundred warm-up queries would be minutes here.
    let mut sqlite_scan: Vec<Duration> = (0..SQLITE_SCANS)
        .map(|n| {
            let t = Instant::now();
            let q = &qcodes[n];
            let mut stmt = conn.prepare_cached("SELECT id, code FROM vecs").unwrap();
            let mut best = (f32::MIN, 0i64);
            let mut rows = stmt.query([]).unwrap();
            while let Some(r) = rows.next().unwrap() {
                let blob = r.get_ref(1).unwrap().as_blob().unwrap();
                if let Some(c) = quant::from_bytes(blob) {
                    let s = quant::dot(&q.q, &c.q) as f32 * c.inv_scale;
                    if s > best.0 {
                        best = (s, r.get(0).unwrap());
                    }
                }
            }
            std::hint::black_box(best.1);
            t.elapsed()
        })
        .collect();
    sqlite_scan.sort_unstable();

    let hybrid = model.as_ref().map(|m| {
        eprintln!("vectors: recall with vectors…");
        let asker = Asker::new(m, &store);
        let beside = latencies(queries, |q| {
            let request = Request {
                query: q,
                max_class: DataClass::Private,
                limit: super::LIMIT,
                now: memoryd::query::time::today(),
            };
            memoryd::hybrid::recall_beside(index, asker, &|_| true, request)
                .unwrap()
                .len()
        });
        let one_thread = latencies(queries, |q| {
            let (v, pieces) = m.embed_question(q).unwrap();
            let near = store.nearest(
                &quant::encode(&v),
                1,
                50,
                memoryd::embed::vectors::MIN_COSINE,
            );
            memoryd::hybrid::recall_late(
                index,
                &near,
                &pieces,
                q,
                DataClass::Private,
                super::LIMIT,
                memoryd::query::time::today(),
            )
            .unwrap()
            .len()
        });
        let merge = latencies(queries, |q| {
            let v = m.embed(&[q]).unwrap();
            let near = store.nearest(
                &quant::encode(&v[0]),
                1,
                50,
                memoryd::embed::vectors::MIN_COSINE,
            );
            memoryd::hybrid::recall_with(
                index,
                &near,
                q,
                DataClass::Private,
                super::LIMIT,
                memoryd::query::time::today(),
            )
            .unwrap()
            .len()
        });
        let without = latencies(queries, |q| {
            index
                .search(q, DataClass::Private, super::LIMIT)
                .unwrap()
                .len()
        });
        let embedding = latencies(queries, |q| m.embed(&[q]).unwrap().len());
        Hybrid {
            beside,
            one_thread,
            without,
            embedding,
            merge,
        }
    });
    let _ = peak_kib();
    VectorRun {
        rows: ids.len(),
        speed,
        fill,
        load,
        store_mib,
        bytes_before,
        bytes_after,
        bytes_pieces,
        scan,
        two_stage,
        sqlite_scan,
        wake: (kept, scanned),
        hybrid,
    }
}

pub fn print(r: &VectorRun) {
    println!(
        "\n### vectors ({} rows, one code each; sequential layout's index)\n",
        r.rows
    );
    println!("| measure | value | against | ratio |");
    println!("|---|---:|---:|---:|");
    println!(
        "| index size on disk | {:.0} MiB with vectors | {:.0} MiB text only | {:.2} |",
        r.bytes_after as f64 / 1048576.0,
        r.bytes_before as f64 / 1048576.0,
        r.bytes_after as f64 / r.bytes_before.max(1) as f64
    );
    println!(
        "| index size on disk, with {PIECES_PER_ROW} pieces a row too | {:.0} MiB | {:.0} MiB with vectors | {:.2} |",
        r.bytes_pieces as f64 / 1048576.0,
        r.bytes_after as f64 / 1048576.0,
        r.bytes_pieces as f64 / r.bytes_after.max(1) as f64
    );
    println!(
        "| storing the codes (bench fill, not the backfill) | {:.1} s | | |",
        r.fill.as_secs_f64()
    );
    println!(
        "| loading the codes into memory (start-up, in slices) | {:.1} s, {} MiB RSS | | |",
        r.load.as_secs_f64(),
        r.store_mib
    );
    for (name, p) in [("p50", 0.5), ("p99", 0.99)] {
        let (a, b) = (pct(&r.two_stage, p), pct(&r.scan, p));
        println!(
            "| vector search {name}: two stages (sign codes, {RESCORE} rescored) vs exact scan of every code | {:.2} ms | {:.2} ms | {:.3} |",
            ms(a),
            ms(b),
            a.as_secs_f64() / b.as_secs_f64()
        );
    }
    for (name, p) in [("p50", 0.5), ("p99", 0.99)] {
        let (a, b) = (pct(&r.scan, p), pct(&r.sqlite_scan, p));
        println!(
            "| vector scan {name}: exact scan of the codes in memory vs blobs scanned from SQLite | {:.2} ms | {:.2} ms | {:.3} |",
            ms(a),
            ms(b),
            a.as_secs_f64() / b.as_secs_f64()
        );
    }
    for (name, p) in [("p50", 0.5), ("p99", 0.99)] {
        let (a, b) = (pct(&r.wake.0, p), pct(&r.wake.1, p));
        println!(
            "| a request's wake {name}, every row queued: its tick's SQL ({MAX_QUEUE_READ} newest queued ids with their rows, the counts' one row) vs count(*) of the codes and the queue (before) | {:.3} ms | {:.3} ms | {:.4} |",
            ms(a),
            ms(b),
            a.as_secs_f64() / b.as_secs_f64()
        );
    }
    if let Some(h) = &r.hybrid {
        let search = if r.rows > EXACT_UP_TO {
            "two stages"
        } else {
            "exact scan"
        };
        let rows: [(String, &Vec<Duration>, &Vec<Duration>); 4] = [
            (
                format!("hybrid as memoryd recalls (query embedding + vector search, {search}, beside lexical; fusion) vs lexical alone"),
                &h.beside,
                &h.without,
            ),
            (
                "hybrid, the halves side by side vs on one thread (before)".into(),
                &h.beside,
                &h.one_thread,
            ),
            (
                "hybrid on one thread, with late interaction vs the merge's order alone".into(),
                &h.one_thread,
                &h.merge,
            ),
            (
                "the query's embedding (alone) vs hybrid as memoryd recalls".into(),
                &h.embedding,
                &h.beside,
            ),
        ];
        for (what, a, b) in rows {
            for (name, p) in [("p50", 0.5), ("p99", 0.99)] {
                let (a, b) = (pct(a, p), pct(b, p));
                println!(
                    "| recall {name}: {what} | {:.2} ms | {:.2} ms | {:.2} |",
                    ms(a),
                    ms(b),
                    a.as_secs_f64() / b.as_secs_f64()
                );
            }
        }
    }
    match &r.speed {
        Some(s) => super::speed::print(s),
        None => println!("\nembedding speed: no model"),
    }
    println!("\npeak RSS of the whole run: {} MiB", peak_kib() / 1024);
}
