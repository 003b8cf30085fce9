//! The vector side of memoryd, driven from the poll loop: a slice of work per turn
//! (`tick`), never a wait. At start it prepares the tables, loads the stored codes into
//! memory a slice at a time and has the worker load the model; then it keeps the worker
//! fed from the queue, newest rows first, and stores what comes back. Until the model is
//! loaded, or for rows not embedded yet, recall is by words alone: the vector half only
//! adds to it.
//!
//! What a request costs here, whatever the tables hold: `wake` only marks the queue to be
//! looked at on the next tick, which reads the newest queued ids a batch at a time
//! (`table::next_jobs`) and the two counts from the one row the database keeps them in
//! (`table::counts`, kept by triggers in the same transaction as every change). So no
//! request and no tick counts a table, and the backfill is started by what the queue
//! holds, never by a count: a count could only ever be shown wrong, never leave a row
//! unembedded (docs/memoryd.md, 'What a request may wait for'). For the same reason a
//! failed read of the counts fails nothing: neither the request that asked (it is
//! answered with the last counts read) nor the tick's work (loading the codes, the
//! backfill); it is logged, once until a read succeeds again.
//!
//! Another model's codes are cleared here too, one `table::clear_slice` a tick, while
//! the backfill embeds the rows already queued for the new model (docs/memoryd.md,
//! 'Vectors and the model').

use super::dropped;
use super::late;
use super::model::Embedder;
use super::quant;
use super::store::{Near, Store};
use super::table::{self, Counts, Job, Queued};
use super::worker::{Event, Worker, JOB_QUEUE, RESULT_QUEUE};
use super::EmbedError;
use rusqlite::Connection;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Codes loaded from the database per turn of the loop: a few milliseconds of reading,
/// so a million stored codes load in a minute of turns while requests keep being served.
pub const LOAD_SLICE: usize = 8_192;

/// How often the loop looks for finished batches while there is work. The worker cannot
/// wake the loop, so it is polled; a batch takes about a tenth of a second, so this keeps
/// the worker fed without the loop spinning.
pub const TICK: Duration = Duration::from_millis(25);

/// Below this cosine a row is not near enough to be recalled by meaning at all. Unrelated
/// sentences score about 0 to 0.15 under all-MiniLM-L6-v2, a paraphrase 0.4 and up; the
/// floor keeps a question about nothing in the index from recalling noise.
pub const MIN_COSINE: f32 = 0.25;

/// Times a row's batch may fail before the row is set aside for this run of the model.
/// A batch can fail for a passing reason (memory, say) and is tried again; a row that
/// fails every time stays queued but is passed over until memoryd starts again or the
/// model changes, so one bad row cannot keep the backfill failing for ever. No row is
/// ever taken off the queue without its vector.
pub const MAX_TRIES: u32 = 3;

/// Rows set aside after `MAX_TRIES` before the backfill stops for this run (each set-aside
/// row is skipped on every later fetch of the queue, so they must stay few): past it the
/// model is failing on everything, and trying on only costs time. The rows stay queued.
pub const MAX_SET_ASIDE: usize = 256;

/// The most queued ids one look at the queue reads (`feed`), whatever the queue holds:
/// the worker's room plus the rows it skips, which are the rows in flight (the room and
/// they make `JOB_QUEUE`) and the rows set aside (at most `MAX_SET_ASIDE` while the
/// backfill runs). A few hundred ids by their primary key, each joined to its text row:
/// well under a millisecond, so a wake may bring it onto the loop at every request.
pub const MAX_QUEUE_READ: usize = JOB_QUEUE + MAX_SET_ASIDE;

enum Phase {
    /// Tables not prepared yet (the first tick does it, after READY).
    Start,
    /// Working or idle; `worker` says whether the model is still coming.
    Running,
    /// The model failed; lexical only until the configuration changes.
    Off,
}

