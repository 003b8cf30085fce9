//! Forgetting end to end (docs/forgetting.md): a phrase the owner told, that a tool read
//! from a file, that a compaction carried and that memory recalled, is listed by
//! `/forget QUERY` and removed by `/forget all`; then a byte search of the state
//! directory finds it nowhere, the session opens and answers after a restart, and every
//! other record is as it was. `crash` does the same with loopd killed at each step.

#[cfg(feature = "bench")]
mod bench;
mod crash;
mod everywhere;
mod honcho;
mod launder;
mod mail;

use crate::loopd::{records_in, write_config, Loopd, N_CTX};
use crate::support::standin::{text, tool_calls, Standin};
use crate::support::{Daemon, Fixture};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The text to forget, and what the owner types to find it (another case on purpose).
pub const PHRASE: &str = "zephyr lantern 4417";
pub const QUERY: &str = "Zephyr Lantern";

/// loopd (built with test hooks) on a fixture whose `read_file` may read `files/`, with
/// the test hook `abort_at` armed when given, and a real memoryd beside it.
pub fn start(abort_at: Option<&str>) -> (Loopd, Daemon) {
    let fx = Fixture::new("");
    let llama = Standin::start(N_CTX);
    let files = fx.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(
        files.join("notes.txt"),
        format!("locker: {PHRASE}\nbike: red\n"),
    )
    .unwrap();
    write_config(
        &fx,
        &llama.url,
        "retries = 2",
        "",
        &format!("[compact]\nsummarise = []\n\n[tools.read_file]\nroots = [{files:?}]\n"),
    );
    let mut cmd = Daemon::command("loopd", &fx);
    if let Some(point) = abort_at {
        cmd.env("BOXMAKER_TEST_ABORT_AT", point);
    }
    let mut daemon = Daemon::spawn(cmd, &fx);
    daemon.ready();
    let m = Daemon::start("memoryd", &fx);
    (Loopd { fx, llama, daemon }, m)
}

/// The phrase told, read from a file, carried into epoch 1 and recalled there.
pub fn tell_read_carry_recall(l: &Loopd) {
    let mut c = l.client();
    l.llama.push(text(&["Noted."]));
    c.ask(&format!("my locker code is {PHRASE}"));
    let files = l.fx.path().join("files").join("notes.txt");
    let args = serde_json::json!({ "path": files }).to_string();
    l.llama.push(tool_calls(&[("c1", "read_file", &args)]));
    l.llama.push(text(&["Read it."]));
    c.ask("read my notes file");
    l.llama.push(text(&[&format!(
        "The owner's locker code is {PHRASE}; the bike is red."
    )]));
    let reply = c.ask("/compact");
    assert!(reply[0].starts_with("compacted: "), "{reply:?}");
    let recalled = c.ask("/recall locker code").join("\n");
    assert!(recalled.contains(PHRASE), "{recalled}");
    l.llama.push(text(&["It is in your notes."]));
    c.ask("what is my locker code?");
    l.settle();
}

/// Every file under `dir`.
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The files under `dir` whose bytes hold the phrase, in any case.
pub fn holding(dir: &Path) -> Vec<PathBuf> {
    walk(dir)
        .into_iter()
        .filter(|p| {
            let bytes = std::fs::read(p).unwrap_or_default();
            String::from_utf8_lossy(&bytes)
                .to_lowercase()
                .contains(&PHRASE.to_lowercase())
        })
        .collect()
}

/// Each epoch's records, by epoch.
pub fn all_records(l: &Loopd) -> Vec<Vec<Value>> {
    (0..)
        .map(|e| l.session_dir("main").join(format!("epoch-{e:06}.jsonl")))
        .take_while(|p| p.exists())
        .map(|p| records_in(&p))
        .collect()
}

