//! `scripts/bench hostile [BEFORE_LOOPD]`: loopd against a model server that answers every
//! turn with a `read_file` call whose arguments are 7.5 MB while reporting small token
//! counts, eight turns in a row; for this tree's loopd and, when given, another build of
//! it (`BOXMAKER_BENCH_BEFORE`, e.g. an older release binary). Prints loopd's peak and
//! final resident set and how much the session's log grew. Built only with the `bench`
//! feature (docs/testing.md, 'Benchmarks').

use super::write_config;
use crate::support::standin::{text, tool_call_in_pieces, Standin};
use crate::support::{bin, Daemon, Fixture, LineClient};
use std::path::PathBuf;
use std::process::Command;

/// The arguments' size the hostile server sends (the case as it was found).
const ARGUMENT_BYTES: usize = 7_500_000;

/// The most bytes of arguments per streamed chunk: llama.cpp sends a token at a time, so
/// no line of its stream is long however long the call.
const PIECE: usize = 4096;

/// Turns per build.
const TURNS: usize = 8;

fn builds() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    if let Some(before) = std::env::var_os("BOXMAKER_BENCH_BEFORE") {
        out.push(("before".to_string(), PathBuf::from(before)));
    }
    out.push(("after".to_string(), bin("loopd")));
    out
}

fn log_bytes(fx: &Fixture) -> u64 {
    std::fs::read_dir(fx.state_dir.join("sessions/main"))
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn bench_huge_tool_arguments() {
    println!(
        "### loopd under a server sending {ARGUMENT_BYTES}-byte tool arguments, {TURNS} turns\n"
    );
    println!(
        "| build | peak RSS (MiB) | RSS after (MiB) | log grew (MiB) | replies that were errors |"
    );
    println!("|---|---|---|---|---|");
    let path = format!("/{}", "a".repeat(ARGUMENT_BYTES - 12));
    let args = serde_json::json!({ "path": path }).to_string();
    for (name, binary) in builds() {
        let fx = Fixture::new("");
        let llama = Standin::start(super::N_CTX);
        write_config(&fx, &llama.url, "", "", "");
        for _ in 0..TURNS {
            llama.push(tool_call_in_pieces("c1", "read_file", &args, PIECE));
            llama.push(text(&["ok"]));
        }
        let mut cmd = Command::new(&binary);
        cmd.arg("--config")
            .arg(&fx.config)
            .env_remove("LISTEN_PID")
            .env_remove("LISTEN_FDS");
        let mut d = Daemon::spawn(cmd, &fx);
        d.ready();
        let before = log_bytes(&fx);
        let mut c = LineClient::connect(&fx.loopd_sock);
        let mut errors = 0;
        let mut first_error = None;
        for i in 0..TURNS {
            let reply = c.ask(&format!("turn {i}"));
            if let Some(e) = reply.iter().find(|l| l.starts_with("error:")) {
                errors += 1;
                first_error.get_or_insert_with(|| e.chars().take(160).collect::<String>());
            }
        }
        if let Some(e) = first_error {
            eprintln!("{name}: first error reply: {e}");
        }
        let grew = log_bytes(&fx).saturating_sub(before);
        println!(
            "| {name} | {:.1} | {:.1} | {:.1} | {errors} of {TURNS} |",
            d.peak_rss_kib() as f64 / 1024.0,
            d.rss_kib() as f64 / 1024.0,
            grew as f64 / (1024.0 * 1024.0)
        );
    }
}
