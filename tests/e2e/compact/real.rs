//! Compaction against the real llama.cpp server (SmolLM2, 2048 tokens per slot): a
//! conversation long enough to compact with the model's own summary, with tool results
//! summarised on the background slot between turns, and the main slot's prompt cache
//! intact throughout each epoch.
//!
//! SmolLM2 never emits tool calls (docs/llama-api.md), so the tool rounds are made
//! honestly by other means: a relay in front of the server answers a turn whose message
//! starts `Read ` with a scripted `read_file` call (the only scripted reply); loopd then
//! really runs `read_file` on a fixture file, logs the real `tool_result`, and sends the
//! next round — with the result — to the real server, as it sends the summaries, the
//! compaction and every other turn. The relay records each request's slot and the
//! server's `timings`, which is how the cache and the slots are checked.
//!
//! The server runs a chat template that renders the tool schemas into the system
//! message, as tool-capable models' templates do (`tools_rendering_llama`). With
//! SmolLM2's own template, which drops them, a summary sent without `tools` would share
//! the main slot's prefix anyway, and a regression that sent summaries to the main slot
//! would go unseen.

use crate::loopd::{records_in, write_config};
use crate::support::real_llama::{tools_rendering_llama, CTX_PER_SLOT};
use crate::support::relay::{Relay, Seen};
use crate::support::standin::tool_calls;
use crate::support::{Daemon, Fixture, LineClient};
use serde_json::{json, Value};
use std::ops::Range;
use std::path::Path;
use std::time::Duration;

/// How long a reply may stay silent against the real server: a turn's finish (tool
/// summaries, a compaction) streams nothing, and the shared 2-core machine may be slow.
const SLOW: Duration = Duration::from_secs(600);

const SYSTEM: &str = "You are terse. Answer in at most one short sentence.";

/// What one conversation left behind.
pub struct Run {
    pub fx: Fixture,
    /// loopd, alive until the run is dropped.
    pub _daemon: Daemon,
    pub relay: Relay,
    /// For each turn, the range of `relay.seen()` its requests took (the compaction
    /// benchmark reads it).
    #[cfg_attr(not(feature = "bench"), allow(dead_code))]
    pub turns: Vec<Range<usize>>,
    _files: tempfile::TempDir,
}

impl Run {
    pub fn session_dir(&self) -> std::path::PathBuf {
        self.fx.state_dir.join("sessions/main")
    }

    /// Heads of every epoch, in order.
    pub fn heads(&self) -> Vec<Value> {
        (0..)
            .map(|e| self.session_dir().join(format!("epoch-{e:06}.head.json")))
            .take_while(|p| p.exists())
            .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
            .collect()
    }

    /// Records of every epoch, in order.
    pub fn records(&self) -> Vec<Vec<Value>> {
        (0..self.heads().len())
            .map(|e| records_in(&self.session_dir().join(format!("epoch-{e:06}.jsonl"))))
            .collect()
    }
}

/// The owner's lines: short questions, and every `every`-th one asks to read a notes file.
pub fn lines(n: usize, every: usize) -> Vec<String> {
    const QUESTIONS: &[&str] = &[
        "Say hello.",
        "Name a colour.",
        "Name a fruit.",
        "What is two plus two?",
        "Name a planet.",
        "Name a tree.",
        "Name a river.",
        "What day follows Monday?",
        "Name an animal.",
        "Name a metal.",
    ];
    (0..n)
        .map(|i| {
            if i % every == every - 1 {
                format!("Read notes{}.txt", i / every)
            } else {
                QUESTIONS[i % QUESTIONS.len()].to_string()
            }
        })
        .collect()
}

fn notes(dir: &Path, count: usize) {
    for k in 0..count {
        let text = format!(
            "Notes {k}. The owner keeps {} tea caddies on shelf {k}. The green caddy holds \
             sencha bought in spring; the red one holds a smoky lapsang. Water for green tea \
             should be near 80 degrees, for black tea nearly boiling. Steep green tea for two \
             minutes and black tea for four. The owner prefers no sugar and a little milk in \
             black tea only.",
            k + 2
        );
        std::fs::write(dir.join(format!("notes{k}.txt")), text).unwrap();
    }
}

