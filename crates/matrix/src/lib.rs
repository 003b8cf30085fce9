//! A Matrix client for loopd's Matrix channel (docs/matrix.md): blocking `ureq` calls with
//! deadlines and bounded answers (`client`), one error for all of them (`error`), and the
//! decisions — which events are the owner's lines, which invites to accept, whether a room
//! is served, how a reply is split and what each event's transaction id is — as data,
//! without I/O (`decide`, `outgoing`), so they are tested without a network.
//!
//! **Exactly once in.** The sync position is saved only after the caller confirms that the
//! records of what a sync brought are on disk ([`decide::Machine::confirm`]); a gap the
//! homeserver reports (`limited`) is read from `/messages` before the timeline after it.
//!
//! **Exactly once out.** Every event's transaction id is fixed by what it carries
//! ([`outgoing::plan`]), so a retry after a crash, a timeout or a 5xx is the same event:
//! the homeserver answers a repeated transaction id of the same device with the first
//! event's id.
//!
//! No async runtime: loopd runs the client on a thread of its own.

pub mod client;
pub mod decide;
pub mod error;
pub mod event;
mod http;
pub mod outgoing;
pub mod round;
pub mod sync;

#[cfg(test)]
mod tests_decide;
#[cfg(test)]
mod tests_http;
#[cfg(test)]
mod tests_outgoing;

pub use client::{honouring_rate_limits, read_token, Client, Whoami};
pub use decide::{Action, Decision, Extra, Gap, Machine, Needs, Notice, Told};
pub use error::{Call, Error};
pub use event::{Event, Kind, Membership};
pub use http::{MAX_ERROR_BODY_BYTES, MAX_RETRY_AFTER};
pub use outgoing::{plan, Part, Style};
pub use round::{bounded_sync, next, read_needs, Filled, Round};
pub use sync::{Invite, JoinedRoom, Page, Sync};
