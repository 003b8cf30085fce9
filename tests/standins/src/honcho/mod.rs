//! A stand-in for Honcho v3 (the API of plastic-labs/honcho 3.0.12), for loopd's reporter:
//! its unit tests and the end-to-end tests of the real loopd. It behaves as the server
//! does where loopd can tell, not as a kind one would:
//!
//! - **Concurrent.** A thread per connection, as uvicorn serves many requests at once; a
//!   create held open does not hold a list.
//! - **Commits after the client vanished.** A create can be made to commit late
//!   ([`Fault::LateCommit`]): it is stored whether or not the client still waits, and a
//!   list answered meanwhile does not see it (Honcho's list takes no lock), as a kill or a
//!   frozen server leaves it.
//!   [`Fault::AnswerThenCommit`] answers first (a proxy's 408 or 504 in front of a create
//!   still waiting) and commits after.
//! - **Tokens.** With [`State::tokens`] set, every route wants a bearer token; a refusal is
//!   401 with Honcho's own `{"detail": …}` ("No access token provided", "Invalid JWT",
//!   "JWT not permissioned for this resource"), never 403.
//! - **Validation.** Bodies it will not take get FastAPI's 422 `{"detail": [{"type", "loc",
//!   "msg", "input", "ctx"}]}`, `input` echoing what was sent, as the server's does.
//! - **What it stores.** NUL is stripped from contents and metadata; metadata of more than
//!   100 top-level keys or nested deeper than 5 is refused; `created_at` is kept and given
//!   back in UTC with six fraction digits (Pydantic's form; none when they are all zero).
//! - **Special tokens.** A content holding one of tiktoken's special tokens, once NUL is
//!   stripped, is refused as Honcho's tiktoken calls refuse it: one of `o200k_base`'s (the
//!   token count) with FastAPI's 422 `value_error` at `["body", "messages", i]`, one only
//!   `cl100k_base` has (the embedding's chunking) with a 500, nothing stored.
//! - **Answers.** A create is answered 201 with the list of the messages it created; a
//!   list of an unknown session or workspace is an empty page, never a 404 (Honcho's list
//!   builds a query and nothing more).
//! - **Routes.** Matched by method (a wrong one is 405) and path; a path with a trailing
//!   slash is redirected (307) unless the route also takes it (the messages create does).
//! - **Peers.** Get-or-create answers 201 for a new peer and 200 for one it had; a
//!   configuration sent replaces the one held, none sent leaves it.
//! - **What Honcho derives.** Conclusions listed newest first (or oldest with `reverse`),
//!   each with its `level`, filtered by `session_id`, `observer_id`, `observed_id`; a
//!   delete is soft (the conclusion is kept, marked, until a reconciler would run); a
//!   session summary (`GET …/summaries`) and peer cards (`GET`/`PUT …/peers/{peer}/card`)
//!   a test can set and read.
//!
//! Tests can also make it answer with a status instead (429 with a `Retry-After`) or an
//! HTML page (a proxy's, a maintenance page), store and then answer with either, or take
//! it down (connections refused) and bring it up
//! again on the same address, as an outage would.
//!
//! By job: `server` (the listener, a thread per connection, reading a request and writing
//! its answer), `routes` (which route a request is, and its answer), `auth` (bearer
//! tokens and their scope), `store` (creates: messages, peers, and the rules they are
//! checked by), `lists` (paged lists of messages and conclusions), `state` (what the
//! stand-in holds and the faults a test queues), `fastapi` (refusals as FastAPI writes
//! them), `time` (times as Pydantic writes them).

mod auth;
mod fastapi;
mod lists;
mod routes;
mod server;
mod state;
mod store;
mod time;

pub use server::Standin;
pub use state::{
    cl100k_special_tokens, o200k_special_tokens, Conclusion, Fault, Seen, State, Stored,
    HONCHO_MAX_MESSAGE_SIZE, METADATA_MAX_DEPTH, METADATA_MAX_KEYS, PAGE,
};
pub use time::now_utc;

use std::time::Duration;

/// How long a test waits for something that should happen before calling it a hang. Not an
/// assertion on speed: a shared machine may be slow, so it is generous.
pub const HANG: Duration = Duration::from_secs(120);
