//! Unasked messages (reminders, heartbeats) offered to the served room an owner last
//! wrote in for their session, or a notice that one waits at the terminal.

use super::*;
use crate::channel::unasked::UNTRUSTED;

impl<W: Work> Channel<W> {
    /// Offers what waits in the inbox to each session's room, when it is served.
    pub(in crate::channel) fn rooms_offer_waiting(&mut self) {
        let Some(rooms) = self.rooms.as_ref() else {
            return;
        };
        let sessions: Vec<String> = rooms.store.last_room.keys().cloned().collect();
        for session in sessions {
            let waiting = self.mail.inbox.with(|i| i.waiting(&session));
            for m in waiting {
                self.room_offer(&m);
            }
        }
        if let Some(rooms) = self.rooms.as_mut() {
            rooms.hand_over();
        }
    }

    /// Plans an unasked message for the served room an owner last wrote in for its
    /// session (docs/matrix.md, 'Unasked messages'); above `matrix.max_class`, a notice
    /// that it waits at the terminal instead. Returns whether a room will get it.
    pub(in crate::channel) fn room_offer(&mut self, m: &Message) -> bool {
        let max_class = self.cfg.matrix.max_class;
        let Some(rooms) = self.rooms.as_mut() else {
            return false;
        };
        let Some(room) = rooms.store.last_room.get(&m.session).cloned() else {
            return false;
        };
        if !rooms.served(&room) {
            return false;
        }
        let by = found_by(m);
        // A removal took this message, or its heartbeat's turn, from the room: the
        // message, still waiting for the terminal, is never planned there again. A
        // reminder's number names its note too, which a removal may take while the
        // reminder stays: that does not withhold it.
        let taken = std::iter::once(format!("inbox {}", m.n))
            .chain(by.clone().filter(|line| line.starts_with("heartbeat ")))
            .any(|line| rooms.store.redacted.contains(&line));
        if taken {
            return false;
        }
        let why = Why::Inbox {
            n: m.n,
            found_by: by,
        };
        if rooms
            .store
            .outbox
            .iter()
            .any(|o| matches!(o.why, Why::Inbox { n, .. } if n == m.n))
        {
            // Planned before a crash that came before its mark: marked now, so a repeat
            // after the next one says so.
            self.mark_room_tried(m.n);
            return true;
        }
        if m.class > max_class {
            if rooms.store.held.contains(&m.n) {
                return false;
            }
            let words = format!(
                "loopd: a {} from {} waits at the terminal: it is labelled {}, above matrix.max_class ({}). /inbox there shows it.",
                m.kind.word(),
                crate::channel::unasked::local(&m.time),
                m.class,
                max_class
            );
            let key = format!("held\n{}", m.n);
            rooms.plan_into(
                &room,
                (&key, 0),
                Planned(Style::Notice, "", &words),
                &Why::Notice,
            );
            rooms.store.keep_held(m.n);
            rooms.save();
            rooms.hand_over();
            return false;
        }
        // The room's own repeat, not a socket client's: the first copy a room gets is
        // never marked, and one planned again after a crash is.
        let again = if m.room_tried { " (again)" } else { "" };
        // The header is loopd's word for the text under it: one written while the context
        // was untrusted may be a page's words (a phishing link, a request for a PIN), and
        // says so where a notification shows it (docs/matrix.md, 'Unasked messages').
        let untrusted = if m.untrusted { UNTRUSTED } else { "" };
        let header = format!(
            "loopd: {} at {}{again}{untrusted}",
            m.kind.word(),
            crate::channel::unasked::local(&m.time)
        );
        // A reminder's message: the `/remind` that set it is found by `inbox N` too.
        if let Some(k) = m.reminder() {
            let set: Vec<Sent> = rooms
                .store
                .sent
                .iter()
                .filter(|s| s.line == format!("remind {k}"))
                .map(|s| Sent {
                    line: format!("inbox {}", m.n),
                    ..s.clone()
                })
                .collect();
            for s in set {
                rooms.store.keep_sent(s);
            }
        }
        let text = crate::channel::unasked::screen_text(&m.pieces);
        let key = format!("inbox\n{}", m.session);
        let planned = Planned(Style::Unasked, &header, text.trim_end());
        rooms.plan_into(&room, (&key, m.n), planned, &why);
        rooms.save();
        rooms.hand_over();
        // After the plan is on disk: a crash before this mark leaves the plan, which is
        // sent with its own transaction id and so never twice.
        self.mark_room_tried(m.n);
        true
    }

    /// Records that inbox message `n` was planned into its room (`Message::room_tried`).
    fn mark_room_tried(&mut self, n: u64) {
        if let Err(e) = self.mail.inbox.with(|i| i.room_tried(n)) {
            plumbing::error!("inbox: {e}");
        }
    }
}

/// What else `/forget` finds message `m`'s room event by, beside `inbox N`: the reminder
/// it delivers, or the heartbeat turn it came from (docs/matrix.md, 'Forgetting').
pub(in crate::channel) fn found_by(m: &Message) -> Option<String> {
    m.reminder().map(|k| format!("remind {k}")).or_else(|| {
        m.heartbeat_turn()
            .map(|t| conversation::forget::find::heartbeat_line(&m.session, t))
    })
}
