//! One reporting round for one session: make sure the cursor agrees with what Honcho holds,
//! then post batch after batch of finished turns from the cursor on, storing the cursor
//! after each, until nothing is left or Honcho cannot be reached.

use super::client::{CallError, Client, Held};
use super::cursor::{self, Cursor};
use super::label::{Classes, Labeller};
use super::message::{self, Peers, MAX_BATCH};
use super::scan;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Turns read from the logs per scan. Half a batch of turns fills a batch (two messages
/// each) and keeps what is held in memory to about one batch, however far behind the
/// reporter is after an outage.
pub const MAX_SCAN_TURNS: usize = MAX_BATCH / 2;

/// What the reporter does right after Honcho accepted a batch, before it stores the
/// cursor. Anything but `Continue` exists to test the crash window between the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterPost {
    Continue,
    /// End the reporter thread without storing the cursor (in-process tests).
    #[cfg(test)]
    ExitThread,
    /// `abort()` the whole process, as `kill -9` would (end-to-end tests).
    Abort,
}

/// What the reporter thread shares across sessions.
pub struct Ctx {
    pub state_dir: PathBuf,
    pub client: Client,
    pub peers: Peers,
    /// What the owner's words are, and the most that may be posted.
    pub classes: Classes,
    /// `honcho.session`; empty means each boxmaker session reports to its own name.
    pub honcho_session: String,
    pub after_post: AfterPost,
    /// Set when the reporter is stopped; looked at between batches so that a long catch-up
    /// does not hold a shutdown.
    pub stopping: Arc<AtomicBool>,
}

/// How a round ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Everything finished so far is reported; `posted` messages went out this round.
    Idle { posted: usize },
    /// Something failed that may heal by itself; try again after a backoff.
    Retry(String),
    /// The reporter is stopping, or the test hook asked the thread to end.
    Exit,
}

/// What the reporter keeps in memory about one session. It can all be thrown away: the
/// cursor is read back from disk and the check against Honcho is simply made again.
pub struct SessionSync {
    name: String,
    cursor: Option<Cursor>,
    /// Whether the cursor is known to agree with Honcho: false at start and after any
    /// post whose outcome is unknown.
    checked: bool,
}

impl SessionSync {
    pub fn new(name: &str) -> SessionSync {
        SessionSync {
            name: name.to_string(),
            cursor: None,
            checked: false,
        }
    }

    /// One round. Never panics on anything read from disk or the network.
    pub fn run(&mut self, ctx: &Ctx) -> Outcome {
        match self.round(ctx) {
            Ok(outcome) => outcome,
            Err(message) => Outcome::Retry(message),
        }
    }

