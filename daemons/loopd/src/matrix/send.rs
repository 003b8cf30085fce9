//! The send thread (docs/matrix.md, 'Exactly once out'): sends the events the poll loop
//! planned, one at a time in the order planned, each with the transaction id fixed before
//! its first attempt, until the homeserver acknowledges it. A rate limit is waited out,
//! an outage or a 5xx is retried with the same id after a growing wait, a refused token
//! waits for a new one; only a refusal of the event itself (a 4xx) drops it, with a
//! `loopd:` line. Typing notices go at once and are never retried: they only say a turn
//! is running.

use super::store::{Outgoing, Why};
use super::{set_status, token, Down, Reach, Up};
use matrix::Client;
use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long one attempt may wait out the homeserver's rate limits before the event goes
/// back to the retry pacing (it is not dropped).
pub(crate) const SEND_DEADLINE: Duration = Duration::from_secs(120);

/// How long a typing notice lasts if no "off" follows: a turn's usual length with room to
/// spare; a client stops showing it then even if loopd crashed.
pub(crate) const TYPING_FOR: Duration = Duration::from_secs(120);

/// How long the thread waits for work when it has none, so a stopped loop ends it.
const IDLE_WAIT: Duration = Duration::from_secs(1);

pub(super) fn run(reach: Reach, down: Receiver<Down>) {
    let (mut client, mut held) = token::connect(&reach);
    let mut queue: VecDeque<Outgoing> = VecDeque::new();
    let mut backoff =
        plumbing::backoff::Backoff::new(Duration::from_secs(1), token::MAX_UNREACHABLE_WAIT);
    loop {
        while let Ok(d) = down.try_recv() {
            take(&client, &mut queue, d);
        }
        set_status(&reach.status, |s| s.waiting = queue.len());
        let Some(next) = queue.front().cloned() else {
            match down.recv_timeout(IDLE_WAIT) {
                Ok(d) => take(&client, &mut queue, d),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            continue;
        };
        // A room someone else joined gets nothing more (a redaction only takes away);
        // the loop hands the event over again once the room is served.
        let redaction = matches!(next.why, Why::Redact { .. });
        if !redaction && !super::served(&reach.status, &next.room) {
            queue.pop_front();
            if !reach.tell(Up::Deferred { txn: next.txn }) {
                return;
            }
            continue;
        }
        let before = token::now(&reach);
        let deadline = Instant::now() + SEND_DEADLINE;
        let sent = matrix::honouring_rate_limits(deadline, || match &next.why {
            Why::Redact { event } => client.redact(&next.room, event, &next.txn),
            _ => client.send(&next.room, &next.txn, &next.content),
        });
        match sent {
            Ok(event) => {
                queue.pop_front();
                backoff.reset();
                let up = Up::Sent {
                    txn: next.txn,
                    room: next.room,
                    event,
                };
                if !reach.tell(up) {
                    return;
                }
            }
            Err(e) if token::refused(&e) => {
                token::refused_wait(&reach, &held, &before);
                (client, held) = token::connect(&reach);
                token::state(&reach, format!("serving as {}", reach.cfg.user_id), false);
            }
            Err(e) if e.retryable() => {
                token::state(
                    &reach,
                    format!("homeserver unreachable: {e}; trying again"),
                    true,
                );
                std::thread::sleep(backoff.next_wait());
            }
            Err(e) => {
                plumbing::warn!(
                    "matrix: room {}: the homeserver refused an event for good ({e}); dropped",
                    next.room
                );
                queue.pop_front();
                if !reach.tell(Up::Refused { txn: next.txn }) {
                    return;
                }
            }
        }
    }
}

fn take(client: &Client, queue: &mut VecDeque<Outgoing>, d: Down) {
    match d {
        Down::Send(o) => {
            if !queue.iter().any(|q| q.txn == o.txn) {
                queue.push_back(o);
            }
        }
        Down::Cancel { txn } => queue.retain(|q| q.txn != txn),
        // Only a hint that a turn runs: a failure is not worth a retry or a line.
        Down::Typing { room, on } => {
            let _ = client.typing(&room, on.then_some(TYPING_FOR));
        }
    }
}
