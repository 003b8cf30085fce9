//! The channel as plumbing's `Service`: a connection accepted (or refused by its uid), its
//! bytes framed into queued lines with backpressure (`MAX_PENDING_LINES`), its closing,
//! the wake-ups and timers that bring the worker's, the heartbeat's, the reminders' and
//! the rooms' news, a reload of the configuration, and the status line.

use super::lines::{Framer, LineEvent};
use super::reload;
use super::reply::failed;
use super::work::Work;
use super::{Channel, Conn, Queued, MAX_GONE, MAX_PENDING_LINES};
use crate::worker::{Event, Job};
use plumbing::{ConnId, Outbox, Peer, Service};
use proto::config::Config;
use proto::SessionId;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

/// What one framed line becomes in the connection's queue.
fn pending_for(event: LineEvent) -> Queued {
    match event {
        LineEvent::Line(line) => Queued::Line(line, None),
        LineEvent::TooLong => Queued::Error(format!(
            "line over {} bytes; discarded",
            crate::limits::MAX_LINE
        )),
        LineEvent::NotUtf8 => Queued::Error("line is not valid utf-8".into()),
    }
}

impl<W: Work> Service for Channel<W> {
    fn accept(&mut self, out: &mut Outbox, id: ConnId, peer: Peer) {
        let allowed = &self.cfg.channel.allow_uids;
        if !allowed.is_empty() && !allowed.contains(&peer.uid) {
            plumbing::warn!(
                "refusing client {} (uid {}, pid {}): not in channel.allow_uids",
                id.0,
                peer.uid,
                peer.pid
            );
            out.send(
                id,
                failed(format_args!("uid {} may not use this socket", peer.uid)),
            );
            out.close(id);
            return;
        }
        // `new` and `reload` keep only a configuration whose `session` is an id, so
        // this refusal is for a channel built in code with a bad one.
        let session = match SessionId::parse(&self.cfg.session) {
            Ok(session) => session,
            Err(e) => {
                out.send(id, failed(e));
                out.close(id);
                return;
            }
        };
        self.conns.insert(
            id,
            Conn {
                session,
                framer: Framer::default(),
                pending: VecDeque::new(),
                in_flight: None,
                input_closed: false,
                answered: false,
                inbox_checked: false,
                room: false,
                gone: false,
            },
        );
    }

    fn input(&mut self, out: &mut Outbox, id: ConnId, input: &mut Vec<u8>) {
        let Some(conn) = self.conns.get_mut(&id) else {
            // A refused client: nothing it sends is read.
            input.clear();
            return;
        };
        let room = MAX_PENDING_LINES.saturating_sub(conn.pending.len());
        let mut found = Vec::new();
        conn.framer.feed(input, &mut found, room);
        for event in found {
            self.enqueue(id, pending_for(event));
        }
        self.pump(out, id);
    }

    fn input_closed(&mut self, out: &mut Outbox, id: ConnId, rest: &mut Vec<u8>) {
        let Some(conn) = self.conns.get_mut(&id) else {
            rest.clear();
            return out.close(id);
        };
        if let Some(last) = conn.framer.finish(rest) {
            conn.pending.push_back(pending_for(last));
        }
        conn.input_closed = true;
        self.pump(out, id);
    }

    fn wants_input(&self, id: ConnId) -> bool {
        self.conns
            .get(&id)
            .is_none_or(|c| c.pending.len() < MAX_PENDING_LINES)
    }

    fn busy(&self, id: ConnId) -> bool {
        self.conns
            .get(&id)
            .is_some_and(|c| c.in_flight.is_some() || !c.pending.is_empty())
    }

    fn farewell(&self, why: &plumbing::Farewell) -> Vec<u8> {
        failed(why.words("line")).into_bytes()
    }

