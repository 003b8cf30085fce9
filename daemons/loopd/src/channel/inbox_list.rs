//! `/inbox`'s list (docs/reminders.md, 'The inbox'; docs/matrix.md, 'Labels'): the last
//! messages of a session again, each under loopd's `· ` line saying what and when. A
//! socket client's list delivers what was waiting (`broadcast`, `inbox_command`). A
//! room's list delivers nothing, since the room gets its session's messages as they
//! come, and quotes nothing above `matrix.max_class`: such a message is one line of
//! loopd's saying it waits at the terminal.
//!
//! The model's text in a list is shown as the model's (`Part::Text`): a line of it that
//! starts as loopd's lines do is marked, on the socket and in the room's notice alike.

use super::reply::{Block, Part};
use super::unasked::{folded_line, local};
use super::work::Work;
use super::Channel;
use conversation::inbox::{Message, Piece};
use proto::{DataClass, SessionId};

/// Who a list is shown to.
pub(super) enum Listed<'a> {
    /// A socket client: a message not delivered, and not already on its way to a client
    /// (the function), is delivered by this list.
    Socket(&'a dyn Fn(u64) -> bool),
    /// A room that may be sent nothing above this class.
    Room(DataClass),
}

/// The reply block listing `messages`, after a line for `folded` older heartbeat messages.
pub(super) fn shown(messages: &[Message], folded: u64, to: Listed<'_>) -> String {
    let mut block = Block::new();
    let mut out = String::new();
    if folded > 0 {
        block.put(Part::Activity(&folded_line(folded)), &mut out);
    }
    for m in messages {
        let state = match to {
            _ if m.delivered.is_some() => "",
            Listed::Socket(on_its_way) if on_its_way(m.n) => "",
            Listed::Socket(_) => " (was waiting)",
            // The room is offered its session's messages as they come: one not yet
            // delivered is on its way there or waits for the terminal (said below).
            Listed::Room(_) => "",
        };
        let untrusted = if m.untrusted {
            super::unasked::UNTRUSTED
        } else {
            ""
        };
        let what = format!("{} at {}{state}{untrusted}", m.kind.word(), local(&m.time));
        if let Listed::Room(max_class) = to {
            if m.class > max_class {
                block.put(
                    Part::Activity(&format!(
                        "{what}: labelled {}, above matrix.max_class ({max_class}): /inbox at the terminal shows it",
                        m.class
                    )),
                    &mut out,
                );
                continue;
            }
        }
        block.put(Part::Activity(&what), &mut out);
        for piece in &m.pieces {
            match piece {
                Piece::Text(t) => block.put(Part::Text(t), &mut out),
                Piece::Activity(line) | Piece::Must(line) => {
                    end_line(&mut block, &mut out);
                    block.put(Part::Activity(line), &mut out);
                }
            }
        }
        // The next message's `· ` line starts a line of its own.
        end_line(&mut block, &mut out);
    }
    block.end(&mut out);
    out
}

/// Ends the text's last line, if it is open.
fn end_line(block: &mut Block, out: &mut String) {
    if !out.is_empty() && !out.ends_with('\n') {
        block.put(Part::Text("\n"), out);
    }
}

impl<W: Work> Channel<W> {
    /// `session`'s last messages and the count of heartbeat messages folded away, what
    /// `/inbox` lists on either surface; `Err`: the reply saying the inbox is empty.
    pub(super) fn inbox_listing(&self, session: &SessionId) -> Result<(Vec<Message>, u64), String> {
        let (last, folded) = self
            .mail
            .inbox
            .with(|i| (i.last(session.as_str()), i.folded(session.as_str())));
        if last.is_empty() && folded == 0 {
            return Err(super::reply::whole(&format!(
                "the inbox of session {session} is empty"
            )));
        }
        Ok((last, folded))
    }

    /// `/inbox` in a room: the session's last messages, none delivered by it, none
    /// quoted above `matrix.max_class`.
    pub(super) fn room_inbox_command(&self, session: &SessionId) -> String {
        match self.inbox_listing(session) {
            Ok((last, folded)) => shown(&last, folded, Listed::Room(self.cfg.matrix.max_class)),
            Err(empty) => empty,
        }
    }
}