/// Runs `lines` through loopd against the real server behind a relay (which adds
/// `tool_choice: none` where `tools_rendering_llama` needs it). With
/// `summaries_on_main`, loopd's bench switch sends tool summaries to the main slot.
/// `extra` goes into every forwarded request body.
pub fn converse(
    server: &str,
    lines: &[String],
    threshold: f64,
    summaries_on_main: bool,
    extra: Value,
) -> Run {
    let files = tempfile::tempdir().unwrap();
    notes(files.path(), lines.len());
    let dir = files.path().to_path_buf();
    let relay = Relay::start(
        server,
        Box::new(move |body: &Value| {
            let last = body["messages"].as_array()?.last()?;
            let name = last["content"].as_str()?.strip_prefix("Read ")?;
            (last["role"] == "user" && body["id_slot"] == 0).then(|| {
                let args = json!({ "path": dir.join(name) }).to_string();
                tool_calls(&[(name, "read_file", &args)])
            })
        }),
        extra,
        json!({"tool_choice": "none"}),
    );
    let fx = Fixture::new("");
    std::fs::write(fx.prompts.join("system.md"), SYSTEM).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    for name in ["compact.md", "summarise.md"] {
        std::fs::copy(repo.join("config").join(name), fx.prompts.join(name)).unwrap();
    }
    let tables = format!(
        "[compact]\nthreshold = {threshold}\nsummary_chars = 400\nsummarise = [\"read_file\"]\n\n\
         [tools.read_file]\nroots = [{:?}]\n",
        files.path()
    );
    write_config(&fx, &relay.url, "", "", &tables);
    // The real server's slots hold CTX_PER_SLOT. Under load a summary of a long prompt
    // can sit silent for a minute, so the read timeout is a hang guard, not a speed limit.
    let config = std::fs::read_to_string(&fx.config)
        .unwrap()
        .replace(
            &format!("n_ctx = {}", crate::loopd::N_CTX),
            &format!("n_ctx = {CTX_PER_SLOT}"),
        )
        .replace("timeout_s = 60", &format!("timeout_s = {}", SLOW.as_secs()));
    std::fs::write(&fx.config, config).unwrap();
    let mut cmd = Daemon::command("loopd", &fx);
    if summaries_on_main {
        cmd.env("BOXMAKER_BENCH_SUMMARY_SLOT", "main");
    }
    let mut daemon = Daemon::spawn(cmd, &fx);
    daemon.ready();
    let mut c = LineClient::connect(&fx.loopd_sock);
    c.stream.set_read_timeout(Some(SLOW)).unwrap();
    let mut turns = Vec::new();
    for line in lines {
        let before = relay.seen().len();
        let reply = c.ask(line);
        assert!(
            !reply.iter().any(|l| l.starts_with("error:")),
            "{line}: {reply:?}\n{}",
            daemon.log_text()
        );
        turns.push(before..relay.seen().len());
    }
    Run {
        fx,
        _daemon: daemon,
        relay,
        turns,
        _files: files,
    }
}

/// What a request was for.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Kind {
    Turn,
    ToolSummary,
    Compaction,
}

pub fn kind(seen: &Seen, compact_md: &str) -> Kind {
    let last = seen.last_text();
    if last == compact_md.trim_end() {
        Kind::Compaction
    } else if last.starts_with(SUMMARISE_REAL.trim_end()) {
        Kind::ToolSummary
    } else {
        Kind::Turn
    }
}

/// The repo's summarise.md, which the real runs use.
const SUMMARISE_REAL: &str = include_str!("../../../config/summarise.md");
pub const COMPACT_REAL: &str = include_str!("../../../config/compact.md");

/// The carry a request's prompt starts from, naming its epoch.
fn epoch_key(seen: &Seen) -> String {
    let m = &seen.body["messages"][1];
    match m["content"].as_str() {
        Some(c) if c.starts_with("Earlier turns, summarised:") => c.to_string(),
        _ => String::new(),
    }
}

