//! The loop's own reasons to close a client: a message that does not arrive whole in
//! time, a connection that does nothing, a peer that stops reading, and, when every slot
//! is taken, the quietest connection giving its slot to a newcomer. Each closure tells
//! the client why (`Service::farewell`) and is logged.

use crate::conn::{Conn, State};
use crate::limits::Farewell;
use crate::server::{ConnId, Server, Service};
use mio::Token;
use std::time::Instant;

impl Server {
    /// Closes clients past a deadline or limit.
    pub(crate) fn sweep<S: Service>(&mut self, svc: &mut S, now: Instant) {
        let limits = &self.limits;
        let stale: Vec<(Token, Farewell)> = self
            .conns
            .iter()
            .filter_map(|(t, c)| {
                let late = |since: Instant, limit| now.saturating_duration_since(since) >= limit;
                if !c.paused
                    && c.partial_since
                        .is_some_and(|t| late(t, limits.message_deadline))
                {
                    Some((*t, Farewell::Deadline(limits.message_deadline)))
                } else if !c.output.is_empty() && late(c.last_drained, limits.stall_timeout) {
                    Some((*t, Farewell::Stalled(limits.stall_timeout)))
                } else if quiet(svc, *t, c) && late(c.last_active, limits.idle_timeout) {
                    Some((*t, Farewell::Idle(limits.idle_timeout)))
                } else {
                    None
                }
            })
            .collect();
        for (token, why) in stale {
            self.farewell(svc, token, why);
        }
    }

    /// Frees a slot for a newcomer by closing the connection quiet longest, if one has
    /// been quiet for at least `evict_quiet`. True when a slot was freed.
    pub(crate) fn evict_one<S: Service>(&mut self, svc: &mut S) -> bool {
        let now = Instant::now();
        let victim = self
            .conns
            .iter()
            .filter(|(t, c)| {
                quiet(svc, **t, c)
                    && now.saturating_duration_since(c.last_active) >= self.limits.evict_quiet
            })
            .min_by_key(|(_, c)| c.last_active)
            .map(|(t, _)| *t);
        match victim {
            Some(token) => {
                self.farewell(svc, token, Farewell::Evicted(self.limits.max_clients));
                true
            }
            None => false,
        }
    }
}

/// Nothing queued for the peer and nothing in progress for it: closing it loses nothing
/// but an unfinished message it has stopped sending.
fn quiet<S: Service>(svc: &S, token: Token, c: &Conn) -> bool {
    c.output.is_empty() && c.state != State::Closing && !svc.busy(ConnId(token.0))
}
