//! The poll loop every daemon runs, in the shape of mio's `tcp_server.rs`: one `Poll`,
//! fixed tokens for the listener, the signal pipe and the waker, and a map from token to
//! connection for everything else. The daemon's own logic is a `Service`; it never touches
//! a socket, it only reads bytes handed to it and queues bytes in an `Outbox`.
//!
//! **Architecture Invariant:** nothing here blocks except `Poll::poll` itself. Signals,
//! other threads' results (the waker), timers and the watchdog all arrive as poll events
//! or poll timeouts, so a loop that stops turning also stops the watchdog pings.

pub use crate::conn::ConnId;
use crate::conn::{Conn, Left, State};
use crate::limits::{Farewell, Limits};
use crate::notify;
use crate::outbox::{Action, Outbox};
use mio::net::{UnixListener, UnixStream};
use mio::{Events, Interest, Poll, Token, Waker};
use nix::sys::socket::{getsockopt, sockopt};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook_mio::v1_0::Signals;
use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

const LISTENER: Token = Token(0);
const SIGNALS: Token = Token(1);
const WAKER: Token = Token(2);
/// Connection tokens start here, well clear of the fixed ones.
const FIRST_CONN: usize = 16;

/// Events handled per `poll` call; more simply wait for the next turn of the loop.
const EVENTS_CAPACITY: usize = 256;

/// How often the loop looks for timed-out connections. A timeout is a resource limit,
/// not a promise to the peer, so a fraction of a second of slack is fine; a quarter of a
/// second keeps tests with short limits quick without costing an idle daemon anything.
const SWEEP_EVERY: Duration = Duration::from_millis(250);

/// How often `STATUS=` may be re-sent when the service's status line changes; systemd
/// keeps only the latest, so more would be noise on the notify socket. A change held
/// back by this goes out as soon as the interval is over (the loop wakes for it), so
/// `systemctl status` is never more than this behind.
const STATUS_EVERY: Duration = Duration::from_secs(1);

/// Who is on the other end of a connection, from `SO_PEERCRED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    pub uid: u32,
    pub gid: u32,
    pub pid: i32,
}

/// A daemon's logic, driven by the loop.
pub trait Service {
    /// A client connected. The service may send to it or close it straight away.
    fn accept(&mut self, out: &mut Outbox, id: ConnId, peer: Peer);
    /// `input` holds what the peer sent and the service has not taken yet (possibly
    /// nothing, when the loop calls again because the connection has room once more).
    /// Drain whole messages from its front while `out.has_room(id)` and `wants_input`
    /// allow; leave the rest, a partial message or what must wait.
    fn input(&mut self, out: &mut Outbox, id: ConnId, input: &mut Vec<u8>);
    /// The peer will send nothing more. `rest` holds what it sent after its last whole
    /// message (an unfinished one, or nothing). Whatever it asked for should still be
    /// answered.
    fn input_closed(&mut self, out: &mut Outbox, id: ConnId, rest: &mut Vec<u8>);
    /// The connection is gone; later sends to `id` are dropped. `left` says what became
    /// of the output queued for it since it last drained: a service that marks what it
    /// queued as possibly seen can take the mark back when not a byte of it was written.
    fn closed(&mut self, id: ConnId, left: Left);
    /// Whether the service takes more input from `id` now. While it says no, the loop
    /// neither reads the socket nor calls `input`, so the peer's writes back up into its
    /// own socket buffer instead of the daemon's memory; the loop asks again each turn.
    fn wants_input(&self, _id: ConnId) -> bool {
        true
    }
    /// Whether the service is working on something for `id` (a request in flight, lines
    /// queued), so that the connection is neither idle nor a candidate for eviction.
    fn busy(&self, _id: ConnId) -> bool {
        false
    }
    /// The bytes that tell a client why the loop is closing (or refusing) it, in the
    /// service's own protocol. Written without waiting; a peer that does not read them
    /// is closed anyway.
    fn farewell(&self, why: &Farewell) -> Vec<u8>;
    /// Everything queued for `id` so far has been written to its socket: the peer's
    /// kernel holds it, and a crash of the daemon can no longer lose it. A service that
    /// promises delivery marks it done here, not when it queued the bytes.
    fn drained(&mut self, _out: &mut Outbox, _id: ConnId) {}
    /// Another thread woke the loop through the waker.
    fn wake(&mut self, _out: &mut Outbox) {}
    /// When `timer` should next run.
    fn deadline(&self) -> Option<Instant> {
        None
    }
    fn timer(&mut self, _out: &mut Outbox, _now: Instant) {}
    /// Why a reload was refused: the loop writes it to the journal after "reload refused,
    /// keeping the old configuration: ".
    type ReloadError: std::error::Error;
    /// SIGHUP: re-read configuration. An error keeps the old configuration.
    fn reload(&mut self) -> Result<(), Self::ReloadError>;
    /// One line for `systemctl status`.
    fn status(&self) -> String;
}

