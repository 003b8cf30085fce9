//! `scripts/bench remember`: the whole promise measured end to end. The owner tells
//! facts over several turns with small talk between, the session is compacted twice, and
//! then the owner asks about each fact in plain words. For each question: did the fact
//! reach the model's prompt (in the carried summary, the epoch, or a `memory` record),
//! and does the answer hold it — with memory in the turn off and on, in the same run,
//! for the scripted stand-in and for the real llama.cpp server; and, when another build
//! is given (`BOXMAKER_BENCH_BEFORE`, a directory holding its `loopd` and `memoryd`), for
//! that build too, in the same run. Built only with the `bench` feature
//! (docs/testing.md, 'Benchmarks'), so the test run does not hold it.
//! `BOXMAKER_BENCH_ONLY` picks some of the runs (see `wanted`).

use crate::loopd::{write_config_with, N_CTX};
use crate::support::real_llama::{own_llama, CTX_PER_SLOT};
use crate::support::relay::Relay;
use crate::support::standin::{text, Brain, Standin};
use crate::support::{bin, Daemon, Fixture, LineClient};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How long one reply may take against the real server on a shared 2-core machine.
const SLOW: Duration = Duration::from_secs(900);

/// What the owner tells, how they ask for it later, and the word the answer must hold.
const FACTS: &[(&str, &str, &str)] = &[
    (
        "My dentist appointment is on Thursday at 3pm with Dr. Alvarez.",
        "When is my dentist appointment, and with which doctor?",
        "alvarez",
    ),
    (
        "My locker code at the gym is 5150.",
        "What is my locker code at the gym?",
        "5150",
    ),
    (
        "My sister Maria lives in Lisbon now.",
        "Where does my sister live?",
        "lisbon",
    ),
    (
        "I parked the car on level 3 of the Mercado garage.",
        "Where did I park the car?",
        "mercado",
    ),
    (
        "My passport expires in March 2031.",
        "When does my passport expire?",
        "2031",
    ),
    (
        "The wifi password at the cabin is tangerine42.",
        "What is the wifi password at the cabin?",
        "tangerine42",
    ),
    (
        "My cat is called Biscuit.",
        "What is my cat called?",
        "biscuit",
    ),
    (
        "I am allergic to penicillin.",
        "What am I allergic to?",
        "penicillin",
    ),
];

const FILLER: &[&str] = &[
    "The weather is lovely this morning.",
    "I had a long day at work.",
    "Lunch was a bit late today.",
];

/// The stand-in's mind: a summary that keeps nothing (the worst case a small model
/// gives), and an answer made of whatever its prompt says about the question.
fn forgetful() -> Brain {
    Arc::new(|body: &Value| {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let last = messages
            .last()
            .and_then(|m| m["content"].as_str())
            .unwrap_or("")
            .to_string();
        if last.starts_with("Summarise") {
            return text(&["The owner and the assistant chatted."]);
        }
        let prompt: Vec<String> = messages
            .iter()
            .filter(|m| m["role"] != "system")
            .filter_map(|m| m["content"].as_str().map(str::to_string))
            .collect();
        let answer = FACTS
            .iter()
            .filter(|(_, ask, _)| *ask == last)
            .find_map(|(tell, _, key)| {
                prompt
                    .iter()
                    .any(|p| p.to_lowercase().contains(key))
                    .then_some(*tell)
            })
            .unwrap_or("I do not know.");
        text(&[answer])
    })
}

/// The builds to compare: a name and the directory holding its `loopd` and `memoryd`.
pub fn builds() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    if let Some(before) = std::env::var_os("BOXMAKER_BENCH_BEFORE") {
        out.push(("before".to_string(), PathBuf::from(before)));
    }
    let this = bin("loopd").parent().unwrap().to_path_buf();
    out.push(("this tree".to_string(), this));
    out
}

/// Starts the daemon `name` of the build in `dir` on `fx`, as `Daemon::start` does this
/// tree's.
pub fn start_from(dir: &Path, name: &str, fx: &Fixture) -> Daemon {
    let cmd = Daemon::command_of(&dir.join(name), fx);
    let mut d = Daemon::spawn(cmd, fx);
    d.ready();
    d
}

struct Outcome {
    reached: usize,
    answered: usize,
    recalled: usize,
    compactions: usize,
    secs: f64,
}

