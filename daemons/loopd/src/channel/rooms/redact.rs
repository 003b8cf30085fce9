//! What `/forget` asks of the rooms: the events that held the text redacted, and
//! waiting events that hold it taken out of the store before they are sent.

use super::*;

impl<W: Work> Channel<W> {
    /// `/forget` removed text from the turns of these owner's events: each, and every
    /// event loopd sent in answer, is redacted, its transaction id fixed by the room and
    /// the event (docs/matrix.md, 'Forgetting'). `asked_by`: the room event whose
    /// removal this is, when a room asked for it.
    pub(in crate::channel) fn matrix_redact(&mut self, lines: &[String], asked_by: Option<&str>) {
        let Some(rooms) = self.rooms.as_mut() else {
            return;
        };
        // The `/forget` commands that listed the text, and their lists, hold it too.
        // The removal being answered now, when a room asked for it, stays: its answer
        // says what was done. Every other goes, a list still being made among them; a
        // removal made at the terminal keeps none, so a room's `/forget "QUERY"` goes too.
        let mut lines = lines.to_vec();
        let current = asked_by
            .filter(|event| rooms.store.forgets.iter().any(|f| f == event))
            .map(str::to_string);
        lines.extend(
            rooms
                .store
                .forgets
                .drain(..)
                .filter(|f| Some(f) != current.as_ref()),
        );
        rooms.store.forgets.extend(current);
        // So may any `/recall` or `/inbox` and what it showed, none of them a record:
        // every one the store knows goes, the commands by their line and the answers by
        // the command's; one still being answered too (its answer is replaced by a
        // notice, or redacted once acknowledged, as a reply to any line redacted here).
        let mut seen: std::collections::HashSet<String> = lines.iter().cloned().collect();
        let recalls = rooms
            .store
            .sent
            .iter()
            .filter(|s| s.line == crate::matrix::store::QUOTING_LINE)
            .map(|s| s.event.clone())
            .chain(std::iter::once(
                crate::matrix::store::QUOTING_LINE.to_string(),
            ));
        for line in recalls {
            if seen.insert(line.clone()) {
                lines.push(line);
            }
        }
        // A reminder or an inbox message stands for the room events that showed it, an
        // owner's `/remind` event for its confirmation too, and `/allow N` in a session
        // for the owner's command and its answer.
        let shown_by: Vec<String> = rooms
            .store
            .sent
            .iter()
            .filter(|s| {
                (s.line.starts_with("remind ")
                    || s.line.starts_with("inbox ")
                    || s.line.starts_with("allow "))
                    && lines.contains(&s.line)
            })
            .map(|s| s.event.clone())
            .collect();
        for e in shown_by {
            if !lines.contains(&e) {
                lines.push(e);
            }
        }
        let targets: Vec<Sent> = rooms
            .store
            .sent
            .iter()
            .filter(|s| lines.contains(&s.line))
            .cloned()
            .collect();
        for t in &targets {
            rooms.redact(&t.room, &t.event);
        }
        // What was planned for these lines (or the inbox messages `inbox N` names) and
        // not yet acknowledged is never sent: it leaves the store in this write, and the
        // send thread drops it; one already on its way is redacted when acknowledged.
        let gone: Vec<(String, bool)> = rooms
            .store
            .outbox
            .iter()
            .filter(|o| match &o.why {
                Why::Reply { event } => lines.contains(event),
                Why::Inbox { n, found_by } => {
                    lines.contains(&format!("inbox {n}"))
                        || found_by.as_ref().is_some_and(|f| lines.contains(f))
                }
                Why::Notice | Why::Redact { .. } => false,
            })
            .map(|o| (o.txn.clone(), rooms.handed.contains(&o.txn)))
            .collect();
        for (txn, handed) in &gone {
            rooms.store.outbox.retain(|o| o.txn != *txn);
            if *handed {
                rooms.handed.remove(txn);
                rooms.link.send(Down::Cancel { txn: txn.clone() });
                rooms.store.cancelled.push_back(txn.clone());
                while rooms.store.cancelled.len() > crate::matrix::store::MAX_SENT_KEPT {
                    rooms.store.cancelled.pop_front();
                }
            }
        }
        // Once planned, they are no longer these lines' events to find; a reply still
        // on its way is redacted when acknowledged.
        rooms.store.sent.retain(|s| !lines.contains(&s.line));
        rooms.store.keep_redacted(&lines);
        let saved = rooms.save();
        if saved {
            crate::matrix::store::pending_settled(&rooms.state_dir, &rooms.store.redacted);
        }
        plumbing::info!(
            "matrix: {} events to redact after a /forget, {} not sent",
            targets.len(),
            gone.len()
        );
        rooms.hand_over();
    }
}