pub struct Vectors {
    dir: PathBuf,
    phase: Phase,
    worker: Option<Worker>,
    embedder: Option<Embedder>,
    store: Store,
    /// The last id loaded into `store` while loading; `None` once all are loaded.
    loading: Option<i64>,
    in_flight: HashSet<i64>,
    /// A job the worker's queue had no room for, offered again next turn.
    held: Option<Job>,
    /// Rows with a code and rows queued, as read at the end of the last tick (for the
    /// status line; `Status` reads them afresh, `counts`). After an upgrade a row can be
    /// in both: it has its vector and waits for its pieces (docs/memoryd.md, 'Late
    /// interaction').
    counts: Counts,
    /// A clear of another model's codes may be under way (`table::clear_slice`): the
    /// next tick takes a slice of it, or finds there is none.
    clearing: bool,
    /// Rows a slice of that clear takes: `table::CLEAR_SLICE`, smaller in tests that
    /// watch a clear slice by slice.
    pub(super) clear_slice: usize,
    /// New rows may have been queued since the queue was last looked at.
    woken: bool,
    /// The last look at the queue found nothing to hand the worker (every queued row in
    /// flight or set aside, or none queued): no tick is due for the queue until a wake
    /// or a finished batch. Decided by the queue's rows themselves, never by a count.
    drained: bool,
    full_reported: bool,
    /// The last read of the counts failed, and was logged (`not_counted`).
    counts_failing: bool,
    /// Failed tries per row, and the rows set aside after `MAX_TRIES` (see there).
    tries: HashMap<i64, u32>,
    set_aside: HashSet<i64>,
    /// When the next tick is due: fixed at each tick, so traffic on the loop (which asks
    /// for the deadline every turn) cannot keep pushing it away.
    next_tick: Instant,
}

impl Vectors {
    /// The vector side for the model in `dir`, or `None` (with one warning naming the
    /// path) when there is no model there: recall is then lexical alone.
    pub fn open(dir: &Path) -> Option<Vectors> {
        let weights = dir.join("model.safetensors");
        if let Err(e) = std::fs::metadata(&weights) {
            plumbing::warn!(
                "memory.embed_model {}: {e}; recall is by words only",
                weights.display()
            );
            return None;
        }
        let worker = match Worker::spawn(dir.to_path_buf()) {
            Ok(w) => w,
            Err(e) => {
                plumbing::warn!("{e}; recall is by words only");
                return None;
            }
        };
        Some(Vectors {
            dir: dir.to_path_buf(),
            phase: Phase::Start,
            worker: Some(worker),
            embedder: None,
            store: Store::default(),
            loading: Some(i64::MIN),
            in_flight: HashSet::new(),
            held: None,
            counts: Counts::default(),
            clearing: true,
            clear_slice: table::CLEAR_SLICE,
            woken: true,
            drained: false,
            full_reported: false,
            counts_failing: false,
            tries: HashMap::new(),
            set_aside: HashSet::new(),
            next_tick: Instant::now(),
        })
    }

    /// Rows with a vector and rows still waiting for one, as read at the end of the last
    /// tick: for the status line, which has no database at hand.
    pub fn progress(&self) -> (u64, u64) {
        (self.counts.stored, self.counts.pending)
    }

    /// Rows with a vector and rows queued, exact now: one row read (`table::counts`),
    /// whatever the tables hold, so every request may ask. Before the first tick the
    /// counts are read when the index already keeps them; an index that does not yet (a
    /// new one, or one made before they were kept) reads as nothing counted until the
    /// first tick makes them. A failed read never fails the request: the last counts are
    /// answered (docs/memoryd.md, 'Vectors and the model').
    pub fn counts(&mut self, conn: &Connection) -> (u64, u64) {
        let read = match self.phase {
            Phase::Start => table::counts_if_kept(conn),
            Phase::Running | Phase::Off => table::counts(conn).map(Some),
        };
        match read {
            Ok(Some(counts)) => self.counted(counts),
            Ok(None) => {}
            Err(e) => self.not_counted(conn, &e),
        }
        self.progress()
    }

    fn counted(&mut self, counts: Counts) {
        self.counts = counts;
        self.counts_failing = false;
    }

    /// A failed read of the counts: they only say how far the backfill is, so the last
    /// ones are kept and nothing stops. Logged once until a read succeeds again, as a
    /// failing database would fail every request and every tick.
    fn not_counted(&mut self, conn: &Connection, e: &rusqlite::Error) {
        if !self.counts_failing {
            plumbing::warn!(
                "vectors: reading the counts in index {}: {}; the last counts read are shown",
                conn.path().unwrap_or("in memory"),
                super::first_line(&e.to_string())
            );
        }
        self.counts_failing = true;
    }

