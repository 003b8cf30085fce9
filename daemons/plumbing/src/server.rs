//! The poll loop every daemon runs, in the shape of mio's `tcp_server.rs`: one `Poll`,
//! fixed tokens for the listener, the signal pipe and the waker, and a map from token to
//! connection for everything else. The daemon's own logic is a `Service`; it never touches
//! a socket, it only reads bytes handed to it and queues bytes in an `Outbox`.
//!
//! **Architecture Invariant:** nothing here blocks except `Poll::poll` itself. Signals,
//! other threads' results (the waker), timers and the watchdog all arrive as poll events
//! or poll timeouts, so a loop that stops turning also stops the watchdog pings.

use crate::conn::{Conn, ReadOutcome, State};
use crate::notify;
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

/// How often the loop looks for timed-out connections when some are being watched. A
/// timeout is a resource limit, not a deadline, so a second of slack is fine.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// How often `STATUS=` may be re-sent when the service's status line changes; systemd
/// keeps only the latest, so more would be noise on the notify socket. A change held
/// back by this goes out as soon as the interval is over (the loop wakes for it), so
/// `systemctl status` is never more than this behind.
const STATUS_EVERY: Duration = Duration::from_secs(1);

/// The per-daemon limits on what clients can make the loop hold.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections served at once; one more is closed straight after `accept`.
    pub max_clients: usize,
    /// Unconsumed input held per connection; a peer past this without a complete
    /// message is disconnected.
    pub max_input: usize,
    /// Output queued per connection; a peer that stops reading past this is disconnected
    /// rather than letting its replies pile up in memory.
    pub max_output: usize,
    /// How long half a message may sit in a connection's buffer with nothing more coming.
    pub partial_timeout: Duration,
    /// How long a connection may do nothing at all, when set.
    pub idle_timeout: Option<Duration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub usize);

/// Who is on the other end of a connection, from `SO_PEERCRED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    pub uid: u32,
    pub gid: u32,
    pub pid: i32,
}

enum Action {
    Send(ConnId, Vec<u8>),
    Close(ConnId),
}

/// What a service asks the loop to do; applied after the service's call returns.
#[derive(Default)]
pub struct Outbox {
    actions: Vec<Action>,
}

impl Outbox {
    pub fn send(&mut self, id: ConnId, bytes: impl Into<Vec<u8>>) {
        self.actions.push(Action::Send(id, bytes.into()));
    }

    /// Closes the connection once what was queued for it has been written.
    pub fn close(&mut self, id: ConnId) {
        self.actions.push(Action::Close(id));
    }
}

/// A daemon's logic, driven by the loop.
pub trait Service {
    /// A client connected. The service may send to it or close it straight away.
    fn accept(&mut self, out: &mut Outbox, id: ConnId, peer: Peer);
    /// New bytes are at the end of `input`; drain what forms whole messages.
    fn input(&mut self, out: &mut Outbox, id: ConnId, input: &mut Vec<u8>);
    /// The peer will send nothing more. Whatever it asked for should still be answered.
    fn input_closed(&mut self, out: &mut Outbox, id: ConnId);
    /// The connection is gone; later sends to `id` are dropped.
    fn closed(&mut self, id: ConnId);
    /// Another thread woke the loop through the waker.
    fn wake(&mut self, _out: &mut Outbox) {}
    /// When `timer` should next run.
    fn deadline(&self) -> Option<Instant> {
        None
    }
    fn timer(&mut self, _out: &mut Outbox, _now: Instant) {}
    /// SIGHUP: re-read configuration. An error keeps the old configuration.
    fn reload(&mut self) -> Result<(), String>;
    /// One line for `systemctl status`.
    fn status(&self) -> String;
}

