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

    /// Takes back what was asked for the connections `pick` chooses, bytes sent to each in
    /// order (a close is dropped): a service that gives some of its clients another way
    /// out than a socket (loopd's Matrix rooms) renders to them as to any other and
    /// carries the bytes itself. The loop never sees them.
    pub fn take_sent(&mut self, pick: impl Fn(ConnId) -> bool) -> Vec<(ConnId, Vec<u8>)> {
        let mut taken: Vec<(ConnId, Vec<u8>)> = Vec::new();
        self.actions.retain_mut(|a| match a {
            Action::Send(id, bytes) if pick(*id) => {
                match taken.iter_mut().find(|(t, _)| t == id) {
                    Some((_, all)) => all.append(bytes),
                    None => taken.push((*id, std::mem::take(bytes))),
                }
                false
            }
            Action::Close(id) => !pick(*id),
            Action::Send(..) => true,
        });
        taken
    }

    /// Whether `id`'s output queue is below its limit. A service asks before each answer
    /// it is not obliged to give now; the loop asks it again once the peer has read.
    pub fn has_room(&self, id: ConnId) -> bool {
        self.room.get(&id).is_none_or(|&r| r > 0)
    }
}

/// What a service asked of the loop, as a service's unit tests read it back.
#[cfg(feature = "testing")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    Send(ConnId, Vec<u8>),
    Close(ConnId),
}

#[cfg(feature = "testing")]
impl Outbox {
    /// Everything asked since the last call, in order.
    pub fn take(&mut self) -> Vec<Asked> {
        self.actions
            .drain(..)
            .map(|a| match a {
                Action::Send(id, bytes) => Asked::Send(id, bytes),
                Action::Close(id) => Asked::Close(id),
            })
            .collect()
    }

    /// Gives `id` an output limit of `bytes`, as the loop does for a peer that reads
    /// slowly.
    pub fn set_room(&mut self, id: ConnId, bytes: usize) {
        self.room.insert(id, bytes);
    }
}
