//! Attaching the Matrix channel's threads to the channel, and what the sync thread
//! reports on each wake: lines in, acknowledgements, refusals.

use super::*;

impl<W: Work> Channel<W> {
    /// Attaches the Matrix channel's threads: from the next wake on, rooms are clients.
    pub(crate) fn attach_matrix(&mut self, link: Link, store: Store) {
        self.rooms = Some(Rooms::new(link, store, self.cfg.state_dir.clone()));
        // Redactions a removal asked for before a crash kept them from the store.
        for p in crate::redactions::pending(&self.cfg.state_dir) {
            plumbing::info!(
                "matrix: redactions of a /forget cut short ({}): planning them now",
                p.path.display()
            );
            self.matrix_redact(&p.lines, p.asked_by.as_deref());
        }
    }

    /// What the Matrix threads said since the last wake, and, the first time, the lines a
    /// crash left unanswered and the events it left unsent.
    pub(in crate::channel) fn matrix_wake(&mut self, out: &mut Outbox) {
        let Some(rooms) = self.rooms.as_mut() else {
            return;
        };
        if !rooms.resumed {
            rooms.resumed = true;
            let waiting: Vec<Inbound> = rooms.store.inbound.clone();
            if !waiting.is_empty() {
                plumbing::info!(
                    "matrix: {} lines taken before a restart and not answered; answering them now",
                    waiting.len()
                );
            }
            for l in waiting {
                self.room_line(out, &l.room, &l.event, &l.body);
            }
        }
        loop {
            let Some(rooms) = self.rooms.as_mut() else {
                return;
            };
            let Ok(up) = rooms.link.up.try_recv() else {
                break;
            };
            match up {
                Up::Lines { lines, on_disk } => self.lines_in(out, lines, on_disk),
                Up::Sent { txn, room, event } => self.acknowledged(&txn, &room, &event),
                Up::Refused { txn } => self.refused(&txn),
                Up::Deferred { txn } => {
                    if let Some(rooms) = self.rooms.as_mut() {
                        rooms.handed.remove(&txn);
                    }
                }
                Up::Rooms => self.rooms_offer_waiting(),
            }
        }
        self.rooms_flush(out);
    }

    /// A sync's lines: each one not taken before goes into the store, which is saved
    /// before the sync thread is told it may move its position on; then each is queued on
    /// its room's connection.
    pub(in crate::channel) fn lines_in(
        &mut self,
        out: &mut Outbox,
        lines: Vec<Line>,
        on_disk: std::sync::mpsc::SyncSender<()>,
    ) {
        let default = self.cfg.matrix.session.clone();
        let Some(rooms) = self.rooms.as_mut() else {
            return;
        };
        let mut new = Vec::new();
        for l in lines {
            if rooms.store.taken(&l.event) || new.iter().any(|n: &Line| n.event == l.event) {
                continue;
            }
            let session = session_of(&rooms.store, &l.room, &default);
            rooms.store.rooms.insert(l.room.clone(), session.clone());
            rooms.store.last_room.insert(session, l.room.clone());
            rooms.store.inbound.push(Inbound {
                room: l.room.clone(),
                event: l.event.clone(),
                body: l.body.clone(),
            });
            new.push(l);
        }
        // Saved even when every line was known: one a failed write left in memory only
        // must be on disk before the position moves past it.
        let saved = rooms.save();
        if !new.is_empty() {
            conversation::testhook::abort_at("matrix-lines-stored");
        }
        if !saved {
            // Not on disk: the position is not moved on, so the lines come again. They
            // are queued now all the same (the store keeps them in memory).
        } else {
            // The thread may have given up waiting; the lines come again then, taken.
            let _ = on_disk.try_send(());
        }
        for l in new {
            self.room_line(out, &l.room, &l.event, &l.body);
        }
        // The owner wrote: what waits for their session may go to this room now.
        self.rooms_offer_waiting();
    }
}