    /// Whether row `id` has its vector (a row still queued, or not yet loaded at start,
    /// has none).
    pub fn has_vector(&self, id: i64) -> bool {
        self.store.contains(id)
    }

    /// Whether the model is loaded and vectors can be searched.
    pub fn ready(&self) -> bool {
        self.embedder.is_some()
    }

    /// The text index may have added or dropped rows: look at the queue again next turn.
    /// Costs nothing here; the tick it brings forward reads a batch of the queue's ids.
    pub fn wake(&mut self) {
        if !self.woken && self.deadline().is_none() {
            self.next_tick = Instant::now();
        }
        self.woken = true;
        // A clear a failed tick stopped is looked at again (one row read when there is
        // none).
        self.clearing = true;
    }

    /// When the loop should call `tick` next, if there is anything to do.
    pub fn deadline(&self) -> Option<Instant> {
        let busy = match self.phase {
            Phase::Start => true,
            Phase::Off => false,
            Phase::Running => {
                self.woken
                    || self.clearing
                    || self.loading.is_some()
                    || !self.in_flight.is_empty()
                    || (self.worker.is_some() && (self.embedder.is_none() || !self.drained))
            }
        };
        busy.then_some(self.next_tick)
    }

    /// One turn's worth of work.
    pub fn tick(&mut self, conn: &Connection) {
        self.next_tick = Instant::now() + TICK;
        if let Err(e) = self.step(conn) {
            plumbing::error!("vectors: {e}");
            // A failing database would fail every turn; the next request's catch-up
            // wakes this again.
            self.woken = false;
            self.drained = true;
            self.loading = None;
            self.clearing = false;
        }
    }

    fn step(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        if let Phase::Start = self.phase {
            match table::create(conn)? {
                Queued::Nothing => {}
                Queued::Unembedded => {
                    plumbing::info!(
                        "vectors: every indexed row is queued for embedding, newest first, \
                         a slice at a time"
                    )
                }
                Queued::ForPieces => plumbing::notice!(
                    "vectors: the index was made before rows kept their word pieces; every \
                     indexed row is queued to be embedded again, newest first, and its \
                     vector is used meanwhile"
                ),
            }
            dropped::watch(conn)?;
            self.phase = Phase::Running;
        }
        if let Phase::Off = self.phase {
            return Ok(());
        }
        self.drain(conn)?;
        if let Phase::Off = self.phase {
            // No recall by meaning from here on, so nobody would read the rows dropped.
            return dropped::unwatch(conn);
        }
        // Rows dropped since the last tick (a forget, a log rewritten) leave the store
        // too (`dropped`); a long list is taken a bounded look a tick.
        if self.let_go_of_dropped(conn)? {
            self.woken = true;
        }
        if self.clearing {
            // One slice a tick, the longest this side holds the loop for a model change
            // (`table::CLEAR_SLICE`); the rows it queued are fed at once.
            self.clearing = table::clear_slice(conn, self.clear_slice)?;
            self.woken = true;
        }
        if let Some(after) = self.loading {
            // A damaged code dropped here is queued again; the triggers count both.
            let (codes, last) = table::load_slice(conn, after, LOAD_SLICE)?;
            for (id, class, code) in &codes {
                self.put(*id, *class, code);
            }
            self.loading = last;
        }
        if self.woken {
            self.woken = false;
            self.drained = false;
        }
        self.feed(conn)?;
        // One row read: the status line stays as fresh as the last tick. Not through `?`:
        // a failed read of the counts is no failure of the work, and must not stop the
        // loading of the codes or the backfill (`tick`).
        match table::counts(conn) {
            Ok(counts) => self.counted(counts),
            Err(e) => self.not_counted(conn, &e),
        }
        Ok(())
    }

