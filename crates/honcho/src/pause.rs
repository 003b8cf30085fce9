//! Holding the reporter still while another thread rewrites what it reads. `/forget`
//! rewrites a session's logs and moves its report cursor (`moved`); the reporter thread
//! must not be half way through a round then, reading old offsets or storing a cursor
//! over the moved one. [`Reporter::pause`](super::Reporter::pause) returns a [`Paused`]:
//! while it lives the thread starts no round, and the one under way when it was asked
//! for has ended (a round stops between requests when asked, so that wait is at most one
//! request, bounded by the client's timeouts). Sessions named with [`Paused::reload`]
//! drop what the thread holds of them in memory and read their cursor from disk again.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How often a thread waiting at the gate looks at the stop flag: a stop during a pause
/// (a dropped reporter) is noticed this late at worst.
const STOP_POLL: Duration = Duration::from_millis(200);

#[derive(Default)]
struct State {
    paused: usize,
    in_round: bool,
    reload: BTreeSet<String>,
}

/// Shared by the reporter thread and its handle.
#[derive(Default)]
pub struct Gate {
    state: Mutex<State>,
    changed: Condvar,
    /// Set while a pause is asked for or held: a round under way ends at its next
    /// request boundary.
    pub asked: AtomicBool,
}

impl Gate {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock leaves plain flags behind; they stay usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The reporter thread, before a round: waits while paused, then marks a round under
    /// way until the returned guard is dropped (also when the round panics, so a pause
    /// never waits for a thread that is gone). Returns the sessions to reload too, or
    /// `None` when `stopping` was set meanwhile.
    pub fn enter(&self, stopping: &AtomicBool) -> Option<(Round<'_>, BTreeSet<String>)> {
        let mut st = self.lock();
        while st.paused > 0 {
            if stopping.load(Ordering::SeqCst) {
                return None;
            }
            st = match self.changed.wait_timeout(st, STOP_POLL) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
        st.in_round = true;
        Some((Round { gate: self }, std::mem::take(&mut st.reload)))
    }

    /// The sessions to reload, taken now (the thread looks between rounds too, so a
    /// session backing off is tried again at once after the forget that held it).
    pub fn take_reloads(&self) -> BTreeSet<String> {
        std::mem::take(&mut self.lock().reload)
    }

    /// Whether a pause is asked for: a round checks this between requests.
    pub fn asked(&self) -> bool {
        self.asked.load(Ordering::SeqCst)
    }
}

/// A round under way on the reporter thread.
pub struct Round<'a> {
    gate: &'a Gate,
}

impl Drop for Round<'_> {
    fn drop(&mut self) {
        self.gate.lock().in_round = false;
        self.gate.changed.notify_all();
    }
}

/// The reporter held still; it goes on when this is dropped.
pub struct Paused {
    gate: Arc<Gate>,
}

impl Paused {
    /// Asks the thread to finish its round and waits for it. A thread that has ended
    /// (stopped, or its round crashed) is never in a round, so this does not hang.
    pub fn new(gate: Arc<Gate>) -> Paused {
        gate.asked.store(true, Ordering::SeqCst);
        {
            let mut st = gate.lock();
            st.paused += 1;
            while st.in_round {
                st = match gate.changed.wait(st) {
                    Ok(g) => g,
                    Err(p) => p.into_inner(),
                };
            }
        }
        Paused { gate }
    }

    /// The thread forgets what it holds in memory of `session` (its cursor) and reads it
    /// from disk at its next round, which comes as soon as the pause ends.
    pub fn reload(&self, session: &str) {
        self.gate.lock().reload.insert(session.to_string());
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        let mut st = self.gate.lock();
        st.paused = st.paused.saturating_sub(1);
        if st.paused == 0 {
            self.gate.asked.store(false, Ordering::SeqCst);
        }
        drop(st);
        self.gate.changed.notify_all();
    }
}
