//! `scripts/bench turn`: loopd's own latency per turn and the cost of opening a long
//! session. Built only with the `bench` feature (docs/testing.md, 'Benchmarks'): timings
//! on a shared machine assert nothing; the script runs them in release and prints
//! markdown tables.

use super::{write_config, write_session, Loopd, N_CTX};
use crate::support::standin::{text, Standin};
use crate::support::{Daemon, Fixture, LineClient};
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Turns measured, after `WARMUP` unmeasured ones.
const TURNS: usize = 200;
const WARMUP: usize = 10;

/// Records in the session the open benchmark reads.
const RECORDS: usize = 100_000;

fn pct(sorted: &[Duration], p: usize) -> f64 {
    let i = (sorted.len() * p / 100).min(sorted.len() - 1);
    sorted[i].as_secs_f64() * 1000.0
}

fn row(name: &str, mut v: Vec<Duration>) -> String {
    v.sort();
    format!("| {name} | {:.3} | {:.3} |", pct(&v, 50), pct(&v, 99))
}

/// The same request sent straight to the stand-in over a fresh connection, as loopd's
/// client does: (start → first byte at the server, last byte from the server → seen).
fn direct(url: &str, body: &str, llama: &Standin) -> (Duration, Duration) {
    let addr = url.strip_prefix("http://").unwrap();
    let started = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = Vec::new();
    s.read_to_end(&mut reply).unwrap();
    let seen = Instant::now();
    let r = llama.requests().pop().unwrap();
    (r.first_byte - started, seen - r.done.unwrap())
}

#[test]
fn turn_latency() {
    let l = Loopd::start("");
    let words: Vec<String> = (0..40).map(|i| format!("word{i} ")).collect();
    let pieces: Vec<&str> = words.iter().map(String::as_str).collect();
    l.llama.set_fallback(text(&pieces));
    let mut c = l.client();
    let (mut into, mut out, mut total) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..WARMUP + TURNS {
        let sent = Instant::now();
        c.send(&format!("message {i}"));
        c.block();
        let back = Instant::now();
        let r = l.llama.chats().pop().unwrap();
        if i >= WARMUP {
            let a = r.first_byte - sent;
            let b = back - r.done.unwrap();
            into.push(a);
            out.push(b);
            total.push(a + b);
        }
    }
    let body = l.llama.chats().pop().unwrap().body;
    let (mut d_in, mut d_out, mut d_total) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..WARMUP + TURNS {
        let (a, b) = direct(&l.llama.url, &body, &l.llama);
        d_in.push(a);
        d_out.push(b);
        d_total.push(a + b);
    }
    println!("\n### loopd added latency per turn ({TURNS} turns, stand-in answering 40 deltas)\n");
    println!("| path | p50 ms | p99 ms |\n|---|---|---|");
    println!(
        "{}",
        row("loopd: client line → first byte at llama.cpp", into)
    );
    println!(
        "{}",
        row("loopd: last byte from llama.cpp → `.` at the client", out)
    );
    println!("{}", row("loopd: both together", total));
    println!(
        "{}",
        row("direct: request start → first byte at llama.cpp", d_in)
    );
    println!(
        "{}",
        row("direct: last byte from llama.cpp → end seen", d_out)
    );
    println!("{}", row("direct: both together", d_total));
}

fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Starts loopd on `fx` and returns (open time in ms from its log, peak RSS in KiB).
fn open_once(fx: &Fixture) -> (String, u64) {
    let d = Daemon::start("loopd", fx);
    let line = d.wait_log("session main: opened");
    let ms = line.rsplit(" in ").next().unwrap_or("?").to_string();
    // A request that needs the worker proves the open is over before RSS is read.
    LineClient::connect(&fx.loopd_sock).ask("/session main");
    (ms, vm_hwm_kib(d.child.id()))
}

#[test]
fn open_a_long_session() {
    let llama = Standin::start(N_CTX);
    let head = json!({"epoch": 0, "started": "2026-11-30T06:00:00.000Z", "system": "You are terse.",
        "tools": [], "carry": null, "carry_label": {"class": "public", "untrusted": false},
        "reason": "start", "summary_source": "model"});
    let t = "2026-11-30T06:00:00.000Z";
    let lines: Vec<serde_json::Value> = (0..RECORDS)
        .map(|i| match i % 3 {
            0 => json!({"type": "user", "time": t, "content": format!("message number {i}, asking something of moderate length"), "origin": "owner"}),
            1 => json!({"type": "assistant", "time": t, "content": format!("answer number {i}: a reply of a sentence or two, as a terse assistant gives"), "tool_calls": []}),
            _ => json!({"type": "usage", "time": t, "slot": 0, "cache_n": i, "prompt_n": 20, "predicted_n": 30}),
        })
        .collect();
    let small = Fixture::new("");
    write_config(&small, &llama.url, "", "", "");
    write_session(&small, "main", &head, &lines[..3]);
    let big = Fixture::new("");
    write_config(&big, &llama.url, "", "", "");
    write_session(&big, "main", &head, &lines);
    let bytes = std::fs::metadata(big.state_dir.join("sessions/main/epoch-000000.jsonl"))
        .unwrap()
        .len();
    let (_, small_kib) = open_once(&small);
    let (ms, big_kib) = open_once(&big);
    println!(
        "\n### opening a session of {RECORDS} records ({:.1} MiB of log)\n",
        bytes as f64 / 1048576.0
    );
    println!("| measure | value |\n|---|---|");
    println!("| time to open (loopd's log) | {ms} |");
    println!(
        "| loopd peak RSS, 100 000 records | {:.1} MiB |",
        big_kib as f64 / 1024.0
    );
    println!(
        "| loopd peak RSS, 3 records | {:.1} MiB |",
        small_kib as f64 / 1024.0
    );
    let _ = std::io::stdout().flush();
}
