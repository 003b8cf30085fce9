//! `scripts/bench recall --asked`: recall as the box is used. The owner asks LoCoMo's
//! questions one after another in a session of their own; each question and a reply that
//! repeats it (as the scripted stand-in's replies do) are logged and indexed before the
//! next is asked. Printed per category: the share of each question's evidence in
//! memoryd's first `TOP` hits (what memory in the turn brings) on the conversations
//! alone, and at the moment it is asked after every earlier question; for words only and,
//! with the model, for the default recall (each new row embedded before the next
//! question, as the daemon's backfill does between turns).

use crate::sets::{Question, Set, ALL, UNANSWERABLE};
use memoryd::index::{Budget, Index};
use memoryd::query::time;
use proto::label::DataClass;
use std::collections::BTreeMap;
use std::io::Write;

/// Hits memory in the turn brings (`memory.auto_hits`' default).
const TOP: usize = 3;

/// The session the owner asks in.
const SESSION: &str = "owner-asks";

fn evidence(q: &Question, hits: &[String]) -> f64 {
    q.judge.score(hits, TOP).evidence_at_5
}

fn ask(index: &Index, q: &str, now: time::Day) -> Vec<String> {
    index
        .search_at(q, DataClass::Private, TOP as u32, now)
        .unwrap()
        .into_iter()
        .map(|r| r.hit.text)
        .collect()
}

pub fn run(set: &Set) {
    let state = set.state.path();
    let mut index = Index::open(state, DataClass::Private).unwrap();
    index.catch_up(Budget::UNLIMITED).unwrap();
    let now = time::day_of("2030-01-01T00:00:00.000Z").unwrap();
    let dir = state.join("sessions").join(SESSION);
    std::fs::create_dir_all(&dir).unwrap();
    let head = serde_json::json!({
        "epoch": 0, "started": "2029-12-31T00:00:00.000Z",
        "system": "You are a helpful assistant for one owner.", "tools": [], "carry": null,
        "carry_label": {"class": "private", "untrusted": false},
        "reason": "start", "summary_source": "model",
    });
    std::fs::write(dir.join("epoch-000000.head.json"), head.to_string()).unwrap();
    let mut log = std::fs::File::create(dir.join("epoch-000000.jsonl")).unwrap();
    // The default recall beside words only, each new row embedded before the next
    // question, as the daemon's backfill does between turns.
    let mut vectors = crate::vectors::VecWorld::build(state, now);
    let fused = |v: &crate::vectors::VecWorld, q: &str| v.fused_at(q, TOP as u32, now);
    let mut clean: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    let mut asked: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    let mut clean_fused: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    let mut asked_fused: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    let add = |m: &mut BTreeMap<String, (f64, usize)>, q: &Question, e: f64| {
        for c in [q.category.as_str(), ALL] {
            if c == ALL && q.category == UNANSWERABLE {
                continue;
            }
            let s = m.entry(c.to_string()).or_default();
            s.0 += e;
            s.1 += 1;
        }
    };
    if let Some(v) = &vectors {
        crate::reach::run(&format!("{} (default)", set.name), &set.questions, &|q| {
            v.fused_hits_at(q, crate::reach::ASKED, now)
        });
        crate::reach::chance(
            &format!("{} (default)", set.name),
            &owner_lines(&state.join("sessions")),
            &|q, limit| v.fused_hits_at(q, limit, now),
        );
    }
    if std::env::var_os("BOXMAKER_BENCH_REACH_ONLY").is_some() {
        return;
    }
    for q in &set.questions {
        add(&mut clean, q, evidence(q, &ask(&index, &q.text, now)));
        if let Some(v) = &vectors {
            add(&mut clean_fused, q, evidence(q, &fused(v, &q.text)));
        }
    }
    for (i, q) in set.questions.iter().enumerate() {
        add(&mut asked, q, evidence(q, &ask(&index, &q.text, now)));
        if let Some(v) = &vectors {
            add(&mut asked_fused, q, evidence(q, &fused(v, &q.text)));
        }
        let at = |s: usize| {
            proto::time::format_unix_millis(1_893_456_000_000 + (i * 120 + s) as i64 * 1000)
        };
        let user = serde_json::json!({"type": "user", "time": at(0), "content": q.text,
                                      "origin": "owner"});
        let reply = serde_json::json!({"type": "assistant", "time": at(60),
                                       "content": format!("You asked: {}", q.text),
                                       "tool_calls": []});
        writeln!(log, "{user}\n{reply}").unwrap();
        index.catch_up(Budget::UNLIMITED).unwrap();
        if let Some(v) = &mut vectors {
            v.refresh();
        }
    }
    for (name, clean, asked) in [
        ("words only", &clean, &asked),
        ("default", &clean_fused, &asked_fused),
    ] {
        if clean.is_empty() {
            continue;
        }
        println!(
            "## {}, asked in sequence: evidence in the first {TOP} hits ({name})\n",
            set.name
        );
        println!("| category | n | conversations alone | after every earlier question | change |");
        println!("|---|---:|---:|---:|---:|");
        for (c, (e, n)) in clean {
            let a = asked[c].0 / *n as f64;
            let e = e / *n as f64;
            println!("| {c} | {n} | {e:.3} | {a:.3} | {:+.3} |", a - e);
        }
        println!();
    }
}

/// Every owner line of the set's conversations (not the session the owner asks in), with
/// its conversation, in the logs' order.
fn owner_lines(sessions: &std::path::Path) -> Vec<(String, String)> {
    let mut names: Vec<String> = std::fs::read_dir(sessions)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != SESSION)
        .collect();
    names.sort();
    let mut lines = Vec::new();
    for name in names {
        let mut logs: Vec<_> = std::fs::read_dir(sessions.join(&name))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        logs.sort();
        for log in logs {
            for l in std::fs::read_to_string(log).unwrap().lines() {
                let r: serde_json::Value = serde_json::from_str(l).unwrap();
                if r["type"] == "user" {
                    if let Some(text) = r["content"].as_str() {
                        lines.push((name.clone(), text.to_string()));
                    }
                }
            }
        }
    }
    lines
}
