//! Commands as a room answers them: a SIGHUP's token re-read, `/recall` asked for
//! nothing above `matrix.max_class`, a `/forget` list kept for the terminal, `/quit`
//! that does nothing.

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

    /// In a room, a `/forget` list, which lists stored text of any label, is answered at
    /// the terminal only, unless `matrix.max_class` is the top class: loopd does not weigh
    /// each listed record's label against it there (docs/matrix.md, 'Labels'). `/recall`
    /// is answered, asking memoryd for nothing above `matrix.max_class` (`recall_class`),
    /// and so is `/inbox`, quoting no message above it (`room_inbox_command`). Returns
    /// whether it answered so.
    pub(in crate::channel) fn kept_from_room(
        &self,
        out: &mut Outbox,
        id: ConnId,
        command: &Command,
    ) -> bool {
        use crate::worker::Command::Forget;
        use conversation::forget::Ask;
        if !is_room(id) || self.cfg.matrix.max_class == proto::DataClass::Secret {
            return false;
        }
        let quotes = matches!(command, Command::Worker(Forget(Ask::List(_) | Ask::More)));
        if quotes {
            out.send(
                id,
                whole(&format!(
                    "this answer quotes stored text, which may be labelled above matrix.max_class ({}): ask at the terminal. /forget N… and /forget all work here on a list shown there.",
                    self.cfg.matrix.max_class
                )),
            );
        }
        quotes
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
