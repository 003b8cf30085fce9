//! The sync thread (docs/matrix.md, 'Exactly once in'): long-polls the homeserver from
//! the saved position, does what each decision asks (accept or reject invites, turn URL
//! previews off, the room notices), hands the owner's lines to the poll loop, and saves
//! the position only after the loop said they are on disk. A round it cannot finish is
//! not confirmed: the next sync brings the same events again, and the loop's store knows
//! the lines it took.

use super::position::Position;
use super::{set_status, token, Line, Reach, Up, LINES_ACK_DEADLINE};
use matrix::outgoing::txn_id;
use matrix::{Action, Client, Error, Machine, Notice, Round};
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::mpsc::sync_channel;
use std::time::{Duration, Instant};

/// The long-poll's timeout: the homeserver answers at once when something arrives, so
/// this only bounds how long an idle sync holds its connection.
pub(crate) const SYNC_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one of the thread's own sends (a room notice) may wait out rate limits
/// before the round is given up and tried again.
pub(crate) const NOTICE_DEADLINE: Duration = Duration::from_secs(120);

pub(super) fn run(reach: Reach) {
    let pos = match Position::load(&reach.state_dir) {
        Ok(p) => p,
        Err(e) => {
            token::state(&reach, format!("stopped: {e}"), true);
            return;
        }
    };
    let mut machine = Machine::new(&reach.cfg.user_id, &reach.cfg.owners, pos.since.clone());
    machine.restore(pos.told());
    let mut previews = pos.previews.clone();
    publish(&reach, &machine, false);
    let (mut client, mut held) = token::connect(&reach);
    token::state(&reach, format!("serving as {}", reach.cfg.user_id), false);
    reach.tell(Up::Rooms);
    let mut backoff =
        plumbing::backoff::Backoff::new(Duration::from_secs(1), token::MAX_UNREACHABLE_WAIT);
    // The first round of a run (and after a new token) does not wait for news: what
    // waits to be sent goes out only once a round has said which rooms are served, and
    // an idle long-poll would hold it for the whole `SYNC_TIMEOUT`.
    let mut timeout = Duration::ZERO;
    loop {
        let before = token::now(&reach);
        let round = matrix::next(&client, &mut machine, timeout);
        let failed = match round {
            Ok(round) => {
                token::state(&reach, format!("serving as {}", reach.cfg.user_id), false);
                match take(&reach, &client, &mut machine, &mut previews, round) {
                    Ok(()) => {
                        backoff.reset();
                        timeout = SYNC_TIMEOUT;
                        continue;
                    }
                    Err(Stop::LoopGone) => return,
                    Err(Stop::Failed(e)) => e,
                }
            }
            Err(e) => e,
        };
        if token::refused(&failed) {
            token::refused_wait(&reach, &held, &before);
            (client, held) = token::connect(&reach);
            timeout = Duration::ZERO;
            continue;
        }
        token::state(
            &reach,
            format!("homeserver unreachable: {failed}; trying again"),
            true,
        );
        std::thread::sleep(backoff.next_wait());
    }
}

/// An action's outcome: done (`true`), refused for good (`false`, with a warning: a
/// rescinded invite, a room loopd was removed from; the round goes on, or it would fail
/// for ever), or a failure worth syncing the same round again for (an outage, a rate
/// limit past its wait, a refused token).
fn done<T>(r: Result<T, Error>, room: &str, what: &str) -> Result<bool, Stop> {
    match r {
        Ok(_) => Ok(true),
        Err(e) if e.retryable() || token::refused(&e) => Err(Stop::Failed(e)),
        Err(e) => {
            plumbing::warn!("matrix: could not {what} room {room}: {e}; going on");
            Ok(false)
        }
    }
}

enum Stop {
    LoopGone,
    Failed(Error),
}

