//! A crash at each step of starting a new epoch (docs/sessions.md): loopd is aborted at a named
//! point (`BOXMAKER_TEST_ABORT_AT`), restarted, and must find either the old epoch
//! current or the new one complete — and the session must open and work.

use super::*;
use crate::loopd::{write_config, Loopd, N_CTX};
use crate::support::standin::{text, text_with, Standin};
use crate::support::{Daemon, Fixture};

/// Runs a turn that is due for compaction with loopd armed to abort at `point`, then
/// starts a plain loopd on the same state.
fn crash_at(point: &str) -> Loopd {
    let fx = Fixture::new("");
    let llama = Standin::start(N_CTX);
    write_config(&fx, &llama.url, "retries = 2", "", "");
    llama.push(text_with(&["first answer"], OVER));
    llama.push(text(&["the summary"]));
    let mut cmd = Daemon::command("loopd", &fx);
    cmd.env("BOXMAKER_TEST_ABORT_AT", point);
    let mut d = Daemon::spawn(cmd, &fx);
    d.ready();
    crate::support::LineClient::connect(&fx.loopd_sock).send("hello");
    assert!(!d.wait().success(), "loopd should have aborted at {point}");
    d.wait_log(&format!("test hook: aborting at {point}"));
    drop(d);
    let daemon = Daemon::start("loopd", &fx);
    Loopd { fx, llama, daemon }
}

fn files(l: &Loopd) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(l.session_dir("main"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// Before the rename the old epoch is current: the next turn's prompt has no carry and
/// lands in epoch 0. A later compaction then goes through, over whatever was left.
fn old_epoch_is_current_and_a_later_compaction_works(l: &Loopd) {
    l.llama.push(text_with(&["second answer"], OVER));
    l.llama.push(text(&["a second summary"]));
    let mut c = l.client();
    assert_eq!(answer(c.ask("again")), ["second answer"]);
    let chats = l.llama.wait_chats(4);
    assert_eq!(
        roles(&chats[2].json()),
        [
            pair("system", SYSTEM),
            pair("user", "hello"),
            pair("assistant", "first answer"),
            pair("user", "again"),
        ]
    );
    assert_eq!(
        epoch_kinds(l, 0),
        ["user", "assistant", "usage", "user", "assistant", "usage"]
    );
    let h = head(l, 1).unwrap();
    assert_eq!(h["carry"], "a second summary");
    assert!(epoch_records(l, 1).is_empty());
    assert_eq!(
        files(l),
        [
            "epoch-000000.head.json",
            "epoch-000000.jsonl",
            "epoch-000001.head.json",
            "epoch-000001.jsonl"
        ],
        "no temporary file is left behind"
    );
    l.llama.push(text(&["third answer"]));
    assert_eq!(answer(c.ask("third")), ["third answer"]);
    assert_eq!(epoch_kinds(l, 1), ["user", "assistant", "usage"]);
}

#[test]
fn a_crash_after_the_summary_leaves_the_old_epoch_current() {
    let l = crash_at("compact-after-summary");
    assert_eq!(files(&l), ["epoch-000000.head.json", "epoch-000000.jsonl"]);
    old_epoch_is_current_and_a_later_compaction_works(&l);
}

#[test]
fn a_crash_after_the_new_log_is_created_leaves_the_old_epoch_current() {
    let l = crash_at("compact-after-log-create");
    // The new epoch's empty log is a leftover; the restart removed it.
    assert_eq!(files(&l), ["epoch-000000.head.json", "epoch-000000.jsonl"]);
    old_epoch_is_current_and_a_later_compaction_works(&l);
}

#[test]
fn a_crash_after_the_temporary_head_leaves_the_old_epoch_current() {
    let l = crash_at("compact-after-head-temp");
    // The temporary head and the empty log are leftovers; the restart removed them.
    assert_eq!(files(&l), ["epoch-000000.head.json", "epoch-000000.jsonl"]);
    old_epoch_is_current_and_a_later_compaction_works(&l);
}

#[test]
fn a_crash_after_the_head_rename_leaves_the_new_epoch_complete_and_current() {
    let l = crash_at("compact-after-head-rename");
    let h = head(&l, 1).unwrap();
    assert_eq!(h["carry"], "the summary");
    assert_eq!(h["reason"], "threshold");
    l.llama.push(text(&["second answer"]));
    assert_eq!(l.client().ask("again"), ["second answer"]);
    assert_eq!(
        roles(&l.llama.wait_chats(3)[2].json()),
        [
            pair("system", SYSTEM),
            pair("user", &carried("the summary")),
            pair("user", "again"),
        ]
    );
    assert_eq!(epoch_kinds(&l, 0), ["user", "assistant", "usage"]);
    assert_eq!(epoch_kinds(&l, 1), ["user", "assistant", "usage"]);
}

#[test]
fn a_new_epoch_whose_log_file_is_missing_opens_empty() {
    let mut l = crash_at("compact-after-head-rename");
    l.daemon.stop();
    std::fs::remove_file(l.session_dir("main").join("epoch-000001.jsonl")).unwrap();
    l.daemon = Daemon::start("loopd", &l.fx);
    l.llama.push(text(&["fine"]));
    assert_eq!(l.client().ask("again"), ["fine"]);
    assert_eq!(epoch_kinds(&l, 1), ["user", "assistant", "usage"]);
}