pub struct Server {
    poll: Poll,
    listener: UnixListener,
    signals: Signals,
    waker: Arc<Waker>,
    conns: HashMap<Token, Conn>,
    next_token: usize,
    limits: Limits,
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
            let mut out = Outbox::default();
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
            if self.conns.len() >= self.limits.max_clients {
                crate::warn!(
                    "refusing a client: already serving {} (the limit)",
                    self.limits.max_clients
                );
                continue;
            }
            let peer = match peer_of(&stream) {
                Ok(p) => p,
                Err(e) => {
                    crate::warn!("refusing a client whose credentials cannot be read: {e}");
                    continue;
                }
            };
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
            self.conns.insert(token, Conn::new(stream));
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
        let id = ConnId(token.0);
        let Some(conn) = self.conns.get_mut(&token) else {
            return;
        };
        if event.is_writable() {
            if let Err(e) = conn.flush() {
                return self.drop_conn(svc, token, &format!("write failed: {e}"));
            }
        }
        if event.is_readable() {
            loop {
                let Some(conn) = self.conns.get_mut(&token) else {
                    return;
                };
                if conn.state != State::Open {
                    break;
                }
                let outcome = match conn.read_available(self.limits.max_input) {
                    Ok(outcome) => outcome,
                    Err(e) => return self.drop_conn(svc, token, &format!("read failed: {e}")),
                };
                if !conn.input.is_empty() {
                    svc.input(out, id, &mut conn.input);
                }
                if conn.input.len() >= self.limits.max_input {
                    let msg = format!(
                        "sent {} bytes without completing a message (limit {})",
                        conn.input.len(),
                        self.limits.max_input
                    );
                    return self.drop_conn(svc, token, &msg);
                }
                match outcome {
                    ReadOutcome::Full => continue,
                    ReadOutcome::Drained => break,
                    ReadOutcome::Eof => {
                        conn.state = State::InputClosed;
                        svc.input_closed(out, id);
                        break;
                    }
                }
            }
        }
        self.settle(svc, token);
    }

    /// Applies queued actions, then settles every connection they touched.
    fn apply<S: Service>(&mut self, svc: &mut S, out: &mut Outbox) {
        let mut touched = Vec::new();
        for action in out.actions.drain(..) {
            let (id, close) = match action {
                Action::Send(id, bytes) => {
                    if let Some(conn) = self.conns.get_mut(&Token(id.0)) {
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
        touched.dedup();
        for token in touched {
            let Some(conn) = self.conns.get_mut(&token) else {
                continue;
            };
            if conn.output.len() > self.limits.max_output {
                let msg = format!(
                    "stopped reading; {} bytes queued (limit {})",
                    conn.output.len(),
                    self.limits.max_output
                );
                self.drop_conn(svc, token, &msg);
                continue;
            }
            if let Err(e) = conn.flush() {
                self.drop_conn(svc, token, &format!("write failed: {e}"));
                continue;
            }
            self.settle(svc, token);
        }
    }

    /// Closes a finished connection, or sets its interest to what it still needs.
    fn settle<S: Service>(&mut self, svc: &mut S, token: Token) {
        let Some(conn) = self.conns.get_mut(&token) else {
            return;
        };
        if conn.state == State::Closing && conn.output.is_empty() {
            self.conns.remove(&token);
            svc.closed(ConnId(token.0));
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

    fn drop_conn<S: Service>(&mut self, svc: &mut S, token: Token, why: &str) {
        if let Some(mut conn) = self.conns.remove(&token) {
            crate::warn!("closing client {}: {why}", token.0);
            let _ = self.poll.registry().deregister(&mut conn.stream);
            svc.closed(ConnId(token.0));
        }
    }

    /// Disconnects clients that sat too long on half a message, or on nothing.
    fn sweep<S: Service>(&mut self, svc: &mut S, now: Instant) {
        let limits = &self.limits;
        let stale: Vec<(Token, String)> = self
            .conns
            .iter()
            .filter_map(|(t, c)| {
                let quiet = now.saturating_duration_since(c.last_input);
                if !c.input.is_empty() && quiet >= limits.partial_timeout {
                    Some((*t, format!("half a message idle for {}s", quiet.as_secs())))
                } else if limits.idle_timeout.is_some_and(|idle| quiet >= idle)
                    && c.output.is_empty()
                {
                    Some((*t, format!("idle for {}s", quiet.as_secs())))
                } else {
                    None
                }
            })
            .collect();
        for (token, why) in stale {
            self.drop_conn(svc, token, &why);
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