    fn closed(&mut self, id: ConnId, left: plumbing::Left) {
        self.mail_closed(id, left == plumbing::Left::Unwritten);
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        // Lines loopd read are lines the client sent: its going away cancels none of
        // them, as it does not cancel the turn in flight. They run in turn; only the
        // error blocks meant for the client itself go with it.
        conn.pending.retain(|q| matches!(q, Queued::Line(..)));
        if conn.pending.is_empty() {
            self.conns.remove(&id);
            return;
        }
        let lines = conn.pending.len();
        let gone = self.conns.values().filter(|c| c.gone).count();
        if gone >= MAX_GONE {
            // Said in the journal only: a note a departure would let a flood of them
            // write the session's log without bound.
            if let Some(conn) = self.conns.remove(&id) {
                plumbing::warn!(
                    "session {}: client {} went away with {lines} lines read and not yet run; {MAX_GONE} departed clients' lines wait already, so these are not run",
                    conn.session,
                    id.0
                );
            }
            return;
        }
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        conn.gone = true;
        conn.inbox_checked = true;
        plumbing::info!(
            "session {}: client {} went away with {lines} lines read and not yet run; those that act (a message, /compact, /remind …) run in turn",
            conn.session,
            id.0
        );
    }

    fn drained(&mut self, _out: &mut Outbox, id: ConnId) {
        self.mail_drained(id);
    }

    fn wake(&mut self, out: &mut Outbox) {
        while let Ok(event) = self.events.try_recv() {
            match event {
                Event::Heartbeat(beat) => self.heartbeat_ended(out, beat),
                Event::Waiting(what) => self.waiting_changed(out, what),
                Event::Redact(events, asked_by) => self.matrix_redact(&events, asked_by.as_deref()),
                other => self.on_event(out, other),
            }
        }
        // The worker may have gone idle, which a waiting heartbeat is waiting for.
        self.heartbeat_poll(Instant::now());
        // A notify command may have ended, which a message waiting its turn waits for.
        self.notify_pump();
        // The Matrix threads' news, and what was rendered for rooms.
        self.matrix_wake(out);
    }

    fn deadline(&self) -> Option<Instant> {
        // A client gone with lines waiting and nothing in flight: `timer` starts them.
        if self
            .conns
            .values()
            .any(|c| c.gone && c.in_flight.is_none() && !c.pending.is_empty())
        {
            // Already past, so the loop's `now` is at or after it: `Instant::now()` here
            // would be later than that `now`, never due, and the loop would spin.
            return Some(self.mail.born);
        }
        [
            self.heartbeat.deadline(&self.cfg),
            self.reminders_deadline(),
            self.unsaved_deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn timer(&mut self, out: &mut Outbox, now: Instant) {
        let stalled: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| c.gone && c.in_flight.is_none())
            .map(|(&id, _)| id)
            .collect();
        for id in stalled {
            self.pump(out, id);
        }
        self.heartbeat_poll(now);
        self.write_unsaved(now);
        self.reminders_due(out);
        self.rooms_flush(out);
    }

    type ReloadError = reload::ReloadError;

    fn reload(&mut self) -> Result<(), reload::ReloadError> {
        use reload::ReloadError;
        let mut cfg = Config::load(&self.config_path, plumbing::bounded::read_text)
            .map_err(ReloadError::Config)?;
        conversation::prompts::check(&cfg).map_err(ReloadError::Prompt)?;
        if cfg.state_dir != self.cfg.state_dir {
            // loopd holds the lock of the directory it started with, and its reminders,
            // inbox and Matrix files were read from there: another one is taken only at
            // the next start (docs/config.md, 'Top-level keys').
            plumbing::warn!(
                "state_dir: a changed state directory ({}) takes effect at loopd's next start; {} stays in use",
                cfg.state_dir.display(),
                self.cfg.state_dir.display()
            );
            cfg.state_dir = self.cfg.state_dir.clone();
        }
        SessionId::parse(&cfg.session).map_err(ReloadError::Session)?;
        let cfg = Arc::new(cfg);
        if !self.worker.submit(Job::Reload(Arc::clone(&cfg))) {
            return Err(ReloadError::WorkerStopped);
        }
        self.heartbeat.reloaded(&self.cfg, &cfg, Instant::now());
        if cfg.matrix != self.cfg.matrix {
            plumbing::warn!("matrix: a changed [matrix] table takes effect at loopd's next start");
        }
        self.matrix_hangup();
        self.cfg = cfg;
        Ok(())
    }

    fn status(&self) -> String {
        let line = self
            .board
            .status_line(&self.cfg.session, self.cfg.expect.n_ctx);
        match &self.rooms {
            Some(rooms) => format!("{line}; matrix: {}", rooms.state()),
            None => line,
        }
    }
}
