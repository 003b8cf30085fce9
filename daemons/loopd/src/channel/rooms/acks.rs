//! What the homeserver said of an event loopd sent: acknowledged (an unasked message
//! delivered, an event holding a line's text kept for `/forget`) or refused for good.

use super::*;

impl<W: Work> Channel<W> {
    /// The homeserver acknowledged an event: it leaves the store; an inbox message it
    /// carried is delivered, and an event holding a line's text is kept for `/forget`.
    pub(in crate::channel) fn acknowledged(&mut self, txn: &str, room: &str, event: &str) {
        let Some(rooms) = self.rooms.as_mut() else {
            return;
        };
        conversation::testhook::abort_at("matrix-acknowledged");
        rooms.handed.remove(txn);
        if let Some(at) = rooms.store.cancelled.iter().position(|t| t == txn) {
            // Taken back by `/forget` while it was on its way: redacted at once.
            rooms.store.cancelled.remove(at);
            rooms.redact(room, event);
            rooms.save();
            rooms.hand_over();
            return;
        }
        let Some(at) = rooms.store.outbox.iter().position(|o| o.txn == txn) else {
            return;
        };
        let o = rooms.store.outbox.remove(at);
        let mut delivered = None;
        match &o.why {
            Why::Reply { event: line } if rooms.store.redacted.contains(line) => {
                rooms.redact(room, event);
            }
            Why::Reply { event: line } => rooms.store.keep_sent(Sent {
                room: room.to_string(),
                event: event.to_string(),
                line: line.clone(),
            }),
            Why::Inbox { n, found_by } => {
                // A reminder's delivery is found by its number too, a heartbeat's by its
                // turn: the inbox keeps only the newest delivered messages, and `/forget`
                // of their words must still find this event once the message is gone
                // (docs/matrix.md, 'Forgetting'). A store from before `found_by` was
                // kept asks the inbox.
                let found_by = found_by.clone().or_else(|| {
                    self.mail
                        .inbox
                        .with(|i| i.get(*n).and_then(super::unasked::found_by))
                });
                let lines: Vec<String> = std::iter::once(format!("inbox {n}"))
                    .chain(found_by)
                    .collect();
                if lines.iter().any(|l| rooms.store.redacted.contains(l)) {
                    // A removal named it while it was on its way.
                    rooms.redact(room, event);
                } else {
                    for line in lines {
                        rooms.store.keep_sent(Sent {
                            room: room.to_string(),
                            event: event.to_string(),
                            line,
                        });
                    }
                }
                let last = !rooms
                    .store
                    .outbox
                    .iter()
                    .any(|x| matches!(x.why, Why::Inbox { n: m, .. } if m == *n));
                if last {
                    delivered = Some(*n);
                }
            }
            Why::Notice | Why::Redact { .. } => {}
        }
        rooms.save();
        let room_conn = rooms.conns.get(room).copied();
        let idle = !rooms.store.outbox.iter().any(|x| x.room == room);
        rooms.hand_over();
        if let Some(n) = delivered {
            let session = self
                .mail
                .inbox
                .with(|i| i.get(n).map(|m| m.session.clone()));
            if let Err(e) = self.mail.inbox.with(|i| i.delivered(&[n])) {
                plumbing::error!("inbox: {e}");
            }
            if let Some(session) = session {
                plumbing::info!(
                    "session {session}: inbox message {n} delivered to Matrix room {room}"
                );
                self.note(
                    &session,
                    format!("inbox message {n} delivered to a Matrix room"),
                );
            }
        }
        // `/inbox` in a room: what it showed is delivered once its reply is acknowledged.
        if let (Some(id), true) = (room_conn, idle) {
            self.mail_drained(id);
        }
    }

    /// The homeserver refused an event for good: it leaves the store (the thread said so
    /// in the journal); an inbox message it carried still waits.
    pub(in crate::channel) fn refused(&mut self, txn: &str) {
        let Some(rooms) = self.rooms.as_mut() else {
            return;
        };
        rooms.handed.remove(txn);
        // A room that refuses loopd's messages (it left, or may not write there) gets no
        // more unasked messages until an owner writes there again. A refused redaction
        // says nothing of that: without a moderator's power loopd may not redact the
        // owner's own events, and `/forget` asks anyway (docs/matrix.md, 'Forgetting').
        let room = rooms
            .store
            .outbox
            .iter()
            .find(|o| o.txn == txn && !matches!(o.why, Why::Redact { .. }))
            .map(|o| o.room.clone());
        rooms.store.outbox.retain(|o| o.txn != txn);
        if let Some(room) = room {
            rooms.store.last_room.retain(|_, r| *r != room);
        }
        rooms.save();
        rooms.hand_over();
    }
}
