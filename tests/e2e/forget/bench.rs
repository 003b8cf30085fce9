//! The cost of a forget on a long history: `/forget QUERY` (the search reads every log of
//! the session), `/forget all` (the affected logs rewritten and fsynced, the session
//! reopened, the slots erased), and the first turn after it against a normal turn, with
//! the stand-in llama.cpp (which reads a prompt at no cost: the re-read a real server
//! pays is in docs/forgetting.md). Compiled only with the crate's `bench` feature (timings on
//! a shared machine assert nothing): `scripts/bench forget`.

use crate::loopd::{write_config, write_session, Loopd, N_CTX};
use crate::support::records::{assistant, usage, user};
use crate::support::standin::{text, Standin};
use crate::support::{Daemon, Fixture};
use serde_json::{json, Value};
use std::io::Write;
use std::time::{Duration, Instant};

/// Records per closed epoch: an epoch a context of a few thousand tokens closes is of
/// this order once tool results are in it.
const PER_EPOCH: usize = 1000;

/// Turns timed before and after the forget.
const TURNS: usize = 5;

const PHRASE: &str = "quartz meadow 5521";

fn head(epoch: usize) -> Value {
    json!({"epoch": epoch, "started": "2026-11-30T06:00:00.000Z", "system": "You are terse.",
        "tools": [], "carry": null, "carry_label": {"class": "public", "untrusted": false},
        "reason": if epoch == 0 { "start" } else { "manual" }, "summary_source": "model"})
}

fn record(i: usize, phrase: bool) -> Value {
    let said = if phrase {
        format!(" {PHRASE}")
    } else {
        String::new()
    };
    let record = match i % 3 {
        0 => user(&format!(
            "message number {i}, asking something of moderate length{said}"
        )),
        1 => assistant(&format!(
            "answer number {i}: a reply of a sentence or two, as a terse assistant gives"
        )),
        _ => usage(i as u64, 20, 30),
    };
    serde_json::to_value(&record).unwrap()
}

/// A session of `records` records in closed epochs of `PER_EPOCH`, then a short open
/// epoch; the phrase is in a user record of the first epoch and of the open one.
fn write_history(fx: &Fixture, records: usize) {
    let closed = records.div_ceil(PER_EPOCH);
    for e in 0..closed {
        let n = PER_EPOCH.min(records - e * PER_EPOCH);
        let lines: Vec<Value> = (0..n).map(|i| record(i, e == 0 && i == 3)).collect();
        write_session(fx, "main", &head(e), &lines);
    }
    let lines: Vec<Value> = (0..6).map(|i| record(i, i == 3)).collect();
    write_session(fx, "main", &head(closed), &lines);
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[test]
fn forget_on_a_long_history() {
    let mut rows = Vec::new();
    for records in [1_000, 10_000, 100_000] {
        let fx = Fixture::new("");
        let llama = Standin::start(N_CTX);
        llama.set_fallback(text(&["ok"]));
        write_config(&fx, &llama.url, "retries = 2", "", "");
        write_history(&fx, records);
        let daemon = Daemon::start("loopd", &fx);
        let l = Loopd { fx, llama, daemon };
        let mut c = l.client();
        let turn = |c: &mut crate::support::LineClient, i: usize| {
            let t = Instant::now();
            c.ask(&format!("hello {i}"));
            t.elapsed()
        };
        turn(&mut c, 0);
        let before = median((1..=TURNS).map(|i| turn(&mut c, i)).collect());
        let t = Instant::now();
        let list = c.ask("/forget Quartz Meadow").join("\n");
        let listed = t.elapsed();
        assert!(list.starts_with("2 entries"), "{list}");
        let t = Instant::now();
        let reply = c.ask("/forget all").join("\n");
        let removed = t.elapsed();
        assert!(reply.starts_with("forgot 2 records"), "{reply}");
        let first = turn(&mut c, 100);
        let after = median((101..=100 + TURNS).map(|i| turn(&mut c, i)).collect());
        rows.push(format!(
            "| {records} | {} | {} | {} | {} | {} | {} |",
            records.div_ceil(PER_EPOCH) + 1,
            ms(listed),
            ms(removed),
            ms(before),
            ms(first),
            ms(after)
        ));
    }
    println!("\n### a forget on a long history (stand-in llama.cpp, memoryd not running)\n");
    println!("| records in history | epochs | `/forget QUERY` ms | `/forget all` ms | normal turn ms (median of {TURNS}) | first turn after ms | later turns ms (median of {TURNS}) |");
    println!("|---|---|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
    let _ = std::io::stdout().flush();
}

/// `records` records spread over `sessions` sessions of one epoch each; the phrase in
/// one user record of every `holding`-th session.
fn write_box(fx: &Fixture, sessions: usize, records: usize, holding: usize) {
    let per = records / sessions;
    for s in 0..sessions {
        let lines: Vec<Value> = (0..per)
            .map(|i| record(i, s % holding == 0 && i == 3))
            .collect();
        write_session(fx, &format!("s{s}"), &head(0), &lines);
    }
}

#[test]
fn a_box_wide_forget_across_many_sessions() {
    const RECORDS: usize = 100_000;
    let mut rows = Vec::new();
    let mut base: Option<(Duration, Duration)> = None;
    // The same history in one session (the baseline of this run), then spread over a
    // thousand: the search reads every session's logs either way.
    for (sessions, holding) in [(1usize, 1usize), (100, 10), (1_000, 100)] {
        let fx = Fixture::new("");
        let llama = Standin::start(N_CTX);
        llama.set_fallback(text(&["ok"]));
        write_config(&fx, &llama.url, "retries = 2", "", "");
        write_box(&fx, sessions, RECORDS, holding);
        let daemon = Daemon::start("loopd", &fx);
        let l = Loopd { fx, llama, daemon };
        let mut c = l.client();
        let t = Instant::now();
        let list = c.ask("/forget Quartz Meadow").join("\n");
        let listed = t.elapsed();
        let found = sessions.div_ceil(holding);
        assert!(list.starts_with(&format!("{found} entries")), "{list}");
        let t = Instant::now();
        let reply = c.ask("/forget all").join("\n");
        let removed = t.elapsed();
        assert!(
            reply.starts_with(&format!("forgot {found} records")),
            "{reply}"
        );
        let (bl, br) = *base.get_or_insert((listed, removed));
        rows.push(format!(
            "| {RECORDS} | {sessions} | {found} | {} | {:.2} | {} | {:.2} |",
            ms(listed),
            listed.as_secs_f64() / bl.as_secs_f64(),
            ms(removed),
            removed.as_secs_f64() / br.as_secs_f64(),
        ));
    }
    println!("\n### a box-wide forget (stand-in llama.cpp, memoryd not running)\n");
    println!("| records on the box | sessions | sessions holding the text | `/forget QUERY` ms | × one session | `/forget all` ms | × one session |");
    println!("|---|---|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
    let _ = std::io::stdout().flush();
}
