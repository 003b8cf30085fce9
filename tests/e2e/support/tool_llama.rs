//! The real llama.cpp server made to stream real tool calls: SmolLM2 behind a
//! Hermes-style chat template (`hermes_tools.jinja`, Qwen2.5's form: the tool schemas in
//! the system message, each call as JSON in a tool-call tag), at temperature 0, with a
//! system prompt of worked examples written as turns (`tool_system.md`; why they are
//! turns, and in that order: docs/llama-api.md, 'Tools'). With these the model answers
//! "Read /a/b.txt" with a `read_file` call, which llama.cpp parses and streams as
//! `delta.tool_calls` (docs/llama-api.md, 'Tools'). The model's choices are its own;
//! tests that must steer them use the scripted stand-in instead.

use super::real_llama::{own_llama, RealLlama};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The few-shot system prompt the tool tier's loopd runs with.
pub fn tool_system() -> String {
    std::fs::read_to_string(support_file("tool_system.md")).unwrap()
}

fn support_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("e2e")
        .join("support")
        .join(name)
}

/// The arguments that make a server of the tool tier: the template, temperature 0,
/// `n_predict` tokens at most per answer, and a slot save path.
fn args(n_predict: u32) -> Vec<String> {
    // A save path turns on the slot actions, which `one_at_a_time` uses to erase the slots
    // (without one llama.cpp answers them 501); nothing is ever saved there.
    let slots = std::env::temp_dir().join(format!(
        "boxmaker-e2e-tool-slots-{}-{n_predict}",
        std::process::id()
    ));
    std::fs::create_dir_all(&slots).unwrap();
    vec![
        "--slot-save-path".into(),
        slots.display().to_string(),
        "--chat-template-file".into(),
        support_file("hermes_tools.jinja").display().to_string(),
        "--temp".into(),
        "0".into(),
        "--n-predict".into(),
        n_predict.to_string(),
    ]
}

/// The most tokens an answer of the shared tool server may run to: a call of one
/// fixture path is about 45 tokens and two calls about 100 (seen: 98 and 100 for two
/// `/tmp/boxmaker-e2e…/files/…` paths, which 96 cut, so the calls never ran); a reply
/// after a tool result is a sentence. The limit keeps the tiny model's rambling short on a
/// shared machine.
pub const TOOL_N_PREDICT: u32 = 160;

/// The shared tool server, or `None` (after saying why) when the venv is missing.
pub fn tool_llama() -> Option<&'static RealLlama> {
    static SERVER: OnceLock<Option<RealLlama>> = OnceLock::new();
    SERVER.get_or_init(|| start(TOOL_N_PREDICT)).as_ref()
}

/// A tool server of the caller's own whose answers stop after `n_predict` tokens.
pub fn tool_llama_cut_at(n_predict: u32) -> Option<RealLlama> {
    start(n_predict)
}

fn start(n_predict: u32) -> Option<RealLlama> {
    let args = args(n_predict);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    own_llama(&refs)
}

/// Held by each test on the shared tool server for as long as it talks to it, which
/// starts with both slots empty. At temperature 0 the model's answer is the same for the
/// same prompt only when the server computes it the same way: another test's request
/// batched beside it, or a prefix reused from the cache a test before left in slot 0,
/// changes the arithmetic slightly, and the tiny model's choice of call is sometimes
/// that close. One test at a time, from empty slots, keeps the tier repeatable.
pub fn one_at_a_time(server: &RealLlama) -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    // A test that failed while holding it leaves nothing half done in the server.
    let turn = TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    for slot in 0..2 {
        erase_slot(&server.url, slot);
    }
    turn
}

/// `POST /slots/{slot}?action=erase` on the server at `url` (docs/llama-api.md, its
/// section on slot save and restore), over a plain socket: the tests' crate has no HTTP client.
fn erase_slot(url: &str, slot: u32) {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /slots/{slot}?action=erase HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(
        answer.starts_with("HTTP/1.1 200"),
        "erasing slot {slot}: {answer}"
    );
}