    fn round(&mut self, ctx: &Ctx) -> Result<Outcome, String> {
        let name = self.name.clone();
        let cursor_path = cursor::path(&ctx.state_dir, &name);
        let dir = ctx.state_dir.join("sessions").join(&name);
        let target = if ctx.honcho_session.is_empty() {
            name.clone()
        } else {
            ctx.honcho_session.clone()
        };
        let mut cur = match self.cursor {
            Some(c) => c,
            None => cursor::load(&cursor_path)
                .map_err(|e| e.to_string())?
                .unwrap_or_default(),
        };
        self.cursor = Some(cur);
        // Checked before each network call too, so `Reporter::stop` (a reload changing
        // `[honcho]` joins this thread on the worker) waits for at most one request.
        if ctx.stopping.load(Ordering::SeqCst) {
            return Ok(Outcome::Exit);
        }
        if !self.checked {
            match ctx.client.newest(&target, &name) {
                Ok(Some(held)) => {
                    if let Some(past) = find_past(&dir, cur, &name, ctx, &held)? {
                        plumbing::notice!(
                            "honcho: session {name}: Honcho already holds {}; the cursor moves past it",
                            held.id
                        );
                        self.save(&cursor_path, past)?;
                        cur = past;
                    }
                }
                Ok(None) => {}
                Err(CallError::Retry(m)) => return Err(m),
                Err(e @ CallError::Refused { .. }) => plumbing::warn!(
                    "honcho: session {name}: cannot ask Honcho what it holds ({e}); reporting from the cursor on disk"
                ),
            }
            self.checked = true;
        }
        let mut posted = 0;
        let mut labels = Labeller::new(&dir, ctx.classes.owner);
        loop {
            if ctx.stopping.load(Ordering::SeqCst) {
                return Ok(Outcome::Exit);
            }
            let found = scan::scan(&dir, cur, MAX_SCAN_TURNS).map_err(|e| e.to_string())?;
            let mut gate = message::Gate {
                labels: &mut labels,
                max_class: ctx.classes.max,
            };
            let plan = message::plan(&name, &found, &cur, &ctx.peers, MAX_BATCH, &mut gate)?;
            let (Some(first), Some(last)) = (plan.batch.first(), plan.batch.last()) else {
                if plan.after != cur {
                    self.save(&cursor_path, plan.after)?;
                }
                return Ok(Outcome::Idle { posted });
            };
            match ctx.client.post(&target, &name, &plan.batch) {
                Ok(()) => {
                    posted += plan.batch.len();
                    match ctx.after_post {
                        AfterPost::Continue => {}
                        #[cfg(test)]
                        AfterPost::ExitThread => return Ok(Outcome::Exit),
                        AfterPost::Abort => std::process::abort(),
                    }
                }
                Err(CallError::Refused { status, body }) => plumbing::error!(
                    "{}",
                    refusal_line(&name, plan.batch.len(), &first.id, &last.id, status, &body)
                ),
                Err(CallError::Retry(m)) => {
                    // Honcho may have stored the batch before the answer was lost, so the
                    // next round asks it first.
                    self.checked = false;
                    return Err(m);
                }
            }
            if let Err(e) = self.save(&cursor_path, plan.after) {
                self.checked = false;
                return Err(e);
            }
            cur = plan.after;
        }
    }

    fn save(&mut self, path: &Path, c: Cursor) -> Result<(), String> {
        cursor::store(path, &c).map_err(|e| e.to_string())?;
        self.cursor = Some(c);
        Ok(())
    }
}

/// The log line for a batch Honcho refused. It names the batch by its first and last
/// message ids, so the owner can find the turns in the logs and post them by hand.
pub fn refusal_line(
    session: &str,
    count: usize,
    first: &str,
    last: &str,
    status: u16,
    body: &str,
) -> String {
    format!(
        "honcho: session {session}: Honcho refused {count} messages ({first} to {last}) with HTTP {status}; they are skipped, not retried: {body}"
    )
}

/// The cursor just past Honcho's newest message when it lies at or after `from`, or `None`
/// when the logs from `from` on do not hold it (it was reported before the cursor was
/// stored last, or it is not one of ours).
fn find_past(
    dir: &Path,
    from: Cursor,
    session: &str,
    ctx: &Ctx,
    held: &Held,
) -> Result<Option<Cursor>, String> {
    let peers = &ctx.peers;
    let mut labels = Labeller::new(dir, ctx.classes.owner);
    let Some(at) = message::parse_id(session, &held.id) else {
        return Ok(None);
    };
    if at < (from.epoch, from.offset) {
        return Ok(None);
    }
    let mut cur = from;
    loop {
        let found = scan::scan(dir, cur, MAX_SCAN_TURNS).map_err(|e| e.to_string())?;
        let mut gate = message::Gate {
            labels: &mut labels,
            max_class: ctx.classes.max,
        };
        match message::cursor_past(
            session,
            &found,
            &cur,
            peers,
            &held.id,
            &held.content,
            &mut gate,
        )? {
            Some((past, true)) => return Ok(Some(past)),
            Some((_, false)) => {
                // Same place, other text: these logs are not the ones Honcho was sent (the
                // session was started over). Skipping on an id alone would lose turns.
                plumbing::warn!(
                    "honcho: session {session}: Honcho's newest message {} differs from the log's text there; reporting from the cursor on disk",
                    held.id
                );
                return Ok(None);
            }
            None => {}
        }
        let Some(last) = found.turns.last() else {
            return Ok(None);
        };
        if (last.epoch, last.end) > at || found.rest == cur {
            return Ok(None);
        }
        cur = found.rest;
    }
}
