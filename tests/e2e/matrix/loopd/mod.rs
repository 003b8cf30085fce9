//! loopd's Matrix channel against a real Synapse (docs/matrix.md, 'The channel in
//! loopd'): loopd started with `[matrix]` pointing at the shared homeserver, the owner's
//! phone a second account, the scripted llama.cpp stand-in as the model. Every wait is
//! the phone's long-poll sync or loopd's socket answering, each with a deadline.

mod allow;
mod conversation;
mod crash;
mod forget;
mod kinds;
mod recall;
mod review;
mod unasked;

#[cfg(feature = "bench")]
mod bench;

use crate::loopd::{write_config, Loopd, N_CTX};
use crate::matrix::WITHIN;
use crate::support::standin::Standin;
use crate::support::synapse::{shared, Cast, Synapse};
use crate::support::{Daemon, Fixture};
use serde_json::Value;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How loopd's notice about URL previews it could not turn off starts.
const PREVIEWS: &str = "loopd: boxmaker may not turn URL previews off";

/// The most pages `history` reads: 10 000 events, far past any test's room.
const MAX_HISTORY_PAGES: usize = 100;

/// The phone's long-poll: it returns as soon as anything new arrives in its rooms.
const PHONE_POLL: Duration = Duration::from_secs(5);

/// A loopd serving one room of the owner's, and the phone that made it.
pub struct Boxed {
    pub l: Loopd,
    pub syn: &'static Synapse,
    pub cast: Cast,
    pub room: String,
    pub token_file: PathBuf,
    phone: ::matrix::Client,
    since: Option<String>,
}

impl Boxed {
    /// loopd with `[matrix]` on (and `extra` in that table), a room the phone made and
    /// boxmaker joined. `None` when Synapse is not installed (the test is skipped).
    pub fn start(test: &str, extra: &str) -> Option<Boxed> {
        Boxed::start_on(shared()?, test, extra)
    }

    /// `start` against `syn` (a homeserver of the test's own, to stop and start again).
    pub fn start_on(syn: &'static Synapse, test: &str, extra: &str) -> Option<Boxed> {
        let cast = syn.cast(test);
        let fx = Fixture::new("");
        let llama = Standin::start(N_CTX);
        let token_file = fx.path().join("matrix-token");
        std::fs::write(&token_file, format!("{}\n", cast.boxmaker.token)).unwrap();
        let table = format!(
            "[matrix]\nhomeserver = {:?}\nuser_id = {:?}\ntoken_file = {:?}\nowners = [{:?}]\n{extra}\n",
            syn.url, cast.boxmaker.user_id, token_file, cast.phone.user_id
        );
        write_config(&fx, &llama.url, "retries = 2", "", &table);
        let daemon = Daemon::start("loopd", &fx);
        let l = Loopd { fx, llama, daemon };
        let phone = syn.client(&cast.phone);
        let room = syn.create_room(&cast.phone, &[&cast.boxmaker]);
        let mut b = Boxed {
            l,
            syn,
            cast,
            room,
            token_file,
            phone,
            since: None,
        };
        let me = b.cast.boxmaker.user_id.clone();
        b.wait("boxmaker joins the room", |e| {
            e["type"] == "m.room.member"
                && e["state_key"] == me.as_str()
                && e["content"]["membership"] == "join"
        });
        // The phone's room gives boxmaker no power to set state: it says how to turn URL
        // previews off instead, once (docs/matrix.md).
        b.wait("the notice about URL previews", |e| {
            e["sender"] == me.as_str() && said(e).1.starts_with(PREVIEWS)
        });
        Some(b)
    }

    /// Kills loopd (`SIGKILL`, if it still runs) and starts it again on the same state
    /// with `env` set, waiting for `READY=1`.
    pub fn restart_with(&mut self, env: &[(&str, &str)]) {
        let _ = self.l.daemon.child.kill();
        let _ = self.l.daemon.child.wait();
        let mut cmd = Daemon::command("loopd", &self.l.fx);
        for (k, v) in env {
            cmd.env(k, v);
        }
        self.l.daemon = Daemon::spawn(cmd, &self.l.fx);
        self.l.daemon.ready();
    }

    /// The phone sends `body`; returns its event id.
    pub fn say(&self, body: &str) -> String {
        self.syn.say(&self.cast.phone, &self.room, body)
    }

    /// The room's events, oldest first (the newest 100).
    pub fn events(&self) -> Vec<Value> {
        self.syn.events(&self.cast.phone, &self.room)
    }

