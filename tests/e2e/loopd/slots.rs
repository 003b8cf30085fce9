//! The main slot's save and restore (docs/turn.md, `llama.slot_save_idle_s`) against the
//! stand-in, which answers the slot actions as a server with `--slot-save-path` does
//! (docs/llama-api.md) and can pretend to restart. Synchronised on loopd's log lines and
//! the stand-in's requests; the real-server version is `restore.rs`.

use super::{write_config, Loopd, N_CTX};
use crate::support::standin::{text_with, Standin, SAVED_TOKENS};
use crate::support::{Daemon, Fixture};

fn start_saving() -> Loopd {
    let fx = Fixture::new("");
    let llama = Standin::start(N_CTX);
    llama.set_save_path();
    write_config(&fx, &llama.url, "retries = 2\nslot_save_idle_s = 1", "", "");
    let daemon = Daemon::start("loopd", &fx);
    Loopd { fx, llama, daemon }
}

fn slot_actions(l: &Loopd) -> Vec<String> {
    l.llama
        .requests()
        .into_iter()
        .filter(|r| r.path.starts_with("/slots/"))
        .map(|r| format!("{} {}", r.path, r.body))
        .collect()
}

#[test]
fn after_a_server_restart_the_slot_is_restored_before_the_next_turn() {
    let l = start_saving();
    l.llama.push(text_with(&["one"], (0, 90, 10)));
    l.llama.push(text_with(&["two"], (SAVED_TOKENS, 5, 3)));
    let mut c = l.client();
    assert_eq!(c.ask("first"), ["one"]);
    l.daemon
        .wait_log("saved slot 0 to main-epoch-000000.bin: 100 tokens");
    l.llama.restart_slots();
    assert_eq!(c.ask("second"), ["two"]);
    l.daemon
        .wait_log("restored slot 0 from main-epoch-000000.bin: 100 tokens");
    let actions = slot_actions(&l);
    let restore = actions
        .iter()
        .position(|a| a.contains("action=restore") && a.contains("main-epoch-000000.bin"));
    assert!(restore.is_some(), "{actions:?}");
    assert!(
        !l.daemon.log_text().contains("did not take"),
        "{}",
        l.daemon.log_text()
    );
}

#[test]
fn a_session_pushed_off_the_main_slot_is_restored_and_a_restore_that_did_not_take_is_a_warning() {
    let l = start_saving();
    l.llama.push(text_with(&["in main"], (0, 90, 10)));
    l.llama.push(text_with(&["in other"], (0, 90, 10)));
    // Back in main: the server reused nothing, as if the file were from another model.
    l.llama.push(text_with(&["main again"], (0, 95, 3)));
    let mut c = l.client();
    assert_eq!(c.ask("hello main"), ["in main"]);
    l.daemon.wait_log("saved slot 0 to main-epoch-000000.bin");
    c.ask("/session other");
    assert_eq!(c.ask("hello other"), ["in other"]);
    l.daemon.wait_log("saved slot 0 to other-epoch-000000.bin");
    c.ask("/session main");
    assert_eq!(c.ask("back"), ["main again"]);
    l.daemon
        .wait_log("session main: restored slot 0 from main-epoch-000000.bin");
    l.daemon.wait_log("did not take");
}

/// Regression: a restore after a server restart that loaded nothing (the file replaced by
/// an empty slot's) or that the server refused (the file deleted: a 400) logged nothing,
/// though the turn read its whole prompt again; only a restore that loaded tokens was
/// judged by the next turn's `cache_n`.
#[test]
fn a_restore_of_a_file_emptied_or_deleted_behind_loopds_back_is_a_warning() {
    for (tokens, said) in [
        (
            Some(0),
            "the server loaded 0 tokens from main-epoch-000000.bin",
        ),
        (
            None,
            "the server refused main-epoch-000000.bin with HTTP 400",
        ),
    ] {
        let l = start_saving();
        l.llama.push(text_with(&["one"], (0, 90, 10)));
        // The server reused nothing: the whole prompt was read again.
        l.llama.push(text_with(&["two"], (0, 95, 3)));
        let mut c = l.client();
        assert_eq!(c.ask("first"), ["one"]);
        l.daemon
            .wait_log("saved slot 0 to main-epoch-000000.bin: 100 tokens");
        l.llama.replace_slot_file("main-epoch-000000.bin", tokens);
        l.llama.restart_slots();
        assert_eq!(c.ask("second"), ["two"]);
        l.daemon.wait_log(&format!(
            "session main: the restore of slot 0 (epoch 0, {SAVED_TOKENS} tokens) did not take: {said}"
        ));
    }
}

#[test]
fn the_slot_is_not_restored_while_it_holds_the_sessions_prompt() {
    let l = start_saving();
    l.llama.push(text_with(&["one"], (0, 90, 10)));
    l.llama.push(text_with(&["two"], (100, 5, 3)));
    let mut c = l.client();
    assert_eq!(c.ask("first"), ["one"]);
    l.daemon.wait_log("saved slot 0 to main-epoch-000000.bin");
    assert_eq!(c.ask("second"), ["two"]);
    let actions = slot_actions(&l);
    // No restore at all: before the first turn there was no file to restore (loopd never
    // asks for a file its ledger does not name), and after the save the slot still held
    // the session's prompt.
    assert!(
        actions.iter().all(|a| !a.contains("action=restore")),
        "{actions:?}"
    );
    assert!(
        actions.iter().any(|a| a.contains("action=save")),
        "{actions:?}"
    );
}

#[test]
fn an_ended_epochs_file_is_emptied_by_saving_the_erased_background_slot_over_it() {
    let l = start_saving();
    l.llama.push(text_with(&["one"], (0, 90, 10)));
    l.llama.push(text_with(&["two"], (3000, 482, 10)));
    l.llama.push(text_with(&["the summary"], (0, 10, 5)));
    let mut c = l.client();
    assert_eq!(c.ask("first"), ["one"]);
    l.daemon.wait_log("saved slot 0 to main-epoch-000000.bin");
    assert_eq!(
        l.llama.slot_file("main-epoch-000000.bin"),
        Some(SAVED_TOKENS)
    );
    c.ask("second");
    l.daemon
        .wait_log("epoch 0 ended; emptied main-epoch-000000.bin");
    assert_eq!(l.llama.slot_file("main-epoch-000000.bin"), Some(0));
    let actions = slot_actions(&l);
    let erase = actions
        .iter()
        .position(|a| a.starts_with("/slots/1?action=erase"))
        .unwrap();
    let empty = actions
        .iter()
        .position(|a| a.starts_with("/slots/1?action=save") && a.contains("main-epoch-000000.bin"))
        .unwrap();
    assert!(erase < empty, "{actions:?}");
    assert!(
        !actions
            .iter()
            .any(|a| a.starts_with("/slots/0?action=erase")),
        "{actions:?}"
    );
}