    fn put(&mut self, id: i64, class: i64, code: &quant::Code) {
        let rank = u8::try_from(class.clamp(0, 255)).unwrap_or(u8::MAX);
        if !self.store.put(id, rank, code) && !self.full_reported {
            self.full_reported = true;
            plumbing::warn!(
                "vectors: {} rows held, the most memoryd keeps in memory; newer rows are found by words only",
                self.store.len()
            );
        }
    }

    fn drain(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        for _ in 0..RESULT_QUEUE {
            let Some(worker) = &self.worker else {
                return Ok(());
            };
            let event = match worker.poll() {
                Ok(Some(e)) => e,
                Ok(None) => return Ok(()),
                Err(e) => {
                    self.stop(&e);
                    return Ok(());
                }
            };
            match event {
                Event::Loaded(model) => {
                    plumbing::info!(
                        "vectors: embedding model loaded from {}",
                        self.dir.display()
                    );
                    // Only a model that loaded decides whether the stored codes are its.
                    if table::adopt(conn, model.fingerprint())? {
                        plumbing::notice!(
                            "vectors: the codes stored were made by another model; every \
                             indexed row is queued for embedding again, newest first, a \
                             slice at a time as those codes are cleared"
                        );
                        self.store = Store::default();
                        self.loading = Some(i64::MIN);
                        self.full_reported = false;
                        self.clearing = true;
                        self.woken = true;
                    }
                    self.embedder = Some(*model);
                }
                Event::Failed(e) => self.stop(&e),
                Event::Done(jobs, Ok(vectors)) => {
                    for job in &jobs {
                        self.in_flight.remove(&job.id);
                    }
                    let done: Vec<table::Done> = jobs
                        .into_iter()
                        .zip(vectors)
                        .map(|(job, e)| (job, quant::encode(&e.vector), e.pieces))
                        .collect();
                    let stored = table::store(conn, &done)?;
                    for &at in &stored {
                        let (job, code, _) = &done[at];
                        self.put(job.id, job.class, code);
                    }
                    // Room in the worker's queue: the next look may find rows that were
                    // passed over while it was full.
                    self.drained = false;
                    if stored.len() < done.len() {
                        // Rows that changed under the worker: the queue says what is left.
                        self.woken = true;
                    }
                }
                Event::Done(jobs, Err(e)) => self.failed(&jobs, &e),
            }
        }
        Ok(())
    }

    /// A batch failed: its rows stay queued and are tried again, up to `MAX_TRIES` each.
    fn failed(&mut self, jobs: &[Job], e: &EmbedError) {
        let mut given_up = 0;
        for job in jobs {
            self.in_flight.remove(&job.id);
            let tries = self.tries.entry(job.id).or_insert(0);
            *tries += 1;
            if *tries >= MAX_TRIES {
                self.tries.remove(&job.id);
                self.set_aside.insert(job.id);
                given_up += 1;
            }
        }
        // Never a row's text: the error (its first line) and counts.
        if given_up > 0 {
            plumbing::warn!(
                "{e}; {given_up} rows failed {MAX_TRIES} times and wait, still queued, for \
                 the next start of memoryd"
            );
        } else {
            plumbing::warn!(
                "{e}; its {} rows stay queued and are tried again",
                jobs.len()
            );
        }
        if self.set_aside.len() > MAX_SET_ASIDE {
            plumbing::warn!(
                "vectors: embedding failed for more than {MAX_SET_ASIDE} rows; the backfill \
                 stops until memoryd starts again, every row still queued"
            );
            self.stop_backfill();
        }
        self.woken = true;
    }

    /// Ends the backfill for this run, keeping the model for queries: nothing is fed any
    /// more, and the queue stays as it is.
    fn stop_backfill(&mut self) {
        self.worker = None;
        self.in_flight.clear();
        self.held = None;
    }

    /// The worker is gone or the model failed: lexical only from here on.
    fn stop(&mut self, e: &EmbedError) {
        plumbing::warn!("{e}; recall is by words only");
        self.worker = None;
        self.embedder = None;
        self.in_flight.clear();
        self.held = None;
        self.phase = Phase::Off;
    }

