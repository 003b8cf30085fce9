//! The backfill end to end (`--backfill [RECORDS]`): the real `memoryd` binary started on
//! a log of `speed`'s chat-length texts (the same generator: median about fifty word
//! pieces) with the embedding model configured, timed from its "caught up" line
//! until `Status` says every indexed row has its vector. That is the worker's whole path
//! (the queue read from SQLite, batches to the embedding thread, the codes written back
//! and loaded), where `--speed` times `Embedder::embed_on` alone. Beside it, in the same
//! run, `embed_on` on a sample of the same texts, as the worker calls it: the ratio is
//! what the daemon's own work around the model costs.

use super::corpus::write_texts;
use memoryd::embed::model::Embedder;
use memoryd::embed::worker::{BATCH, THREADS};
use proto::frame::{read_frame, write_frame, FrameError};
use proto::memory::{MemoryStatus, Request, Response};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub const DEFAULT_RECORDS: usize = 20_000;

/// How often `Status` is asked: the end is known to within this.
const POLL: Duration = Duration::from_millis(250);

/// Texts of the same corpus `embed_on` is timed on: about twenty seconds of work.
const SAMPLE: usize = 2_048;

pub fn run(model: &Path, records: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let texts = super::speed::texts(records);
    write_texts(&state, &texts);
    let socket = dir.path().join("memoryd.sock");
    let config = dir.path().join("boxmaker.toml");
    std::fs::write(
        &config,
        format!(
            "state_dir = {:?}\n\n[memory]\nsocket = {:?}\nembed_model = {:?}\n",
            state.display().to_string(),
            socket.display().to_string(),
            model.display().to_string()
        ),
    )
    .expect("write config");
    // Built beside this example by `scripts/bench memory`.
    let exe = std::env::current_exe().expect("current exe");
    let binary = exe
        .parent()
        .and_then(Path::parent)
        .expect("target dir")
        .join("memoryd");
    eprintln!(
        "backfill: {records} records; starting {}…",
        binary.display()
    );
    let mut child = Command::new(&binary)
        .arg("--config")
        .arg(&config)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start memoryd");
    let (tx, caught_up) = mpsc::channel();
    let stderr = child.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("caught up") {
                let _ = tx.send(Instant::now());
            }
        }
    });
    let start = caught_up
        .recv_timeout(Duration::from_secs(600))
        .expect("memoryd caught up");
    let mut last = MemoryStatus::default();
    let end = loop {
        std::thread::sleep(POLL);
        last = status(&socket).unwrap_or(last);
        if last.vectors_pending == 0 && last.vectors >= last.rows && last.rows > 0 {
            break Instant::now();
        }
        assert!(
            child.try_wait().expect("memoryd's state").is_none(),
            "memoryd ended during the backfill"
        );
    };
    let _ = child.kill();
    let _ = child.wait();
    let took = end.duration_since(start).as_secs_f64();
    let daemon = last.vectors as f64 / took;

    eprintln!("backfill: embed_on on {SAMPLE} of the same texts…");
    let embedder = Embedder::load(model).expect("embedding model");
    let sample: Vec<&str> = texts.iter().take(SAMPLE).map(String::as_str).collect();
    let t = Instant::now();
    for batch in sample.chunks(BATCH) {
        std::hint::black_box(embedder.embed_on(batch, THREADS).expect("embed"));
    }
    let bare = sample.len() as f64 / t.elapsed().as_secs_f64();

    println!(
        "\n### the backfill end to end ({} rows, the real memoryd, {THREADS} threads)\n",
        last.vectors
    );
    println!("| path | records/s | a million records |");
    println!("|---|---:|---:|");
    let hours = |r: f64| 1e6 / r / 3600.0;
    println!(
        "| memoryd's backfill (caught up → every row with its vector: {took:.1} s) | {daemon:.1} | {:.2} h |",
        hours(daemon)
    );
    println!(
        "| `embed_on` alone, batches of {BATCH}, {SAMPLE} of the same texts | {bare:.1} | {:.2} h |",
        hours(bare)
    );
    println!("| backfill / `embed_on` | {:.2} | |", daemon / bare);
}

fn status(socket: &Path) -> Option<MemoryStatus> {
    let answer = plumbing::dial::exchange(
        socket,
        Duration::from_secs(30),
        |s| write_frame(s, &Request::Status),
        read_frame,
        FrameError::io,
    )
    .ok()?;
    match answer {
        Response::Status(s) => Some(s),
        _ => None,
    }
}
