//! The real llama.cpp server (SmolLM2 through scripts/llama-server), started once per
//! test binary on a free port and shared by the tests that need it. It is told to exit
//! with its parent, so it never outlives the test run. Tests skip, saying why, only when
//! the venv is missing; the test command (scripts/test) installs it, so CI runs them.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::Duration;

/// Per-slot context the shared server is started with (docs/llama-api.md).
pub const CTX_PER_SLOT: u64 = 2048;

/// The server's cap on each answer. loopd sends no `max_tokens`, so this keeps the
/// tiny model's rambling (it once ran 1900 tokens for "Name a fruit.") short.
pub const N_PREDICT: u32 = 64;

/// How long the server may take to load the model and answer /health. Observed: under
/// a second; the machine is shared, so the guard is generous.
const START_WITHIN: Duration = Duration::from_secs(180);

pub struct RealLlama {
    pub url: String,
    _child: Mutex<Child>,
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn venv() -> PathBuf {
    std::env::var_os("BOXMAKER_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venv"))
}

/// The shared server, or `None` (after printing why) when the venv is missing.
pub fn real_llama() -> Option<&'static RealLlama> {
    static SERVER: OnceLock<Option<RealLlama>> = OnceLock::new();
    SERVER
        .get_or_init(|| {
            if !venv().join("bin").join("python").exists() {
                eprintln!(
                    "SKIPPED: no venv at {} (scripts/setup-python makes it; scripts/test runs it)",
                    venv().display()
                );
                return None;
            }
            Some(start())
        })
        .as_ref()
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn start() -> RealLlama {
    let port = free_port();
    let log = std::env::temp_dir().join(format!("boxmaker-e2e-llama-{port}.log"));
    let mut child = Command::new(repo().join("scripts").join("llama-server"))
        .args(["--port", &port.to_string()])
        .args(["--ctx-per-slot", &CTX_PER_SLOT.to_string()])
        .args(["--n-predict", &N_PREDICT.to_string()])
        .args(["--threads", "2", "--exit-with-parent"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.contains("listening on") {
                let _ = tx.send(line);
            }
        }
    });
    match rx.recv_timeout(START_WITHIN) {
        Ok(line) => eprintln!("[llama] {line}"),
        Err(_) => {
            let _ = child.kill();
            panic!(
                "scripts/llama-server did not start; its log ({}):\n{}",
                log.display(),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
    }
    RealLlama {
        url: format!("http://127.0.0.1:{port}"),
        _child: Mutex::new(child),
    }
}
