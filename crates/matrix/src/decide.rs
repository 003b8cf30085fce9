//! What to do about a sync, decided without I/O (docs/matrix.md, 'Decisions'). The
//! caller syncs, asks [`Machine::needs`] what more to read (members of rooms the machine
//! does not know yet, gaps the homeserver left), reads it, and gets from
//! [`Machine::decide`] the actions: owner lines to take, invites to accept or reject,
//! notices to send, rooms to set up. Only after it has done them, the lines' records on
//! disk, does it call [`Machine::confirm`], which gives the position to save; until then
//! the next sync starts where the last confirmed one ended, so a crash anywhere between
//! brings the same events again (loopd keeps each taken event's id in its record and takes
//! none twice).

use crate::event::{Event, Kind, Membership};
use crate::sync::{apply_members, Sync};
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};

/// Event ids taken recently, kept so that an event a gap's fill and a timeline both hold,
/// or a homeserver sends again after a confirmed sync, is taken once within a run. Across
/// a restart, and for a round brought again before `confirm`, loopd's records are the
/// memory; this bounds the in-memory one to what a few syncs can hold again.
pub const RECENT_TAKEN: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// An owner's `m.text`: a line for loopd, exactly as typed.
    Line {
        room: String,
        event_id: String,
        sender: String,
        body: String,
        ts: u64,
    },
    /// Accept the invite: its sender is an owner.
    Accept { room: String },
    /// Reject the invite: its sender is not an owner (or unknown).
    Reject { room: String },
    /// A room loopd is in for the first time this run: turn URL previews off there.
    SetUp { room: String },
    /// Send loopd's one notice about the room's state.
    Notice { room: String, notice: Notice },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// The room has members (joined or invited) besides the owners and loopd: it is no
    /// longer served.
    Stopped { others: usize },
    /// The others have left: the room is served again.
    Resumed,
    /// The room is encrypted: loopd takes nothing from it and sends nothing more there.
    Encrypted,
}

/// What more a sync needs read before it can be decided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    /// Rooms whose joined members the machine does not know (`/joined_members`).
    pub members: Vec<String>,
    /// Gaps to fill from `/messages`, backwards from `from` to `to`.
    pub gaps: Vec<Gap>,
    /// The owners: a gap's messages from anyone else are only counted, so their text
    /// need not be kept while the gap is read.
    pub owners: BTreeSet<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    pub room: String,
    pub from: String,
    pub to: String,
}

/// What the caller read for [`Needs`]: each room's joined members, and each gap's events
/// in the order they happened (oldest first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extra {
    pub members: BTreeMap<String, Vec<String>>,
    pub gaps: BTreeMap<String, Vec<Event>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decision {
    pub actions: Vec<Action>,
    /// The position after this sync, saved once `confirm` says so.
    pub next_batch: String,
    /// Messages from accounts that are neither an owner nor loopd (counted, never read).
    pub strangers: u64,
    /// Owner messages in a room not served (others in it, or encrypted): not taken.
    pub unserved: u64,
    /// Owner messages from before loopd first synced or joined the room: not taken.
    pub history: u64,
    /// Events left out as unreadable.
    pub unreadable: usize,
    /// What the machine knows once this decision is confirmed.
    state: State,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Room {
    members: BTreeSet<String>,
    /// The members were never read (the caller did not do what `needs` asked): nothing
    /// is taken from the room until they are.
    unknown: bool,
    encrypted: bool,
    /// The notices already sent for the room's state.
    stopped: bool,
    encrypted_told: bool,
    /// Others who joined during the decision being made (cleared at its start): one who
    /// joined and left within one sync is told of too.
    visitors: BTreeSet<String>,
}

/// The rooms' told states, for the caller to keep across a restart so a notice is not
/// sent again (`Machine::restore`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Told {
    pub stopped: BTreeSet<String>,
    pub encrypted: BTreeSet<String>,
}

pub struct Machine {
    me: String,
    owners: BTreeSet<String>,
    since: Option<String>,
    state: State,
}

