//! One reporting round for one session: make sure the cursor agrees with what Honcho holds,
//! then post batch after batch of finished turns from the cursor on, storing the cursor
//! after each, until nothing is left or Honcho does not take a batch.
//!
//! **What Honcho's answers mean here.** Only a batch Honcho took moves the cursor, with one
//! exception: a message refused on its own. A 422 (or 413) for a batch is narrowed by
//! splitting the batch in halves until the refused message stands alone; the others go
//! through. That one is passed over for good with a `loopd:` warning naming its session and
//! place, unless Honcho said it is too long: then texts are cut smaller from then on and
//! it is sent again. Every other answer — 401 and 403 (a token expired, rotated or scoped
//! wrongly), 409 (a creation race in Honcho), 429, 5xx, no answer — holds the batch: the
//! round ends as a [`RoundFailure`] and is tried again after a backoff, so turns made meanwhile
//! wait behind it and none is lost.
//!
//! **A post is never given up on while Honcho may still store it** (docs/honcho.md,
//! 'Nothing lost, nothing twice'): Honcho finishes a create after its client has gone, its
//! list takes no lock, and nothing bounds its session set-up's wait for row locks. Each
//! batch is posted on its own thread (`flight`); one not answered within the request
//! timeout holds its session until its answer comes, and after Honcho's answer a list
//! tells the truth. When no answer can tell (a start after a post was cut short, a
//! connection closed without one, a 5xx, a 2xx other than Honcho's 201 listing what it
//! created), the round asks Honcho to answer a write through
//! the same session set-up (`Client::fence`), waits out [`COMMIT_WINDOW`] from that
//! answer, then lists. Either way it posts only the messages of the batch whose
//! `boxmaker_record` Honcho does not hold. A record Honcho holds twice is warned about,
//! with how the owner can see it, and counted for `/status`.
//!
//! This file holds the round itself; posting a planned batch is `post`'s, settling a
//! doubt before it `settle`'s.

mod post;
mod settle;

use super::client::{CallError, Client};
use super::cursor::{self, Cursor};
use super::flight::{self, Flight};
use super::label::{Classes, Labeller};
use super::message::{self, Peers, MAX_BATCH};
use super::pause::Gate;
use super::peer::{self, PeerSetup};
use super::scan;
use post::Posted;
use proto::config::Config;
use std::cell::Cell;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long after Honcho answered the fence (a write through the same session set-up) a
/// create queued before it has either committed or failed. Honcho (3.0.12,
/// `crud/message.py::create_messages`) runs a create to its end whether or not the client
/// is still there; past its session set-up (whose wait for row locks nothing bounds, and
/// which the fence waits behind too) its waits are each bounded by its own settings: a
/// pooled database connection within `DB_POOL_TIMEOUT` (5 s), a new one within
/// `DB_CONNECT_TIMEOUT_SECONDS` (2 s), the session's advisory lock within `SET LOCAL
/// lock_timeout = '5s'`; what is left is a handful of short statements and the commit.
/// 12 s of bounded waits, with room for slow statements (Postgres sets no statement
/// timeout). Counted from an answer, not from the post: a server frozen (SIGSTOP, swapped
/// out) finishes the create only once it runs again, and then it answers too.
pub const COMMIT_WINDOW: Duration = Duration::from_secs(20);

/// Turns read from the logs per scan. Half a batch of turns fills a batch (two messages
/// each) and keeps what is held in memory to about one batch, however far behind the
/// reporter is after an outage.
pub const MAX_SCAN_TURNS: usize = MAX_BATCH / 2;

/// The most waiting messages counted for `/status` after a failed round. Counting reads
/// the logs from the cursor on; past this many it stops and says "at least", so a long
/// history never reported does not cost a read of every log at each retry.
pub const MAX_BACKLOG_COUNT: u64 = 10_000;

/// What the reporter does right after Honcho accepted a batch, before it stores the
/// cursor. Anything but `Continue` exists to test the crash window between the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterPost {
    Continue,
    /// End the reporter thread without storing the cursor (in-process tests, here and in
    /// loopd's across a forget).
    #[cfg(any(test, feature = "test-support"))]
    ExitThread,
    /// `abort()` the whole process, as `kill -9` would (end-to-end tests).
    Abort,
}

