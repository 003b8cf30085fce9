//! Memory in the turn: memoryd is asked with the owner's line before the model is, and
//! what is relevant and not already in the prompt joins the turn as a `memory` record.

use super::{epoch_records, with_memoryd};
use crate::loopd::{messages, Loopd};
use crate::support::standin::text;

const FACT: &str = "my dentist appointment is on Thursday at 3pm with Dr. Alvarez";

fn compact(l: &Loopd, summary: &str) {
    l.llama.push(text(&[summary]));
    let reply = l.client().ask("/compact");
    assert!(reply[0].starts_with("compacted: "), "{reply:?}");
}

#[test]
fn a_fact_from_epoch_zero_reaches_the_model_after_two_compactions_without_a_tool_call() {
    let (l, _m) = with_memoryd("");
    let mut c = l.client();
    l.llama.push(text(&["Noted."]));
    c.ask(FACT);
    // Summaries that lost the fact: only memory can bring it back now.
    compact(&l, "The owner greeted the assistant.");
    l.llama.push(text(&["Indeed."]));
    c.ask("the weather is lovely this morning");
    compact(&l, "They talked about the weather.");
    l.llama
        .push(text(&["On Thursday at 3pm, with Dr. Alvarez."]));
    let reply = c.ask("When is my dentist appointment, and with which doctor?");
    assert_eq!(reply, ["On Thursday at 3pm, with Dr. Alvarez."]);
    let request = l.llama.chats().last().unwrap().json();
    let sent = messages(&request);
    let memory = sent
        .iter()
        .find(|m| m["role"] == "user" && m["content"].as_str().unwrap().starts_with("From memory:"))
        .unwrap_or_else(|| panic!("no memory message in {sent:?}"));
    assert!(
        memory["content"].as_str().unwrap().contains(FACT),
        "{memory}"
    );
    // It comes right after the owner's line, and it is on disk as a `memory` record.
    let records = epoch_records(&l, "main", 2);
    let kinds: Vec<&str> = records
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds[..2], ["user", "memory"], "{kinds:?}");
    assert_eq!(records[1]["class"], "private");
    assert_eq!(records[1]["untrusted"], false);
}

#[test]
fn a_question_about_something_never_said_adds_no_memory_record() {
    let (l, _m) = with_memoryd("");
    let mut c = l.client();
    l.llama.push(text(&["Noted."]));
    c.ask(FACT);
    compact(&l, "A dentist appointment was mentioned.");
    l.llama.push(text(&["I do not know."]));
    c.ask("what colour is my bicycle?");
    let records = epoch_records(&l, "main", 1);
    assert!(records.iter().all(|r| r["type"] != "memory"), "{records:?}");
}

#[test]
fn what_is_already_in_the_epoch_is_not_brought_back_twice() {
    let (l, _m) = with_memoryd("");
    let mut c = l.client();
    l.llama.push(text(&["Noted."]));
    c.ask(FACT);
    l.llama.push(text(&["Thursday."]));
    c.ask("when is my dentist appointment?");
    let records = epoch_records(&l, "main", 0);
    assert!(records.iter().all(|r| r["type"] != "memory"), "{records:?}");
}

#[test]
fn memory_in_the_turn_switched_off_adds_nothing() {
    let l = Loopd::start_with_memory("auto_recall = false", "");
    let _m = crate::support::Daemon::start("memoryd", &l.fx);
    let mut c = l.client();
    l.llama.push(text(&["Noted."]));
    c.ask(FACT);
    compact(&l, "Nothing much.");
    l.llama.push(text(&["No idea."]));
    c.ask("when is my dentist appointment?");
    let records = epoch_records(&l, "main", 1);
    assert!(records.iter().all(|r| r["type"] != "memory"), "{records:?}");
}

#[test]
fn with_memoryd_down_the_turn_is_answered_with_one_warning() {
    let l = Loopd::start("");
    l.llama.push(text(&["Hello."]));
    assert_eq!(l.client().ask("hello there"), ["Hello."]);
    let log = l.daemon.wait_log("memory in the turn:");
    assert_eq!(log.matches("memory in the turn:").count(), 1, "{log}");
    assert!(l.kinds("main").iter().all(|k| k != "memory"));
}

#[test]
fn a_secret_files_text_never_comes_back_through_memory() {
    let home = tempfile::tempdir().unwrap();
    let secret_dir = home.path().join("secret");
    std::fs::create_dir_all(&secret_dir).unwrap();
    std::fs::write(secret_dir.join("pin.txt"), "the vault pin is 4711").unwrap();
    let root = home.path().canonicalize().unwrap();
    let tools = format!(
        "[tools.read_file]\nroots = [{root:?}]\n[[tools.read_file.class]]\nprefix = {:?}\nclass = \"secret\"\n",
        root.join("secret")
    );
    let (l, _m) = with_memoryd(&tools);
    let mut c = l.client();
    let path = root.join("secret/pin.txt").display().to_string();
    l.llama.push(crate::support::standin::tool_calls(&[(
        "c1",
        "read_file",
        &format!("{{\"path\":{path:?}}}"),
    )]));
    l.llama.push(text(&["The vault pin is 4711."]));
    c.ask("read my vault pin file");
    compact(&l, "A file was read.");
    l.llama.push(text(&["I cannot say."]));
    c.ask("what is the vault pin?");
    for r in epoch_records(&l, "main", 1) {
        assert!(!r.to_string().contains("4711"), "{r}");
    }
}
