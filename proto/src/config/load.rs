//! Reading `boxmaker.toml` (docs/config.md): the text handed in by the daemon's bounded
//! reader, parsed into the schema in `config.rs`, and every value checked against its
//! range, so a bad file is refused at start (or at a reload) naming the key.

use super::{
    honcho_name, matrix_user_id, Config, MAX_AUTO_HITS, MAX_HIT_CHARS, MAX_HONCHO_NAME,
    MAX_MATRIX_OWNERS, MAX_NOTIFY_RUNNING, MAX_NOTIFY_TIMEOUT_S, MIN_HIT_CHARS, TOOL_NAMES,
};
use crate::session_id::SessionId;
use std::fmt;
use std::path::{Path, PathBuf};

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
            ConfigError::Parse { path, message } => write!(f, "{}: {message}", path.display()),
            ConfigError::Invalid { path, key, message } => {
                write!(f, "{}: key `{key}` {message}", path.display())
            }
        }
    }
}

impl std::error::Error for ConfigError {}

/// A parse error as the owner reads it, on one line: the dotted key it is about, when it
/// is about a key (a value of the wrong type: `key `llama.retries`: invalid type: string
/// "three", expected u32`), what is wrong, and the line of the file.
fn parse_message(text: &str, e: serde_path_to_error::Error<toml::de::Error>) -> String {
    let mut key = e.path().to_string();
    let inner = e.into_inner();
    if matches!(key.as_str(), "" | ".") {
        if let Some(found) = inner.span().and_then(|s| key_at(text, s)) {
            key = found;
        }
    }
    let what = inner.message().trim_end().replace('\n', " ");
    let line = inner
        .span()
        .and_then(|s| text.get(..s.start))
        .map(|before| format!(" (line {})", before.matches('\n').count() + 1))
        .unwrap_or_default();
    match key.as_str() {
        "" | "." => format!("{what}{line}"),
        _ => format!("key `{key}`: {what}{line}"),
    }
}

