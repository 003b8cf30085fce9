//! `scripts/bench memory-turn [BEFORE_DIR]`: memory in the turn under a pipelining client.
//! One session holds `ROWS` pasted documents of `WORDS` words each, indexed by memoryd
//! before the run; then one client pipelines `LINES` short questions about them on a new
//! session against the scripted stand-in, and the bench counts the lines answered and
//! the lines a second, with `memory.auto_recall` off and on, for this tree and (when
//! given, `BOXMAKER_BENCH_BEFORE`) another build, in the same run. A memory record that
//! grows the prompt by whole documents a turn shows as a collapse of the "on" column
//! against the "off" one (docs/turn.md, 'Memory in the turn'). Built only with the
//! `bench` feature (docs/testing.md, 'Benchmarks'); the script prints the table.

use super::bench::{builds, start_from};
use crate::loopd::{write_config_with, write_session, N_CTX};
use crate::support::frames;
use crate::support::standin::{text, Standin};
use crate::support::{Fixture, LineClient};
use proto::memory::{Request, Response};
use serde_json::json;
use std::io::{BufRead, BufReader, Write};

use std::time::{Duration, Instant};

/// Pasted documents in the archive session, and the words of each.
const ROWS: usize = 200;
const WORDS: usize = 12_000;

/// Lines the client pipelines.
const LINES: usize = 2_000;

/// How long one run may go on: the run stops there and counts what was answered, so a
/// build whose turns slow down as the prompt grows is measured without taking the whole
/// bench's time. Guard, not assertion: lines a second are reported either way.
const RUN_FOR: Duration = Duration::from_secs(40);

/// How long memoryd may take to index the archive before the bench gives up.
const INDEX_WITHIN: Duration = Duration::from_secs(300);

/// Sentences a document is made of: prose with the function words of prose, as a pasted
/// report or email is, each naming a few things the questions ask about.
const SENTENCES: &[&str] = &[
    "The quarterly report describes the shipping volumes along the northern route.",
    "Warehouse staffing was short in the autumn because two supervisors left.",
    "The supplier contracts for cardboard and tape are renewed every spring.",
    "Weather delays slowed the deliveries to the coastal stores for a week.",
    "The new forklift in the east hall needs a service before the winter.",
    "Customer complaints about late parcels fell after the night shift started.",
    "The budget for overtime was spent by the end of the second month.",
    "A fire drill in the loading bay found two blocked exits and a broken alarm.",
    "The accounts team asked for the invoices from the harbour office again.",
    "Fuel prices rose, so the trucks now wait until they are full before leaving.",
    "The training plan for new drivers covers the mountain roads and the ferries.",
    "Inventory counts in the cold store did not match the system twice this year.",
];

/// Questions the owner pipelines, each about what some sentence says.
const QUESTIONS: &[&str] = &[
    "what about the shipping volumes on the northern route?",
    "why was the warehouse staffing short?",
    "when are the supplier contracts renewed?",
    "what slowed the deliveries to the coastal stores?",
    "does the forklift need a service?",
    "did the complaints about late parcels fall?",
    "when was the overtime budget spent?",
    "what did the fire drill in the loading bay find?",
    "which invoices did the accounts team ask for?",
    "why do the trucks wait until they are full?",
    "what does the training plan for new drivers cover?",
    "did the inventory counts in the cold store match?",
];