/// What the machine knows, as of the last confirmed sync. A decision works on a copy,
/// which `confirm` makes the machine's: a round the caller could not finish (a join that
/// failed, a crash before the records) leaves the machine where it was, so the same sync
/// brought again is decided the same way, its lines and notices asked for again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct State {
    rooms: BTreeMap<String, Room>,
    taken: HashSet<String>,
    taken_order: VecDeque<String>,
    told: Told,
}

impl Machine {
    /// A machine for the account `me` serving `owners` (full user ids, compared exactly),
    /// starting from the saved position `since` (none: the first run).
    pub fn new(me: &str, owners: &[String], since: Option<String>) -> Machine {
        Machine {
            me: me.to_string(),
            owners: owners.iter().cloned().collect(),
            since,
            state: State::default(),
        }
    }

    /// The notices sent before a restart (kept by the caller): not sent again.
    pub fn restore(&mut self, told: Told) {
        self.state.told = told;
    }

    pub fn told(&self) -> &Told {
        &self.state.told
    }

    /// The position the next sync starts from: the last confirmed one.
    pub fn since(&self) -> Option<&str> {
        self.since.as_deref()
    }

    /// Whether `room` is served now (`None`: not a room the machine knows).
    pub fn served(&self, room: &str) -> Option<bool> {
        self.state
            .rooms
            .get(room)
            .map(|r| !r.encrypted && !r.unknown && self.only_owners(&r.members))
    }

    /// Served members: an owner is joined, and nobody but owners and loopd. A room every
    /// owner has left is no way to reach them, so it is not served.
    fn only_owners(&self, members: &BTreeSet<String>) -> bool {
        members.iter().any(|m| self.owners.contains(m))
            && members
                .iter()
                .all(|m| *m == self.me || self.owners.contains(m))
    }

    /// What `sync` needs read before `decide`.
    pub fn needs(&self, sync: &Sync) -> Needs {
        let mut needs = Needs {
            owners: self.owners.clone(),
            ..Needs::default()
        };
        for room in &sync.joined {
            // After a first sync the state block holds only what changed: a room the
            // machine does not know needs its members read, or a stranger who joined
            // long ago would go unseen.
            let unknown = match self.state.rooms.get(&room.room_id) {
                None => self.since.is_some(),
                Some(r) => r.unknown,
            };
            if unknown {
                needs.members.push(room.room_id.clone());
            }
            if let (true, Some(since), Some(from)) =
                (room.limited, self.since.as_ref(), room.prev_batch.as_ref())
            {
                if own_membership_at(&room.timeline, &self.me).is_none() {
                    needs.gaps.push(Gap {
                        room: room.room_id.clone(),
                        from: from.clone(),
                        to: since.clone(),
                    });
                }
            }
        }
        needs
    }

    /// Decides what `sync` asks for, with what `needs` asked read in `extra`. The machine
    /// itself moves on only at `confirm`.
    pub fn decide(&mut self, sync: &Sync, extra: &Extra) -> Decision {
        let before = self.state.clone();
        let mut d = self.decide_in_place(sync, extra);
        d.state = std::mem::replace(&mut self.state, before);
        d
    }

