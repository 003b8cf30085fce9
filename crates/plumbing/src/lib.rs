//! `plumbing`: what every boxmaker daemon needs from its host — the listening socket from
//! systemd or a path, the notify protocol and watchdog, signals as poll events, log lines
//! the journal understands, and the poll loop that ties them together; `daemon` is the
//! start-up both daemons share, from `main` to the loop.
//!
//! **Architecture Invariant:** plumbing knows nothing of boxmaker's protocols. It moves
//! bytes between sockets and a `Service`; what the bytes mean is the daemon's business.

pub mod args;
pub mod backoff;
pub mod bounded;
pub mod conn;
pub mod daemon;
pub mod dial;
mod flow;
pub mod limits;
pub mod listen;
pub mod log;
pub mod notify;
pub mod outbox;
pub mod server;
mod sweep;

pub use conn::Left;
pub use limits::{Farewell, Limits};
#[cfg(feature = "testing")]
pub use outbox::Asked;
pub use outbox::Outbox;
pub use server::{ConnId, Peer, Server, Service};