/// What the reporter thread shares across sessions. Only that thread uses it, so the
/// cells need no lock.
pub struct Ctx {
    /// The configuration the reporter was started with, read where it is needed and never
    /// copied: a reload that changes what the reporter reads starts a new reporter.
    pub cfg: Arc<Config>,
    /// Built once from `[honcho]`, so its connections are reused.
    pub client: Client,
    pub after_post: AfterPost,
    /// Set when the reporter is stopped; looked at between batches so that a long catch-up
    /// does not hold a shutdown.
    pub stopping: Arc<AtomicBool>,
    /// See [`Rewriting`](super::Rewriting).
    pub rewriting: super::Rewriting,
    /// Asked to hold still (`Reporter::pause`): looked at where `stopping` is.
    pub gate: Arc<Gate>,
    /// The most characters one message holds: `MAX_MESSAGE_CHARS` until a server refuses a
    /// piece as too long, then what it said (or half the piece).
    pub max_chars: Cell<usize>,
    pub peer_setup: Cell<PeerSetup>,
    /// See [`COMMIT_WINDOW`] (tests make it short).
    pub commit_window: Duration,
    /// Records found held more than once by Honcho, each counted once (the warnings).
    pub duplicates: Cell<u64>,
    /// How long a round waits for a post's answer before it lets the post wait on its
    /// own thread (see `client::REQUEST_TIMEOUT`).
    pub request_timeout: Duration,
    /// Tells the reporter thread a post answered after the round stopped waiting for it.
    pub wake: SyncSender<super::Msg>,
}

impl Ctx {
    fn state_dir(&self) -> &Path {
        &self.cfg.state_dir
    }

    fn peers(&self) -> Peers<'_> {
        Peers {
            owner: &self.cfg.honcho.owner_peer,
            assistant: &self.cfg.honcho.assistant_peer,
        }
    }

    /// What the owner's words are, and the most that may be posted.
    fn classes(&self) -> Classes {
        Classes {
            owner: self.cfg.channel.owner_class,
            max: self.cfg.honcho.max_class,
        }
    }
}

/// Why a round stopped before everything finished was reported. Nothing was dropped: the
/// round is tried again after a backoff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundFailure {
    /// The kind of failure (`HTTP 401`, `no answer`, `files`): a warning is logged when a
    /// session's kind changes, not at every retry.
    pub kind: String,
    pub message: String,
    /// How long Honcho asked to be left alone (`Retry-After`).
    pub retry_after: Option<Duration>,
}

impl RoundFailure {
    fn local(message: String) -> RoundFailure {
        RoundFailure {
            kind: "files".into(),
            message,
            retry_after: None,
        }
    }

    fn call(e: &CallError) -> RoundFailure {
        RoundFailure {
            kind: e.kind(),
            message: e.to_string(),
            retry_after: match e {
                CallError::Status { retry_after, .. } => *retry_after,
                CallError::Transport(_) | CallError::Unsent(_) | CallError::Unconfirmed { .. } => {
                    None
                }
            },
        }
    }
}

/// Why a round ended before everything finished was reported: a failure, or a batch whose
/// fate Honcho has not settled yet. Either way nothing was dropped.
#[derive(Debug)]
enum Cut {
    /// Tried again after a backoff: [`Outcome::Retry`].
    Failed(RoundFailure),
    /// Run again after this long: [`Outcome::Settle`].
    Settle(Duration),
}

impl From<RoundFailure> for Cut {
    fn from(f: RoundFailure) -> Cut {
        Cut::Failed(f)
    }
}

/// How a round ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Everything finished so far is reported; `posted` messages went out this round.
    Idle { posted: usize },
    /// Something failed that may heal by itself; try again after a backoff.
    Retry(RoundFailure),
    /// The reporter is stopping, or the test hook asked the thread to end.
    Exit,
    /// A pause was asked for: the round ends between requests and is run again after it.
    Paused,
    /// Whether Honcho holds a batch is not known yet: run the round again after this long,
    /// once a create Honcho may still be working on has committed. Not a failure.
    Settle(Duration),
}

/// How a round must end now, if it must: the reporter is stopping or asked to pause.
fn halt(ctx: &Ctx) -> Option<Outcome> {
    if ctx.stopping.load(Ordering::SeqCst) {
        Some(Outcome::Exit)
    } else if ctx.gate.asked() {
        Some(Outcome::Paused)
    } else {
        None
    }
}