pub struct Server {
    poll: Poll,
    listener: UnixListener,
    signals: Signals,
    waker: Arc<Waker>,
    pub(crate) conns: HashMap<Token, Conn>,
    next_token: usize,
    pub(crate) limits: Limits,
    watchdog: Option<Duration>,
}

impl Server {
    pub fn new(listener: std::os::unix::net::UnixListener, limits: Limits) -> io::Result<Server> {
        listener.set_nonblocking(true)?;
        let poll = Poll::new()?;
        let mut listener = UnixListener::from_std(listener);
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)?;
        let mut signals = Signals::new([SIGTERM, SIGINT, SIGHUP])?;
        poll.registry()
            .register(&mut signals, SIGNALS, Interest::READABLE)?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        Ok(Server {
            poll,
            listener,
            signals,
            waker,
            conns: HashMap::new(),
            next_token: FIRST_CONN,
            limits,
            watchdog: notify::watchdog_interval(),
        })
    }

    /// Lets another thread wake the loop; the service's `wake` then runs on the loop.
    pub fn waker(&self) -> Arc<Waker> {
        Arc::clone(&self.waker)
    }

    /// Serves until SIGTERM or SIGINT. Sends `READY=1` first and `STOPPING=1` last.
    pub fn run<S: Service>(&mut self, svc: &mut S) -> io::Result<()> {
        let mut events = Events::with_capacity(EVENTS_CAPACITY);
        let mut status = svc.status();
        notify::ready(&status);
        let mut status_sent = Instant::now();
        // Set while a changed status line waits for STATUS_EVERY to pass.
        let mut status_due: Option<Instant> = None;
        let mut next_ping = Instant::now();
        let mut next_sweep = Instant::now() + SWEEP_EVERY;
        loop {
            if let Some(every) = self.watchdog {
                if Instant::now() >= next_ping {
                    notify::watchdog();
                    next_ping = Instant::now() + every;
                }
            }
            let timeout = [
                self.watchdog.map(|_| next_ping),
                svc.deadline(),
                Some(next_sweep),
                status_due,
            ]
            .into_iter()
            .flatten()
            .min()
            .map(|t| t.saturating_duration_since(Instant::now()));
            match self.poll.poll(&mut events, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            let mut out = self.outbox();
            for event in events.iter() {
                match event.token() {
                    LISTENER => self.accept_all(svc, &mut out),
                    WAKER => svc.wake(&mut out),
                    SIGNALS => {
                        if self.on_signals(svc) {
                            notify::stopping();
                            crate::info!("stopping on signal");
                            return Ok(());
                        }
                    }
                    token => self.on_conn_event(svc, &mut out, token, event),
                }
                self.apply(svc, &mut out);
            }
            let now = Instant::now();
            if svc.deadline().is_some_and(|d| now >= d) {
                svc.timer(&mut out, now);
                self.apply(svc, &mut out);
            }
            // What this turn freed (output written, a request finished) may let a held
            // connection go on.
            self.resume_paused(svc, &mut out);
            if now >= next_sweep {
                self.sweep(svc, now);
                next_sweep = now + SWEEP_EVERY;
            }
            let fresh = svc.status();
            status_due = None;
            if fresh != status {
                if status_sent.elapsed() >= STATUS_EVERY {
                    notify::status(&fresh);
                    status = fresh;
                    status_sent = Instant::now();
                } else {
                    status_due = Some(status_sent + STATUS_EVERY);
                }
            }
        }
    }

    /// An `Outbox` that knows how much room each connection's output queue has left.
    fn outbox(&self) -> Outbox {
        let mut out = Outbox::default();
        for (token, conn) in &self.conns {
            out.room.insert(ConnId(token.0), self.room_of(conn));
        }
        out
    }

    pub(crate) fn room_of(&self, conn: &Conn) -> usize {
        self.limits.max_output.saturating_sub(conn.output.len())
    }

    /// True when the loop should stop.
    fn on_signals<S: Service>(&mut self, svc: &mut S) -> bool {
        let mut stop = false;
        for sig in self.signals.pending() {
            match sig {
                SIGTERM | SIGINT => stop = true,
                SIGHUP => {
                    notify::reloading();
                    match svc.reload() {
                        Ok(()) => crate::notice!("reloaded configuration"),
                        Err(e) => {
                            crate::error!("reload refused, keeping the old configuration: {e}")
                        }
                    }
                    notify::ready(&svc.status());
                }
                _ => {}
            }
        }
        stop
    }

    fn accept_all<S: Service>(&mut self, svc: &mut S, out: &mut Outbox) {
        loop {
            let (mut stream, _) = match self.listener.accept() {
                Ok(pair) => pair,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // EMFILE and friends: leave the client in the backlog and try again
                    // on the next event rather than spinning here.
                    crate::warn!("accept: {e}");
                    return;
                }
            };
            let peer = match peer_of(&stream) {
                Ok(p) => p,
                Err(e) => {
                    crate::warn!("refusing a client whose credentials cannot be read: {e}");
                    continue;
                }
            };
            if self.conns.len() >= self.limits.max_clients && !self.evict_one(svc) {
                let why = Farewell::TooManyClients(self.limits.max_clients);
                crate::warn!(
                    "refusing a client (uid {}, pid {}): {why}",
                    peer.uid,
                    peer.pid
                );
                // A fresh socket's buffer is empty, so this short write goes through;
                // if it does not, the close alone still tells the peer.
                let _ = io::Write::write(&mut stream, &svc.farewell(&why));
                crate::conn::discard_unread(&mut stream);
                continue;
            }
            let token = Token(self.next_token);
            self.next_token += 1;
            if let Err(e) = self
                .poll
                .registry()
                .register(&mut stream, token, Interest::READABLE)
            {
                crate::warn!("register client: {e}");
                continue;
            }
            let conn = Conn::new(stream);
            out.room.insert(ConnId(token.0), self.room_of(&conn));
            self.conns.insert(token, conn);
            svc.accept(out, ConnId(token.0), peer);
            self.apply(svc, out);
        }
    }

    fn on_conn_event<S: Service>(
        &mut self,
        svc: &mut S,
        out: &mut Outbox,
        token: Token,
        event: &mio::event::Event,
    ) {
        let Some(conn) = self.conns.get_mut(&token) else {
            return;
        };
        if event.is_writable() {
            let had = !conn.output.is_empty();
            if let Err(e) = conn.flush() {
                return self.drop_conn(svc, token, &format!("write failed: {e}"));
            }
            let empty = conn.output.is_empty();
            out.room.insert(ConnId(token.0), self.room_of_token(token));
            if had && empty {
                svc.drained(out, ConnId(token.0));
            }
        }
        if event.is_readable() || event.is_read_closed() {
            self.serve_input(svc, out, token);
        }
        self.settle(svc, token);
    }

    fn room_of_token(&self, token: Token) -> usize {
        self.conns.get(&token).map_or(0, |c| self.room_of(c))
    }

    /// Applies queued actions, then settles every connection they touched.
    pub(crate) fn apply<S: Service>(&mut self, svc: &mut S, out: &mut Outbox) {
        let mut touched = Vec::new();
        for action in out.actions.drain(..) {
            let (id, close) = match action {
                Action::Send(id, bytes) => {
                    if let Some(conn) = self.conns.get_mut(&Token(id.0)) {
                        if conn.output.is_empty() {
                            // The stall timeout counts from when output began to wait.
                            conn.last_drained = Instant::now();
                        }
                        conn.output.extend_from_slice(&bytes);
                    }
                    (id, false)
                }
                Action::Close(id) => (id, true),
            };
            if let Some(conn) = self.conns.get_mut(&Token(id.0)) {
                if close {
                    conn.state = State::Closing;
                }
                touched.push(Token(id.0));
            }
        }
        touched.sort_unstable();
        touched.dedup();
        for token in touched {
            let Some(conn) = self.conns.get_mut(&token) else {
                continue;
            };
            let had = !conn.output.is_empty();
            if let Err(e) = conn.flush() {
                self.drop_conn(svc, token, &format!("write failed: {e}"));
                continue;
            }
            if conn.output.len() > self.limits.hard_output {
                let msg = format!(
                    "not reading its replies; {} bytes queued (limit {})",
                    conn.output.len(),
                    self.limits.hard_output
                );
                self.drop_conn(svc, token, &msg);
                continue;
            }
            if conn.output.len() >= self.limits.max_output {
                conn.paused = true;
            }
            let empty = conn.output.is_empty();
            let room = self.room_of_token(token);
            out.room.insert(ConnId(token.0), room);
            // Told before `settle`, which may close the connection once it is empty: also
            // when only a close was asked and the flush wrote what an earlier turn left.
            if empty && had {
                svc.drained(out, ConnId(token.0));
            }
            self.settle(svc, token);
        }
        // What the service queued in answer to a drain is applied in turn; a drain is only
        // reported for output there was, so this ends.
        if !out.actions.is_empty() {
            self.apply(svc, out);
        }
    }

    /// Closes a finished connection, or sets its interest to what it still needs.
    pub(crate) fn settle<S: Service>(&mut self, svc: &mut S, token: Token) {
        let Some(conn) = self.conns.get_mut(&token) else {
            return;
        };
        if conn.state == State::Closing && conn.output.is_empty() {
            if let Some(mut conn) = self.conns.remove(&token) {
                conn.discard_unread();
                let _ = self.poll.registry().deregister(&mut conn.stream);
            }
            svc.closed(ConnId(token.0), Left::Nothing);
            return;
        }
        let want_write = !conn.output.is_empty();
        if want_write != conn.want_write {
            let interest = if want_write {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            if let Err(e) = self
                .poll
                .registry()
                .reregister(&mut conn.stream, token, interest)
            {
                return self.drop_conn(svc, token, &format!("reregister: {e}"));
            }
            conn.want_write = want_write;
        }
    }

    pub(crate) fn drop_conn<S: Service>(&mut self, svc: &mut S, token: Token, why: &str) {
        if let Some(mut conn) = self.conns.remove(&token) {
            crate::warn!("closing client {}: {why}", token.0);
            let _ = self.poll.registry().deregister(&mut conn.stream);
            svc.closed(ConnId(token.0), conn.left());
        }
    }

    /// Tells a client why it is being closed, then closes it without waiting: what fits
    /// in its socket buffer reaches it; a peer that does not read loses only the words.
    pub(crate) fn farewell<S: Service>(&mut self, svc: &mut S, token: Token, why: Farewell) {
        if let Some(mut conn) = self.conns.remove(&token) {
            crate::warn!("client {}: {why}", token.0);
            conn.output.extend_from_slice(&svc.farewell(&why));
            let _ = conn.flush();
            // The farewell comes after the service's own output, so what the flush wrote
            // began with that output.
            let left = conn.left();
            conn.discard_unread();
            let _ = self.poll.registry().deregister(&mut conn.stream);
            svc.closed(ConnId(token.0), left);
        }
    }
}

fn peer_of(stream: &UnixStream) -> nix::Result<Peer> {
    let cred = getsockopt(stream, sockopt::PeerCredentials)?;
    Ok(Peer {
        uid: cred.uid(),
        gid: cred.gid(),
        pid: cred.pid(),
    })
}

#[cfg(test)]
mod tests;
