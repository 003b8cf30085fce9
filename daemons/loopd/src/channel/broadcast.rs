//! Replies nobody asked for (docs/channel.md, docs/honcho.md): a heartbeat's block goes to every client of its
//! session, but only between reply blocks, as a block of its own. A client waiting on or
//! streaming a reply gets it right after that block ends, before its next line starts.
//! Clients that half-closed their input are left out: they are scripts waiting for the
//! replies to the lines they sent, and an extra block would break their pairing of lines
//! and blocks.
//!
//! This file also holds the channel's side of the heartbeat: asking the schedule on the
//! timer and whenever the worker may have gone idle, submitting the beat, and delivering
//! what it came to (rendered by `unasked`).

use super::work::Work;
use super::Channel;
use crate::heartbeat::beat::Beat;
use crate::heartbeat::{hours, Schedule, Settings};
use crate::worker::Job;
use plumbing::{ConnId, Outbox};
use proto::config::Config;
use proto::SessionId;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

/// Unasked-for blocks held for one client while it is inside a reply block. Only a beat
/// that ended while the client's own line waited behind it is normally held, so this is
/// far above need; past it the oldest is dropped (and logged) rather than letting a client
/// stuck in one block pile up replies.
pub const MAX_HELD: usize = 16;

/// Blocks held for clients that were inside a reply block when they came.
#[derive(Default)]
pub struct Held {
    blocks: HashMap<ConnId, VecDeque<Arc<str>>>,
}

impl Held {
    pub fn hold(&mut self, id: ConnId, block: Arc<str>) {
        let queue = self.blocks.entry(id).or_default();
        if queue.len() >= MAX_HELD {
            queue.pop_front();
            plumbing::warn!(
                "client {}: more than {MAX_HELD} heartbeat replies held; dropped the oldest",
                id.0
            );
        }
        queue.push_back(block);
    }

    /// Sends what was held for `id`; call only when it is between reply blocks.
    pub fn release(&mut self, out: &mut Outbox, id: ConnId) {
        if let Some(queue) = self.blocks.remove(&id) {
            for block in queue {
                out.send(id, block.as_bytes());
            }
        }
    }

    pub fn forget(&mut self, id: ConnId) {
        self.blocks.remove(&id);
    }
}

/// The heartbeat schedule for `cfg`, beating in `session` (the configured default).
pub fn schedule(cfg: &Config, session: SessionId) -> Schedule {
    Schedule::new(Settings::of(cfg, session), Instant::now())
}

impl<W: Work> Channel<W> {
    /// Starts a beat if one is due and the worker is idle.
    pub(super) fn heartbeat_poll(&mut self, now: Instant) {
        let idle = self.worker.idle();
        let Some(session) = self.heartbeat.poll(now, idle, hours::local_minutes) else {
            return;
        };
        if !self.worker.submit(Job::Heartbeat { session }) {
            plumbing::error!("heartbeat: the turn worker has stopped; restart loopd");
            self.heartbeat.ended(now);
        }
    }

    /// A beat ended on the worker: deliver it if it has something to say, rendered once
    /// into the block every client of the session gets.
    pub(super) fn heartbeat_ended(&mut self, out: &mut Outbox, beat: Beat) {
        self.heartbeat.ended(Instant::now());
        let Beat::Deliver { session, reply } = beat else {
            return;
        };
        let block: Arc<str> = super::unasked::render(&reply).into();
        let mut sent = 0;
        for (&id, conn) in &self.conns {
            if conn.session != session || conn.input_closed {
                continue;
            }
            if conn.in_flight.is_some() {
                // Held blocks share the one copy; each client's own output buffer gets its
                // copy only when the block is sent.
                self.held.hold(id, Arc::clone(&block));
            } else {
                out.send(id, block.as_bytes());
            }
            sent += 1;
        }
        plumbing::info!("session {session}: heartbeat reply for {sent} connected clients");
    }

    pub(super) fn heartbeat_reload(&mut self, cfg: &Config, session: SessionId) {
        self.heartbeat
            .reconfigure(Settings::of(cfg, session), Instant::now());
    }
}