/// What the reporter keeps in memory about one session. It can all be thrown away: the
/// cursor is read back from disk and the check against Honcho is simply made again.
pub struct SessionSync {
    name: String,
    cursor: Option<Cursor>,
    /// Whether Honcho may hold messages past the cursor: at start and after any post whose
    /// outcome is unknown.
    doubt: Doubt,
    /// `boxmaker_record`s already warned about as held twice, so each is warned once.
    warned: BTreeSet<String>,
    /// Whether the next post Honcho takes is followed by a look for duplicates: set when
    /// a doubt was settled by a list, since a create that outlived every bound would show
    /// only then.
    verify: bool,
}

/// Whether the cursor is known to agree with Honcho (docs/honcho.md, 'Nothing lost,
/// nothing twice').
#[derive(Debug)]
enum Doubt {
    /// Not looked at since the reporter started: the post marker says whether a post may
    /// have been cut short.
    Start,
    Sure,
    /// A post not answered within the request timeout: its connection is still open and
    /// nothing more is posted until its answer comes.
    InFlight(Flight),
    /// Honcho answered the post that was in doubt, so its create has ended: a list now
    /// tells the truth.
    Ended,
    /// Honcho may hold the batch at the cursor, or still be committing it, and no answer
    /// on the post's connection can tell: `fenced` is when Honcho answered a write that
    /// passes through the same session set-up (`Client::fence`), from which
    /// [`COMMIT_WINDOW`] is counted.
    Unknown {
        fenced: Option<Instant>,
    },
}

impl SessionSync {
    pub fn new(name: &str) -> SessionSync {
        SessionSync {
            name: name.to_string(),
            cursor: None,
            doubt: Doubt::Start,
            warned: BTreeSet::new(),
            verify: false,
        }
    }

    /// Drops the cursor held in memory: a forget moved the one on disk (`moved`). Whether
    /// it agrees with Honcho stays as it was, since the move names the same place in the
    /// rewritten log.
    pub fn reload(&mut self) {
        self.cursor = None;
    }

    /// One round. Never panics on anything read from disk or the network.
    pub fn run(&mut self, ctx: &Ctx) -> Outcome {
        match self.round(ctx) {
            Ok(outcome) => outcome,
            Err(Cut::Failed(failure)) => Outcome::Retry(failure),
            Err(Cut::Settle(wait)) => Outcome::Settle(wait),
        }
    }

    /// How many messages wait to be posted, counted from the cursor up to
    /// [`MAX_BACKLOG_COUNT`]; `None` when the logs cannot be read.
    pub fn waiting(&self, ctx: &Ctx) -> Option<u64> {
        let dir = ctx.state_dir().join("sessions").join(&self.name);
        let mut cur = match self.cursor {
            Some(c) => c,
            None => cursor::load(&cursor::path(ctx.state_dir(), &self.name))
                .ok()?
                .unwrap_or_default(),
        };
        let mut labels = Labeller::new(&dir, ctx.classes().owner);
        let mut count = 0u64;
        while count < MAX_BACKLOG_COUNT {
            let found = scan::scan(&dir, cur, MAX_SCAN_TURNS).ok()?;
            let mut gate = self.gate(ctx, &mut labels);
            count += message::count_pending(&self.name, &found, &cur, &ctx.peers(), &mut gate)
                .ok()? as u64;
            if found.turns.is_empty() || found.rest == cur {
                break;
            }
            cur = found.rest;
        }
        Some(count.min(MAX_BACKLOG_COUNT))
    }

