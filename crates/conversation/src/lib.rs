//! What loopd's engine drives: one conversation's turns, the prompt they replay,
//! compaction, `/allow`, `/forget`, and the views and stores a turn is made of. loopd's
//! `engine`, `worker`, `heartbeat` and `channel` sit above it and call what is `pub`
//! here; nothing in this crate knows of a socket, a thread that owns sessions, or how a
//! reply is rendered.
//!
//! Its modules form layers, highest first; a module uses only those below its own
//! (`tests/e2e/layering.rs`, which the compiler cannot replace inside one crate):
//! `allow` · `forget` · `turn` and `compact` · `prompt` · `status`, `recall` ·
//! `open_session`, `memory` · `inbox` · `testhook`, `prompts`.

pub mod allow;
pub mod compact;
pub mod forget;
pub mod inbox;
pub mod memory;
pub mod open_session;
pub mod prompt;
pub mod prompts;
pub mod recall;
pub mod status;
pub mod testhook;
pub mod turn;

#[cfg(test)]
mod tests_honcho;
