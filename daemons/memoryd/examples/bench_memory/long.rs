//! `scripts/bench memory --long [ROWS]`: recall among long records, as memory in the turn
//! asks it after an owner pasted documents (the history of `scripts/bench memory-turn`:
//! `ROWS` documents of `WORDS` words, 200 by default, in one log). Each of `QUESTIONS` is
//! asked `ROUNDS` times for `ASKED` hits (what loopd asks per line), then each hit is cut
//! to its passage as loopd cuts it (`proto::memory::clip_to_passage`); printed: the
//! recall's p50 and p99, and the passages' time per recall. Then the same again after
//! `ASKED_LINES` of the questions were asked in a session of their own, each with the
//! stand-in's reply: memory-turn's history a few hundred lines into its run, where most
//! of the words' candidates are the owner's own earlier questions. Last, the same
//! recall among as many fetched pages' summaries, untrusted, whose every candidate is
//! read whole for text that insists (`query::insist`).

use memoryd::index::{Budget, Index};
use proto::label::DataClass;
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

pub const DEFAULT_ROWS: usize = 200;

/// Words of one document, as memory-turn's.
const WORDS: usize = 12_000;

/// Times each question is asked.
const ROUNDS: usize = 10;

/// Hits loopd asks per line (`auto_hits` 3, three asked per hit).
const ASKED: u32 = 9;

/// loopd's `memory.hit_chars` default.
const HIT_CHARS: usize = 600;

/// Lines asked in the owner's session before the second measure: about what memory-turn
/// answers with memory on before its run stops.
const ASKED_LINES: usize = 600;

/// memory-turn's sentences and questions (`tests/e2e/promise/bench_pipelined.rs`).
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

/// `SENTENCES` in an order of document `n`'s own, `mix` telling one kind of document's
/// orders from another's (xorshift).
fn picks(n: usize, mix: u64) -> impl Iterator<Item = &'static str> {
    let mut seed = (n as u64).wrapping_mul(mix) | 1;
    std::iter::repeat_with(move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        SENTENCES[(seed % SENTENCES.len() as u64) as usize]
    })
}

fn document(n: usize) -> String {
    let mut out = format!("Pasted document {n}. ");
    let mut words = 0;
    for s in picks(n, 0x9e37_79b9_7f4a_7c15) {
        if words >= WORDS {
            break;
        }
        out.push_str(s);
        out.push(' ');
        words += s.split_whitespace().count();
    }
    out
}

fn pct(d: &mut [Duration], p: f64) -> f64 {
    d.sort();
    let i = ((d.len() as f64 - 1.0) * p).round() as usize;
    d[i].as_secs_f64() * 1000.0
}

/// A session of one epoch under `state`, its head written: its directory.
fn new_session(state: &std::path::Path, name: &str) -> std::path::PathBuf {
    let dir = state.join("sessions").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("epoch-000000.head.json"), HEAD).unwrap();
    dir
}

/// Every session's head: an owner's session with nothing carried.
const HEAD: &str = r#"{"epoch": 0, "started": "2026-10-02T08:00:00.000Z", "system": "You are terse.", "tools": [], "carry": null, "carry_label": {"class": "private", "untrusted": false}, "reason": "start", "summary_source": "model"}"#;

pub fn run(rows: usize) {
    let state = tempfile::tempdir().unwrap();
    let dir = new_session(state.path(), "archive");
    let log: String = (0..rows)
        .map(|n| {
            let line = serde_json::json!({
                "type": "user",
                "time": proto::time::format_unix_millis(1_790_000_000_000 + n as i64 * 1000),
                "content": document(n), "origin": "owner"
            });
            format!("{line}\n")
        })
        .collect();
    std::fs::write(dir.join("epoch-000000.jsonl"), log).unwrap();
    let mut index = Index::open(state.path(), DataClass::Private).unwrap();
    index.catch_up(Budget::UNLIMITED).unwrap();
    println!("### Recall among {rows} documents of {WORDS} words, {ASKED} hits asked\n");
    println!("| history | measure | p50 ms | p99 ms |");
    println!("|---|---|---:|---:|");
    let mut digest = std::hash::DefaultHasher::new();
    measure(&index, "the documents", &mut digest);
    let pipe = new_session(state.path(), "pipe");
    let log: String = (0..ASKED_LINES)
        .flat_map(|n| {
            let at = |k: i64| proto::time::format_unix_millis(1_800_000_000_000 + k * 1000);
            let asked = serde_json::json!({
                "type": "user", "time": at(2 * n as i64),
                "content": QUESTIONS[n % QUESTIONS.len()], "origin": "owner"
            });
            let reply = serde_json::json!({
                "type": "assistant", "time": at(2 * n as i64 + 1),
                "content": "Noted.", "tool_calls": []
            });
            [format!("{asked}\n"), format!("{reply}\n")]
        })
        .collect();
    std::fs::write(pipe.join("epoch-000000.jsonl"), log).unwrap();
    index.catch_up(Budget::UNLIMITED).unwrap();
    measure(
        &index,
        &format!("and {ASKED_LINES} lines asked"),
        &mut digest,
    );
    fetched(rows, &mut digest);
    println!();
    // The same answers (every hit's record, relevance and passage) give the same digest:
    // a change meant to make recall faster, not different, leaves it as it was.
    println!(
        "Digest of every hit and passage: {:016x}\n",
        digest.finish()
    );
}

