//! `boxmaker.toml`, the one configuration file both daemons read. Its schema lives here,
//! beside the records, because it is part of the same external contract and both daemons
//! must refuse exactly the same files. Parsing takes text; reading the file is the
//! daemons' job.
//!
//! Every table refuses unknown keys, and `validate` checks ranges, so a typo is an error
//! at start that names the key, never a silently ignored setting.

use crate::label::DataClass;
use crate::session_id::SessionId;
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// The path both daemons read when `--config` is not given.
pub const DEFAULT_CONFIG: &str = "/etc/boxmaker/boxmaker.toml";

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub state_dir: PathBuf,
    pub session: String,
    pub llama: Llama,
    pub slots: Slots,
    pub expect: Expect,
    pub baseline: Baseline,
    #[serde(rename = "loop")]
    pub turn: Loop,
    pub compact: Compact,
    pub memory: Memory,
    pub channel: Channel,
    pub tools: Tools,
    pub heartbeat: Heartbeat,
    pub notify: Notify,
    pub honcho: Honcho,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Llama {
    pub url: String,
    pub retries: u32,
    pub timeout_s: u64,
    /// Above 0: save the main slot after this many idle seconds (docs/turn.md, docs/config.md).
    pub slot_save_idle_s: u64,
    /// Days a session's saved slot file is kept after its last save; 0 keeps it for
    /// ever. loopd empties the files of sessions idle longer (docs/config.md).
    pub slot_keep_days: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Slots {
    pub main: u32,
    pub background: u32,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Expect {
    pub n_ctx: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Baseline {
    pub system: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Loop {
    pub tool_result_cap: usize,
    pub max_rounds: u32,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Compact {
    pub threshold: f64,
    pub summary_chars: usize,
    pub summarise: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Memory {
    pub socket: PathBuf,
    pub max_class: DataClass,
    /// The sentence-embedding model's directory (all-MiniLM-L6-v2 in sentence-transformers
    /// layout) for recall by meaning; empty: recall by words only.
    pub embed_model: PathBuf,
    /// Memory in the turn: before a turn's first model call loopd recalls with the
    /// owner's line and brings relevant hits into the prompt (docs/turn.md).
    pub auto_recall: bool,
    /// The most hits memory in the turn brings into one turn.
    pub auto_hits: u32,
    /// The most characters of a record one hit brings: the passage around what matched
    /// (docs/turn.md, 'Memory in the turn').
    pub hit_chars: u32,
}

/// Least `memory.hit_chars`: below a sentence or two a passage says too little to be
/// worth its header.
pub const MIN_HIT_CHARS: u32 = 80;

/// Most `memory.hit_chars`: a hit is a passage, not a document; the whole memory record
/// is bounded by the context besides (docs/turn.md).
pub const MAX_HIT_CHARS: u32 = 16_000;

/// The most hits `memory.auto_hits` may ask for: each is a whole record in the prompt, and
/// a turn's prompt is the owner's to spend, not memory's.
pub const MAX_AUTO_HITS: u32 = 10;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Channel {
    pub socket: PathBuf,
    pub allow_uids: Vec<u32>,
    /// The class of what the owner says (docs/labels.md): in loopd's context label and in
    /// memoryd's rows.
    pub owner_class: DataClass,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Tools {
    pub read_file: ReadFile,
    pub http_fetch: HttpFetch,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReadFile {
    pub roots: Vec<PathBuf>,
    pub max_bytes: u64,
    pub class: Vec<ClassRule>,
}

/// A `[[tools.read_file.class]]` rule: files under `prefix` get this label.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassRule {
    pub prefix: PathBuf,
    pub class: DataClass,
    #[serde(default)]
    pub untrusted: bool,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpFetch {
    pub max_bytes: u64,
    pub timeout_s: u64,
    pub allow_private: bool,
    /// A URL not chosen by the owner is refused when the context is untrusted and its
    /// class is at least this (docs/labels.md).
    pub guard_class: DataClass,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Heartbeat {
    pub every_s: u64,
    /// Local hours when heartbeats may run, as `"HH:MM-HH:MM"`; empty means always.
    pub active_hours: String,
}

/// `[notify]`: a command loopd runs for an unasked message no client received
/// (docs/config.md, docs/reminders.md).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Notify {
    /// The program and its arguments, run without a shell; empty: off.
    pub command: Vec<String>,
    /// Nothing whose label class is above this is handed to the command.
    pub max_class: DataClass,
    /// How long the command may take before it is killed.
    pub timeout_s: u64,
}

/// The longest `notify.timeout_s` accepted: a push or a mail is sent in seconds, and a
/// command that may run for longer than this is a mistake that would pile up processes.
pub const MAX_NOTIFY_TIMEOUT_S: u64 = 600;

impl Default for Notify {
    fn default() -> Notify {
        Notify {
            command: Vec::new(),
            max_class: DataClass::Private,
            timeout_s: 20,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Honcho {
    pub url: String,
    pub workspace: String,
    /// Honcho's session id; empty means the boxmaker session's own id.
    pub session: String,
    pub owner_peer: String,
    pub assistant_peer: String,
    /// A file holding the bearer token; empty sends no `Authorization` header.
    pub token_file: PathBuf,
    /// Nothing whose label class is above this is posted (docs/labels.md, docs/honcho.md).
    pub max_class: DataClass,
}

/// The longest workspace, session or peer name Honcho accepts.
pub const MAX_HONCHO_NAME: usize = 512;

/// Honcho's rule for workspace, session and peer names: it answers a bad one with HTTP
/// 500 or 422 on every request, so it is refused at start instead (docs/honcho.md).
fn honcho_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_HONCHO_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl Default for Config {
    fn default() -> Config {
        Config {
            state_dir: PathBuf::from("/var/lib/boxmaker"),
            session: "main".into(),
            llama: Llama::default(),
            slots: Slots::default(),
            expect: Expect::default(),
            baseline: Baseline::default(),
            turn: Loop::default(),
            compact: Compact::default(),
            memory: Memory::default(),
            channel: Channel::default(),
            tools: Tools::default(),
            heartbeat: Heartbeat::default(),
            notify: Notify::default(),
            honcho: Honcho::default(),
        }
    }
}

impl Default for Llama {
    fn default() -> Llama {
        Llama {
            url: "http://127.0.0.1:8080".into(),
            retries: 3,
            timeout_s: 600,
            slot_save_idle_s: 0,
            slot_keep_days: 30,
        }
    }
}

impl Default for Slots {
    fn default() -> Slots {
        Slots {
            main: 0,
            background: 1,
        }
    }
}

impl Default for Expect {
    fn default() -> Expect {
        Expect { n_ctx: 262_144 }
    }
}

impl Default for Baseline {
    fn default() -> Baseline {
        Baseline {
            system: PathBuf::from("/etc/boxmaker/system.md"),
        }
    }
}

impl Default for Loop {
    fn default() -> Loop {
        Loop {
            tool_result_cap: 16_000,
            max_rounds: 16,
        }
    }
}

impl Default for Compact {
    fn default() -> Compact {
        Compact {
            threshold: 0.85,
            summary_chars: 8000,
            summarise: vec!["http_fetch".into()],
        }
    }
}

impl Default for Memory {
    fn default() -> Memory {
        Memory {
            socket: PathBuf::from("/run/boxmaker/memoryd.sock"),
            max_class: DataClass::Private,
            embed_model: PathBuf::new(),
            auto_recall: true,
            auto_hits: 3,
            hit_chars: 600,
        }
    }
}

impl Default for Channel {
    fn default() -> Channel {
        Channel {
            socket: PathBuf::from("/run/boxmaker/loopd.sock"),
            allow_uids: Vec::new(),
            owner_class: DataClass::Private,
        }
    }
}

impl Default for ReadFile {
    fn default() -> ReadFile {
        ReadFile {
            roots: vec![PathBuf::from("/home/owner")],
            max_bytes: 1_048_576,
            class: Vec::new(),
        }
    }
}

impl Default for HttpFetch {
    fn default() -> HttpFetch {
        HttpFetch {
            max_bytes: 2_097_152,
            timeout_s: 20,
            allow_private: false,
            guard_class: DataClass::Private,
        }
    }
}

impl Default for Honcho {
    fn default() -> Honcho {
        Honcho {
            url: String::new(),
            workspace: "boxmaker".into(),
            session: String::new(),
            owner_peer: "owner".into(),
            assistant_peer: "assistant".into(),
            token_file: PathBuf::new(),
            max_class: DataClass::Private,
        }
    }
}

/// Why a configuration was refused. The message names the file and the key.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigError {
    Read {
        path: PathBuf,
        message: String,
    },
    Parse {
        path: PathBuf,
        message: String,
    },
    Invalid {
        path: PathBuf,
        key: &'static str,
        message: String,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Read { path, message } => write!(f, "{}: {message}", path.display()),
            ConfigError::Parse { path, message } => {
                // toml's message spans lines (a caret under the key); keep it, trimmed.
                write!(f, "{}: {}", path.display(), message.trim_end())
            }
            ConfigError::Invalid { path, key, message } => {
                write!(f, "{}: key `{key}` {message}", path.display())
            }
        }
    }
}

impl std::error::Error for ConfigError {}

/// The largest config file either daemon reads. A config is a page of TOML; this leaves
/// room for long comments while keeping a reload on the poll loop from reading something
/// unbounded.
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// Largest `llama.retries`: with doubling backoff more would wait for hours.
pub const MAX_RETRIES: u32 = 10;

/// Largest `llama.slot_save_idle_s`, a day: a save is meant to follow a conversation's
/// pause, and a longer wait is a typo that would leave the slot unsaved in practice.
pub const MAX_SLOT_SAVE_IDLE_S: u64 = 86_400;

/// Largest `compact.summary_chars`. The summary is carried in the next epoch's head, and
/// heads are read back with a size limit (4 MiB in loopd and memoryd): 200 000
/// characters stay below it even at four bytes a character and with the frozen system
/// prompt beside them, and are far more than a useful summary.
pub const MAX_SUMMARY_CHARS: usize = 200_000;

impl Config {
    /// Reads the file at `path` with `read` (given the size limit `MAX_CONFIG_BYTES`),
    /// then parses and validates it. proto opens nothing itself: the daemons pass their
    /// bounded, non-blocking reader.
    pub fn load(
        path: &Path,
        read: impl FnOnce(&Path, u64) -> std::io::Result<String>,
    ) -> Result<Config, ConfigError> {
        let text = read(path, MAX_CONFIG_BYTES).map_err(|e| ConfigError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Config::parse(&text, path)
    }

    /// Parses and validates `text`, naming `path` in every error.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let cfg: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        cfg.validate(path)?;
        Ok(cfg)
    }

    fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let bad = |key: &'static str, message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            key,
            message,
        };
        if let Err(e) = SessionId::parse(&self.session) {
            return Err(bad("session", e.to_string()));
        }
        if !self.state_dir.is_absolute() {
            return Err(bad("state_dir", "must be an absolute path".into()));
        }
        if !self.memory.embed_model.as_os_str().is_empty() && !self.memory.embed_model.is_absolute()
        {
            return Err(bad(
                "memory.embed_model",
                "must be an absolute path or empty".into(),
            ));
        }
        if !(self.llama.url.starts_with("http://") || self.llama.url.starts_with("https://")) {
            return Err(bad(
                "llama.url",
                format!("{:?} is not an http(s) url", self.llama.url),
            ));
        }
        if self.llama.retries > MAX_RETRIES {
            return Err(bad(
                "llama.retries",
                format!("must be at most {MAX_RETRIES}"),
            ));
        }
        if self.llama.timeout_s == 0 {
            return Err(bad("llama.timeout_s", "must be above 0".into()));
        }
        if self.llama.slot_save_idle_s > MAX_SLOT_SAVE_IDLE_S {
            return Err(bad(
                "llama.slot_save_idle_s",
                format!(
                    "must be at most {MAX_SLOT_SAVE_IDLE_S} (a day), got {}",
                    self.llama.slot_save_idle_s
                ),
            ));
        }
        if self.slots.main == self.slots.background {
            return Err(bad(
                "slots.background",
                "must differ from slots.main, or background work evicts the main prompt cache"
                    .into(),
            ));
        }
        if self.expect.n_ctx == 0 {
            return Err(bad("expect.n_ctx", "must be above 0".into()));
        }
        if self.turn.max_rounds == 0 {
            return Err(bad("loop.max_rounds", "must be at least 1".into()));
        }
        if !(MIN_HIT_CHARS..=MAX_HIT_CHARS).contains(&self.memory.hit_chars) {
            return Err(bad(
                "memory.hit_chars",
                format!(
                    "must be {MIN_HIT_CHARS} to {MAX_HIT_CHARS}, got {}",
                    self.memory.hit_chars
                ),
            ));
        }
        if self.memory.auto_hits > MAX_AUTO_HITS {
            return Err(bad(
                "memory.auto_hits",
                format!(
                    "must be at most {MAX_AUTO_HITS}, got {}",
                    self.memory.auto_hits
                ),
            ));
        }
        if self.turn.tool_result_cap == 0 {
            return Err(bad("loop.tool_result_cap", "must be above 0".into()));
        }
        let t = self.compact.threshold;
        if !(t > 0.0 && t <= 1.0) {
            return Err(bad(
                "compact.threshold",
                format!("must be in (0, 1], got {t}"),
            ));
        }
        if self.compact.summary_chars == 0 || self.compact.summary_chars > MAX_SUMMARY_CHARS {
            return Err(bad(
                "compact.summary_chars",
                format!("must be 1 to {MAX_SUMMARY_CHARS}"),
            ));
        }
        for root in &self.tools.read_file.roots {
            if !root.is_absolute() {
                return Err(bad(
                    "tools.read_file.roots",
                    format!("{} is not an absolute path", root.display()),
                ));
            }
        }
        for rule in &self.tools.read_file.class {
            if !rule.prefix.is_absolute() {
                return Err(bad(
                    "tools.read_file.class.prefix",
                    format!("{} is not an absolute path", rule.prefix.display()),
                ));
            }
        }
        if self.tools.http_fetch.timeout_s == 0 {
            return Err(bad("tools.http_fetch.timeout_s", "must be above 0".into()));
        }
        if !self.heartbeat.active_hours.is_empty() && self.active_hours().is_none() {
            return Err(bad(
                "heartbeat.active_hours",
                format!("{:?} is not HH:MM-HH:MM", self.heartbeat.active_hours),
            ));
        }
        if self.notify.timeout_s == 0 || self.notify.timeout_s > MAX_NOTIFY_TIMEOUT_S {
            return Err(bad(
                "notify.timeout_s",
                format!("must be 1 to {MAX_NOTIFY_TIMEOUT_S}"),
            ));
        }
        if self.notify.command.first().is_some_and(|p| p.is_empty()) {
            return Err(bad("notify.command", "the program name is empty".into()));
        }
        let honcho = &self.honcho.url;
        if !(honcho.is_empty() || honcho.starts_with("http://") || honcho.starts_with("https://")) {
            return Err(bad(
                "honcho.url",
                format!("{:?} is not an http(s) url", self.honcho.url),
            ));
        }
        if !honcho.is_empty() {
            let names = [
                ("honcho.workspace", &self.honcho.workspace),
                ("honcho.session", &self.honcho.session),
                ("honcho.owner_peer", &self.honcho.owner_peer),
                ("honcho.assistant_peer", &self.honcho.assistant_peer),
            ];
            for (key, name) in names {
                // An empty session means the boxmaker session's own id, which always fits.
                if key == "honcho.session" && name.is_empty() {
                    continue;
                }
                if !honcho_name(name) {
                    return Err(bad(
                        key,
                        format!(
                            "{name:?} is not a name Honcho accepts: letters, digits, '-' and '_', 1 to {MAX_HONCHO_NAME} characters"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// `heartbeat.active_hours` as minutes after local midnight, `(start, end)`.
    pub fn active_hours(&self) -> Option<(u32, u32)> {
        let (a, b) = self.heartbeat.active_hours.split_once('-')?;
        Some((minutes(a)?, minutes(b)?))
    }

    /// The directory the prompts sit in: the one holding `baseline.system`.
    pub fn prompt_dir(&self) -> &Path {
        self.baseline.system.parent().unwrap_or(Path::new("/"))
    }

    /// A prompt beside `baseline.system`, such as `compact.md`.
    pub fn prompt_path(&self, name: &str) -> PathBuf {
        self.prompt_dir().join(name)
    }

    pub fn sessions_dir(&self) -> PathBuf {
        self.state_dir.join("sessions")
    }
}

fn minutes(hhmm: &str) -> Option<u32> {
    let (h, m) = hhmm.trim().split_once(':')?;
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    (h < 24 && m < 60).then_some(h * 60 + m)
}

#[cfg(test)]
mod tests;
