//! The embedding thread. memoryd's poll loop is single-threaded and an embedding takes
//! milliseconds to tens of milliseconds, so the model runs here: the thread loads it,
//! hands a clone back (the weights are shared) for embedding queries on the loop, then
//! embeds the rows it is sent in batches. Both queues are bounded and the loop only ever
//! uses their non-blocking ends, so the loop never waits for the model.

use super::model::{Embedder, Embedding};
use super::table::Job;
use super::EmbedError;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError, TrySendError};

/// Rows taken from the queue at once. The model splits their windows between the
/// threads by word pieces and runs each share in packed passes of `model::PASS_TOKENS`,
/// so 32 chat-length rows (some 1 500 word pieces) are one or two passes a core, well
/// under a second, and the loop's results still come back often.
pub const BATCH: usize = 32;

/// Threads the worker embeds on: both cores of a small server. memoryd is otherwise idle
/// when it backfills (a recall's question is one short pass on a thread of the recall's
/// own, which the scheduler slots in), and a backfill of a long history is the one job that
/// takes hours.
pub const THREADS: usize = 2;

/// Jobs waiting for the thread: two batches, so the thread never idles between the
/// loop's turns, and the loop holds at most this many texts in flight.
pub const JOB_QUEUE: usize = 2 * BATCH;

/// Finished batches waiting for the loop. The thread blocks on a full queue (it is only
/// the thread), which in turn fills the job queue, which stops the loop sending more.
pub const RESULT_QUEUE: usize = 4;

pub enum Event {
    /// The model is loaded: a clone for embedding queries.
    Loaded(Box<Embedder>),
    /// The model could not be loaded; the thread has ended.
    Failed(EmbedError),
    /// A batch: each job with its vector and pieces, or the whole batch's error.
    Done(Vec<Job>, Result<Vec<Embedding>, EmbedError>),
}

pub struct Worker {
    jobs: SyncSender<Job>,
    events: Receiver<Event>,
}

impl Worker {
    /// Starts the thread, which loads the model in `dir`.
    pub fn spawn(dir: PathBuf) -> Result<Worker, EmbedError> {
        let (jobs, job_rx) = mpsc::sync_channel::<Job>(JOB_QUEUE);
        let (event_tx, events) = mpsc::sync_channel::<Event>(RESULT_QUEUE);
        std::thread::Builder::new()
            .name("memoryd-embed".into())
            .spawn(move || run(&dir, &job_rx, &event_tx))
            .map_err(|e| EmbedError::Worker { why: e.to_string() })?;
        Ok(Worker { jobs, events })
    }

    /// Hands a job to the thread unless its queue is full (then the job comes back).
    pub fn offer(&self, job: Job) -> Result<(), Option<Job>> {
        match self.jobs.try_send(job) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(job)) => Err(Some(job)),
            Err(TrySendError::Disconnected(_)) => Err(None),
        }
    }

    /// The next event if one is ready; `Err` when the thread is gone.
    pub fn poll(&self) -> Result<Option<Event>, EmbedError> {
        match self.events.try_recv() {
            Ok(e) => Ok(Some(e)),
            Err(TryRecvError::Empty) => Ok(None),
            Err(TryRecvError::Disconnected) => Err(EmbedError::Worker {
                why: "the thread ended".into(),
            }),
        }
    }
}

fn run(dir: &std::path::Path, jobs: &Receiver<Job>, events: &SyncSender<Event>) {
    let model = match Embedder::load(dir) {
        Ok(m) => m,
        Err(e) => {
            let _ = events.send(Event::Failed(e));
            return;
        }
    };
    if events.send(Event::Loaded(Box::new(model.clone()))).is_err() {
        return;
    }
    // Blocking receives are right here: this thread has nothing else to do. It ends when
    // the loop drops its end (the index was reopened, or memoryd is stopping).
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match jobs.try_recv() {
                Ok(j) => batch.push(j),
                Err(_) => break,
            }
        }
        let texts: Vec<&str> = batch.iter().map(|j| j.text.as_str()).collect();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(THREADS));
        let result = model.embed_records_on(&texts, threads);
        if events.send(Event::Done(batch, result)).is_err() {
            return;
        }
    }
}
