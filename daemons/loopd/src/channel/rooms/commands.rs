//! Commands as a room answers them: a SIGHUP's token re-read, `/recall` asked for
//! nothing above `matrix.max_class`, `/quit` that does nothing. (`/inbox` and a
//! `/forget` list, which quote nothing above it either, are `inbox_list`'s and the
//! worker's `forget_list`'s.)

use super::*;

impl<W: Work> Channel<W> {
    /// A SIGHUP: a refused token is read again at once.
    pub(in crate::channel) fn matrix_hangup(&self) {
        if let Some(rooms) = &self.rooms {
            rooms.link.hangup();
        }
    }

    /// The highest class `/recall` may quote on connection `id`: what memory holds for
    /// the socket, and in a room nothing above `matrix.max_class` besides, so memoryd
    /// never returns a hit the homeserver may not read (docs/matrix.md, 'Labels').
    pub(in crate::channel) fn recall_class(&self, id: ConnId) -> proto::DataClass {
        let memory = self.cfg.memory.max_class;
        if is_room(id) {
            memory.min(self.cfg.matrix.max_class)
        } else {
            memory
        }
    }

    /// `/quit` in a room does nothing (docs/matrix.md, 'Lines in'): the room stays served
    /// and nothing is sent. Its block is empty, so the room's next line is still answered
    /// by its own block, and an empty block is no event.
    pub(in crate::channel) fn quit_in_room(&self, out: &mut Outbox, id: ConnId) -> bool {
        if !is_room(id) {
            return false;
        }
        out.send(id, whole(""));
        true
    }
}
