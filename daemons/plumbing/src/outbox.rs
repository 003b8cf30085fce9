//! The `Outbox`: what a service asks the loop to do (send, close), applied after the
//! service's call returns, and how much room each connection's output queue has left, so
//! a service can stop answering at the limit instead of after the batch.

use crate::conn::ConnId;
use std::collections::HashMap;

pub(crate) enum Action {
    Send(ConnId, Vec<u8>),
    Close(ConnId),
}

/// What a service asks the loop to do; applied after the service's call returns.
#[derive(Default)]
pub struct Outbox {
    pub(crate) actions: Vec<Action>,
    /// Bytes each connection may still be sent before it is over its output limit; a
    /// connection not listed (as in a service's unit tests) has no limit.
    pub(crate) room: HashMap<ConnId, usize>,
}

impl Outbox {
    pub fn send(&mut self, id: ConnId, bytes: impl Into<Vec<u8>>) {
        let bytes = bytes.into();
        if let Some(room) = self.room.get_mut(&id) {
            *room = room.saturating_sub(bytes.len());
        }
        self.actions.push(Action::Send(id, bytes));
    }

    /// Closes the connection once what was queued for it has been written.
    pub fn close(&mut self, id: ConnId) {
        self.actions.push(Action::Close(id));
    }

    /// Whether `id`'s output queue is below its limit. A service asks before each answer
    /// it is not obliged to give now; the loop asks it again once the peer has read.
    pub fn has_room(&self, id: ConnId) -> bool {
        self.room.get(&id).is_none_or(|&r| r > 0)
    }
}
