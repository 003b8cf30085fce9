//! Against the real llama.cpp server (SmolLM2): a short conversation through the socket,
//! proving the prompt prefix stays byte-stable — each main-slot request reuses at least
//! the whole prompt of the one before from llama.cpp's cache.

use super::records_in;
use crate::support::real_llama::{real_llama, CTX_PER_SLOT};
use crate::support::{Daemon, Fixture, LineClient};

#[test]
fn a_conversation_keeps_hitting_the_prompt_cache() {
    let Some(server) = real_llama() else { return };
    let fx = Fixture::new("");
    std::fs::write(
        fx.prompts.join("system.md"),
        "You are terse. Answer in at most one short sentence.",
    )
    .unwrap();
    super::write_config(&fx, &server.url, "", "", "");
    // The real server's slots hold CTX_PER_SLOT; say so, so loopd does not warn.
    // The real model on a shared 2-core machine can take longer than the stand-in tests'
    // 60 s for a whole answer (llama.timeout_s bounds the whole stream), so the default.
    let config = std::fs::read_to_string(&fx.config)
        .unwrap()
        .replace(
            &format!("n_ctx = {}", super::N_CTX),
            &format!("n_ctx = {CTX_PER_SLOT}"),
        )
        .replace("timeout_s = 60", "timeout_s = 600");
    std::fs::write(&fx.config, config).unwrap();
    let d = Daemon::start("loopd", &fx);
    let mut c = LineClient::connect(&fx.loopd_sock);
    for line in ["Say hello.", "Name a colour.", "Name a fruit."] {
        let reply = c.ask(line);
        assert!(
            !reply.iter().any(|l| l.starts_with("error:")),
            "{line}: {reply:?}\n{}",
            d.log_text()
        );
    }
    let status = c.ask("/status").join("\n");
    assert!(status.contains("llama.cpp: reachable"), "{status}");
    assert!(!d.log_text().contains("expect.n_ctx"), "{}", d.log_text());

    let usages: Vec<(u64, u64)> =
        records_in(&fx.state_dir.join("sessions/main/epoch-000000.jsonl"))
            .iter()
            .filter(|r| r["type"] == "usage")
            .map(|r| {
                assert_eq!(r["slot"], 0);
                (
                    r["cache_n"].as_u64().unwrap(),
                    r["prompt_n"].as_u64().unwrap(),
                )
            })
            .collect();
    assert_eq!(usages.len(), 3, "{usages:?}");
    for pair in usages.windows(2) {
        let (before, now) = (pair[0], pair[1]);
        assert!(
            now.0 >= before.0 + before.1,
            "cache_n {} is less than the previous whole prompt {} + {}: the prefix changed",
            now.0,
            before.0,
            before.1
        );
    }
}

/// Regression: at the default model without tools (SmolLM2 here: its template drops the
/// tools, and it calls none), "remind me to call the plumber at 5pm tomorrow" got an
/// answer in words and no reminder, and nothing said so. Whatever the model answers, the
/// block ends with loopd's line giving the command (docs/reminders.md, 'Asked in words').
#[test]
fn at_the_real_model_without_tools_a_reminder_asked_in_words_gets_the_command_to_send() {
    let Some(server) = real_llama() else { return };
    let fx = Fixture::new("");
    super::write_config(&fx, &server.url, "", "", "");
    let config = std::fs::read_to_string(&fx.config)
        .unwrap()
        .replace(
            &format!("n_ctx = {}", super::N_CTX),
            &format!("n_ctx = {CTX_PER_SLOT}"),
        )
        .replace("timeout_s = 60", "timeout_s = 600");
    std::fs::write(&fx.config, config).unwrap();
    let d = Daemon::start("loopd", &fx);
    let mut c = LineClient::connect(&fx.loopd_sock);
    let reply = c.ask("remind me to call the plumber at 5pm tomorrow");
    eprintln!("the reply block:\n{}\n.", reply.join("\n"));
    assert_eq!(
        reply.last().map(String::as_str),
        Some("· no reminder was set; to set it, send: /remind tomorrow 17:00 call the plumber"),
        "{reply:?}\n{}",
        d.log_text()
    );
    assert!(c.ask("/remind")[0].starts_with("no reminders"));
}
