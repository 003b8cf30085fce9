//! Input under backpressure: reading a connection's socket and handing its bytes to the
//! service only while the connection has room for the answers and the service wants more.
//! A connection held back is not read, so its peer's writes back up in the peer's own
//! socket buffer rather than in the daemon's memory, and its buffered requests wait; the
//! loop looks at held connections again after every turn.

use crate::conn::{ReadOutcome, State};
use crate::limits::Farewell;
use crate::outbox::Outbox;
use crate::server::{ConnId, Server, Service};
use mio::Token;
use std::time::Instant;

impl Server {
    /// Whether `token` may be read and fed now.
    fn may_take<S: Service>(&self, svc: &S, token: Token) -> bool {
        self.conns.get(&token).is_some_and(|c| {
            c.state != State::Closing
                && c.output.len() < self.limits.max_output
                && svc.wants_input(ConnId(token.0))
        })
    }

    /// Feeds `token`'s buffered input to the service and reads its socket, for as long as
    /// the connection has room and the service wants more; tells the service of the end
    /// of input once nothing whole is left to take.
    pub(crate) fn serve_input<S: Service>(&mut self, svc: &mut S, out: &mut Outbox, token: Token) {
        let id = ConnId(token.0);
        // The first round feeds what is buffered even with nothing new read: the loop
        // calls this too when a held connection may go on.
        let mut feed = true;
        loop {
            if !self.may_take(svc, token) {
                if let Some(conn) = self.conns.get_mut(&token) {
                    conn.paused = conn.state != State::Closing;
                }
                return;
            }
            let Some(conn) = self.conns.get_mut(&token) else {
                return;
            };
            conn.paused = false;
            // Fed after the end of input too (with nothing left to take): the service
            // may still have queued requests to answer once there is room.
            if feed {
                let before = conn.input.len();
                svc.input(out, id, &mut conn.input);
                let now = Instant::now();
                conn.partial_since = match conn.input.len() {
                    0 => None,
                    // The service took whole messages; what is left began after them.
                    left if left < before => Some(now),
                    _ => conn.partial_since.or(Some(now)),
                };
                let took = conn.input.len() < before;
                self.apply(svc, out);
                // Taking something may have stopped at the room limit, and writing it out
                // may have made room again: offer the rest before anything else.
                if took {
                    continue;
                }
            }
            let Some(conn) = self.conns.get_mut(&token) else {
                return;
            };
            // The service took every whole message it could: the rest is one unfinished.
            if conn.input.len() >= self.limits.max_input {
                let why = Farewell::InputTooLarge(conn.input.len());
                return self.farewell(svc, token, why);
            }
            if conn.eof {
                if conn.state == State::Open {
                    conn.state = State::InputClosed;
                    conn.partial_since = None;
                    svc.input_closed(out, id, &mut conn.input);
                    self.apply(svc, out);
                }
                return;
            }
            if conn.state != State::Open {
                return;
            }
            let cap = self.limits.max_input;
            feed = match conn.read_available(cap) {
                Ok(ReadOutcome::Drained(0)) => return,
                Ok(ReadOutcome::Drained(_)) | Ok(ReadOutcome::Full) => true,
                Ok(ReadOutcome::Eof) => {
                    conn.eof = true;
                    true
                }
                Err(e) => return self.drop_conn(svc, token, &format!("read failed: {e}")),
            };
        }
    }

    /// Lets held connections go on where the reason they were held has gone.
    pub(crate) fn resume_paused<S: Service>(&mut self, svc: &mut S, out: &mut Outbox) {
        let held: Vec<Token> = self
            .conns
            .iter()
            .filter(|(_, c)| c.paused)
            .map(|(t, _)| *t)
            .collect();
        for token in held {
            if self.may_take(svc, token) {
                self.serve_input(svc, out, token);
                self.settle(svc, token);
            }
        }
    }
}
