//! `scripts/bench ux [BEFORE_LOOPD]`: the turn as the owner lives it, for this tree's
//! loopd and, when given, another build of it (`BOXMAKER_BENCH_BEFORE`, say main's), in
//! the same run: the time to a compacting turn's `.` when the model takes seconds to
//! summarise, and `prompt_n` of the first turn after a llama.cpp restart. Built only with
//! the `bench` feature (docs/testing.md, 'Benchmarks'); the script prints the tables.

use super::restore::{real_config, usages};
use super::{write_config, N_CTX};
use crate::support::real_llama::{own_llama, CTX_PER_SLOT};
use crate::support::standin::{text, text_with, Gate, Reply, Standin};
use crate::support::{bin, Daemon, Fixture, LineClient};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// How long the stand-in takes to answer the summary call: a real model writing an
/// 8 000-character summary takes minutes; seconds are enough to see who waits for it.
const SUMMARY_TAKES: Duration = Duration::from_secs(3);

/// Compacting turns timed per build.
const RUNS: usize = 3;

/// Over `0.85 × N_CTX`: the turn that reports these is due.
const OVER: (u64, u64, u64) = (3000, 482, 10);

/// The builds to compare: (name, loopd binary, whether it knows slot saves).
fn builds() -> Vec<(String, PathBuf, bool)> {
    let mut out = Vec::new();
    if let Some(before) = std::env::var_os("BOXMAKER_BENCH_BEFORE") {
        out.push(("before".to_string(), PathBuf::from(before), false));
    }
    out.push(("after".to_string(), bin("loopd"), true));
    out
}

fn start(binary: &PathBuf, fx: &Fixture) -> Daemon {
    let mut cmd = Command::new(binary);
    cmd.arg("--config")
        .arg(&fx.config)
        .env_remove("LISTEN_PID")
        .env_remove("LISTEN_FDS");
    let mut d = Daemon::spawn(cmd, fx);
    d.ready();
    d
}

fn one_compacting_turn(binary: &PathBuf) -> Duration {
    let fx = Fixture::new("");
    let llama = Standin::start(N_CTX);
    write_config(&fx, &llama.url, "retries = 2", "", "");
    let _d = start(binary, &fx);
    let gate = Gate::new();
    llama.push(text_with(&["one"], OVER));
    llama.push(Reply::Held(gate.clone(), Box::new(text(&["the summary"]))));
    let opener = std::thread::spawn({
        let gate = gate.clone();
        move || {
            std::thread::sleep(SUMMARY_TAKES);
            gate.open();
        }
    });
    let mut c = LineClient::connect(&fx.loopd_sock);
    let sent = Instant::now();
    c.ask("first");
    let took = sent.elapsed();
    opener.join().unwrap();
    took
}

#[test]
fn time_to_the_dot_on_a_compacting_turn() {
    // A line of its own: the test harness has written the test's name before it.
    println!();
    println!(
        "### time to `.` on a compacting turn (summary call answered after {} s)",
        SUMMARY_TAKES.as_secs()
    );
    println!("| loopd | median ms to `.` | worst ms | ratio to the first |");
    println!("|---|---|---|---|");
    let mut first = None;
    for (name, binary, _) in builds() {
        let mut v: Vec<Duration> = (0..RUNS).map(|_| one_compacting_turn(&binary)).collect();
        v.sort();
        let median = v[RUNS / 2].as_secs_f64() * 1000.0;
        let worst = v[RUNS - 1].as_secs_f64() * 1000.0;
        let base = *first.get_or_insert(median);
        println!(
            "| {name} | {median:.1} | {worst:.1} | {:.4} |",
            median / base
        );
    }
}

#[test]
fn prompt_n_of_the_first_turn_after_a_llama_restart() {
    println!();
    println!("### the first turn after a llama.cpp restart (SmolLM2, {CTX_PER_SLOT} per slot, --slot-save-path)");
    println!("| loopd | turn before the restart: cache_n + prompt_n | after: cache_n | after: prompt_n | prompt_n ratio to the first |");
    println!("|---|---|---|---|---|");
    let mut first = None;
    for (name, binary, saves) in builds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().display().to_string();
        let Some(mut llama) = own_llama(&["--slot-save-path", &path]) else {
            return;
        };
        let fx = Fixture::new("");
        let extra = if saves { "slot_save_idle_s = 1" } else { "" };
        real_config(&fx, &llama.url, extra);
        let d = start(&binary, &fx);
        let mut c = LineClient::connect(&fx.loopd_sock);
        c.ask("Say hello.");
        c.ask("Name a colour.");
        if saves {
            d.wait_log("saved slot 0");
        }
        llama.restart();
        c.ask("Name a fruit.");
        let u = usages(&fx);
        let (before, after) = (u[1], u[2]);
        let base = *first.get_or_insert(after.1.max(1) as f64);
        println!(
            "| {name} | {} | {} | {} | {:.3} |",
            before.0 + before.1,
            after.0,
            after.1,
            after.1 as f64 / base
        );
    }
}