/// The dotted key whose value starts at `span`, for an error the TOML reader raises before
/// serde knows the key (an integer too large for i64: `heartbeat.every_s =
/// 18446744073709551615`). The value's word is swapped for a date-time, a type no key
/// takes, and the text read again: the type error that gives names the key, when it is at
/// the same place. None when it is not, so a message never names a key it is not about.
fn key_at(text: &str, span: std::ops::Range<usize>) -> Option<String> {
    const NO_KEY_TAKES: &str = "1979-05-27T00:00:00Z";
    let rest = text.get(span.start..)?;
    // The reader's span marks only the value's first character; a number (signs, `_`,
    // `0x` and the like included) runs to the first character no number has.
    let len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '-' | '.')))
        .unwrap_or(rest.len());
    let end = span.start + len.max(span.len());
    let probe = [text.get(..span.start)?, NO_KEY_TAKES, text.get(end..)?].concat();
    let e = serde_path_to_error::deserialize::<_, Config>(toml::Deserializer::new(&probe)).err()?;
    let key = e.path().to_string();
    let same_place = e.inner().span().is_some_and(|s| s.start == span.start);
    (same_place && !matches!(key.as_str(), "" | ".")).then_some(key)
}

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
        let cfg: Config =
            serde_path_to_error::deserialize(toml::Deserializer::new(text)).map_err(|e| {
                ConfigError::Parse {
                    path: path.to_path_buf(),
                    message: parse_message(text, e),
                }
            })?;
        cfg.validate(path)?;
        Ok(cfg)
    }

    /// Every value checked against its range, a section at a time; the first value
    /// refused names its key.
    fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        self.check_places()
            .and_then(|()| self.check_llama())
            .and_then(|()| self.check_turn())
            .and_then(|()| self.check_tools())
            .and_then(|()| self.check_unasked())
            .and_then(|()| self.check_matrix())
            .and_then(|()| self.check_honcho())
            .map_err(|(key, message)| ConfigError::Invalid {
                path: path.to_path_buf(),
                key,
                message,
            })
    }

    /// The default session and where things live.
    fn check_places(&self) -> Checked {
        if let Err(e) = SessionId::parse(&self.session) {
            return bad("session", e.to_string());
        }
        if !self.state_dir.is_absolute() {
            return bad("state_dir", "must be an absolute path");
        }
        if !self.memory.embed_model.as_os_str().is_empty() && !self.memory.embed_model.is_absolute()
        {
            return bad("memory.embed_model", "must be an absolute path or empty");
        }
        // A relative path would be resolved against whatever directory the daemon was
        // started in, and an empty socket path binds Linux's unreachable abstract address.
        for (key, path) in [
            ("channel.socket", &self.channel.socket),
            ("memory.socket", &self.memory.socket),
            ("baseline.system", &self.baseline.system),
        ] {
            if !path.is_absolute() {
                return bad(
                    key,
                    format!("{:?} is not an absolute path", path.display().to_string()),
                );
            }
        }
        let honcho_token = &self.honcho.token_file;
        if !honcho_token.as_os_str().is_empty() && !honcho_token.is_absolute() {
            return bad("honcho.token_file", "must be an absolute path or empty");
        }
        Ok(())
    }

    /// `[llama]`, `[slots]` and `[expect]`: the model server and what loopd asks of it.
    fn check_llama(&self) -> Checked {
        check_url("llama.url", &self.llama.url)?;
        if self.llama.retries > MAX_RETRIES {
            return bad("llama.retries", format!("must be at most {MAX_RETRIES}"));
        }
        if self.llama.timeout_s == 0 {
            return bad("llama.timeout_s", "must be above 0");
        }
        if self.llama.slot_save_idle_s > MAX_SLOT_SAVE_IDLE_S {
            return bad(
                "llama.slot_save_idle_s",
                format!(
                    "must be at most {MAX_SLOT_SAVE_IDLE_S} (a day), got {}",
                    self.llama.slot_save_idle_s
                ),
            );
        }
        if self.slots.main == self.slots.background {
            return bad(
                "slots.background",
                "must differ from slots.main, or background work evicts the main prompt cache",
            );
        }
        if self.expect.n_ctx == 0 {
            return bad("expect.n_ctx", "must be above 0");
        }
        Ok(())
    }

    /// `[loop]`, the memory a turn brings in, and `[compact]`.
    fn check_turn(&self) -> Checked {
        if self.turn.max_rounds == 0 {
            return bad("loop.max_rounds", "must be at least 1");
        }
        if !(MIN_HIT_CHARS..=MAX_HIT_CHARS).contains(&self.memory.hit_chars) {
            return bad(
                "memory.hit_chars",
                format!(
                    "must be {MIN_HIT_CHARS} to {MAX_HIT_CHARS}, got {}",
                    self.memory.hit_chars
                ),
            );
        }
        if self.memory.auto_hits > MAX_AUTO_HITS {
            return bad(
                "memory.auto_hits",
                format!(
                    "must be at most {MAX_AUTO_HITS}, got {}",
                    self.memory.auto_hits
                ),
            );
        }
        if self.turn.tool_result_cap == 0 {
            return bad("loop.tool_result_cap", "must be above 0");
        }
        let t = self.compact.threshold;
        if !(t > 0.0 && t <= 1.0) {
            return bad("compact.threshold", format!("must be in (0, 1], got {t}"));
        }
        if self.compact.summary_chars == 0 || self.compact.summary_chars > MAX_SUMMARY_CHARS {
            return bad(
                "compact.summary_chars",
                format!("must be 1 to {MAX_SUMMARY_CHARS}"),
            );
        }
        if let Some(name) = self
            .compact
            .summarise
            .iter()
            .find(|n| !TOOL_NAMES.contains(&n.as_str()))
        {
            return bad(
                "compact.summarise",
                format!(
                    "{name:?} is not a tool (the tools are {})",
                    TOOL_NAMES.join(", ")
                ),
            );
        }
        Ok(())
    }

    /// `[tools.*]`.
    fn check_tools(&self) -> Checked {
        for root in &self.tools.read_file.roots {
            if !root.is_absolute() {
                return bad(
                    "tools.read_file.roots",
                    format!("{} is not an absolute path", root.display()),
                );
            }
        }
        for rule in &self.tools.read_file.class {
            if !rule.prefix.is_absolute() {
                return bad(
                    "tools.read_file.class.prefix",
                    format!("{} is not an absolute path", rule.prefix.display()),
                );
            }
        }
        // With 0 every file over 0 bytes is refused and every page comes back empty.
        if self.tools.read_file.max_bytes == 0 {
            return bad("tools.read_file.max_bytes", "must be above 0, got 0");
        }
        if self.tools.http_fetch.max_bytes == 0 {
            return bad("tools.http_fetch.max_bytes", "must be above 0, got 0");
        }
        if self.tools.http_fetch.timeout_s == 0 {
            return bad("tools.http_fetch.timeout_s", "must be above 0");
        }
        Ok(())
    }

    /// `[heartbeat]` and `[notify]`: what speaks up unasked, and where it goes.
    fn check_unasked(&self) -> Checked {
        if !self.heartbeat.active_hours.is_empty() && self.active_hours().is_none() {
            return bad(
                "heartbeat.active_hours",
                format!("{:?} is not HH:MM-HH:MM", self.heartbeat.active_hours),
            );
        }
        if self.notify.timeout_s == 0 || self.notify.timeout_s > MAX_NOTIFY_TIMEOUT_S {
            return bad(
                "notify.timeout_s",
                format!("must be 1 to {MAX_NOTIFY_TIMEOUT_S}"),
            );
        }
        if self.notify.command.first().is_some_and(|p| p.is_empty()) {
            return bad("notify.command", "the program name is empty");
        }
        if self.notify.max_running == 0 || self.notify.max_running > MAX_NOTIFY_RUNNING {
            return bad(
                "notify.max_running",
                format!("must be 1 to {MAX_NOTIFY_RUNNING}"),
            );
        }
        if let Some(name) = self.notify.env.iter().find(|n| !is_env_name(n)) {
            return bad(
                "notify.env",
                format!(
                    "{name:?} is not a variable name (letters, digits and _, not first a digit)"
                ),
            );
        }
        Ok(())
    }

    /// `[matrix]`: the homeserver's address, and, when it is on, the accounts, the token's
    /// file and the room's first session (docs/config.md).
    fn check_matrix(&self) -> Checked {
        let m = &self.matrix;
        if !m.homeserver.is_empty() {
            check_url("matrix.homeserver", &m.homeserver)?;
        }
        if let Err(e) = SessionId::parse(&m.session) {
            return bad("matrix.session", e.to_string());
        }
        if !m.on() {
            return Ok(());
        }
        if !matrix_user_id(&m.user_id) {
            return bad(
                "matrix.user_id",
                format!(
                    "{:?} is not a full user id like @box:example.org",
                    m.user_id
                ),
            );
        }
        if !m.token_file.is_absolute() {
            return bad(
                "matrix.token_file",
                "must be an absolute path when matrix.homeserver is set",
            );
        }
        if m.owners.is_empty() {
            return bad(
                "matrix.owners",
                "must name at least one account when matrix.homeserver is set",
            );
        }
        if m.owners.len() > MAX_MATRIX_OWNERS {
            return bad(
                "matrix.owners",
                format!("at most {MAX_MATRIX_OWNERS} accounts"),
            );
        }
        for owner in &m.owners {
            if !matrix_user_id(owner) {
                return bad(
                    "matrix.owners",
                    format!("{owner:?} is not a full user id like @me:example.org"),
                );
            }
            if *owner == m.user_id {
                return bad(
                    "matrix.owners",
                    format!("{owner:?} is boxmaker's own account (matrix.user_id)"),
                );
            }
        }
        Ok(())
    }

    /// `[honcho]`: its address, and, when it is on, every name it is sent.
    fn check_honcho(&self) -> Checked {
        if self.honcho.url.is_empty() {
            return Ok(());
        }
        check_url("honcho.url", &self.honcho.url)?;
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
                return bad(
                    key,
                    format!(
                        "{name:?} is not a name Honcho accepts: letters, digits, '-' and '_', 1 to {MAX_HONCHO_NAME} characters"
                    ),
                );
            }
        }
        Ok(())
    }
    /// `heartbeat.active_hours` as minutes after local midnight, `(start, end)`.
    pub fn active_hours(&self) -> Option<(u32, u32)> {
        let (a, b) = self.heartbeat.active_hours.split_once('-')?;
        Some((minutes(a)?, minutes(b)?))
    }
}

/// A value refused by a check: its key and what is wrong with it. `validate` adds the
/// file's path.
type Checked = Result<(), (&'static str, String)>;

fn bad(key: &'static str, message: impl Into<String>) -> Checked {
    Err((key, message.into()))
}

/// `url`, the value of `key`, as a base url: scheme, host, port and path, each well
/// formed (`url.rs`).
fn check_url(key: &'static str, url: &str) -> Checked {
    super::url::check(url)
        .or_else(|why| bad(key, format!("{url:?} is not an http(s) base url: {why}")))
}

fn minutes(hhmm: &str) -> Option<u32> {
    let (h, m) = hhmm.trim().split_once(':')?;
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    (h < 24 && m < 60).then_some(h * 60 + m)
}

/// Whether `name` is an environment variable's name as a shell writes it.
fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