    /// Every event of the room, oldest first, page by page (for a count past 100).
    pub fn history(&self) -> Vec<Value> {
        let mut all = Vec::new();
        let mut from: Option<String> = None;
        for _ in 0..MAX_HISTORY_PAGES {
            let mut path = format!(
                "/_matrix/client/v3/rooms/{}/messages?dir=b&limit=100",
                crate::support::synapse::matrix_seg(&self.room)
            );
            if let Some(f) = &from {
                path.push_str(&format!("&from={}", crate::support::synapse::matrix_seg(f)));
            }
            let page = self
                .syn
                .as_user(&self.cast.phone, "GET", &path, None)
                .unwrap();
            let chunk = page["chunk"].as_array().cloned().unwrap_or_default();
            if chunk.is_empty() {
                break;
            }
            all.extend(chunk);
            match page["end"].as_str() {
                Some(end) => from = Some(end.to_string()),
                None => break,
            }
        }
        all.reverse();
        all
    }

    /// boxmaker's messages in the room, oldest first, past its notice about URL previews.
    pub fn box_says(&self) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| {
                e["sender"] == self.cast.boxmaker.user_id.as_str()
                    && e["type"] == "m.room.message"
                    && !said(e).1.starts_with(PREVIEWS)
            })
            .collect()
    }

    /// Waits (on the phone's long-poll) until the room holds an event `want` accepts;
    /// returns it.
    pub fn wait(&mut self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        let (room, who) = (self.room.clone(), self.cast.phone.clone());
        self.wait_in(&room, &who, what, want)
    }

    /// `wait` in another `room`, as `who` sees it (the phone's long-poll still paces it).
    pub fn wait_in(
        &mut self,
        room: &str,
        who: &crate::support::synapse::Account,
        what: &str,
        want: impl Fn(&Value) -> bool,
    ) -> Value {
        self.poll(what, |b| {
            b.syn.events(who, room).into_iter().find(|e| want(e))
        })
    }

    /// Waits (on the phone's long-poll) until `done` holds of the room.
    pub fn wait_until(&mut self, what: &str, done: impl Fn(&Boxed) -> bool) {
        self.poll(what, |b| done(b).then_some(()))
    }

    /// What `found` finds, asked again after each of the phone's long-polls, within
    /// `WITHIN`; past it the test fails showing the room and loopd's log.
    fn poll<T>(&mut self, what: &str, found: impl Fn(&Boxed) -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            if let Some(t) = found(self) {
                return t;
            }
            assert!(
                start.elapsed() < WITHIN,
                "{what}: not within {WITHIN:?}; the room holds {:#?}\nloopd's log:\n{}",
                self.events(),
                self.l.daemon.log_text()
            );
            match self.phone.sync(self.since.as_deref(), PHONE_POLL, 10) {
                Ok(s) => self.since = Some(s.next_batch),
                Err(e) => panic!("{what}: the phone's sync failed: {e}"),
            }
        }
    }

    /// The owner makes boxmaker a moderator of the room (power 50), so it may redact the
    /// owner's events too.
    pub fn make_moderator(&mut self) {
        let path = format!(
            "/_matrix/client/v3/rooms/{}/state/m.room.power_levels/",
            crate::support::synapse::matrix_seg(&self.room)
        );
        let mut levels = self
            .syn
            .as_user(&self.cast.phone, "GET", &path, None)
            .unwrap();
        levels["users"][self.cast.boxmaker.user_id.as_str()] = 50.into();
        self.syn
            .as_user(&self.cast.phone, "PUT", &path, Some(levels))
            .unwrap();
    }

    /// Waits for boxmaker's `n`th message (counting from 1) in the room; returns them all.
    pub fn wait_box(&mut self, what: &str, n: usize) -> Vec<Value> {
        let me = self.cast.boxmaker.user_id.clone();
        let room_events = |b: &Boxed| b.box_says().len();
        let start = Instant::now();
        while room_events(self) < n {
            let _ = &me;
            assert!(
                start.elapsed() < WITHIN,
                "{what}: boxmaker's message {n} not within {WITHIN:?}; the room holds {:#?}\nloopd's log:\n{}",
                self.events(),
                self.l.daemon.log_text()
            );
            match self.phone.sync(self.since.as_deref(), PHONE_POLL, 10) {
                Ok(s) => self.since = Some(s.next_batch),
                Err(e) => panic!("{what}: the phone's sync failed: {e}"),
            }
        }
        self.box_says()
    }
}

/// An event's `msgtype` and `body`.
pub fn said(e: &Value) -> (String, String) {
    (
        e["content"]["msgtype"].as_str().unwrap_or("").to_string(),
        e["content"]["body"].as_str().unwrap_or("").to_string(),
    )
}