/// Does one round's actions, hands its lines over, and confirms it. `previews`: the
/// rooms set up already (`Position::previews`), which are not set up again.
fn take(
    reach: &Reach,
    client: &Client,
    machine: &mut Machine,
    previews: &mut BTreeSet<String>,
    round: Round,
) -> Result<(), Stop> {
    let d = &round.decision;
    for room in &round.cut {
        plumbing::warn!(
            "matrix: room {room}: what arrived while loopd was away was not read back to its start (more than it reads, or an event too large to read even alone); the oldest messages were not taken"
        );
    }
    if d.strangers > 0 {
        set_status(&reach.status, |s| s.strangers += d.strangers);
        plumbing::info!(
            "matrix: {} messages from accounts not in matrix.owners ignored",
            d.strangers
        );
    }
    // Rooms refused as encrypted get loopd's one notice there and no other text.
    let mut encrypted = machine.told().encrypted.clone();
    for a in &d.actions {
        if let Action::Notice {
            room,
            notice: Notice::Encrypted,
        } = a
        {
            encrypted.insert(room.clone());
        }
    }
    // A room this round stops serving is not served from now on, before its notice is
    // sent and before the loop takes the lines: the send thread sends nothing more to
    // it meanwhile. Only `confirm` serves a room again.
    let stops: Vec<&String> = d
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Notice {
                room,
                notice: Notice::Stopped { .. },
            } => Some(room),
            _ => None,
        })
        .collect();
    if !stops.is_empty() || encrypted != machine.told().encrypted {
        set_status(&reach.status, |s| {
            s.stopped.extend(stops.iter().map(|r| (*r).clone()));
            s.encrypted.extend(encrypted.iter().cloned());
        });
    }
    let mut lines = Vec::new();
    for action in &d.actions {
        match action {
            Action::Accept { room } => {
                if done(client.join(room), room, "join")? {
                    plumbing::info!("matrix: joined room {room}, an owner's invite");
                }
            }
            Action::Reject { room } => {
                if done(client.leave(room), room, "reject the invite to")? {
                    plumbing::info!("matrix: rejected an invite to room {room}: not from an owner");
                }
            }
            Action::SetUp { room } => {
                // A room not served hears one notice saying so, nothing more: the
                // previews' notice waits for the room to be served again.
                let served = !stops.contains(&room) && !machine.told().stopped.contains(room);
                let may_tell = served && !encrypted.contains(room);
                set_up(client, room, may_tell, previews)?;
            }
            Action::Notice { room, notice } => {
                let (kind, words) = notice_words(*notice);
                let fields = ["notice", room.as_str(), kind, &d.next_batch];
                done(notice_send(client, room, &fields, &words), room, "tell")?;
                match notice {
                    Notice::Stopped { others } => plumbing::warn!(
                        "matrix: room {room} has {others} members (joined or invited) besides the owners and boxmaker, or no owner; it is not served until that changes"
                    ),
                    Notice::Resumed => {
                        plumbing::info!("matrix: room {room} is served again");
                        // What a room not served was not told.
                        set_up(client, room, true, previews)?;
                    }
                    Notice::Encrypted => plumbing::warn!(
                        "matrix: room {room} is encrypted; loopd cannot encrypt and does not serve it"
                    ),
                }
            }
            Action::Line {
                room,
                event_id,
                body,
                ..
            } => lines.push(Line {
                room: room.clone(),
                event: event_id.clone(),
                body: body.clone(),
            }),
        }
    }
    if !lines.is_empty() {
        let (on_disk, wait) = sync_channel(1);
        if !reach.tell(Up::Lines { lines, on_disk }) {
            return Err(Stop::LoopGone);
        }
        if wait.recv_timeout(LINES_ACK_DEADLINE).is_err() {
            plumbing::warn!(
                "matrix: the poll loop did not take a sync's lines within {} s; syncing again from the same position",
                LINES_ACK_DEADLINE.as_secs()
            );
            return Ok(());
        }
    }
    let since = machine.confirm(d);
    if let Err(e) = Position::with_told(since, machine.told(), previews).save(&reach.state_dir) {
        plumbing::error!("matrix: {e}");
    }
    publish(reach, machine, true);
    Ok(())
}

/// Puts the rooms not served into `/status` and tells the loop, which may now send what
/// waited for a room; `confirmed`: a sync of this run was confirmed, so the rooms'
/// members are known.
fn publish(reach: &Reach, machine: &Machine, confirmed: bool) {
    let told = machine.told().clone();
    let mut changed = false;
    set_status(&reach.status, |s| {
        changed =
            s.stopped != told.stopped || s.encrypted != told.encrypted || (confirmed && !s.synced);
        s.stopped = told.stopped;
        s.encrypted = told.encrypted;
        s.synced |= confirmed;
    });
    if changed {
        reach.tell(Up::Rooms);
    }
}

/// Sets `room` up (`previews_off`) unless `previews` says it was, and keeps it there
/// once it is.
fn set_up(
    client: &Client,
    room: &str,
    may_tell: bool,
    previews: &mut BTreeSet<String>,
) -> Result<(), Stop> {
    if previews.contains(room) {
        return Ok(());
    }
    let outcome = previews_off(client, room, may_tell);
    let dealt = matches!(outcome, Ok(true));
    done(outcome, room, "set up")?;
    if dealt {
        previews.insert(room.to_string());
    }
    Ok(())
}

/// URL previews off in a room loopd was invited to; where it lacks the power, one notice
/// saying how the owner turns them off, unless `may_tell` is false (an encrypted room,
/// which gets no text but the notice refusing it). Whether the room is set up: previews
/// off, or the owner told (the caller keeps it so, `Position::previews`; the notice's
/// transaction id is fixed by the room alone, so a crash before that is kept sends it
/// once still).
fn previews_off(client: &Client, room: &str, may_tell: bool) -> Result<bool, Error> {
    match client.disable_previews(room) {
        Ok(_) => Ok(true),
        Err(Error::Forbidden { .. }) if !may_tell => Ok(false),
        Err(Error::Forbidden { .. }) => notice_send(
            client,
            room,
            &["previews", room],
            "loopd: boxmaker may not turn URL previews off in this room. A homeserver that previews a link fetches it, so turn them off yourself: the room's settings, 'URL previews' (or give boxmaker the power to change room settings).",
        )
        .map(|()| true),
        Err(e) => Err(e),
    }
}

fn notice_words(notice: Notice) -> (&'static str, String) {
    match notice {
        Notice::Stopped { others } => (
            "stopped",
            format!(
                "loopd: this room has {others} member{} besides the owners and boxmaker, so boxmaker has stopped here: it takes no message from this room and sends nothing more to it until they have left.",
                if others == 1 { "" } else { "s" }
            ),
        ),
        Notice::Resumed => (
            "resumed",
            "loopd: only the owners and boxmaker are in this room again; boxmaker serves it again.".into(),
        ),
        Notice::Encrypted => (
            "encrypted",
            "loopd: this room is encrypted and boxmaker cannot encrypt yet, so it takes nothing from this room and sends nothing to it. Invite boxmaker to an unencrypted room.".into(),
        ),
    }
}

/// One of loopd's notices, its transaction id fixed by `fields`.
fn notice_send(client: &Client, room: &str, fields: &[&str], words: &str) -> Result<(), Error> {
    let txn = txn_id(fields);
    let content = json!({ "msgtype": "m.notice", "body": words });
    let deadline = Instant::now() + NOTICE_DEADLINE;
    matrix::honouring_rate_limits(deadline, || client.send(room, &txn, &content)).map(|_| ())
}