    fn gate<'a>(&self, ctx: &Ctx, labels: &'a mut Labeller) -> message::PostRules<'a> {
        message::PostRules {
            labels,
            max_class: ctx.classes().max,
            max_chars: ctx.max_chars.get(),
        }
    }

    fn round(&mut self, ctx: &Ctx) -> Result<Outcome, Cut> {
        let name = self.name.clone();
        let cursor_path = cursor::path(ctx.state_dir(), &name);
        let dir = ctx.state_dir().join("sessions").join(&name);
        let target = if ctx.cfg.honcho.session.is_empty() {
            name.clone()
        } else {
            ctx.cfg.honcho.session.clone()
        };
        // A forget is rewriting this session's logs, or was cut short by a crash: the
        // logs and the cursor may not agree until loopd has finished it (`moved`), and
        // then it reloads this session.
        if let Some(plan) = (ctx.rewriting)(ctx.state_dir(), &name) {
            self.cursor = None;
            return Err(Cut::Failed(RoundFailure {
                kind: "forget".into(),
                message: format!(
                    "a forget of this session is not finished ({}); reports wait until loopd finishes it",
                    plan.display()
                ),
                retry_after: None,
            }));
        }
        let mut cur = match self.cursor {
            Some(c) => c,
            None => cursor::load(&cursor_path)
                .map_err(|e| RoundFailure::local(e.to_string()))?
                .unwrap_or_default(),
        };
        self.cursor = Some(cur);
        if matches!(self.doubt, Doubt::Start) {
            self.doubt = if flight::was_posting(ctx.state_dir(), &name) {
                Doubt::Unknown { fenced: None }
            } else {
                // No post was under way when the last reporter stopped: nothing to check.
                Doubt::Sure
            };
        }
        // Checked before each network call too, so `Reporter::stop` (a reload changing
        // `[honcho]` joins this thread on the worker) and `Reporter::pause` wait for at
        // most one request.
        if let Some(o) = halt(ctx) {
            return Ok(o);
        }
        let mut posted = 0;
        let mut labels = Labeller::new(&dir, ctx.classes().owner);
        loop {
            if let Some(o) = halt(ctx) {
                return Ok(o);
            }
            let found = scan::scan(&dir, cur, MAX_SCAN_TURNS)
                .map_err(|e| RoundFailure::local(e.to_string()))?;
            let mut gate = self.gate(ctx, &mut labels);
            let plan = message::plan(&name, &found, &cur, &ctx.peers(), MAX_BATCH, &mut gate)
                .map_err(|e| RoundFailure::local(e.to_string()))?;
            if plan.batch.is_empty() {
                // Nothing waits, so nothing can have been in flight (unless a forget took
                // the turns of a post still waiting for its answer: it is still awaited).
                if !matches!(self.doubt, Doubt::InFlight(_)) {
                    self.doubt = Doubt::Sure;
                    flight::unmark(ctx.state_dir(), &name);
                }
                if plan.after != cur {
                    self.save(&cursor_path, plan.after)?;
                }
                return Ok(Outcome::Idle { posted });
            }
            let plan = self.settled(ctx, &target, plan)?;
            if plan.batch.is_empty() {
                // Honcho holds the whole batch: the marker goes only once the cursor past
                // it is stored (docs/honcho.md, 'Nothing lost, nothing twice').
                self.save(&cursor_path, plan.after)?;
                flight::unmark(ctx.state_dir(), &name);
                cur = plan.after;
                continue;
            }
            peer::setup(&ctx.client, ctx.peers().assistant, &ctx.peer_setup)
                .map_err(|e| RoundFailure::call(&e))?;
            match self.post_plan(ctx, &target, &cursor_path, &plan)? {
                Posted::All(n) => {
                    posted += n;
                    self.save(&cursor_path, plan.after)?;
                    flight::unmark(ctx.state_dir(), &name);
                    cur = plan.after;
                    if self.verify {
                        // A look that failed (a 404 too) found nothing: it is made again,
                        // quietly, after the next batch Honcho takes (docs/honcho.md,
                        // 'Nothing lost, nothing twice').
                        if let Ok(recent) = ctx.client.recent(&target, &name) {
                            self.verify = false;
                            self.warn_duplicates(ctx, &target, &recent);
                        }
                    }
                    peer::retry_refused(&ctx.client, ctx.peers().assistant, &ctx.peer_setup);
                }
                Posted::Recut(n) => {
                    posted += n;
                    cur = self.cursor.unwrap_or(cur);
                }
                Posted::Halted(o) => return Ok(o),
            }
        }
    }

    fn save(&mut self, path: &Path, c: Cursor) -> Result<(), RoundFailure> {
        if let Err(e) = cursor::store(path, &c) {
            self.doubt = Doubt::Unknown { fenced: None };
            return Err(RoundFailure::local(e.to_string()));
        }
        self.cursor = Some(c);
        Ok(())
    }
}
