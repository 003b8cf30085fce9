//! The real llama.cpp server (SmolLM2 through scripts/llama-server), started once per
//! test binary on a free port and shared by the tests that need it. It is told to exit
//! with its parent, so it never outlives the test run. Without the venv a test says
//! SKIPPED, or fails in CI (`support::prereq`); the test command (scripts/test) installs it.

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
    port: u16,
    args: Vec<String>,
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn have_venv() -> bool {
    super::prereq::venv().is_some()
}

/// The shared server, or `None` (after saying SKIPPED, or failing in CI) when the venv is
/// missing.
pub fn real_llama() -> Option<&'static RealLlama> {
    static SERVER: OnceLock<Option<RealLlama>> = OnceLock::new();
    SERVER
        .get_or_init(|| have_venv().then(|| start(&[])))
        .as_ref()
}

/// A server of the caller's own (not shared) whose chat template renders the tool
/// schemas into the system message, as tool-capable models' templates do. SmolLM2's own
/// template drops them (docs/llama-api.md), which hides whether a request sent without
/// `tools` shares its prefix with one sent with them. Requests that carry `tools` must
/// also carry `"tool_choice": "none"`: llama.cpp cannot build a tool-call grammar for
/// this template, and SmolLM2 makes no tool calls anyway.
pub fn tools_rendering_llama() -> Option<RealLlama> {
    tools_rendering_llama_with(&[])
}

/// `tools_rendering_llama` with more `scripts/llama-server` arguments.
pub fn tools_rendering_llama_with(args: &[&str]) -> Option<RealLlama> {
    if !have_venv() {
        return None;
    }
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), tools_template()).unwrap();
    let mut all = vec![
        "--chat-template-file".to_string(),
        file.path().display().to_string(),
    ];
    all.extend(args.iter().map(|a| a.to_string()));
    Some(start(&all))
}

/// A ChatML template that puts the tools in the system message and replays tool calls,
/// built from pieces so that no source file holds a template tag whole.
pub fn tools_template() -> String {
    let start = concat!("<|", "im_start|>");
    let end = concat!("<|", "im_end|>");
    let (call, call_end) = (concat!("<", "tool_call>"), concat!("</", "tool_call>"));
    let (tools, tools_end) = (concat!("<", "tools>"), concat!("</", "tools>"));
    format!(
        "{{%- for m in messages %}}\n\
         {{%- if loop.first and m.role == 'system' %}}{start}system\n{{{{ m.content }}}}\
         {{% if tools %}}\n\nTools you can call:\n{tools}{{% for t in tools %}}\n{{{{ t | tojson }}}}\
         {{% endfor %}}\n{tools_end}{{% endif %}}{end}\n\
         {{% else %}}{start}{{{{ m.role }}}}\n{{% if m.content %}}{{{{ m.content }}}}{{% endif %}}\
         {{% if m.tool_calls %}}{{% for c in m.tool_calls %}}{call}{{{{ c.function.name }}}} \
         {{{{ c.function.arguments }}}}{call_end}{{% endfor %}}{{% endif %}}{end}\n{{% endif %}}\n\
         {{%- endfor %}}\n{{%- if add_generation_prompt %}}{start}assistant\n{{% endif %}}\n"
    )
}

/// A server of the caller's own with `args` added, which `restart` can stop and start
/// again on the same port (an upgrade or a reboot of llama.cpp, as loopd sees it).
pub fn own_llama(args: &[&str]) -> Option<RealLlama> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    have_venv().then(|| start(&args))
}

impl RealLlama {
    /// Stops the server (waiting for it to exit) and starts it again on the same port
    /// with the same arguments: every slot is empty afterwards.
    pub fn restart(&mut self) {
        {
            let mut child = self._child.lock().unwrap();
            let _ = child.kill();
            let _ = child.wait();
        }
        *self = start_on(self.port, &self.args.clone());
    }
}

/// A server of a test's own stops with it (the shared one lives in a static, never
/// dropped, and exits with the test binary).
impl Drop for RealLlama {
    fn drop(&mut self) {
        if let Ok(child) = self._child.get_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn start(extra: &[String]) -> RealLlama {
    start_on(free_port(), extra)
}

fn start_on(port: u16, extra: &[String]) -> RealLlama {
    let log = std::env::temp_dir().join(format!("boxmaker-e2e-llama-{port}.log"));
    let mut child = Command::new(repo().join("scripts").join("llama-server"))
        .args(["--port", &port.to_string()])
        .args(["--ctx-per-slot", &CTX_PER_SLOT.to_string()])
        .args(["--n-predict", &N_PREDICT.to_string()])
        .args(["--threads", "2", "--exit-with-parent"])
        .args(extra)
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
        port,
        args: extra.to_vec(),
    }
}
