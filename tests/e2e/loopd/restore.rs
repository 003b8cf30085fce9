//! A restart of llama.cpp costs nothing (docs/turn.md, `llama.slot_save_idle_s`): against the
//! real server started with `--slot-save-path`, loopd saves the main slot once it has
//! been idle, and after the server restarts it restores the slot before the next turn,
//! whose `prompt_n` is then only the new tokens. Synchronised on loopd's log lines.

use super::records_in;
use crate::support::real_llama::{own_llama, CTX_PER_SLOT};
use crate::support::{Daemon, Fixture, LineClient};

/// `(cache_n, prompt_n)` of each `usage` in session main's epoch 0.
pub fn usages(fx: &Fixture) -> Vec<(u64, u64)> {
    records_in(&fx.state_dir.join("sessions/main/epoch-000000.jsonl"))
        .iter()
        .filter(|r| r["type"] == "usage")
        .map(|r| {
            (
                r["cache_n"].as_u64().unwrap(),
                r["prompt_n"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// A config for the real server at `url`: its slot context, a terse system prompt and
/// the default whole-answer timeout (the real model on a shared machine is slow).
pub fn real_config(fx: &Fixture, url: &str, llama_extra: &str) {
    std::fs::write(
        fx.prompts.join("system.md"),
        "You are terse. Answer in at most one short sentence.",
    )
    .unwrap();
    super::write_config(fx, url, llama_extra, "", "");
    let config = std::fs::read_to_string(&fx.config)
        .unwrap()
        .replace(
            &format!("n_ctx = {}", super::N_CTX),
            &format!("n_ctx = {CTX_PER_SLOT}"),
        )
        .replace("timeout_s = 60", "timeout_s = 600");
    std::fs::write(&fx.config, config).unwrap();
}

fn ask_ok(c: &mut LineClient, d: &Daemon, line: &str) {
    let reply = c.ask(line);
    assert!(
        !reply.iter().any(|l| l.starts_with("error:")),
        "{line}: {reply:?}\n{}",
        d.log_text()
    );
}

#[test]
fn after_a_llama_restart_the_next_turn_reads_only_its_new_tokens() {
    let saves = tempfile::tempdir().unwrap();
    let path = saves.path().display().to_string();
    let Some(mut llama) = own_llama(&["--slot-save-path", &path]) else {
        return;
    };
    let fx = Fixture::new("");
    real_config(&fx, &llama.url, "slot_save_idle_s = 1");
    let d = Daemon::start("loopd", &fx);
    let mut c = LineClient::connect(&fx.loopd_sock);
    ask_ok(&mut c, &d, "Say hello.");
    ask_ok(&mut c, &d, "Name a colour.");
    d.wait_log("saved slot 0 to main-epoch-000000.bin");
    assert!(saves.path().join("main-epoch-000000.bin").exists());
    llama.restart();
    ask_ok(&mut c, &d, "Name a fruit.");
    d.wait_log("restored slot 0 from main-epoch-000000.bin");
    let u = usages(&fx);
    assert_eq!(u.len(), 3, "{u:?}");
    let (cache_n, prompt_n) = u[2];
    // Without the restore the whole prompt is read again: cache_n 0.
    assert!(
        cache_n >= u[1].0 + u[1].1,
        "the restored slot holds the whole previous prompt: {u:?}"
    );
    assert!(
        prompt_n < cache_n,
        "only the new message is read: {u:?}\n{}",
        d.log_text()
    );
    assert!(!d.log_text().contains("did not take"), "{}", d.log_text());
}

#[test]
fn a_server_without_a_save_path_is_said_once_and_turns_go_on() {
    let Some(llama) = own_llama(&[]) else { return };
    let fx = Fixture::new("");
    real_config(&fx, &llama.url, "slot_save_idle_s = 1");
    let d = Daemon::start("loopd", &fx);
    let mut c = LineClient::connect(&fx.loopd_sock);
    ask_ok(&mut c, &d, "Say hello.");
    d.wait_log("without --slot-save-path");
    ask_ok(&mut c, &d, "Name a colour.");
    let said = d.log_text().matches("without --slot-save-path").count();
    assert_eq!(said, 1, "{}", d.log_text());
}