fn converse(
    build: &Path,
    url: &str,
    auto: bool,
    prompts_from_repo: bool,
    prompt_of: &dyn Fn(usize) -> String,
) -> Outcome {
    let started = std::time::Instant::now();
    let fx = Fixture::new("");
    if prompts_from_repo {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        for name in ["system.md", "compact.md", "summarise.md"] {
            std::fs::copy(repo.join("config").join(name), fx.prompts.join(name)).unwrap();
        }
    }
    write_config_with(
        &fx,
        url,
        "timeout_s = 900",
        "",
        &format!("auto_recall = {auto}"),
        "",
    );
    let _memoryd = start_from(build, "memoryd", &fx);
    let _loopd = start_from(build, "loopd", &fx);
    let mut c = LineClient::connect(&fx.loopd_sock);
    c.stream.set_read_timeout(Some(SLOW)).unwrap();
    let mut compactions = 0;
    for (i, (tell, _, _)) in FACTS.iter().enumerate() {
        c.ask(tell);
        c.ask(FILLER[i % FILLER.len()]);
        if i == FACTS.len() / 2 - 1 || i == FACTS.len() - 1 {
            let r = c.ask("/compact");
            if r.first().is_some_and(|l| l.starts_with("compacted")) {
                compactions += 1;
            }
        }
    }
    let mut out = Outcome {
        reached: 0,
        answered: 0,
        recalled: 0,
        compactions,
        secs: 0.0,
    };
    for (i, (_, ask, key)) in FACTS.iter().enumerate() {
        let answer = c.ask(ask).join("\n").to_lowercase();
        if answer.contains(key) {
            out.answered += 1;
        }
        if prompt_of(i).to_lowercase().contains(key) {
            out.reached += 1;
        }
    }
    let dir = fx.state_dir.join("sessions/main");
    for e in 0.. {
        let path = dir.join(format!("epoch-{e:06}.jsonl"));
        if !path.exists() {
            break;
        }
        out.recalled += crate::loopd::records_in(&path)
            .iter()
            .filter(|r| r["type"] == "memory")
            .count();
    }
    out.secs = started.elapsed().as_secs_f64();
    out
}

fn row(build: &str, model: &str, auto: bool, o: &Outcome) {
    let n = FACTS.len();
    println!(
        "| {build} | {model} | {} | {} | {}/{n} | {}/{n} | {} | {:.0} |",
        if auto { "on" } else { "off" },
        o.compactions,
        o.reached,
        o.answered,
        o.recalled,
        o.secs
    );
}

/// The prompt the model was sent for question `i`: the last main-slot request whose last
/// message is that question.
fn asked(seen: &[(String, String)], i: usize) -> String {
    seen.iter()
        .rev()
        .find(|(last, _)| last == FACTS[i].1)
        .map(|(_, all)| all.clone())
        .unwrap_or_default()
}

fn all_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether the run of `build` against `model` (`stand-in` or `llama.cpp`) with memory in
/// the turn `auto` is wanted: every run, unless `BOXMAKER_BENCH_ONLY` lists some as
/// `build/model/on|off`, comma-separated (`this tree/llama.cpp/on`). A real-model run takes
/// many minutes on a loaded machine; this picks the ones still to measure.
fn wanted(build: &str, model: &str, auto: bool) -> bool {
    let Ok(only) = std::env::var("BOXMAKER_BENCH_ONLY") else {
        return true;
    };
    let key = format!("{build}/{model}/{}", if auto { "on" } else { "off" });
    only.split(',').any(|k| k.trim() == key)
}

#[test]
fn remember() {
    println!(
        "### remember: {} facts, two compactions, then a question each\n",
        FACTS.len()
    );
    println!("| build | model | memory in the turn | compactions | fact in the prompt | fact in the answer | memory records | seconds |");
    println!("|---|---|---|---:|---:|---:|---:|---:|");
    let builds = builds();
    for (build, dir) in &builds {
        for auto in [false, true] {
            if !wanted(build, "stand-in", auto) {
                continue;
            }
            let llama = Standin::start(N_CTX);
            llama.set_brain(forgetful());
            let o = converse(dir, &llama.url, auto, false, &|i| {
                let seen: Vec<(String, String)> = llama
                    .chats()
                    .iter()
                    .map(|r| {
                        let body = r.json();
                        (r.last(), all_text(&body))
                    })
                    .collect();
                asked(&seen, i)
            });
            row(build, "stand-in (summaries keep nothing)", auto, &o);
        }
    }
    let model = std::env::var("BOXMAKER_BENCH_MODEL").ok();
    let mut args: Vec<String> = vec!["--n-predict".into(), "96".into()];
    if let Some(m) = &model {
        args.extend(["--model".into(), m.clone()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some(server) = own_llama(&args) else {
        println!("\n(no venv: the real server was not run)");
        return;
    };
    let name = model
        .as_deref()
        .and_then(|m| Path::new(m).file_name())
        .map_or("SmolLM2-135M".to_string(), |f| {
            f.to_string_lossy().into_owned()
        });
    for (build, dir) in &builds {
        for auto in [false, true] {
            if !wanted(build, "llama.cpp", auto) {
                continue;
            }
            let relay = Relay::start(
                &server.url,
                Box::new(|_| None),
                json!({"temperature": 0, "seed": 1}),
                json!({}),
            );
            let o = converse(dir, &relay.url, auto, true, &|i| {
                let seen: Vec<(String, String)> = relay
                    .seen()
                    .iter()
                    .map(|s| (s.last_text().to_string(), all_text(&s.body)))
                    .collect();
                asked(&seen, i)
            });
            row(
                build,
                &format!("llama.cpp, {name} ({CTX_PER_SLOT} tokens a slot)"),
                auto,
                &o,
            );
        }
    }
}