/// A fetched page's document: `document(n)`'s sentences, each with words of its own
/// after it, so that no two sentences of it are alike and the check for text that
/// insists (`query::insist`) reads every sentence the search hands it.
fn fetched_document(n: usize) -> String {
    let mut out = format!("Fetched page {n}. ");
    let mut words = 0;
    let mut serial = 0u64;
    for s in picks(n, 0xbf58_476d_1ce4_e5b9) {
        if words >= WORDS {
            break;
        }
        out.push_str(s.trim_end_matches('.'));
        for _ in 0..OWN_WORDS {
            serial += 1;
            out.push_str(&format!(" w{n}x{serial}"));
        }
        out.push_str(". ");
        words += s.split_whitespace().count() + OWN_WORDS;
    }
    out
}

/// Words of its own each sentence of a fetched document gets: more than the sentence's
/// content words shared with another saying of it would need to stay alike.
const OWN_WORDS: usize = 8;

/// The same recall among `rows` fetched pages' summaries of `WORDS` words (untrusted, so
/// each candidate's text is checked for insisting), beside the owner's documents measured
/// first: the ratio of the two is what the check costs.
fn fetched(rows: usize, digest: &mut std::hash::DefaultHasher) {
    let state = tempfile::tempdir().unwrap();
    let dir = new_session(state.path(), "web");
    let log: String = (0..rows)
        .map(|n| {
            let at = proto::time::format_unix_millis(1_790_000_000_000 + n as i64 * 1000);
            let url = format!("{{\"url\":\"https://pages.example/{n}\"}}");
            let call = serde_json::json!({
                "type": "assistant", "time": at, "content": null,
                "tool_calls": [{"id": format!("call-{n}"), "name": "http_fetch", "arguments": url}]
            });
            let result = serde_json::json!({
                "type": "tool_result", "time": at, "call": 1,
                "tool_call_id": format!("call-{n}"), "name": "http_fetch",
                "content": "(the page)", "class": "public", "untrusted": true
            });
            let summary = serde_json::json!({
                "type": "tool_summary", "time": at, "call": 1, "tool_call_id": format!("call-{n}"),
                "content": fetched_document(n), "class": "public", "untrusted": true
            });
            format!("{call}\n{result}\n{summary}\n")
        })
        .collect();
    std::fs::write(dir.join("epoch-000000.jsonl"), log).unwrap();
    let mut index = Index::open(state.path(), DataClass::Private).unwrap();
    index.catch_up(Budget::UNLIMITED).unwrap();
    measure(&index, "fetched pages (untrusted)", digest);
}

/// Each question asked `ROUNDS` times, its hits cut to passages, each hit added to
/// `digest`; one table row each.
fn measure(index: &Index, history: &str, digest: &mut std::hash::DefaultHasher) {
    let (mut recall, mut clip) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        for q in QUESTIONS {
            let t = Instant::now();
            let hits = index.search(q, DataClass::Private, ASKED).unwrap();
            recall.push(t.elapsed());
            let t = Instant::now();
            let mut clipped = Vec::with_capacity(hits.len());
            for mut h in hits {
                proto::memory::clip_to_passage(&mut h, q, HIT_CHARS);
                clipped.push(h);
            }
            clip.push(t.elapsed());
            for h in &clipped {
                (&h.session, &h.time, h.relevance, &h.text).hash(digest);
            }
        }
    }
    println!(
        "| {history} | recall (words) | {:.2} | {:.2} |",
        pct(&mut recall, 0.5),
        pct(&mut recall, 0.99)
    );
    println!(
        "| {history} | the hits cut to passages (loopd) | {:.2} | {:.2} |",
        pct(&mut clip, 0.5),
        pct(&mut clip, 0.99)
    );
}
