//! The Matrix client library (`crates/matrix`, docs/matrix.md) against a real Synapse on
//! loopback: invites, exactly once in across a restart of the client and of the
//! homeserver, the same transaction id as one event, redaction, typing, room state, a 429
//! waited out, a revoked token. The tests share one Synapse (`support::synapse::shared`),
//! each with accounts of its own; the one that stops the homeserver has its own. Every
//! wait is a long-poll sync with a deadline, never a sleep.

mod exactly_once;
mod faults;
mod loopd;
mod rooms;

#[cfg(feature = "bench")]
mod bench;

use crate::support::synapse::{Account, Cast, Synapse};
use ::matrix::decide::{Action, Decision, Machine};
use ::matrix::{read_needs, Client};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The long-poll of one sync in these tests: a sync returns as soon as something arrives,
/// so this only bounds an idle wait.
pub const POLL: Duration = Duration::from_secs(5);

/// How long a test waits for what it expects before failing as hung.
pub const WITHIN: Duration = crate::support::HANG;

/// The library driven as loopd will drive it: sync from the saved position, read what the
/// decision needs, decide, do the actions (accept, reject, previews off), write the lines
/// taken to a records file (the user records' stand-in), and only then save the position.
pub struct Driver {
    pub client: Client,
    pub machine: Machine,
    position: PathBuf,
    records: PathBuf,
    /// Sync with at most this many timeline events a room (small in the gap test);
    /// `None`: the library's own round (`matrix::next`).
    pub timeline_limit: Option<u64>,
}

/// A line the driver took, as its record holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    pub event_id: String,
    pub body: String,
}

impl Driver {
    /// A driver for `account` whose position and records live in `dir`; a saved position
    /// there is where it starts (a restart of the client).
    pub fn open(syn: &Synapse, account: &Account, owners: &[&Account], dir: &Path) -> Driver {
        let position = dir.join("position");
        let since = std::fs::read_to_string(&position).ok();
        let owners: Vec<String> = owners.iter().map(|a| a.user_id.clone()).collect();
        Driver {
            client: syn.client(account),
            machine: Machine::new(&account.user_id, &owners, since),
            position,
            records: dir.join("records"),
            timeline_limit: None,
        }
    }

    /// One round; with `save` false it stops after writing the records, as a crash before
    /// the position is saved would.
    pub fn round_with(&mut self, save: bool) -> Result<Decision, ::matrix::Error> {
        let d = match self.timeline_limit {
            None => ::matrix::next(&self.client, &mut self.machine, POLL)?.decision,
            Some(limit) => {
                let sync = self.client.sync(self.machine.since(), POLL, limit)?;
                let needs = self.machine.needs(&sync);
                let filled = read_needs(&self.client, &needs)?;
                self.machine.decide(&sync, &filled.extra)
            }
        };
        for a in &d.actions {
            match a {
                Action::Accept { room } => self.client.join(room)?,
                Action::Reject { room } => self.client.leave(room)?,
                // Without the power to set it loopd tells the owner how (docs/matrix.md,
                // 'Decisions'); the library's part is the typed refusal.
                Action::SetUp { room } => match self.client.disable_previews(room) {
                    Ok(_) | Err(::matrix::Error::Forbidden { .. }) => {}
                    Err(e) => return Err(e),
                },
                Action::Line { event_id, body, .. } => {
                    use std::io::Write;
                    let mut f = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&self.records)
                        .unwrap();
                    let line = serde_json::json!({"event": event_id, "body": body});
                    writeln!(f, "{line}").unwrap();
                    f.sync_all().unwrap();
                }
                Action::Notice { .. } => {}
            }
        }
        if save {
            let pos = self.machine.confirm(&d);
            let tmp = self.position.with_extension("tmp");
            std::fs::write(&tmp, pos).unwrap();
            std::fs::rename(&tmp, &self.position).unwrap();
        }
        Ok(d)
    }

    pub fn round(&mut self) -> Decision {
        self.round_with(true).unwrap()
    }

    /// The lines taken so far, from the records file (every run's).
    pub fn taken(&self) -> Vec<Taken> {
        std::fs::read_to_string(&self.records)
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                Taken {
                    event_id: v["event"].as_str().unwrap().to_string(),
                    body: v["body"].as_str().unwrap().to_string(),
                }
            })
            .collect()
    }

    /// Syncs until `done` holds for the decisions so far, or fails after [`WITHIN`].
    pub fn until(
        &mut self,
        what: &str,
        mut done: impl FnMut(&Driver, &[Decision]) -> bool,
    ) -> Vec<Decision> {
        let deadline = Instant::now() + WITHIN;
        let mut all = Vec::new();
        loop {
            if done(self, &all) {
                return all;
            }
            assert!(Instant::now() < deadline, "{what}: not within {WITHIN:?}");
            all.push(self.round());
        }
    }
}

/// The phone makes a room, invites boxmaker, and the driver syncs until boxmaker is in it.
pub fn owners_room(syn: &Synapse, cast: &Cast, d: &mut Driver) -> String {
    let room = syn.create_room(&cast.phone, &[&cast.boxmaker]);
    let phone = syn.client(&cast.phone);
    d.until("boxmaker joins the owner's room", |_, _| {
        members(&phone, &room).contains(&cast.boxmaker.user_id)
    });
    room
}

/// The joined members of `room` as `client` sees them.
pub fn members(client: &Client, room: &str) -> Vec<String> {
    client.joined_members(room).unwrap()
}
