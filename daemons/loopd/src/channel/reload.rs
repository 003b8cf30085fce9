//! Why a SIGHUP left loopd's configuration as it was: the file, a prompt file or the
//! session it names is wrong, or the turn worker is gone and cannot take the new one. The
//! poll loop writes it to the journal after its own "reload refused" words.

use conversation::prompts::PromptError;
use proto::config::ConfigError;
use proto::session_id::BadSessionId;
use std::fmt;

#[derive(Debug)]
pub(crate) enum ReloadError {
    Config(ConfigError),
    Prompt(PromptError),
    Session(BadSessionId),
    /// The worker's queue is closed: it has stopped, and only a restart brings it back.
    WorkerStopped,
}

impl fmt::Display for ReloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReloadError::Config(e) => e.fmt(f),
            ReloadError::Prompt(e) => e.fmt(f),
            ReloadError::Session(e) => e.fmt(f),
            ReloadError::WorkerStopped => f.write_str("the turn worker has stopped"),
        }
    }
}

impl std::error::Error for ReloadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReloadError::Config(e) => Some(e),
            ReloadError::Prompt(e) => Some(e),
            ReloadError::Session(e) => Some(e),
            ReloadError::WorkerStopped => None,
        }
    }
}
