//! Saying when a rebuilt index is whole again. An index made by another schema (an older
//! tokenizer) or for another `memory.max_class` is dropped at open (`schema`) and filled
//! again from the logs by the ordinary catch-up, which the service runs a chunk per turn
//! of the poll loop: READY and the watchdog never wait for it, and a recall meanwhile
//! answers from what is indexed so far. This module remembers why and since when, and
//! logs how long it took once a whole catch-up is done.

use super::{Index, Progress};
use std::time::Instant;

/// A rebuild under way.
#[derive(Debug, Clone)]
pub(super) struct Rebuild {
    pub why: String,
    pub since: Instant,
}

impl Rebuild {
    pub fn start(db: &std::path::Path, why: String) -> Rebuild {
        plumbing::notice!(
            "rebuilding the index {} from the session logs: {why}; recalls answer from \
             what is indexed until it is done",
            db.display()
        );
        Rebuild {
            why,
            since: Instant::now(),
        }
    }
}

impl Index {
    /// Whether the index is being filled again after a rebuild.
    pub fn rebuilding(&self) -> bool {
        self.rebuild.is_some()
    }

    /// Called after each whole-index catch-up: the first that finishes ends a rebuild.
    pub(super) fn rebuild_progress(&mut self, progress: Progress) {
        if progress != Progress::Done {
            return;
        }
        let Some(r) = self.rebuild.take() else {
            return;
        };
        let held = self
            .status()
            .map(|s| format!("{} rows from {} logs", s.rows, s.logs))
            .unwrap_or_else(|e| format!("status unknown: {e}"));
        plumbing::notice!(
            "rebuilt the index in {:.1} s ({held}): {}",
            r.since.elapsed().as_secs_f64(),
            r.why
        );
    }
}
