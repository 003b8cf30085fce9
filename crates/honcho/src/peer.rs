//! The assistant's peer set up with `observe_me: false` before the first batch, so
//! Honcho's deriver does not take the assistant's words for the owner's (docs/honcho.md).
//! A reporting round (`sync`) calls it before each batch and after each batch Honcho took.

use super::client::{CallError, Client};
use std::cell::Cell;

/// Whether the assistant's peer has been set up with `observe_me: false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerSetup {
    /// Not yet: tried before the next batch.
    Pending,
    /// Honcho refused to change the peer; warned once, tried again before each batch.
    Refused,
    Done,
}

/// Sets peer `assistant` to `observe_me: false` before the first batch. A refusal (a
/// token limited to one session may not change peers) does not hold reports back: it is
/// warned about once and tried again after later batches Honcho took
/// ([`retry_refused`]), never before a retry, so a retry is one request. No answer or a
/// busy Honcho is the `Err`, which ends the round as the post would.
pub fn setup(client: &Client, assistant: &str, state: &Cell<PeerSetup>) -> Result<(), CallError> {
    if state.get() != PeerSetup::Pending {
        return Ok(());
    }
    request(client, assistant, state)
}

/// After a batch Honcho took: the set-up it refused before is tried again, quietly.
pub fn retry_refused(client: &Client, assistant: &str, state: &Cell<PeerSetup>) {
    if state.get() == PeerSetup::Refused {
        // Quietly: it was warned about once, and the batch went through anyway.
        let _ = request(client, assistant, state);
    }
}

fn request(client: &Client, assistant: &str, state: &Cell<PeerSetup>) -> Result<(), CallError> {
    let before = state.get();
    match client.unobserved_peer(assistant) {
        Ok(()) => {
            state.set(PeerSetup::Done);
            Ok(())
        }
        Err(e @ CallError::Status { status, .. })
            if (400..500).contains(&status) && !matches!(status, 408 | 409 | 429) =>
        {
            if before == PeerSetup::Pending {
                plumbing::warn!(
                    "honcho: cannot set observe_me false on peer {assistant} ({e}); Honcho's deriver keeps observing the assistant's words until it can"
                );
                state.set(PeerSetup::Refused);
            }
            Ok(())
        }
        Err(e) => Err(e),
    }
}
