//! The prompt files loopd reads (docs/config.md, '`[baseline]`'): `system.md` at
//! `baseline.system` and, beside it, `compact.md`, `summarise.md` and `heartbeat.md`. This
//! is the one place that knows their names and reads them, bounded and without blocking on
//! a FIFO; the start-up and reload check reads the same files the same way.

use proto::config::Config;
use std::fmt;
use std::io;
use std::path::PathBuf;

/// The largest prompt file read. A prompt is a few pages written by hand; one past a
/// mebibyte is a mistake, and the model's context could not hold it anyway.
pub(crate) const MAX_PROMPT_BYTES: u64 = 1024 * 1024;

/// One of loopd's prompt files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prompt {
    /// `baseline.system`: frozen into each new epoch's head.
    System,
    /// What the summary call that ends an epoch asks for.
    Compact,
    /// What a tool summary asks for.
    Summarise,
    /// A heartbeat's text.
    Heartbeat,
}

impl Prompt {
    /// Where the file is under `cfg`.
    pub fn path(self, cfg: &Config) -> PathBuf {
        match self {
            Prompt::System => cfg.baseline.system.clone(),
            Prompt::Compact => cfg.prompt_path("compact.md"),
            Prompt::Summarise => cfg.prompt_path("summarise.md"),
            Prompt::Heartbeat => cfg.prompt_path("heartbeat.md"),
        }
    }
}

/// A prompt file that could not be read, by its path.
#[derive(Debug)]
pub struct PromptError {
    pub path: PathBuf,
    pub source: io::Error,
}

impl fmt::Display for PromptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "prompt {}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for PromptError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// The text of `prompt` under `cfg`, read whole and bounded by `MAX_PROMPT_BYTES`.
pub fn read(cfg: &Config, prompt: Prompt) -> Result<String, PromptError> {
    let path = prompt.path(cfg);
    match plumbing::bounded::read_text(&path, MAX_PROMPT_BYTES) {
        Ok(text) => Ok(text),
        Err(source) => Err(PromptError { path, source }),
    }
}

/// Reads every prompt `cfg` makes loopd need, so a missing one is an error naming its
/// path at start and on reload, not a surprise mid-turn. `heartbeat.md` is needed only
/// when heartbeats are on. Read whole rather than only opened: this runs on the poll loop
/// at reload, where opening a FIFO could block it, and reading proves the file usable.
pub fn check(cfg: &Config) -> Result<(), PromptError> {
    let mut needed = vec![Prompt::System, Prompt::Compact, Prompt::Summarise];
    if cfg.heartbeat.every_s > 0 {
        needed.push(Prompt::Heartbeat);
    }
    for prompt in needed {
        read(cfg, prompt)?;
    }
    Ok(())
}
