//! What the poll loop keeps of the Matrix channel across restarts, in one file written
//! atomically (`<state_dir>/matrix/store.json`, docs/matrix.md, 'What loopd keeps'):
//! each room's session, the room an owner last wrote in for each session, the lines
//! taken from a sync and not yet answered, the events planned and not yet acknowledged
//! (with their fixed transaction ids), and the ids of the events loopd sent for each
//! line, which `/forget` redacts. It holds no conversation text but the lines waiting
//! for their turn and the events waiting to be sent, each removed once done.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// The most bytes of the store read at start. It holds lines waiting (each under an
/// event's 64 KiB) and events waiting to be sent (the same), normally none of either, and
/// a few thousand short ids: 64 MiB is hundreds of waiting messages, far more than an
/// outage of a day brings from one owner.
pub(crate) const MAX_STORE_BYTES: u64 = 64 * 1024 * 1024;

/// What `save` writes at most: below `MAX_STORE_BYTES`, with room for the ids and lines
/// that come before the next write.
const SAVE_BOUND: u64 = MAX_STORE_BYTES - 4 * 1024 * 1024;

/// Event ids of lines answered, kept so a line a sync brings again after a crash (taken,
/// answered, the position not yet saved) is not answered twice. The position is saved
/// within a round of taking a line, so a few hundred is far more than can come again.
pub(crate) const RECENT_ANSWERED: usize = 1024;

/// Lines' sent events kept for `/forget` to redact: an owner's few hundred messages a
/// week, each with a reply of an event or two. Older ones fall off (docs/matrix.md says
/// what `/forget` cannot reach then).
pub(crate) const MAX_SENT_KEPT: usize = 4096;

/// A line taken from a room, on disk before the sync position moved past it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Inbound {
    pub(crate) room: String,
    pub(crate) event: String,
    pub(crate) body: String,
}

/// Why an event is sent, which says what its acknowledgement settles.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Why {
    /// Part of the reply to the owner's event `event`.
    Reply { event: String },
    /// Inbox message `n` (a reminder, a heartbeat's message): delivered once acknowledged.
    /// `found_by`: what else `/forget` finds it by (`remind K` for a reminder's,
    /// `heartbeat SESSION TIME` for a heartbeat turn's), fixed when planned: the inbox may
    /// let the message go before the homeserver acknowledges it. `None` in stores written
    /// before it was kept.
    Inbox {
        n: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        found_by: Option<String>,
    },
    /// One of loopd's notices about the room or a message waiting at the terminal.
    Notice,
    /// The redaction of `event` (`/forget`).
    Redact { event: String },
}

/// An event planned and not yet acknowledged: its transaction id was fixed before the
/// first attempt and is kept until the homeserver acknowledged it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Outgoing {
    pub(crate) room: String,
    pub(crate) txn: String,
    pub(crate) why: Why,
    /// The event's content; `null` for a redaction.
    pub(crate) content: Value,
}

/// The `line` of an owner's `/recall` or `/inbox` command in a room (`Sent`): a query
/// may name the text and the answer quotes stored text, and neither is a record a
/// removal could search, so every removal redacts each such command and its answer
/// (docs/matrix.md, 'Forgetting'). Stores written before `/inbox` was answered in rooms
/// hold the same word.
pub(crate) const QUOTING_LINE: &str = "recall";

/// An event loopd sent, or an owner's event it took, that `/forget` may redact: the line
/// (the owner's event id) it belongs to, in `session`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Sent {
    pub(crate) room: String,
    pub(crate) event: String,
    /// The owner's event the reply answered (for the owner's own event, itself).
    pub(crate) line: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Store {
    /// Each room's session.
    pub(crate) rooms: BTreeMap<String, String>,
    /// The room an owner last wrote in, per session: where unasked messages go.
    pub(crate) last_room: BTreeMap<String, String>,
    pub(crate) inbound: Vec<Inbound>,
    pub(crate) answered: VecDeque<String>,
    pub(crate) outbox: Vec<Outgoing>,
    pub(crate) sent: VecDeque<Sent>,
    /// Inbox messages above `matrix.max_class` whose notice was planned: told once.
    pub(crate) held: VecDeque<u64>,
    /// Lines whose events `/forget` redacted: a reply to one acknowledged later is
    /// redacted as soon as it is.
    pub(crate) redacted: VecDeque<String>,
    /// The owner's `/forget` commands in rooms since the last removal: they and their
    /// lists hold the query, so a removal redacts them too.
    pub(crate) forgets: VecDeque<String>,
    /// Transaction ids of events `/forget` took out of the outbox after they were handed
    /// to the send thread: one the homeserver acknowledges anyway (it was in flight) is
    /// redacted at once. Ids only, no text.
    pub(crate) cancelled: VecDeque<String>,
}