/// Document `n`: `WORDS` words of `SENTENCES` in an order of its own.
fn document(n: usize) -> String {
    let mut seed = (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut out = format!("Pasted document {n}. ");
    let mut words = 0;
    while words < WORDS {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let s = SENTENCES[(seed % SENTENCES.len() as u64) as usize];
        out.push_str(s);
        out.push(' ');
        words += s.split_whitespace().count();
    }
    out
}

/// Writes the archive session into `fx`'s state directory.
fn write_archive(fx: &Fixture) {
    let head = json!({
        "epoch": 0, "started": "2026-10-02T08:00:00.000Z", "system": "You are terse.",
        "tools": [], "carry": null, "carry_label": {"class": "private", "untrusted": false},
        "reason": "start", "summary_source": "model"
    });
    let lines: Vec<_> = (0..ROWS)
        .map(|n| {
            json!({
                "type": "user", "time": format!("2026-10-02T08:{:02}:{:02}.000Z", n / 60, n % 60),
                "content": document(n), "origin": "owner"
            })
        })
        .collect();
    write_session(fx, "archive", &head, &lines);
}

/// Waits until memoryd has indexed every document.
fn wait_indexed(fx: &Fixture) -> Duration {
    let started = Instant::now();
    loop {
        if let Ok(Response::Status(s)) = frames::ask(&fx.memoryd_sock, &Request::Status) {
            if s.rows >= ROWS as u64 {
                return started.elapsed();
            }
        }
        assert!(
            started.elapsed() < INDEX_WITHIN,
            "memoryd did not index {ROWS} rows within {INDEX_WITHIN:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

struct Run {
    answered: usize,
    errors: usize,
    secs: f64,
    memory_records: usize,
    memory_chars: usize,
}

/// One client pipelining `LINES` questions on session `pipe` until all are answered or
/// `RUN_FOR` has passed.
fn pipeline(fx: &Fixture) -> Run {
    let mut c = LineClient::connect(&fx.loopd_sock);
    c.ask("/session pipe");
    let mut writer = c.stream.try_clone().unwrap();
    let feeder = std::thread::spawn(move || {
        for i in 0..LINES {
            let line = format!("{}\n", QUESTIONS[i % QUESTIONS.len()]);
            // The server closes the connection when the run is over; the rest is unsent.
            if writer.write_all(line.as_bytes()).is_err() {
                break;
            }
        }
    });
    // Short reads, so the run ends on time even when no reply comes.
    c.stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut reader = BufReader::new(c.stream.try_clone().unwrap());
    let started = Instant::now();
    let (mut answered, mut errors, mut failed) = (0, 0, false);
    let mut line = String::new();
    while answered + errors < LINES && started.elapsed() < RUN_FOR {
        match reader.read_line(&mut line) {
            Ok(0) => break,
            Ok(_) if line.ends_with('\n') => {
                let l = line.trim_end_matches('\n');
                if l == "." {
                    if std::mem::take(&mut failed) {
                        errors += 1;
                    } else {
                        answered += 1;
                    }
                } else if l.starts_with("error: ") {
                    failed = true;
                }
                line.clear();
            }
            // A part of a line, or nothing within the read timeout: keep what came.
            Ok(_) | Err(_) => {}
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let _ = c.stream.shutdown(std::net::Shutdown::Both);
    let _ = feeder.join();
    Run {
        answered,
        errors,
        secs,
        memory_records: 0,
        memory_chars: 0,
    }
}

/// Counts the `memory` records of session `pipe` into `run`, once loopd is stopped; a
/// line it was writing when stopped is passed over.
fn count_memory(fx: &Fixture, run: &mut Run) {
    let log = fx.state_dir.join("sessions/pipe/epoch-000000.jsonl");
    let text = std::fs::read_to_string(log).unwrap_or_default();
    for r in text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
    {
        if r["type"] == "memory" {
            run.memory_records += 1;
            run.memory_chars += r["content"].as_str().map_or(0, |c| c.chars().count());
        }
    }
}

#[test]
fn memory_turn_pipelined() {
    println!(
        "### memory in the turn, pipelined: {ROWS} documents of {WORDS} words indexed, then one client pipelining {LINES} short lines on a new session (stand-in model; each run stops after {} s)\n",
        RUN_FOR.as_secs()
    );
    println!("| build | memory in the turn | lines answered | error replies | seconds | lines a second | vs off | memory records | mean memory record (chars) |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for (build, dir) in builds() {
        let mut off_rate = None;
        for auto in [false, true] {
            let fx = Fixture::new("");
            let llama = Standin::start(N_CTX);
            llama.set_fallback(text(&["Noted."]));
            write_config_with(
                &fx,
                &llama.url,
                "",
                "",
                &format!("auto_recall = {auto}"),
                "",
            );
            write_archive(&fx);
            let _memoryd = start_from(&dir, "memoryd", &fx);
            let indexed = wait_indexed(&fx);
            eprintln!("[bench] {build}: indexed in {:.1} s", indexed.as_secs_f64());
            let loopd = start_from(&dir, "loopd", &fx);
            let mut run = pipeline(&fx);
            drop(loopd);
            count_memory(&fx, &mut run);
            let rate = run.answered as f64 / run.secs;
            let vs = match off_rate {
                None => {
                    off_rate = Some(rate);
                    "1.00".to_string()
                }
                Some(off) => format!("{:.2}", rate / off),
            };
            println!(
                "| {build} | {} | {}/{LINES} | {} | {:.1} | {:.0} | {vs} | {} | {} |",
                if auto { "on" } else { "off" },
                run.answered,
                run.errors,
                run.secs,
                rate,
                run.memory_records,
                run.memory_chars
                    .checked_div(run.memory_records)
                    .unwrap_or(0),
            );
        }
    }
}
