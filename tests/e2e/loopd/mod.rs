//! loopd end to end: the real binary on a real socket, talking to a scripted llama.cpp
//! stand-in (or the real server in `real`), asserting on what a client reads, what
//! llama.cpp was sent, and the records on disk.

#[cfg(feature = "bench")]
mod bench;
#[cfg(feature = "bench")]
mod bench_hostile;
#[cfg(feature = "bench")]
mod bench_ux;
mod channel;
mod clients;
mod commands;
mod faults;
mod leftovers;
mod marking;
mod memory;
mod outside;
mod real;
mod real_tools;
mod restore;
mod slots;
mod state_lock;
mod turns;

use crate::support::standin::Standin;
use crate::support::{Daemon, Fixture, LineClient};
use serde_json::Value;
use std::path::PathBuf;

/// The per-slot context the stand-in reports and the config expects.
pub const N_CTX: u64 = 4096;

/// A loopd under test with its fixture and its llama.cpp stand-in.
pub struct Loopd {
    pub fx: Fixture,
    pub llama: Standin,
    pub daemon: Daemon,
}

/// A config for `fx` with llama.cpp at `url`; `llama_extra` goes into `[llama]`,
/// `channel_extra` into `[channel]`, and `extra` (whole tables) at the end.
pub fn write_config(fx: &Fixture, url: &str, llama_extra: &str, channel_extra: &str, extra: &str) {
    write_config_with(fx, url, llama_extra, channel_extra, "", extra)
}

/// `write_config` with `memory_extra` in `[memory]` too.
pub fn write_config_with(
    fx: &Fixture,
    url: &str,
    llama_extra: &str,
    channel_extra: &str,
    memory_extra: &str,
    extra: &str,
) {
    // A test that sets its own timeout keeps it; the rest get one that fails fast.
    let timeout = if llama_extra.contains("timeout_s") {
        ""
    } else {
        "timeout_s = 60\n"
    };
    let text = format!(
        "state_dir = {:?}\n\n[llama]\nurl = {url:?}\n{timeout}{llama_extra}\n\n\
         [expect]\nn_ctx = {N_CTX}\n\n[baseline]\nsystem = {:?}\n\n[memory]\nsocket = {:?}\n{memory_extra}\n\n\
         [channel]\nsocket = {:?}\n{channel_extra}\n\n{extra}\n",
        fx.state_dir,
        fx.prompts.join("system.md"),
        fx.memoryd_sock,
        fx.loopd_sock,
    );
    std::fs::write(&fx.config, text).unwrap();
}

impl Loopd {
    /// A fresh fixture and stand-in, loopd started with `extra` config tables.
    pub fn start(extra: &str) -> Loopd {
        let fx = Fixture::new("");
        let llama = Standin::start(N_CTX);
        write_config(&fx, &llama.url, "retries = 2", "", extra);
        let daemon = Daemon::start("loopd", &fx);
        Loopd { fx, llama, daemon }
    }

    /// `start` with `memory_extra` in the config's `[memory]` table.
    pub fn start_with_memory(memory_extra: &str, extra: &str) -> Loopd {
        let fx = Fixture::new("");
        let llama = Standin::start(N_CTX);
        write_config_with(&fx, &llama.url, "retries = 2", "", memory_extra, extra);
        let daemon = Daemon::start("loopd", &fx);
        Loopd { fx, llama, daemon }
    }

    pub fn client(&self) -> LineClient {
        LineClient::connect(&self.fx.loopd_sock)
    }

    /// Starts loopd again on the same fixture, after the old one is gone.
    pub fn restart(&mut self) {
        let _ = self.daemon.child.kill();
        let _ = self.daemon.child.wait();
        self.daemon = Daemon::start("loopd", &self.fx);
    }

    /// Waits until loopd's worker has finished what it does after a turn's `.` (tool
    /// summaries, compaction): `/session NAME` is a worker job, so its reply comes only
    /// after that work. A loopd that is not running (a crash test) has nothing to finish.
    pub fn settle(&self) {
        let Ok(stream) = std::os::unix::net::UnixStream::connect(&self.fx.loopd_sock) else {
            return;
        };
        drop(stream);
        let mut c = self.client();
        c.send("/session main");
        let _ = c.try_block();
    }

    pub fn session_dir(&self, session: &str) -> PathBuf {
        self.fx.state_dir.join("sessions").join(session)
    }

    /// The records of `session`'s epoch 0, as JSON.
    pub fn records(&self, session: &str) -> Vec<Value> {
        self.settle();
        records_in(&self.session_dir(session).join("epoch-000000.jsonl"))
    }

    /// The `type` of each record of `session`'s epoch 0.
    pub fn kinds(&self, session: &str) -> Vec<String> {
        self.records(session)
            .iter()
            .map(|r| r["type"].as_str().unwrap().to_string())
            .collect()
    }
}

pub fn records_in(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Writes a session by hand: a head for `epoch` and its log lines.
pub fn write_session(fx: &Fixture, session: &str, head: &Value, lines: &[Value]) {
    let dir = fx.state_dir.join("sessions").join(session);
    std::fs::create_dir_all(&dir).unwrap();
    let epoch = head["epoch"].as_u64().unwrap();
    std::fs::write(
        dir.join(format!("epoch-{epoch:06}.head.json")),
        head.to_string(),
    )
    .unwrap();
    let log: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join(format!("epoch-{epoch:06}.jsonl")), log).unwrap();
}

/// The messages of a chat request body.
pub fn messages(body: &Value) -> Vec<Value> {
    body["messages"].as_array().unwrap().clone()
}
