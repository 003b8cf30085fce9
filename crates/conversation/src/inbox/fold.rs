//! Folding a session's waiting heartbeat messages (docs/reminders.md, 'The inbox'): past
//! the newest few, a message's news goes and its reminder lines wait in its place, so no
//! number of beats fills the inbox or hides a reminder the model set.

use super::{Kind, Message, Piece, MAX_WAITING_HEARTBEATS};

/// Heartbeat messages of one session that wait with nothing but their reminder lines
/// (`Piece::Must`), left by folding: as many as a page steering every beat into setting
/// reminders could make in a day at a beat an hour. Past them the oldest is folded
/// whole, and the log says so: the inbox stays bounded whatever the beats do.
pub(crate) const MAX_WAITING_MUST_ONLY: usize = 24;

/// Whether `m` holds nothing but lines the owner must read.
fn must_only(m: &Message) -> bool {
    m.pieces.iter().all(|p| matches!(p, Piece::Must(_)))
}

/// Folds `session`'s waiting heartbeat messages past the newest `MAX_WAITING_HEARTBEATS`:
/// each loses everything but its reminder lines (`Piece::Must`), which wait in its place,
/// and one without any goes; past `MAX_WAITING_MUST_ONLY` such remainders, the oldest
/// goes too. Returns how many beats had their news folded away.
pub(super) fn fold(messages: &mut Vec<Message>, session: &str) -> usize {
    let waiting =
        |m: &Message| m.kind == Kind::Heartbeat && m.delivered.is_none() && m.session == session;
    let whole: Vec<u64> = messages
        .iter()
        .filter(|m| waiting(m) && !must_only(m))
        .map(|m| m.n)
        .collect();
    let over = whole.len().saturating_sub(MAX_WAITING_HEARTBEATS);
    let oldest = &whole[..over];
    let mut folded = 0;
    messages.retain_mut(|m| {
        if !oldest.contains(&m.n) {
            return true;
        }
        folded += 1;
        m.pieces.retain(|p| matches!(p, Piece::Must(_)));
        !m.pieces.is_empty()
    });
    let gone = keep_newest(messages, MAX_WAITING_MUST_ONLY, |m| {
        waiting(m) && must_only(m)
    });
    if !gone.is_empty() {
        plumbing::warn!(
            "inbox: session {session}: {} heartbeat messages holding only reminder lines folded away whole; the session log and /remind have them",
            gone.len()
        );
    }
    // A remainder going now was counted when it was folded: the count is of beats whose
    // news was folded away, and what goes here was only their reminder lines (or a beat's
    // that had nothing else), which the warning above names.
    folded
}

/// Removes from `messages` the oldest of those `pick` selects past the newest `keep`;
/// returns them.
pub(super) fn keep_newest(
    messages: &mut Vec<Message>,
    keep: usize,
    pick: impl Fn(&Message) -> bool,
) -> Vec<Message> {
    let mut extra = messages
        .iter()
        .filter(|m| pick(m))
        .count()
        .saturating_sub(keep);
    let mut gone = Vec::new();
    let mut kept = Vec::with_capacity(messages.len());
    for m in messages.drain(..) {
        if extra > 0 && pick(&m) {
            extra -= 1;
            gone.push(m);
        } else {
            kept.push(m);
        }
    }
    *messages = kept;
    gone
}