/// After a forget: every record is what it was before, except those that held the
/// phrase, each now a `forgotten` record that says how much was forgotten, without the
/// text, with a label no lower than the record's own; a note saying the forget happened
/// may follow in the last epoch.
pub fn only_the_phrase_is_gone(before: &[Vec<Value>], after: &[Vec<Value>]) {
    assert_eq!(before.len(), after.len());
    let mut replaced = 0;
    for (epoch, (b, a)) in before.iter().zip(after).enumerate() {
        assert!(a.len() >= b.len(), "epoch {epoch}: {a:?}");
        for (i, (rb, ra)) in b.iter().zip(a).enumerate() {
            if rb
                .to_string()
                .to_lowercase()
                .contains(&PHRASE.to_lowercase())
            {
                assert_eq!(ra["type"], "forgotten", "epoch {epoch} line {i}: {ra}");
                assert_eq!(ra["records"], 1, "{ra}");
                assert!(ra["chars"].as_u64().unwrap() > 0, "{ra}");
                if rb["untrusted"] == true {
                    assert_eq!(ra["untrusted"], true, "{ra}");
                }
                replaced += 1;
            } else {
                assert_eq!(rb, ra, "epoch {epoch} line {i}");
            }
        }
        for extra in &a[b.len()..] {
            assert_eq!(extra["type"], "note", "{extra}");
            assert!(extra["text"]
                .as_str()
                .unwrap()
                .starts_with("forgotten by the owner"));
        }
    }
    assert!(
        replaced >= 3,
        "the told, read and recalled records: {replaced}"
    );
}

/// The state directory but memoryd's index: loopd's own files.
pub fn loopd_files_holding(l: &Loopd) -> Vec<PathBuf> {
    let memory = l.fx.state_dir.join("memory");
    holding(&l.fx.state_dir)
        .into_iter()
        .filter(|p| !p.starts_with(&memory))
        .collect()
}

#[test]
fn a_forgotten_phrase_is_nowhere_in_the_state_directory_and_nothing_else_changed() {
    let (mut l, _m) = start(None);
    tell_read_carry_recall(&l);
    let before = all_records(&l);
    let mut c = l.client();
    let list = c.ask(&format!("/forget {QUERY}")).join("\n");
    assert!(list.contains("1. session main: user"), "{list}");
    assert!(list.contains("tool_result"), "{list}");
    assert!(list.contains("carry"), "{list}");
    assert!(
        list.contains(PHRASE),
        "the list shows the whole text: {list}"
    );
    let reply = c.ask("/forget all").join("\n");
    assert!(reply.starts_with("forgot "), "{reply}");
    assert!(
        reply.contains("carried summary of epoch 1: redacted"),
        "{reply}"
    );
    assert_eq!(loopd_files_holding(&l), Vec::<PathBuf>::new());
    assert!(!l
        .daemon
        .log_text()
        .to_lowercase()
        .contains(&PHRASE.to_lowercase()));
    let after = all_records(&l);
    only_the_phrase_is_gone(&before, &after);
    let head: Value = serde_json::from_str(
        &std::fs::read_to_string(l.session_dir("main").join("epoch-000001.head.json")).unwrap(),
    )
    .unwrap();
    assert!(
        head["carry"].as_str().unwrap().contains("the bike is red"),
        "the rest of the carry stays: {head}"
    );
    if reply.contains("rows removed") {
        assert_eq!(holding(&l.fx.state_dir), Vec::<PathBuf>::new());
        let recalled = c.ask(&format!("/recall {QUERY}")).join("\n");
        assert!(
            !recalled.to_lowercase().contains(&PHRASE.to_lowercase()),
            "{recalled}"
        );
    }
    // A second list finds nothing; the session opens and answers after a restart.
    assert_eq!(
        c.ask(&format!("/forget {QUERY}")),
        ["nothing on the box holds that (every session searched)"]
    );
    l.restart();
    l.llama.push(text(&["Still here."]));
    assert_eq!(l.client().ask("hello again"), ["Still here."]);
    assert!(
        !l.daemon.log_text().contains("error"),
        "{}",
        l.daemon.log_text()
    );
}

#[test]
fn forget_numbers_remove_only_the_chosen_entries() {
    let (l, _m) = start(None);
    tell_read_carry_recall(&l);
    let mut c = l.client();
    let list = c.ask(&format!("/forget {QUERY}"));
    let n: usize = list[0].split_whitespace().next().unwrap().parse().unwrap();
    assert_eq!(
        c.ask("/forget 99"),
        [format!("error: the list has {n} entries; there is no 99")]
    );
    let reply = c.ask("/forget 1").join("\n");
    assert!(
        reply.starts_with("forgot 1 record and 0 carried summaries"),
        "{reply}"
    );
    // The list is used up: numbers need a new one.
    assert!(c.ask("/forget 1")[0].starts_with("error: nothing listed to forget"));
    let left = c.ask(&format!("/forget {QUERY}")).join("\n");
    assert!(left.starts_with(&format!("{} entries", n - 1)), "{left}");
    assert!(left.contains("tool_result"), "{left}");
}