#[test]
fn a_real_conversation_compacts_with_the_models_summary_and_keeps_the_main_cache() {
    let Some(server) = tools_rendering_llama() else {
        return;
    };
    let run = converse(&server.url, &lines(15, 4), 0.3, false, json!({}));
    let seen = run.relay.seen();
    let heads = run.heads();
    let records = run.records();

    // At least one compaction, with the model's own summary, as the relay saw it.
    let compactions: Vec<&Seen> = seen
        .iter()
        .filter(|s| kind(s, COMPACT_REAL) == Kind::Compaction)
        .collect();
    assert!(!compactions.is_empty(), "no compaction: {heads:?}");
    assert!(heads.len() >= 2, "{heads:?}");
    for (i, h) in heads.iter().enumerate().skip(1) {
        assert_eq!(h["reason"], "threshold", "{h}");
        let carry = h["carry"].as_str().unwrap();
        let answer = compactions[i - 1].content.trim();
        assert!(!carry.is_empty());
        if h["summary_source"] == "fallback" {
            // The tiny model's summary ran into the server's token limit (or looped):
            // it lost the conversation, so the owner's own lines stand in, and the old
            // epoch says why (docs/turn.md, 'A summary that lost the conversation').
            assert!(
                records[i - 1].iter().any(|r| r["type"] == "note"
                    && r["text"]
                        .as_str()
                        .unwrap_or("")
                        .starts_with("summary replaced by the fallback")),
                "{:?}",
                records[i - 1]
            );
        } else {
            assert_eq!(h["summary_source"], "model", "{h}");
            assert!(
                answer.starts_with(carry),
                "the carry is the model's answer: {carry:?} vs {answer:?}"
            );
        }
        assert_eq!(compactions[i - 1].slot(), 0);
        assert!(compactions[i - 1].forwarded);
    }

    // Every read_file result got a summary on the background slot, with no tools key.
    let results: usize = records
        .iter()
        .flatten()
        .filter(|r| r["type"] == "tool_result")
        .count();
    let summaries: Vec<&Value> = records
        .iter()
        .flatten()
        .filter(|r| r["type"] == "tool_summary")
        .collect();
    assert!(results >= 3, "{records:?}");
    assert_eq!(summaries.len(), results, "{records:?}");
    for s in &summaries {
        assert!(!s["content"].as_str().unwrap().is_empty());
        assert_eq!(s["class"], "private");
    }
    let background: Vec<&Seen> = seen
        .iter()
        .filter(|s| kind(s, COMPACT_REAL) == Kind::ToolSummary)
        .collect();
    assert_eq!(background.len(), results);
    for s in &background {
        assert_eq!(s.slot(), 1);
        assert!(s.forwarded && s.status == 200);
        assert!(s.body.get("tools").is_none(), "{}", s.body);
    }
    // Summaries are in the epoch that holds their result, never in a later one.
    for epoch in &records {
        let calls: Vec<&Value> = epoch
            .iter()
            .filter(|r| r["type"] == "tool_result")
            .map(|r| &r["call"])
            .collect();
        let summarised: Vec<&Value> = epoch
            .iter()
            .filter(|r| r["type"] == "tool_summary")
            .map(|r| &r["call"])
            .collect();
        assert_eq!(calls, summarised);
    }

    // Within an epoch, each main-slot request reuses at least 90% of the one before's
    // prompt from llama.cpp's cache: the background work did not evict it.
    let main: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.forwarded && s.slot() == 0)
        .collect();
    let mut checked = 0;
    for pair in main.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        // A summary request is its epoch's last on the main slot. Two epochs in a row may
        // carry the same summary word for word (a tiny model at temperature 0), so the
        // carry alone cannot tell the one after it is in the next epoch.
        if epoch_key(a) != epoch_key(b) || kind(a, COMPACT_REAL) == Kind::Compaction {
            continue;
        }
        let (ta, tb) = (a.timings.unwrap(), b.timings.unwrap());
        let before = ta.cache_n + ta.prompt_n;
        assert!(
            tb.cache_n * 10 >= before * 9,
            "cache_n {} is under 90% of the previous prompt {before}:\n{:?}\n{:?}",
            tb.cache_n,
            a.last_text(),
            b.last_text()
        );
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} pairs checked");
}
