//! What the reporter tells `/status`: how many messages wait for Honcho, since when
//! reports are held back, and why. The reporter thread writes it after each round that
//! changed something; the lock is held only to copy a few fields, never across I/O.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// The reporter's state as `/status` shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HonchoStatus {
    /// Messages waiting in sessions whose reports are held back, each session counted up
    /// to `MAX_BACKLOG_COUNT`. 0 while reports go out.
    pub backlog: u64,
    /// Why reports are held back (the latest failure), or why the reporter did not start.
    pub last_error: Option<String>,
    /// Since when some session's reports have been held back.
    pub retrying_since: Option<Instant>,
    /// Records Honcho was found holding more than once since the reporter started (each
    /// named in a `loopd:` warning).
    pub duplicates: u64,
}

impl HonchoStatus {
    /// One line for `/status`, such as `honcho: 6 messages waiting, held back for 42 s:
    /// honcho answered 401: …`.
    pub fn line(&self, now: Instant) -> String {
        let mut line = self.state(now);
        if self.duplicates > 0 {
            line.push_str(&format!(
                "; Honcho holds {} more than once (the journal's warnings name {}; Honcho cannot delete a message)",
                if self.duplicates == 1 {
                    "1 message".to_string()
                } else {
                    format!("{} messages", self.duplicates)
                },
                if self.duplicates == 1 { "it" } else { "them" }
            ));
        }
        line
    }

    fn state(&self, now: Instant) -> String {
        match (&self.last_error, self.retrying_since) {
            (Some(e), Some(since)) => format!(
                "honcho: {} messages waiting, held back for {} s and retried with backoff: {e}",
                self.backlog,
                now.saturating_duration_since(since).as_secs()
            ),
            (Some(e), None) => format!("honcho: not reporting: {e}"),
            (None, _) => "honcho: reporting".to_string(),
        }
    }
}

/// A shared handle on a [`HonchoStatus`]; clones see the same state.
#[derive(Debug, Clone, Default)]
pub struct StatusHandle(Arc<Mutex<HonchoStatus>>);

impl StatusHandle {
    pub fn get(&self) -> HonchoStatus {
        // A panic elsewhere while holding the lock leaves plain fields, still fine to read.
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(super) fn set(&self, status: HonchoStatus) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = status;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_status_line_says_what_waits_since_when_and_why() {
        let t0 = Instant::now();
        let held = HonchoStatus {
            backlog: 6,
            last_error: Some("honcho answered 401: expired".into()),
            retrying_since: Some(t0),
            duplicates: 0,
        };
        assert_eq!(
            held.line(t0 + Duration::from_secs(42)),
            "honcho: 6 messages waiting, held back for 42 s and retried with backoff: honcho answered 401: expired"
        );
        assert_eq!(HonchoStatus::default().line(t0), "honcho: reporting");
        let doubled = HonchoStatus {
            duplicates: 2,
            ..HonchoStatus::default()
        };
        assert_eq!(
            doubled.line(t0),
            "honcho: reporting; Honcho holds 2 messages more than once (the journal's warnings name them; Honcho cannot delete a message)"
        );
    }
}