    fn decide_in_place(&mut self, sync: &Sync, extra: &Extra) -> Decision {
        let mut d = Decision {
            next_batch: sync.next_batch.clone(),
            unreadable: sync.unreadable,
            ..Decision::default()
        };
        for room in &sync.left {
            self.state.rooms.remove(room);
        }
        for inv in &sync.invited {
            let from_owner = inv
                .inviter
                .as_ref()
                .is_some_and(|s| self.owners.contains(s));
            d.actions.push(if from_owner {
                Action::Accept {
                    room: inv.room_id.clone(),
                }
            } else {
                Action::Reject {
                    room: inv.room_id.clone(),
                }
            });
        }
        let first_sync = self.since.is_none();
        for room in &sync.joined {
            let id = &room.room_id;
            let new = !self.state.rooms.contains_key(id);
            let mut r = self.state.rooms.remove(id).unwrap_or_default();
            // A first sync's state block is the whole room before its timeline; later
            // ones hold only changes, so the members read now come first
            // (docs/matrix.md, 'Decisions'). Members never read leave the room unknown,
            // and an unknown room is not served until they are.
            let gap = extra.gaps.get(id).map(Vec::as_slice).unwrap_or(&[]);
            if let Some(m) = extra.members.get(id) {
                // The members read are the room now, after the timeline: each event is
                // judged by the room as it was at its point in the timeline, so the
                // membership changes of the timeline and the gap are undone, newest
                // first, to give the room where the gap (or the timeline) begins.
                r.members = m.iter().cloned().collect();
                undo_members(&mut r.members, &room.timeline);
                undo_members(&mut r.members, gap);
                r.unknown = false;
            } else if new && !first_sync {
                r.unknown = true;
            }
            // A new room is set up once its state is known (below): an encrypted room
            // gets no set-up, whose notice would be plain text beyond the one it is told.
            let set_up_at = new.then_some(d.actions.len());
            if new {
                r.stopped = self.state.told.stopped.contains(id);
                r.encrypted_told = self.state.told.encrypted.contains(id);
            }
            // A gap's events come first, judged by the room as it was at the position the
            // sync started from; the state block is the room after them (where the
            // timeline starts), so it is applied between: a gap cut short still ends with
            // the right members. In a room joined in this very sync, what came before
            // loopd's invite or join is history, not lines for it.
            r.visitors.clear();
            for e in gap {
                self.event(id, &mut r, e, first_sync, &mut d);
            }
            apply_members(&mut r.members, &room.state);
            if room.state.iter().any(|e| e.kind == Kind::Encryption) {
                r.encrypted = true;
            }
            let start = own_membership_at(&room.timeline, &self.me);
            for (i, e) in room.timeline.iter().enumerate() {
                let before_join = start.is_some_and(|s| i < s);
                self.event(id, &mut r, e, first_sync || before_join, &mut d);
            }
            if let (Some(at), false) = (set_up_at, r.encrypted) {
                d.actions.insert(at, Action::SetUp { room: id.clone() });
            }
            self.tell(id, &mut r, &mut d);
            self.state.rooms.insert(id.clone(), r);
        }
        d
    }

    fn event(&mut self, room: &str, r: &mut Room, e: &Event, history: bool, d: &mut Decision) {
        match &e.kind {
            Kind::Member {
                user, membership, ..
            } => {
                if !history
                    && matches!(membership, Membership::Join | Membership::Invite)
                    && *user != self.me
                    && !self.owners.contains(user)
                {
                    r.visitors.insert(user.clone());
                }
                apply_members(&mut r.members, std::slice::from_ref(e));
                return;
            }
            Kind::Encryption => {
                r.encrypted = true;
                return;
            }
            _ => {}
        }
        if e.sender == self.me {
            return;
        }
        if !self.owners.contains(&e.sender) {
            if matches!(
                e.kind,
                Kind::Text { .. }
                    | Kind::Notice
                    | Kind::Edit { .. }
                    | Kind::OtherMessage
                    | Kind::Encrypted
            ) {
                d.strangers += 1;
            }
            return;
        }
        let Kind::Text { body } = &e.kind else {
            // Notices, edits, images and what loopd cannot read are not lines.
            return;
        };
        if history {
            d.history += 1;
            return;
        }
        if r.encrypted || r.unknown || !self.only_owners(&r.members) {
            d.unserved += 1;
            return;
        }
        if !self.remember(&e.event_id) {
            return;
        }
        d.actions.push(Action::Line {
            room: room.to_string(),
            event_id: e.event_id.clone(),
            sender: e.sender.clone(),
            body: body.clone(),
            ts: e.ts,
        });
    }

