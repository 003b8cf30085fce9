//! The sync position and the room notices already sent (docs/matrix.md, 'Exactly once
//! in'), kept by the sync thread in `<state_dir>/matrix/position.json`, written atomically
//! and only after the loop said a sync's lines are on disk.

use super::store::StoreError;
use matrix::Told;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::Path;

/// A position is one opaque token of the homeserver's and the told rooms a few ids: a
/// few KiB; a bigger file is the wrong file.
pub(crate) const MAX_POSITION_BYTES: u64 = 1024 * 1024;

const FILE: &str = "position.json";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Position {
    pub(crate) since: Option<String>,
    pub(crate) stopped: BTreeSet<String>,
    pub(crate) encrypted: BTreeSet<String>,
    /// The rooms whose URL previews loopd turned off, or whose owner it told how to:
    /// set up once, not again at each start (a homeserver remembers a transaction id for
    /// a day, and for one device only).
    pub(crate) previews: BTreeSet<String>,
}

impl Position {
    /// The saved position; none at the first start. A file that cannot be read is an
    /// error: syncing from nothing would take no lines until the next message.
    pub(crate) fn load(state_dir: &Path) -> Result<Position, StoreError> {
        let path = super::store::dir(state_dir).join(FILE);
        if !path.exists() {
            return Ok(Position::default());
        }
        let text = match plumbing::bounded::read_text(&path, MAX_POSITION_BYTES) {
            Ok(text) => text,
            Err(source) => return Err(StoreError::Read { path, source }),
        };
        serde_json::from_str(&text).map_err(|source| StoreError::NotPosition { path, source })
    }

    pub(crate) fn save(&self, state_dir: &Path) -> Result<(), StoreError> {
        let dir = super::store::dir(state_dir);
        if let Err(source) = std::fs::create_dir_all(&dir) {
            return Err(StoreError::CreateDir { dir, source });
        }
        let bytes = serde_json::to_vec(self).map_err(|source| StoreError::Encode {
            what: "sync position",
            source,
        })?;
        sessions::atomic::write(&dir, FILE, &bytes).map_err(|source| StoreError::Write {
            path: dir.join(FILE),
            source,
        })
    }

    pub(crate) fn told(&self) -> Told {
        Told {
            stopped: self.stopped.clone(),
            encrypted: self.encrypted.clone(),
        }
    }

    pub(crate) fn with_told(since: String, told: &Told, previews: &BTreeSet<String>) -> Position {
        Position {
            since: Some(since),
            stopped: told.stopped.clone(),
            encrypted: told.encrypted.clone(),
            previews: previews.clone(),
        }
    }
}
