//! `boxmaker.toml`, the one configuration file both daemons read. Its schema lives here,
//! beside the records, because it is part of the same external contract and both daemons
//! must refuse exactly the same files. Parsing takes text; reading the file is the
//! daemons' job.
//!
//! Every table refuses unknown keys, and `validate` checks ranges, so a typo is an error
//! at start that names the key, never a silently ignored setting.

use crate::label::DataClass;
use serde::Deserialize;
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
    pub turn: Turn,
    pub compact: Compact,
    pub memory: Memory,
    pub channel: Channel,
    pub tools: Tools,
    pub heartbeat: Heartbeat,
    pub notify: Notify,
    pub matrix: Matrix,
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
pub struct Turn {
    pub tool_result_cap: usize,
    pub max_rounds: u32,
}

/// The tools loopd offers the model, by name: what `compact.summarise` may name. The
/// `tools` crate holds their schemas, and a test there keeps the two lists the same.
pub const TOOL_NAMES: [&str; 4] = ["read_file", "http_fetch", "recall", "remind"];

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
    /// Commands running at once; the rest wait their turn.
    pub max_running: usize,
    /// Names of loopd's environment variables the command gets besides `PATH` and `LANG`.
    pub env: Vec<String>,
}

/// The most `notify.max_running` accepted: each is a process and a thread of loopd's, and
/// a push service does not need more at once.
pub const MAX_NOTIFY_RUNNING: usize = 64;

/// The longest `notify.timeout_s` accepted: a push or a mail is sent in seconds, and a
/// command that may run for longer than this is a mistake that would pile up processes.
pub const MAX_NOTIFY_TIMEOUT_S: u64 = 600;

impl Default for Notify {
    fn default() -> Notify {
        Notify {
            command: Vec::new(),
            max_class: DataClass::Private,
            timeout_s: 20,
            max_running: 4,
            env: Vec::new(),
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

/// `[matrix]`: the owner's Matrix room as a channel (docs/matrix.md). Off while
/// `homeserver` is empty.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Matrix {
    /// The homeserver's base url, e.g. `https://matrix.example.org`; empty: off.
    pub homeserver: String,
    /// boxmaker's own account, a full user id.
    pub user_id: String,
    /// A file holding its access token (under systemd, a `LoadCredential=` path).
    pub token_file: PathBuf,
    /// The accounts whose messages are the owner's, full user ids compared exactly.
    pub owners: Vec<String>,
    /// The session an owner's room starts in.
    pub session: String,
    /// Nothing whose label class is above this is sent to the homeserver.
    pub max_class: DataClass,
}

impl Matrix {
    /// Whether the Matrix channel is on.
    pub fn on(&self) -> bool {
        !self.homeserver.is_empty()
    }
}

/// The longest Matrix user id (the Matrix specification's limit).
pub const MAX_MATRIX_USER_ID: usize = 255;

/// The most owners: a person has an account or two; a long list is a mistake, and every
/// sync's decision walks it.
pub const MAX_MATRIX_OWNERS: usize = 16;

/// Whether `id` is a full Matrix user id: `@localpart:server`, at most
/// [`MAX_MATRIX_USER_ID`] bytes, no whitespace or control characters.
pub fn matrix_user_id(id: &str) -> bool {
    let Some(rest) = id.strip_prefix('@') else {
        return false;
    };
    let Some((local, server)) = rest.split_once(':') else {
        return false;
    };
    id.len() <= MAX_MATRIX_USER_ID
        && !local.is_empty()
        && !server.is_empty()
        && !id.chars().any(|c| c.is_whitespace() || c.is_control())
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
            turn: Turn::default(),
            compact: Compact::default(),
            memory: Memory::default(),
            channel: Channel::default(),
            tools: Tools::default(),
            heartbeat: Heartbeat::default(),
            notify: Notify::default(),
            matrix: Matrix::default(),
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

impl Default for Turn {
    fn default() -> Turn {
        Turn {
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

impl Default for Matrix {
    fn default() -> Matrix {
        Matrix {
            homeserver: String::new(),
            user_id: String::new(),
            token_file: PathBuf::new(),
            owners: Vec::new(),
            session: "main".into(),
            max_class: DataClass::Private,
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

impl Config {
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

mod load;
mod url;

pub use load::{
    ConfigError, MAX_CONFIG_BYTES, MAX_RETRIES, MAX_SLOT_SAVE_IDLE_S, MAX_SUMMARY_CHARS,
};

#[cfg(test)]
mod tests;
