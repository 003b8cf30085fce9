//! `scripts/bench load`: hostile-client floods against the real daemons on loopback
//! sockets, each bounded in count and time. For every flood it prints the daemon's peak
//! RSS and a well-behaved client's latency during the flood, against the same client on
//! the same daemon while it was idle. Built only with the `bench` feature, so the test run
//! does not hold it (timings on a shared machine assert nothing); the small regression
//! tests live in `loopd/` and `memoryd/`.

mod loopd;
mod memoryd;

use std::time::{Duration, Instant};

/// How long one probe of the well-behaved client may take before it counts as failed.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// What a flood did to a daemon and to the well-behaved client.
pub struct Outcome {
    pub flood: String,
    /// The daemon's peak resident set since it started (VmHWM), in KiB.
    pub peak_kib: u64,
    /// Its resident set once the flood was over (VmRSS), in KiB.
    pub after_kib: u64,
    /// Latencies of the probes that were answered.
    pub answered: Vec<Duration>,
    /// Probes refused, reset or timed out.
    pub failed: usize,
}

/// Runs `probe` `count` times, `gap` apart, timing each.
pub fn probes(
    count: usize,
    gap: Duration,
    mut probe: impl FnMut() -> bool,
) -> (Vec<Duration>, usize) {
    let mut answered = Vec::new();
    let mut failed = 0;
    for _ in 0..count {
        let t = Instant::now();
        if probe() {
            answered.push(t.elapsed());
        } else {
            failed += 1;
        }
        std::thread::sleep(gap);
    }
    (answered, failed)
}

fn pct(sorted: &[Duration], p: usize) -> String {
    if sorted.is_empty() {
        return "–".into();
    }
    let i = (sorted.len() * p / 100).min(sorted.len() - 1);
    format!("{:.2}", sorted[i].as_secs_f64() * 1000.0)
}

/// One markdown table: the idle baseline first, then each flood with its latency ratio.
pub fn table(title: &str, idle: &Outcome, floods: &[Outcome]) {
    let mut base = idle.answered.clone();
    base.sort();
    let base_p50 = base
        .get(base.len() / 2)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    println!("\n### {title}\n");
    println!(
        "| run | peak RSS MiB | RSS after MiB | good client p50 ms | p99 ms | p50 vs idle | failed probes |"
    );
    println!("|---|---|---|---|---|---|---|");
    for o in std::iter::once(idle).chain(floods) {
        let mut v = o.answered.clone();
        v.sort();
        let ratio = match v.get(v.len() / 2) {
            Some(d) if base_p50 > 0.0 => format!("{:.1}×", d.as_secs_f64() / base_p50),
            _ => "–".into(),
        };
        println!(
            "| {} | {:.1} | {:.1} | {} | {} | {ratio} | {}/{} |",
            o.flood,
            o.peak_kib as f64 / 1024.0,
            o.after_kib as f64 / 1024.0,
            pct(&v, 50),
            pct(&v, 99),
            o.failed,
            o.failed + o.answered.len()
        );
    }
    use std::io::Write;
    let _ = std::io::stdout().flush();
}