    fn feed(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        if self.embedder.is_none() || self.drained {
            return Ok(());
        }
        let Some(worker) = &self.worker else {
            return Ok(());
        };
        if self.store.is_full() {
            // Nothing more can be held in memory, so nothing more is embedded this run.
            self.drained = true;
            return Ok(());
        }
        let room = JOB_QUEUE.saturating_sub(self.in_flight.len());
        if room == 0 {
            return Ok(());
        }
        let mut jobs: Vec<Job> = self.held.take().into_iter().collect();
        if jobs.is_empty() {
            let (in_flight, set_aside) = (&self.in_flight, &self.set_aside);
            // Reads `room` ids past the ones it passes over, and never more than
            // `MAX_QUEUE_READ` in all (see there), never the whole queue. While the
            // backfill runs the sum is within the bound anyway: `room` and the rows in
            // flight make at most `JOB_QUEUE`, and past `MAX_SET_ASIDE` rows set aside
            // nothing is fed any more.
            let passed_over =
                (in_flight.len() + set_aside.len()).min(MAX_QUEUE_READ.saturating_sub(room));
            jobs = table::next_jobs(
                conn,
                room,
                |id| in_flight.contains(&id) || set_aside.contains(&id),
                passed_over,
            )?;
            if jobs.is_empty() {
                // Every queued row is in flight or set aside, or none is queued: idle
                // until a wake or a finished batch.
                self.drained = true;
            }
        }
        for job in jobs {
            let id = job.id;
            match worker.offer(job) {
                Ok(()) => {
                    self.in_flight.insert(id);
                }
                Err(Some(job)) => {
                    self.held = Some(job);
                    break;
                }
                Err(None) => break,
            }
        }
        Ok(())
    }

    /// One look at the rows dropped since the last (`dropped::take`): their codes leave
    /// the store. Returns whether more may be waiting. A recall takes them all first
    /// (`service`), so that a row read again under a dropped row's id is never found
    /// through the dropped row's code; the ticks take them otherwise.
    pub fn let_go_of_dropped(&mut self, conn: &Connection) -> rusqlite::Result<bool> {
        if !matches!(self.phase, Phase::Running) {
            return Ok(false);
        }
        let taken = dropped::take(conn, dropped::TAKE)?;
        for &id in &taken.gone {
            self.store.remove(id);
        }
        Ok(taken.more)
    }

    /// The model and the codes, for a recall to ask from another thread; `None` while the
    /// model is not loaded.
    pub fn asker(&self) -> Option<Asker<'_>> {
        self.embedder
            .as_ref()
            .map(|model| Asker::new(model, &self.store))
    }
}

/// The read-only part of the vector side a recall needs, the model and the codes in
/// memory, and nothing of the database: so a recall can embed the question and search
/// the codes on a thread of its own while the loop's thread searches the words
/// (`hybrid::recall`).
#[derive(Clone, Copy)]
pub struct Asker<'a> {
    model: &'a Embedder,
    store: &'a Store,
}

impl<'a> Asker<'a> {
    pub fn new(model: &'a Embedder, store: &'a Store) -> Asker<'a> {
        Asker { model, store }
    }

    /// The rows nearest in meaning to `query` at or below class rank `max_class`, best
    /// first, and the question's pieces for late interaction (`late`); `None`, logged,
    /// when the model fails on it.
    pub fn ask(&self, query: &str, max_class: u8, k: usize) -> Option<Asked> {
        self.ask_down_to(query, max_class, k, MIN_COSINE)
    }

    /// `ask` with the rows down to cosine `floor` rather than `MIN_COSINE`: a recall
    /// takes them all and counts those below `MIN_COSINE` only where the words found
    /// little of the question (`hybrid::Calibration::little`).
    pub fn ask_down_to(&self, query: &str, max_class: u8, k: usize, floor: f32) -> Option<Asked> {
        match self.model.embed_question(query) {
            Ok((v, pieces)) => Some(Asked {
                near: self.store.nearest(&quant::encode(&v), max_class, k, floor),
                pieces,
            }),
            Err(e) => {
                plumbing::warn!("{e}; this recall is by words only");
                None
            }
        }
    }
}

/// What the vector side makes of a question.
pub struct Asked {
    /// The rows nearest to it, best first.
    pub near: Vec<Near>,
    /// Its pieces, to match the candidates' pieces against (`late`).
    pub pieces: late::Question,
}
