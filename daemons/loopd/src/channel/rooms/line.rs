//! An owner's line from a room: queued on its room's connection like a socket's line,
//! and its reply block read back into events, planned with fixed transaction ids and
//! written to the store before the line leaves it.

use super::*;
use crate::channel::reply::ACTIVITY;
use crate::worker::Command as Asked;

impl<W: Work> Channel<W> {
    /// Queues an owner's line on its room's connection (made on first use).
    pub(in crate::channel) fn room_line(
        &mut self,
        out: &mut Outbox,
        room: &str,
        event: &str,
        body: &str,
    ) {
        let default = self.cfg.matrix.session.clone();
        let Some(rooms) = self.rooms.as_mut() else {
            return;
        };
        let id = match rooms.conns.get(room) {
            Some(id) => *id,
            None => {
                let id = ConnId(rooms.next_conn);
                rooms.next_conn += 1;
                rooms.conns.insert(room.to_string(), id);
                rooms.outs.insert(
                    id,
                    RoomOut {
                        room: room.to_string(),
                        reader: blocks::Reader::default(),
                        owed: VecDeque::new(),
                        typing: None,
                    },
                );
                id
            }
        };
        // `/allow N` is answered as a turn is (docs/matrix.md, 'Labels'): typing on,
        // its block weighed by the session's label, its lines read by kind.
        let parsed = crate::channel::commands::parse(body);
        let whose = match &parsed {
            Ok(Command::Worker(Asked::Turn(_) | Asked::Allow(_))) => Whose::Turn,
            _ => Whose::Loopd,
        };
        let quotes = match &parsed {
            Ok(Command::Status) => Quotes::Memory,
            _ => Quotes::Nothing,
        };
        let allow = match &parsed {
            Ok(Command::Worker(Asked::Allow(n))) => Some(*n),
            _ => None,
        };
        if let Some(o) = rooms.outs.get_mut(&id) {
            o.owed.push_back(Owed {
                whose,
                event: event.to_string(),
                quotes,
                kinds: None,
                allow,
            });
        }
        // Commands whose answers quote stored text (or whose query names it) leave no
        // record a removal could find them by: the next removal redacts them whole.
        if body.starts_with("/forget") {
            rooms.store.keep_forget(event);
        } else if body.starts_with("/recall") || body.starts_with("/inbox") {
            rooms.store.keep_sent(Sent {
                room: room.to_string(),
                event: event.to_string(),
                line: crate::matrix::store::QUOTING_LINE.to_string(),
            });
        }
        if whose == Whose::Turn {
            rooms.link.send(Down::Typing {
                room: room.to_string(),
                on: true,
            });
            if let Some(o) = rooms.outs.get_mut(&id) {
                o.typing = Some(Instant::now());
            }
        }
        if let std::collections::hash_map::Entry::Vacant(slot) = self.conns.entry(id) {
            let name = session_of(&rooms.store, room, &default);
            let session = match SessionId::parse(&name) {
                Ok(s) => s,
                Err(e) => {
                    plumbing::error!("matrix: room {room}: session {name:?}: {e}");
                    return;
                }
            };
            slot.insert(Conn::room(session));
        }
        if let Some(conn) = self.conns.get_mut(&id) {
            conn.pending.push_back(Queued::Line(
                body.to_string(),
                Some(FromMatrix {
                    event: event.to_string(),
                }),
            ));
        }
        self.pump(out, id);
    }

    /// A job's block for room connection `id` ended with these lines' kinds: they go
    /// with the block the room is owed for the line being answered. Its lines are
    /// answered in order, one block each, and a line leaves `owed` only once its block is
    /// read whole, so that line's entry is the last one before those still queued.
    pub(in crate::channel) fn room_block_kinds(&mut self, id: ConnId, kinds: Kinds) {
        let queued = self.conns.get(&id).map_or(0, |c| c.pending.len());
        let Some(o) = self.rooms.as_mut().and_then(|r| r.outs.get_mut(&id)) else {
            return;
        };
        if let Some(owed) = o.owed.iter_mut().rev().nth(queued) {
            owed.kinds = Some(kinds);
        }
    }

