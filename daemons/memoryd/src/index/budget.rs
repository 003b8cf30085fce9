//! How much one catch-up may do, and whether it finished: shared by `catchup` (which
//! walks the logs) and `ingest` (which spends the budget a chunk at a time).

use std::time::Instant;

/// How much a catch-up may do before it returns: at most `chunks` chunks of log (see
/// `ingest`) when set, and no new chunk once `until` has passed when set. At least one
/// chunk is read whenever there is work and `chunks` is not zero, so every catch-up with
/// a budget still moves forward.
#[derive(Debug, Clone, Copy, Default)]
pub struct Budget {
    pub chunks: Option<usize>,
    pub until: Option<Instant>,
}

impl Budget {
    /// No limit: everything there is to read.
    pub const UNLIMITED: Budget = Budget {
        chunks: None,
        until: None,
    };

    /// At most `n` chunks.
    pub fn chunks(n: usize) -> Budget {
        Budget {
            chunks: Some(n),
            until: None,
        }
    }

    /// Whether the next chunk is over budget. `started` is whether this catch-up has
    /// read a chunk yet: the time limit only stops a catch-up that has made progress.
    pub(super) fn exhausted(&self, started: bool) -> bool {
        self.chunks == Some(0) || (started && self.until.is_some_and(|t| Instant::now() >= t))
    }

    pub(super) fn spend(&mut self) {
        if let Some(n) = self.chunks.as_mut() {
            *n = n.saturating_sub(1);
        }
    }
}

/// Whether a catch-up finished or stopped at its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    Done,
    More,
}
