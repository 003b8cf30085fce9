//! `scripts/bench compaction`: how many prompt tokens the real llama.cpp server re-reads
//! per turn (`prompt_n`) over a 30-turn conversation with tool results, when the tool
//! summaries run on the background slot (loopd's design) and when they run on the main
//! slot (the naive alternative, loopd's hidden `BOXMAKER_BENCH_SUMMARY_SLOT=main`).
//! Built only with the `bench` feature (docs/testing.md, 'Benchmarks'); the script runs
//! it in release.
//!
//! Three servers, each given both runs:
//! - a chat template that renders the tool schemas (as tool-capable models do), with
//!   llama.cpp's host-memory prompt cache off: a summary on the main slot, sent without
//!   `tools`, differs from the turns' prompt at the system message, so it and the turn
//!   after it each re-read the whole conversation;
//! - the same template with the host-memory prompt cache on (llama.cpp's default, 8 GiB):
//!   llama.cpp saves the prompt a slot drops and restores it, hiding most of that cost
//!   while the saved prompts fit in it;
//! - SmolLM2's own template, which drops the tools, so the summary shares the turns'
//!   prefix on any slot.
//!
//! Both runs of a server send the same conversation with greedy sampling (the relay adds
//! `temperature: 0` and a seed to each forwarded request); where the summaries run is the
//! only difference loopd makes. Before each run both slots are given an unrelated prompt.

use super::real::{converse, kind, lines, Kind, Run, COMPACT_REAL};
use crate::support::real_llama::{real_llama, tools_rendering_llama, tools_rendering_llama_with};
use crate::support::relay::{forward, Seen};
use serde_json::json;

const TURNS: usize = 30;
/// Every third line reads a notes file.
const READ_EVERY: usize = 3;
const THRESHOLD: f64 = 0.5;

#[derive(Default, Clone, Copy)]
struct Turn {
    main: u64,
    summary: u64,
    compaction: u64,
}

fn per_turn(run: &Run) -> Vec<Turn> {
    let seen = run.relay.seen();
    run.turns
        .iter()
        .map(|range| {
            let mut t = Turn::default();
            for s in seen[range.clone()].iter().filter(|s| s.forwarded) {
                let n = s.timings.map_or(0, |t| t.prompt_n);
                match kind(s, COMPACT_REAL) {
                    Kind::Turn => t.main += n,
                    Kind::ToolSummary => t.summary += n,
                    Kind::Compaction => t.compaction += n,
                }
            }
            t
        })
        .collect()
}

fn answers(run: &Run) -> Vec<String> {
    run.relay
        .seen()
        .iter()
        .filter(|s: &&Seen| s.forwarded && kind(s, COMPACT_REAL) == Kind::Turn)
        .map(|s| s.content.clone())
        .collect()
}

fn flush(url: &str) {
    let upstream = url.strip_prefix("http://").unwrap();
    for slot in [0, 1] {
        let body = json!({"messages": [{"role": "user", "content": "Unrelated words to push out any cached prompt."}],
            "id_slot": slot, "cache_prompt": true, "max_tokens": 1});
        forward(
            upstream,
            "POST",
            "/v1/chat/completions",
            body.to_string().as_bytes(),
        );
    }
}

fn sum(turns: &[Turn], f: impl Fn(&Turn) -> u64) -> u64 {
    turns.iter().map(f).sum()
}

/// Both runs on `server`: (background, naive).
fn both(server: &str, lines: &[String]) -> (Run, Run) {
    let extra = json!({"temperature": 0, "seed": 7});
    flush(server);
    let bg = converse(server, lines, THRESHOLD, false, extra.clone());
    flush(server);
    let naive = converse(server, lines, THRESHOLD, true, extra);
    (bg, naive)
}

/// The turns right after a tool turn: where a summary on the main slot would have
/// pushed the conversation out of the main slot's cache.
fn after_tool(t: &[Turn]) -> f64 {
    let idx: Vec<usize> = (READ_EVERY..t.len()).step_by(READ_EVERY).collect();
    idx.iter().map(|&i| t[i].main).sum::<u64>() as f64 / idx.len() as f64
}

#[test]
fn prompt_tokens_per_turn_with_and_without_the_background_slot() {
    let Some(plain) = real_llama() else {
        panic!("the benchmark needs the real server (scripts/setup-python)")
    };
    let Some(tooled) = tools_rendering_llama_with(&["--cache-ram-mib", "0"]) else {
        panic!("the benchmark needs the real server (scripts/setup-python)")
    };
    let Some(tooled_ram) = tools_rendering_llama() else {
        panic!("the benchmark needs the real server (scripts/setup-python)")
    };
    let lines = lines(TURNS, READ_EVERY);
    let runs = [
        both(&tooled.url, &lines),
        both(&tooled_ram.url, &lines),
        both(&plain.url, &lines),
    ];
    let [(a, b), (e, f), (c, d)] = runs.each_ref().map(|(x, y)| (per_turn(x), per_turn(y)));

    println!(
        "\n### prompt tokens llama.cpp processed per turn: {TURNS} turns, every {READ_EVERY}rd reads a file; 2048-token slots, threshold {THRESHOLD}; a chat template that renders the tools; llama.cpp's host-memory prompt cache off\n"
    );
    println!("| turn | line | background: main turn | background: tool summary (slot 1) | background: compaction | naive: main turn | naive: tool summary (slot 0) | naive: compaction |");
    println!("|---|---|---|---|---|---|---|---|");
    let cell = |n: u64| if n == 0 { String::new() } else { n.to_string() };
    for (i, line) in lines.iter().enumerate() {
        println!(
            "| {} | {line} | {} | {} | {} | {} | {} | {} |",
            i + 1,
            a[i].main,
            cell(a[i].summary),
            cell(a[i].compaction),
            b[i].main,
            cell(b[i].summary),
            cell(b[i].compaction)
        );
    }
    println!("\n### totals (prompt tokens processed)\n");
    println!("| measure | tools template, no RAM cache: background | same: naive (main slot) | tools template, RAM cache: background | same: naive | SmolLM2 template, RAM cache: background | same: naive |");
    println!("|---|---|---|---|---|---|---|");
    let all = [&a, &b, &e, &f, &c, &d];
    let row = |name: &str, f: &dyn Fn(&[Turn]) -> String| {
        let cells: Vec<String> = all.iter().map(|t| f(t)).collect();
        println!("| {name} | {} |", cells.join(" | "));
    };
    row("main-slot turns, all", &|t| sum(t, |x| x.main).to_string());
    row(
        "main-slot turns, mean of the turns right after a tool turn",
        &|t| format!("{:.0}", after_tool(t)),
    );
    row("tool summaries", &|t| sum(t, |x| x.summary).to_string());
    row("compactions", &|t| sum(t, |x| x.compaction).to_string());
    row("everything", &|t| {
        sum(t, |x| x.main + x.summary + x.compaction).to_string()
    });
    let epochs: Vec<String> = runs
        .iter()
        .flat_map(|(x, y)| [x.heads().len(), y.heads().len()])
        .map(|n| n.to_string())
        .collect();
    println!("| epochs at the end | {} |", epochs.join(" | "));
    let same: Vec<&str> = runs
        .iter()
        .map(|(x, y)| {
            if answers(x) == answers(y) {
                "yes"
            } else {
                "no"
            }
        })
        .collect();
    println!(
        "| both runs got the same answers | {} | | {} | | {} | |",
        same[0], same[1], same[2]
    );
}
