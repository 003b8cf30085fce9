//! The session files on disk (docs/sessions.md), the only state loopd and memoryd share:
//! `<state_dir>/sessions/<id>/epoch-NNNNNN.{head.json,jsonl}`. This crate owns their layout
//! and the rules for reading and writing them, so each rule exists once:
//!
//! - `epochs`: the one rule for epoch file names, and listing a session's epochs (and the
//!   sessions under `sessions/`);
//! - `head`: reading a head back (bounded, non-blocking, with the epoch check) and writing
//!   one atomically;
//! - `lines`: reading record lines, bounded, with the one torn-tail rule;
//! - `log`: loopd's append-only log (the torn tail cut at open, one `write` + `fdatasync`
//!   per record, rollback on failure, and `changed`: whether the file at its path is
//!   still the one it holds);
//! - `atomic`: small files replaced atomically (temp, fsync, rename, fsync the directory);
//! - `numbered`: small JSON stores of numbered entries (the reminders, the inbox), read
//!   bounded and replaced through `atomic`;
//! - `rewrite`: a log rewritten line by line (forgetting), through `lines` and `atomic`;
//! - `leftovers`: what a failed epoch start leaves behind (a temporary head, an empty log
//!   past the current epoch), removed at loopd's start; and what is in the way of a new
//!   epoch, set aside with its bytes kept.
//!
//! **Invariant:** every open of a file here is `O_NONBLOCK` and refuses anything that is
//! not a regular file, so a FIFO or device put in a session directory cannot stall a
//! daemon; every read is bounded by a named limit. A symbolic link is refused, never
//! followed, whether at an epoch file's name or as the session directory itself
//! (`epochs::list`), so every reader sees the same sessions.

pub mod atomic;
pub mod epochs;
mod error;
pub mod head;
pub mod leftovers;
pub mod lines;
pub mod log;
pub mod numbered;
pub mod rewrite;

pub use error::Error;
pub use lines::MAX_RECORD_LINE;
