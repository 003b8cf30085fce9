//! Recall by meaning: sentence vectors of the indexed rows, beside the FTS5 text.
//!
//! `model` runs the embedding model (all-MiniLM-L6-v2, in process: memoryd has no
//! network), through `bert`, the encoder's forward pass, and `matmul`, its matrix
//! products, with the weights read from their file by `safetensors`; `worker` runs it on its own thread behind bounded queues so the poll
//! loop never waits for it; `quant` turns unit vectors into 8-bit codes and scores them;
//! `bits` derives 1-bit sign codes from those for a first, coarse stage; `store` holds
//! every code in memory and finds the nearest to a query (a full scan of the 8-bit codes
//! for a small history, sign codes first and then the 8-bit codes of the best few for a
//! large one);
//! `table` keeps the codes in the index database (`vecs`) with the queue of rows still
//! to embed (`embed_queue`), which triggers on the FTS5 content table fill and empty in
//! the same transaction as the text rows; `vectors` drives it all from the poll loop (the
//! backfill, a slice per turn) and answers the vector half of a recall.
//!
//! Vectors are derived data: they follow the rows of the text index (so the same
//! `memory.max_class` rule applies: a secret record has no row and so no vector), and
//! deleting `memory/` rebuilds them from the logs.

pub mod bert;
pub(crate) mod bits;
pub mod dropped;
pub mod late;
mod matmul;
pub mod model;
pub mod quant;
pub mod safetensors;
pub mod store;
pub mod table;
pub mod vectors;
pub mod worker;

use std::fmt;
use std::path::PathBuf;

/// Dimensions of a vector: all-MiniLM-L6-v2's. A model of another width is refused.
pub const DIM: usize = 384;

/// Why embedding could not be done. None of these stops memoryd: without vectors,
/// recall is lexical alone.
#[derive(Debug)]
pub enum EmbedError {
    /// The model directory or one of its files at `path` is missing or unusable.
    Model { path: PathBuf, why: String },
    /// Running the model failed.
    Run { why: String },
    /// The embedding worker thread could not start or went away.
    Worker { why: String },
}

impl fmt::Display for EmbedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmbedError::Model { path, why } => {
                write!(f, "embedding model {}: {}", path.display(), first_line(why))
            }
            EmbedError::Run { why } => write!(f, "embedding: {}", first_line(why)),
            EmbedError::Worker { why } => write!(f, "embedding worker: {}", first_line(why)),
        }
    }
}

/// The first line of an error's text. The tokenizer's and serde's errors are one line, but
/// a library's error may carry a backtrace in its text (kilobytes of frames after the
/// message); a log line wants the message alone.
pub fn first_line(why: &str) -> &str {
    why.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

impl std::error::Error for EmbedError {}

#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod tests_clear;
#[cfg(test)]
mod tests_counts;
#[cfg(test)]
mod tests_late;
