//! What loopd's Matrix channel adds to a reply: the same scripted turn asked on the socket
//! and from the phone (its message until loopd's `m.text` reaches the phone's long-poll),
//! and messages a second through one room, each answered. Compiled only with the crate's
//! `bench` feature (timings on a shared machine assert nothing): `scripts/bench matrix`.

use super::Boxed;
use crate::support::standin::text;
use std::time::{Duration, Instant};

/// Turns timed per row.
const ROUNDS: usize = 50;

/// Messages the phone sends back to back for the throughput row.
const MESSAGES: usize = 50;

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

fn row(name: &str, mut times: Vec<Duration>) -> String {
    times.sort();
    format!(
        "| {name} | {} | {:.2} | {:.2} |",
        times.len(),
        percentile(&times, 0.5),
        percentile(&times, 0.99)
    )
}

#[test]
fn bench_loopd_matrix_reply_latency_and_throughput() {
    let Some(mut b) = Boxed::start("benchloopd", "") else {
        return;
    };
    let mut c = b.l.client();
    let socket: Vec<Duration> = (0..ROUNDS)
        .map(|i| {
            b.l.llama.push(text(&[&format!("socket {i}")]));
            let t = Instant::now();
            let block = c.ask(&format!("socket question {i}"));
            assert_eq!(block, [format!("socket {i}")]);
            t.elapsed()
        })
        .collect();
    let me = b.cast.boxmaker.user_id.clone();
    let room: Vec<Duration> = (0..ROUNDS)
        .map(|i| {
            let want = format!("room {i}");
            b.l.llama.push(text(&[&want]));
            let t = Instant::now();
            b.say(&format!("room question {i}"));
            b.wait("the reply", |e| {
                e["sender"] == me.as_str() && e["content"]["body"] == want.as_str()
            });
            t.elapsed()
        })
        .collect();
    for i in 0..MESSAGES {
        b.l.llama.push(text(&[&format!("burst {i}")]));
    }
    let t = Instant::now();
    for i in 0..MESSAGES {
        b.say(&format!("burst question {i}"));
    }
    let sent = t.elapsed();
    let last = format!("burst {}", MESSAGES - 1);
    b.wait("the burst's last reply", |e| {
        e["sender"] == me.as_str() && e["content"]["body"] == last.as_str()
    });
    let answered = t.elapsed();
    println!("\n### a reply through loopd: the socket and a Matrix room (scripted model)\n");
    println!("| path | turns | p50 ms | p99 ms |");
    println!("|---|---|---|---|");
    println!("{}", row("socket: line until its reply block", socket));
    println!(
        "{}",
        row(
            "Matrix: the phone's send until loopd's m.text reaches its sync",
            room
        )
    );
    println!("\n### messages a second through one room, each answered\n");
    println!("| what | messages | seconds | messages/s |");
    println!("|---|---|---|---|");
    println!(
        "| phone sends back to back | {MESSAGES} | {:.2} | {:.0} |",
        sent.as_secs_f64(),
        MESSAGES as f64 / sent.as_secs_f64()
    );
    println!(
        "| ... each answered in the room | {MESSAGES} | {:.2} | {:.0} |",
        answered.as_secs_f64(),
        MESSAGES as f64 / answered.as_secs_f64()
    );
}