    /// The one notice when a room stops or starts being served, or turns out encrypted.
    /// A room every owner has left stops being served without a notice (nobody is there
    /// to read it), and is told `Resumed` when an owner is back. Others who joined and
    /// left again within the sync are told of all the same: `Stopped`, then `Resumed`.
    fn tell(&mut self, id: &str, r: &mut Room, d: &mut Decision) {
        if r.unknown {
            return;
        }
        if r.encrypted {
            if !r.encrypted_told {
                r.encrypted_told = true;
                self.state.told.encrypted.insert(id.to_string());
                d.actions.push(Action::Notice {
                    room: id.to_string(),
                    notice: Notice::Encrypted,
                });
            }
            return;
        }
        let others = r
            .members
            .iter()
            .filter(|m| **m != self.me && !self.owners.contains(*m))
            .count();
        let owner_in = r.members.iter().any(|m| self.owners.contains(m));
        let visited = r
            .visitors
            .iter()
            .filter(|v| !r.members.contains(*v))
            .count();
        if others == 0 && owner_in && visited > 0 && !r.stopped {
            d.actions.push(Action::Notice {
                room: id.to_string(),
                notice: Notice::Stopped { others: visited },
            });
            d.actions.push(Action::Notice {
                room: id.to_string(),
                notice: Notice::Resumed,
            });
        } else if (others > 0 || !owner_in) && !r.stopped {
            r.stopped = true;
            self.state.told.stopped.insert(id.to_string());
            if others > 0 {
                d.actions.push(Action::Notice {
                    room: id.to_string(),
                    notice: Notice::Stopped { others },
                });
            }
        } else if others == 0 && owner_in && r.stopped {
            r.stopped = false;
            self.state.told.stopped.remove(id);
            d.actions.push(Action::Notice {
                room: id.to_string(),
                notice: Notice::Resumed,
            });
        }
    }

    /// Notes `id` as taken; false when it already was.
    fn remember(&mut self, id: &str) -> bool {
        if !self.state.taken.insert(id.to_string()) {
            return false;
        }
        self.state.taken_order.push_back(id.to_string());
        while self.state.taken_order.len() > RECENT_TAKEN {
            if let Some(old) = self.state.taken_order.pop_front() {
                self.state.taken.remove(&old);
            }
        }
        true
    }

    /// The caller has done `d`'s actions and the records of its lines are on disk: the
    /// next sync starts after it. Returns the position to save.
    pub fn confirm(&mut self, d: &Decision) -> String {
        self.state = d.state.clone();
        self.since = Some(d.next_batch.clone());
        d.next_batch.clone()
    }
}

/// Undoes the membership changes of `events` from `members`, newest first: each user's
/// membership goes back to the one before the event (`unsigned.prev_content`). When the
/// homeserver did not say, a `join`, `invite` or `knock` was the user's first membership,
/// and a `leave` or `ban` followed a `join`: wrong only for one never joined, and then on
/// the side of a room not served.
fn undo_members(members: &mut BTreeSet<String>, events: &[Event]) {
    for e in events.iter().rev() {
        if let Kind::Member {
            user,
            membership,
            was,
        } = &e.kind
        {
            let joined = match was {
                Some(w) => matches!(w, Membership::Join | Membership::Invite),
                None => matches!(membership, Membership::Leave | Membership::Ban),
            };
            if joined {
                members.insert(user.clone());
            } else {
                members.remove(user);
            }
        }
    }
}

/// The index of loopd's own invite or joining in `timeline`, the earliest: in a room
/// joined in this sync, the events before it are history. A `join` after a `join` (a
/// display name changed) is not a joining.
fn own_membership_at(timeline: &[Event], me: &str) -> Option<usize> {
    timeline.iter().position(|e| match &e.kind {
        Kind::Member {
            user,
            membership,
            was,
        } if user == me => match membership {
            Membership::Invite => true,
            Membership::Join => *was != Some(Membership::Join),
            _ => false,
        },
        _ => false,
    })
}
