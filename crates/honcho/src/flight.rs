//! A post in flight (docs/honcho.md, 'Nothing lost, nothing twice'): each batch is posted
//! on a thread of its own, which keeps the connection open until Honcho answers (up to
//! `client::MAX_ANSWER_WAIT`), while the reporter waits for it only up to the request
//! timeout. A post not answered by then is not given up: the session posts nothing more
//! until its answer comes, since Honcho can still be working on it, with no bound of its
//! own on how long (its session set-up waits for row locks before any lock timeout
//! applies).
//!
//! The marker file `<state_dir>/honcho/<session>.posting` is written (durably) before a
//! post goes out and removed once its outcome is known: a start that finds it knows a
//! post may have been cut short (a `kill -9`, a power cut) and checks with Honcho first;
//! a start without it posts at once.

use super::client::{CallError, Client};
use super::message::Outgoing;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A post whose answer has not come within the request timeout.
#[derive(Debug)]
pub struct Flight {
    rx: Receiver<Result<(), CallError>>,
    /// When it was sent.
    pub since: Instant,
    /// How many messages it holds.
    pub count: usize,
}

impl Flight {
    /// Its answer, once it came: `Ok` or the refusal when Honcho answered, a
    /// `CallError::Transport` when the connection ended without an answer.
    pub fn landed(&self) -> Option<Result<(), CallError>> {
        match self.rx.try_recv() {
            Ok(answer) => Some(answer),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err(CallError::Transport(
                "the post's thread ended without an answer".into(),
            ))),
        }
    }
}

/// How a post ended, or that it has not yet.
pub enum Sent {
    Answered(Result<(), CallError>),
    /// Still waiting for Honcho's answer past the request timeout.
    Waiting(Flight),
}

/// Posts `batch` on a thread of its own and waits for its answer up to `timeout`. When
/// the answer comes later than that (or the connection ends without one), `landed` is
/// called on that thread, so the reporter can look again at once.
pub fn post(
    client: &Client,
    target: &str,
    boxmaker: &str,
    batch: &[Outgoing],
    timeout: Duration,
    landed: impl FnOnce() + Send + 'static,
) -> Sent {
    let (tx, rx) = mpsc::sync_channel(1);
    let late = Arc::new(AtomicBool::new(false));
    let thread_late = Arc::clone(&late);
    let (client, target, boxmaker, owned) = (
        client.clone(),
        target.to_string(),
        boxmaker.to_string(),
        batch.to_vec(),
    );
    let spawned = std::thread::Builder::new()
        .name("honcho-post".into())
        .spawn(move || {
            let answer = client.post(&target, &boxmaker, &owned);
            // A reporter that stopped waiting is told; one still waiting takes it itself.
            let _ = tx.send(answer);
            if thread_late.load(Ordering::SeqCst) {
                landed();
            }
        });
    if let Err(e) = spawned {
        return Sent::Answered(Err(CallError::Unsent(format!(
            "cannot start a thread to post to Honcho: {e}"
        ))));
    }
    let since = Instant::now();
    match rx.recv_timeout(timeout) {
        Ok(answer) => Sent::Answered(answer),
        Err(RecvTimeoutError::Timeout) => {
            late.store(true, Ordering::SeqCst);
            // An answer sent between the timeout and the flag is taken here; one sent
            // after it finds the flag set and calls `landed`.
            match rx.try_recv() {
                Ok(answer) => Sent::Answered(answer),
                Err(_) => Sent::Waiting(Flight {
                    rx,
                    since,
                    count: batch.len(),
                }),
            }
        }
        Err(RecvTimeoutError::Disconnected) => Sent::Answered(Err(CallError::Transport(
            "the post's thread ended without an answer".into(),
        ))),
    }
}

/// `<state_dir>/honcho/<session>.posting`.
pub fn marker(state_dir: &Path, session: &str) -> PathBuf {
    state_dir.join("honcho").join(format!("{session}.posting"))
}

/// Whether a post of `session` may have been cut short: its marker is there.
pub fn was_posting(state_dir: &Path, session: &str) -> bool {
    marker(state_dir, session).exists()
}

/// Why the marker of a post in flight could not be written, naming the path.
#[derive(Debug)]
pub enum MarkError {
    CreateDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    Write {
        path: PathBuf,
        source: sessions::Error,
    },
}

impl fmt::Display for MarkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MarkError::CreateDir { dir, source } => write!(f, "{}: {source}", dir.display()),
            MarkError::Write { path, source } => {
                write!(f, "cannot write {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for MarkError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MarkError::CreateDir { source, .. } => Some(source),
            MarkError::Write { source, .. } => Some(source),
        }
    }
}

/// Writes the marker, durably, before a post goes out.
pub fn mark(state_dir: &Path, session: &str) -> Result<(), MarkError> {
    let path = marker(state_dir, session);
    let dir = state_dir.join("honcho");
    if let Err(source) = std::fs::create_dir_all(&dir) {
        return Err(MarkError::CreateDir { dir, source });
    }
    let name = format!("{session}.posting");
    sessions::atomic::write(&dir, &name, b"posting\n")
        .map_err(|source| MarkError::Write { path, source })
}

/// Removes the marker once the post's outcome is known. Not synced: a marker a power cut
/// brings back costs one check with Honcho at the next start, nothing else.
pub fn unmark(state_dir: &Path, session: &str) {
    let path = marker(state_dir, session);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => plumbing::warn!("honcho: cannot remove {}: {e}", path.display()),
    }
}