    /// The blocks rendered for rooms since the last call, planned into events: the store
    /// saved with them before any is handed to the send thread, and each answered line
    /// leaving the waiting lines in the same write.
    pub(in crate::channel) fn rooms_flush(&mut self, out: &mut Outbox) {
        let max_class = self.cfg.matrix.max_class;
        let taken = out.take_sent(is_room);
        let Some(rooms) = self.rooms.as_mut() else {
            return;
        };
        let mut changed = false;
        for (id, bytes) in taken {
            let Some(o) = rooms.outs.get_mut(&id) else {
                continue;
            };
            let room = o.room.clone();
            let done = o.reader.feed(&bytes);
            // A turn still streaming keeps its typing notice on.
            let streaming =
                done.is_empty() && o.owed.front().is_some_and(|w| w.whose == Whose::Turn);
            if streaming && o.typing.is_some_and(|t| t.elapsed() >= TYPING_REFRESH) {
                o.typing = Some(Instant::now());
                rooms.link.send(Down::Typing {
                    room: room.clone(),
                    on: true,
                });
            }
            let mut owed = Vec::new();
            for read in done {
                let Owed {
                    whose,
                    event,
                    quotes,
                    kinds,
                    allow,
                } = o.owed.pop_front().unwrap_or(Owed {
                    whose: Whose::Loopd,
                    event: String::new(),
                    quotes: Quotes::Nothing,
                    kinds: None,
                    allow: None,
                });
                let kinds = line_kinds(&read, kinds.as_ref());
                let lines = match quotes {
                    Quotes::Memory => memory_weighed(read.lines, max_class),
                    Quotes::Nothing => read.lines,
                };
                owed.push((whose, event, lines, kinds, allow));
            }
            let session = self.conns.get(&id).map(|c| c.session.clone());
            for (whose, event, lines, kinds, allow) in owed {
                changed = true;
                if whose == Whose::Turn {
                    rooms.link.send(Down::Typing {
                        room: room.clone(),
                        on: false,
                    });
                }
                let label = session
                    .as_ref()
                    .and_then(|s| match self.board.get(s.as_str()) {
                        Some(SessionView::Open { label, .. }) => Some(label),
                        _ => None,
                    });
                let key = format!("reply\n{room}\n{event}");
                let why = Why::Reply {
                    event: event.clone(),
                };
                let held = whose == Whose::Turn && label.is_some_and(|l| l.class > max_class);
                // A removal made while this line was being answered named it: its answer
                // may hold the text, so it is neither sent nor kept, and loopd says why
                // (a notice of its own, which no removal takes back).
                let forgotten = !event.is_empty() && rooms.store.redacted.contains(&event);
                if forgotten {
                    let words = "loopd: this answer is not sent: a /forget made while it was being written removed text from its line.";
                    rooms.plan_into(
                        &room,
                        (&key, 0),
                        Planned(Style::Notice, "", words),
                        &Why::Notice,
                    );
                } else if held {
                    // Kept for the terminal: `/inbox` there shows it, and the next
                    // connection to the session gets it (docs/matrix.md, 'Labels').
                    let pieces = lines
                        .iter()
                        .zip(&kinds)
                        .map(|(l, kind)| match (kind, l.strip_prefix(ACTIVITY)) {
                            (LineKind::Activity, Some(own)) => {
                                conversation::inbox::Piece::Activity(own.to_string())
                            }
                            _ => conversation::inbox::Piece::Text(format!("{l}\n")),
                        })
                        .collect();
                    if let (Some(s), Some(l)) = (&session, label) {
                        let (m, saved) = self.mail.inbox.with(|i| {
                            i.add(
                                s.as_str(),
                                conversation::inbox::Kind::Held,
                                pieces,
                                l,
                                false,
                                None,
                            )
                        });
                        if let Err(e) = saved {
                            plumbing::error!("inbox: {e}");
                        }
                        rooms.store.keep_held(m.n);
                    }
                    let words = format!(
                        "loopd: this reply is labelled {}, above matrix.max_class ({}): it is not sent here. It waits at the terminal: /inbox there shows it.",
                        label.map(|l| l.class.to_string()).unwrap_or_default(),
                        max_class
                    );
                    rooms.plan_into(&room, (&key, 0), Planned(Style::Notice, "", &words), &why);
                } else {
                    let loopds = |i: usize| kinds.get(i).copied().is_some_and(marked);
                    for (i, piece) in blocks::pieces(whose, &lines, loopds)
                        .into_iter()
                        .enumerate()
                    {
                        let (style, opens, text) = match piece {
                            Piece::Text(t) => (Style::Text, "", t),
                            Piece::Notice(t) => (Style::Notice, blocks::CONTINUED, t),
                        };
                        let planned = Planned(style, opens, &text);
                        rooms.plan_into(&room, (&key, i as u64), planned, &why);
                    }
                }
                // `/remind WHEN TEXT` or `/allow N` set reminder N: its command and
                // confirmation are found by `remind N` when a removal takes the reminder.
                // A turn's block (`/allow N`'s) is read only in loopd's unmarked words,
                // never in the model's text, which may say anything.
                let set = match whose {
                    Whose::Loopd => lines.first().and_then(|l| remind::noted(l)),
                    Whose::Turn => lines
                        .iter()
                        .zip(&kinds)
                        .filter(|(_, kind)| **kind == LineKind::Said)
                        .find_map(|(l, _)| remind::noted(l)),
                };
                if let Some(n) = set.filter(|_| !event.is_empty()) {
                    rooms.store.keep_sent(Sent {
                        room: room.clone(),
                        event: event.clone(),
                        line: format!("remind {n}"),
                    });
                }
                // `/allow N` in this session: found again by what it fetched or set.
                if let (Some(n), Some(s), false) = (allow, &session, event.is_empty()) {
                    rooms.store.keep_sent(Sent {
                        room: room.clone(),
                        event: event.clone(),
                        line: format!("allow {s} {n}"),
                    });
                }
                if !event.is_empty() {
                    // A removal made while this line was being answered already named
                    // it: the owner's event goes now.
                    if forgotten {
                        rooms.redact(&room, &event);
                    } else {
                        rooms.store.keep_sent(Sent {
                            room: room.clone(),
                            event: event.clone(),
                            line: event.clone(),
                        });
                    }
                    rooms.store.answer(&event);
                }
            }
        }
        // `/session NAME` in a room switches it once its block ends.
        for (room, id) in &rooms.conns {
            if let Some(conn) = self.conns.get(id) {
                let now = conn.session.to_string();
                if rooms.store.rooms.get(room) != Some(&now) {
                    rooms.store.rooms.insert(room.clone(), now.clone());
                    // The session it left no longer sends its unasked messages here.
                    rooms.store.last_room.retain(|_, r| r != room);
                    rooms.store.last_room.insert(now, room.clone());
                    changed = true;
                }
            }
        }
        if changed {
            rooms.save();
            conversation::testhook::abort_at("matrix-reply-planned");
        }
        rooms.hand_over();
    }
}
