//! Reading what a sync's decision needs (docs/matrix.md, 'Decisions'): the members of the
//! rooms the machine does not know, and each gap's events from `/messages`, oldest first.

use crate::client::Client;
use crate::decide::{Decision, Extra, Machine, Needs};
use crate::error::Error;
use crate::sync::{Sync, TIMELINE_LIMIT};
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

/// The most `/messages` pages read to fill one gap: with `client::MESSAGES_PAGE` (50)
/// events a page, 10 000 events. A gap is what arrived while loopd did not sync (an outage
/// of loopd or of its homeserver); an owner writes nowhere near this many messages. Past
/// it the oldest events of the gap are not read, and the caller is told (`Filled::cut`).
pub const MAX_GAP_PAGES: usize = 200;

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

/// A round's decision, and the rooms whose gap was cut at [`MAX_GAP_PAGES`] (worth a
/// `loopd:` warning: their oldest events were not read).
#[derive(Debug)]
pub struct Round {
    pub decision: Decision,
    pub cut: Vec<String>,
}

/// What was read, and the rooms whose gap was longer than [`MAX_GAP_PAGES`].
#[derive(Debug, Default)]
pub struct Filled {
    pub extra: Extra,
    pub cut: Vec<String>,
}

/// Reads everything `needs` asks for. Any failure fails the whole round: the caller
/// syncs again from the same position, so nothing is decided on half of it.
pub fn read_needs(client: &Client, needs: &Needs) -> Result<Filled, Error> {
    let mut filled = Filled::default();
    for room in &needs.members {
        let members = client.joined_members(room)?;
        filled.extra.members.insert(room.clone(), members);
    }
    for gap in &needs.gaps {
        let mut events = Vec::new();
        let mut from = gap.from.clone();
        let mut pages = 0;
        loop {
            if pages == MAX_GAP_PAGES {
                filled.cut.push(gap.room.clone());
                break;
            }
            let page = client.messages_back(&gap.room, &from, Some(&gap.to))?;
            pages += 1;
            let empty = page.events.is_empty();
            events.extend(page.events);
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
