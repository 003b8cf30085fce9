//! What `/status` says of the Matrix channel and each room.

use super::*;

impl<W: Work> Channel<W> {
    /// What `/status` says of the Matrix channel.
    pub(in crate::channel) fn matrix_status(&self, session: &SessionId) -> String {
        let Some(rooms) = self.rooms.as_ref() else {
            return String::new();
        };
        let s = rooms.link.status();
        let mut out = format!("matrix: {}\n", s.state);
        // Every room loopd writes in, and every room it does not serve, whether or not
        // a line was ever taken from it.
        let mut all: std::collections::BTreeSet<&String> = rooms.store.rooms.keys().collect();
        all.extend(s.stopped.iter());
        all.extend(s.encrypted.iter());
        for room in all {
            let sess = rooms
                .store
                .rooms
                .get(room)
                .map_or(self.cfg.matrix.session.as_str(), String::as_str);
            let why = if s.encrypted.contains(room) {
                "not served: it is encrypted"
            } else if s.stopped.contains(room) {
                "not served: no owner is in it, or someone besides the owners joined or was invited"
            } else {
                "served"
            };
            out.push_str(&format!("matrix room {room}: session {sess}, {why}\n"));
        }
        if !rooms.store.last_room.contains_key(session.as_str()) {
            out.push_str(&format!(
                "matrix: no room for session {session} yet (write in one to get its unasked messages there)\n"
            ));
        }
        if s.waiting > 0 || !rooms.store.outbox.is_empty() {
            out.push_str(&format!(
                "matrix: {} events waiting for the homeserver\n",
                rooms.store.outbox.len()
            ));
        }
        if s.strangers > 0 {
            out.push_str(&format!(
                "matrix: {} messages from others ignored since start\n",
                s.strangers
            ));
        }
        out
    }
}