/// Why one of the Matrix channel's files (the store, the sync position) could not be read
/// or written, naming the file.
#[derive(Debug)]
pub enum StoreError {
    CreateDir {
        dir: PathBuf,
        source: io::Error,
    },
    Read {
        path: PathBuf,
        source: io::Error,
    },
    /// The store file is not JSON of a store.
    NotStore {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// The position file is not JSON of a sync position.
    NotPosition {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// What the file would hold could not be written as JSON; `what` names the file.
    Encode {
        what: &'static str,
        source: serde_json::Error,
    },
    /// The store would be larger than `max` bytes, which `load` refuses.
    TooLarge {
        path: PathBuf,
        bytes: usize,
        max: u64,
    },
    Write {
        path: PathBuf,
        source: sessions::Error,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::CreateDir { dir, source } => {
                write!(f, "cannot create {}: {source}", dir.display())
            }
            StoreError::Read { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            StoreError::NotStore { path, source } => write!(
                f,
                "{} is not a matrix store (line {}, column {})",
                path.display(),
                source.line(),
                source.column()
            ),
            StoreError::NotPosition { path, source } => write!(
                f,
                "{} is not a sync position (line {})",
                path.display(),
                source.line()
            ),
            StoreError::Encode { what, source } => write!(f, "{what}: {source}"),
            StoreError::TooLarge { path, bytes, max } => write!(
                f,
                "{} would be {bytes} bytes, more than the {max} loopd reads at start; not written",
                path.display()
            ),
            StoreError::Write { path, source } => {
                write!(f, "cannot write {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::CreateDir { source, .. } | StoreError::Read { source, .. } => Some(source),
            StoreError::NotStore { source, .. }
            | StoreError::NotPosition { source, .. }
            | StoreError::Encode { source, .. } => Some(source),
            StoreError::Write { source, .. } => Some(source),
            StoreError::TooLarge { .. } => None,
        }
    }
}

pub(crate) fn dir(state_dir: &Path) -> PathBuf {
    state_dir.join("matrix")
}

const FILE: &str = "store.json";

/// Removes the pending redactions every line of which the store has planned.
pub(crate) fn pending_settled(state_dir: &Path, redacted: &VecDeque<String>) {
    for crate::redactions::Pending { path, lines, .. } in crate::redactions::pending(state_dir) {
        if lines.iter().all(|l| redacted.contains(l)) {
            if let Err(e) = std::fs::remove_file(&path) {
                plumbing::error!("matrix: cannot remove {}: {e}", path.display());
            }
        }
    }
}

impl Store {
    /// The store in `state_dir`; a missing file is a first start. A file that cannot be
    /// read or parsed is an error: starting empty would answer lines again or lose sends.
    pub(crate) fn load(state_dir: &Path) -> Result<Store, StoreError> {
        let path = dir(state_dir).join(FILE);
        if !path.exists() {
            return Ok(Store::default());
        }
        let text = match plumbing::bounded::read_text(&path, MAX_STORE_BYTES) {
            Ok(text) => text,
            Err(source) => return Err(StoreError::Read { path, source }),
        };
        serde_json::from_str(&text).map_err(|source| StoreError::NotStore { path, source })
    }

    /// Writes the store atomically (a crash leaves the old file or the new one), never
    /// one `load` would refuse: past `MAX_STORE_BYTES` the oldest waiting replies' parts
    /// are replaced by a notice that they wait at the terminal (with a journal line), and
    /// a store still too large is not written at all.
    pub(crate) fn save(&mut self, state_dir: &Path) -> Result<(), StoreError> {
        let dir = dir(state_dir);
        if let Err(source) = std::fs::create_dir_all(&dir) {
            return Err(StoreError::CreateDir { dir, source });
        }
        let encode = |store: &Store| {
            serde_json::to_vec(store).map_err(|source| StoreError::Encode {
                what: "matrix store",
                source,
            })
        };
        let mut bytes = encode(self)?;
        if bytes.len() as u64 > SAVE_BOUND {
            let shed = self.shed(bytes.len() as u64);
            plumbing::warn!(
                "matrix: the events waiting for the homeserver would make {} larger than {} bytes; {shed} waiting reply parts are replaced by a notice that the reply waits at the terminal",
                dir.join(FILE).display(),
                MAX_STORE_BYTES
            );
            bytes = encode(self)?;
        }
        if bytes.len() as u64 > MAX_STORE_BYTES {
            return Err(StoreError::TooLarge {
                path: dir.join(FILE),
                bytes: bytes.len(),
                max: MAX_STORE_BYTES,
            });
        }
        sessions::atomic::write(&dir, FILE, &bytes).map_err(|source| StoreError::Write {
            path: dir.join(FILE),
            source,
        })
    }

    /// Replaces the content of the oldest waiting reply parts by a short notice until the
    /// store, `size` bytes now, fits `SAVE_BOUND`; returns how many it replaced. Only
    /// replies: the whole reply is in the session's log, which the terminal shows.
    fn shed(&mut self, mut size: u64) -> usize {
        let notice = serde_json::json!({
            "msgtype": "m.notice",
            "body": "loopd: this part of the reply could not wait here for the homeserver (too much was waiting); the whole reply is in the session at the terminal.",
        });
        let small = serde_json::to_vec(&notice).map_or(0, |b| b.len() as u64);
        let mut shed = 0;
        for o in &mut self.outbox {
            if size <= SAVE_BOUND {
                break;
            }
            if !matches!(o.why, Why::Reply { .. }) {
                continue;
            }
            let was = serde_json::to_vec(&o.content).map_or(0, |b| b.len() as u64);
            if was <= small {
                continue;
            }
            o.content = notice.clone();
            size -= was - small;
            shed += 1;
        }
        shed
    }

    /// Whether the event was taken already: waiting for its turn, or answered.
    pub(crate) fn taken(&self, event: &str) -> bool {
        self.inbound.iter().any(|l| l.event == event) || self.answered.iter().any(|e| e == event)
    }

    /// The line `event` was answered: it leaves the waiting lines.
    pub(crate) fn answer(&mut self, event: &str) {
        self.inbound.retain(|l| l.event != event);
        if !self.answered.iter().any(|e| e == event) {
            self.answered.push_back(event.to_string());
        }
        while self.answered.len() > RECENT_ANSWERED {
            self.answered.pop_front();
        }
    }

    /// Notes that inbox message `n`'s notice (it waits at the terminal) was planned.
    pub(crate) fn keep_held(&mut self, n: u64) {
        if !self.held.contains(&n) {
            self.held.push_back(n);
        }
        while self.held.len() > RECENT_ANSWERED {
            self.held.pop_front();
        }
    }

    /// Notes lines whose events were redacted. One removal's lines are kept whole, at the
    /// back, whatever their number: a reply to one of them acknowledged later is still
    /// redacted, and the removal's pending file is settled only once every line of it is
    /// here (`pending_settled`). Older removals' lines give way first.
    pub(crate) fn keep_redacted(&mut self, lines: &[String]) {
        let batch: std::collections::HashSet<&String> = lines.iter().collect();
        self.redacted.retain(|l| !batch.contains(l));
        self.redacted.extend(lines.iter().cloned());
        while self.redacted.len() > RECENT_ANSWERED.max(lines.len()) {
            self.redacted.pop_front();
        }
    }

    /// Notes an owner's `/forget` command from a room.
    pub(crate) fn keep_forget(&mut self, event: &str) {
        self.forgets.push_back(event.to_string());
        while self.forgets.len() > RECENT_ANSWERED {
            self.forgets.pop_front();
        }
    }

    /// Notes an event that holds a line's text, for `/forget`.
    pub(crate) fn keep_sent(&mut self, sent: Sent) {
        if self.sent.contains(&sent) {
            return;
        }
        self.sent.push_back(sent);
        while self.sent.len() > MAX_SENT_KEPT {
            self.sent.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_survives_a_restart_and_a_missing_one_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Store::load(dir.path()).unwrap(), Store::default());
        let mut s = Store::default();
        s.rooms.insert("!r:x".into(), "main".into());
        s.inbound.push(Inbound {
            room: "!r:x".into(),
            event: "$e".into(),
            body: "hi".into(),
        });
        s.outbox.push(Outgoing {
            room: "!r:x".into(),
            txn: "bm1".into(),
            why: Why::Inbox {
                n: 3,
                found_by: None,
            },
            content: serde_json::json!({"msgtype": "m.text", "body": "x"}),
        });
        s.save(dir.path()).unwrap();
        assert_eq!(Store::load(dir.path()).unwrap(), s);
        assert!(s.taken("$e"));
        s.answer("$e");
        assert!(s.inbound.is_empty() && s.taken("$e"));
    }

    #[test]
    fn a_broken_store_is_an_error_not_an_empty_start() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(super::dir(dir.path())).unwrap();
        std::fs::write(super::dir(dir.path()).join(FILE), "{nope").unwrap();
        assert!(Store::load(dir.path())
            .unwrap_err()
            .to_string()
            .contains("store.json"));
    }

    /// Regression (it used to be so): `save` writes whatever the store holds, `load` refuses a file over
    /// `MAX_STORE_BYTES`. The outbox holds every planned event until the homeserver
    /// acknowledges it, and a reply block may be `blocks::MAX_BLOCK_BYTES` (4 MiB): 17 long
    /// replies waiting through a send outage (5xx on send while sync works) make a store
    /// loopd writes but will not start with ("A store that cannot be read stops loopd at
    /// start"). Every acknowledgement also rewrites the whole file meanwhile.
    #[test]
    fn review_a_store_that_save_writes_is_one_load_reads() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::default();
        let part = "x".repeat(crate::matrix::blocks::MAX_BLOCK_BYTES);
        for i in 0..17 {
            s.outbox.push(Outgoing {
                room: "!r:x".into(),
                txn: format!("bm{i}"),
                why: Why::Reply {
                    event: format!("$e{i}"),
                },
                content: serde_json::json!({"msgtype": "m.text", "body": part}),
            });
        }
        s.save(dir.path()).expect("the store is written");
        let loaded = Store::load(dir.path());
        assert!(
            loaded.is_ok(),
            "loopd wrote a store it refuses at start: {}",
            loaded.unwrap_err()
        );
    }
}
