//! Reading what a sync's decision needs (docs/matrix.md, 'Decisions'): the members of the
//! rooms the machine does not know, and each gap's events from `/messages`, oldest first.

use crate::client::{Client, MESSAGES_PAGE};
use crate::decide::{Decision, Extra, Machine, Needs};
use crate::error::Error;
use crate::event::{Event, Kind};
use crate::sync::{Sync, TIMELINE_LIMIT};
use std::collections::BTreeSet;
use std::time::Duration;

/// Timeline events a room asked for again when a sync with [`TIMELINE_LIMIT`] was larger
/// than `client::MAX_SYNC_BYTES`: one, and the rest of each room read as a gap, page by
/// bounded page. Without it a sync too large would fail the same way for ever.
pub const SMALL_TIMELINE: u64 = 1;

/// One sync from `since`: with the usual timeline, or, when that answer is too large, at
/// once again with [`SMALL_TIMELINE`] (docs/matrix.md, 'The limits').
pub fn bounded_sync(
    client: &Client,
    since: Option<&str>,
    timeout: Duration,
) -> Result<Sync, Error> {
    match client.sync(since, timeout, TIMELINE_LIMIT) {
        Err(Error::TooLarge { .. }) => client.sync(since, timeout, SMALL_TIMELINE),
        other => other,
    }
}

/// The most events read to fill one gap (as many as 200 full pages of
/// `client::MESSAGES_PAGE`). A gap is what arrived while loopd did not sync (an outage of
/// loopd or of its homeserver); an owner writes nowhere near this many messages. Past it
/// the oldest events of the gap are not read, and the caller is told (`Filled::cut`).
pub const MAX_GAP_EVENTS: usize = 10_000;

/// The most `/messages` requests made for one gap: a page of one event each for the
/// whole of [`MAX_GAP_EVENTS`], plus the halvings on the way down.
const MAX_GAP_REQUESTS: usize = MAX_GAP_EVENTS + 8;

/// One round of the way in, the I/O around the machine: a sync from the machine's
/// confirmed position (`bounded_sync`), what its decision needs read (`read_needs`), the
/// decision. The caller does the decision's actions, writes its lines' records, and then
/// calls `Machine::confirm` and saves the position it returns; a failure anywhere here
/// leaves the position where it was.
pub fn next(client: &Client, machine: &mut Machine, timeout: Duration) -> Result<Round, Error> {
    let sync = bounded_sync(client, machine.since(), timeout)?;
    let needs = machine.needs(&sync);
    let filled = read_needs(client, &needs)?;
    Ok(Round {
        decision: machine.decide(&sync, &filled.extra),
        cut: filled.cut,
    })
}

/// A round's decision, and the rooms whose gap was not read to its start (worth a
/// `loopd:` warning: their oldest events were not read).
#[derive(Debug)]
pub struct Round {
    pub decision: Decision,
    pub cut: Vec<String>,
}

/// What was read, and the rooms whose gap was not read to its start: longer than
/// [`MAX_GAP_EVENTS`], or holding an event too large to read even alone.
#[derive(Debug, Default)]
pub struct Filled {
    pub extra: Extra,
    pub cut: Vec<String>,
}

/// Reads everything `needs` asks for. A failure of the homeserver fails the whole round:
/// the caller syncs again from the same position, so nothing is decided on half of it.
/// A gap's page too large to read is not such a failure (it would fail the same way for
/// ever, and anyone who can post in any room loopd is in could cause it): the page is
/// asked again with half as many events, down to one, and a single event still too large
/// ends that room's gap there (`Filled::cut`, for a warning); it is no owner's line, which
/// is at most 64 KiB. The text of messages from anyone but the owners is dropped as the
/// pages are read: a decision only counts them, and a stranger's spam is not held.
pub fn read_needs(client: &Client, needs: &Needs) -> Result<Filled, Error> {
    let mut filled = Filled::default();
    for room in &needs.members {
        let members = client.joined_members(room)?;
        filled.extra.members.insert(room.clone(), members);
    }
    for gap in &needs.gaps {
        let mut events = Vec::new();
        let mut from = gap.from.clone();
        let mut limit = MESSAGES_PAGE;
        let mut requests = 0;
        loop {
            if events.len() >= MAX_GAP_EVENTS || requests == MAX_GAP_REQUESTS {
                filled.cut.push(gap.room.clone());
                break;
            }
            requests += 1;
            let page = match client.messages_back(&gap.room, &from, Some(&gap.to), limit) {
                Err(Error::TooLarge { .. }) if limit > 1 => {
                    limit = (limit / 2).max(1);
                    continue;
                }
                Err(Error::TooLarge { .. }) => {
                    filled.cut.push(gap.room.clone());
                    break;
                }
                other => other?,
            };
            let empty = page.events.is_empty();
            events.extend(page.events.into_iter().map(|e| slim(e, &needs.owners)));
            match page.end {
                Some(end) if !empty && end != from => from = end,
                _ => break,
            }
        }
        // Pages run newest first; the decision takes them in the order they happened.
        events.reverse();
        filled.extra.gaps.insert(gap.room.clone(), events);
    }
    Ok(filled)
}

/// `e` without the text of a message nobody but an owner may write loopd a line with.
fn slim(mut e: Event, owners: &BTreeSet<String>) -> Event {
    if let Kind::Text { body } = &mut e.kind {
        if !owners.contains(&e.sender) {
            *body = String::new();
        }
    }
    e
}
