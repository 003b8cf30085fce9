//! The slot files loopd has written, kept on disk beside the session logs
//! (`<state_dir>/slots/saved.json`, written atomically), so that after a loopd restart it
//! still knows which files exist: llama.cpp can neither list nor delete its saves, and
//! asking it to restore a file that was never written only fills its log with "failed to
//! open" (docs/turn.md, "Slot save and restore").
//!
//! The keeper changes a `Ledger` in memory and never touches the file: the engine reads
//! it at start (`Ledger::open`) and writes it when the keeper asks
//! (`SlotAction::StoreLedger`, `Ledger::store`).

use proto::SessionId;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The most sessions the ledger remembers; past it the oldest save is forgotten (its file
/// is then only left on the server's disk, as llama.cpp gives no way to remove it).
pub(crate) const MAX_ENTRIES: usize = 1024;

/// The most bytes of the ledger file read back: `MAX_ENTRIES` entries of well under a
/// hundred bytes each.
const MAX_LEDGER_BYTES: u64 = 256 * 1024;

/// One session's saved file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Saved {
    pub(crate) epoch: u64,
    pub(crate) tokens: u64,
    /// Seconds since the Unix epoch when it was written.
    pub(crate) at: u64,
}

/// Which session's file holds which epoch, as far as this loopd (or an earlier one on the
/// same state directory) wrote it. `Ledger::default()` is an empty one, as the keeper's
/// unit tests use.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    saved: HashMap<SessionId, Saved>,
    /// Changed since it was last stored.
    changed: bool,
}

impl Ledger {
    /// The ledger of `state_dir`, read back from disk; a missing or unreadable file is an
    /// empty ledger (a warning for the unreadable one: the cost is a re-read of a prompt).
    pub(crate) fn open(state_dir: &Path) -> Ledger {
        let path = file(state_dir);
        let saved = match plumbing::bounded::read_text(&path, MAX_LEDGER_BYTES) {
            Ok(text) => parse(&text).unwrap_or_else(|| {
                plumbing::warn!(
                    "{} is not a slot ledger; starting without one",
                    path.display()
                );
                HashMap::new()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => HashMap::new(),
            Err(e) => {
                plumbing::warn!("{}: {e}; starting without a slot ledger", path.display());
                HashMap::new()
            }
        };
        Ledger {
            saved,
            changed: false,
        }
    }

    pub(crate) fn get(&self, session: &SessionId) -> Option<Saved> {
        self.saved.get(session).copied()
    }

    pub(crate) fn insert(&mut self, session: SessionId, saved: Saved) {
        if self.saved.len() >= MAX_ENTRIES && !self.saved.contains_key(&session) {
            let oldest = self
                .saved
                .iter()
                .min_by_key(|(_, s)| s.at)
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                self.saved.remove(&oldest);
            }
        }
        self.saved.insert(session, saved);
        self.changed = true;
    }

    pub(crate) fn remove(&mut self, session: &SessionId) {
        if self.saved.remove(session).is_some() {
            self.changed = true;
        }
    }

    /// Whether it changed since this was last asked.
    pub(crate) fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    /// Sessions whose file was last written before `before` (seconds since the epoch).
    pub(crate) fn idle_since(&self, before: u64) -> Vec<(SessionId, Saved)> {
        let mut idle: Vec<(SessionId, Saved)> = self
            .saved
            .iter()
            .filter(|(_, s)| s.at < before)
            .map(|(id, s)| (id.clone(), *s))
            .collect();
        idle.sort_by_key(|(_, s)| s.at);
        idle
    }

    /// Saved files and the tokens they hold, for `/status`.
    pub(crate) fn totals(&self) -> (usize, u64) {
        (
            self.saved.len(),
            self.saved.values().map(|s| s.tokens).sum(),
        )
    }

    /// Writes it to `state_dir`'s ledger file, atomically; a failure is a warning (the
    /// cost is a prompt read again after a restart).
    pub(crate) fn store(&self, state_dir: &Path) {
        let path = file(state_dir);
        let Some(dir) = path.parent() else {
            return;
        };
        let body: serde_json::Map<String, Value> = self
            .saved
            .iter()
            .map(|(id, s)| {
                (
                    id.to_string(),
                    json!({"epoch": s.epoch, "tokens": s.tokens, "at": s.at}),
                )
            })
            .collect();
        let written = std::fs::create_dir_all(dir)
            .map_err(|e| e.to_string())
            .and_then(|()| {
                sessions::atomic::write(
                    dir,
                    "saved.json",
                    Value::Object(body).to_string().as_bytes(),
                )
                .map_err(|e| e.to_string())
            });
        if let Err(e) = written {
            plumbing::warn!("writing the slot ledger in {}: {e}", dir.display());
        }
    }
}

/// `<state_dir>/slots/saved.json`.
fn file(state_dir: &Path) -> PathBuf {
    state_dir.join("slots").join("saved.json")
}

fn parse(text: &str) -> Option<HashMap<SessionId, Saved>> {
    let v: Value = serde_json::from_str(text).ok()?;
    let mut out = HashMap::new();
    for (id, s) in v.as_object()? {
        let id = SessionId::parse(id).ok()?;
        out.insert(
            id,
            Saved {
                epoch: s["epoch"].as_u64()?,
                tokens: s["tokens"].as_u64()?,
                at: s["at"].as_u64()?,
            },
        );
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ledger_survives_a_restart_and_forgets_what_was_removed() {
        let dir = tempfile::tempdir().unwrap();
        let main = SessionId::parse("main").unwrap();
        let other = SessionId::parse("other").unwrap();
        let mut l = Ledger::open(dir.path());
        let saved = Saved {
            epoch: 3,
            tokens: 120,
            at: 10,
        };
        l.insert(main.clone(), saved);
        l.insert(
            other.clone(),
            Saved {
                epoch: 0,
                tokens: 5,
                at: 20,
            },
        );
        l.remove(&other);
        assert!(l.take_changed());
        assert!(!l.take_changed(), "asked once per change");
        l.store(dir.path());
        let back = Ledger::open(dir.path());
        assert_eq!(back.get(&main), Some(saved));
        assert_eq!(back.get(&other), None);
        assert_eq!(back.totals(), (1, 120));
        assert_eq!(back.idle_since(11).len(), 1);
        assert!(back.idle_since(10).is_empty());
    }

    #[test]
    fn a_damaged_ledger_is_an_empty_one() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("slots")).unwrap();
        std::fs::write(dir.path().join("slots/saved.json"), "{not json").unwrap();
        assert_eq!(Ledger::open(dir.path()).totals(), (0, 0));
    }
}
