//! What a daemon lets one client make it hold, and the reasons the loop closes a client
//! on its own. The numbers are each daemon's (named constants in its `lib.rs`, with their
//! reasons); the loop only enforces them.

use std::fmt;
use std::time::Duration;

/// The per-daemon limits on what clients can make the loop hold.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections served at once. When all are taken, a newcomer takes the slot of the
    /// connection that has been quiet longest (see `evict_quiet`); when none may be
    /// taken, the newcomer is told why and closed.
    pub max_clients: usize,
    /// Unconsumed input held per connection; a peer past this without a complete
    /// message is told so and disconnected.
    pub max_input: usize,
    /// Output queued per connection past which it is not read and its buffered requests
    /// are not answered until it drains below this again (backpressure). A service that
    /// asks `Outbox::has_room` before each answer stays within this plus one answer.
    pub max_output: usize,
    /// Output past which the connection is dropped: replies a service streams without
    /// asking for room (loopd's model text) to a peer that does not read.
    pub hard_output: usize,
    /// A message must arrive whole within this, counted from its first byte, so a peer
    /// trickling a byte at a time cannot hold a connection.
    pub message_deadline: Duration,
    /// How long a connection may do nothing at all (no bytes in or out, nothing queued,
    /// nothing the service is working on for it) before it is closed.
    pub idle_timeout: Duration,
    /// How long queued output may wait without the peer reading any of it.
    pub stall_timeout: Duration,
    /// How long a connection must have been quiet (nothing read or written, nothing
    /// queued, nothing in progress for it) before a newcomer may take its slot.
    pub evict_quiet: Duration,
}

/// Why the loop closes a client (or refuses one) by itself. The service renders it in its
/// own protocol (`Service::farewell`), so every client cut off by a limit is told so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Farewell {
    /// All `max_clients` slots are taken and none could be freed.
    TooManyClients(usize),
    /// This connection's slot went to a newcomer: it was the one quiet longest.
    Evicted(usize),
    /// Nothing happened on the connection for this long.
    Idle(Duration),
    /// Queued output waited this long without the peer reading any of it.
    Stalled(Duration),
    /// A message took longer than this to arrive whole.
    Deadline(Duration),
    /// This many bytes arrived without completing a message.
    InputTooLarge(usize),
}

impl Farewell {
    /// The farewell in words, calling a unit of the service's protocol `unit` ("line",
    /// "frame"): the one wording every service sends and the log shows.
    pub fn words(&self, unit: &str) -> String {
        Words(self, unit).to_string()
    }
}

impl fmt::Display for Farewell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Words(self, "message").fmt(f)
    }
}

struct Words<'a>(&'a Farewell, &'a str);

impl fmt::Display for Words<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = self.1;
        match self.0 {
            Farewell::TooManyClients(n) => write!(
                f,
                "too many clients: all {n} connections are busy; try again shortly"
            ),
            Farewell::Evicted(n) => write!(
                f,
                "closed to make room for a new client: all {n} connections were taken \
                 and this one was the quietest"
            ),
            Farewell::Idle(d) => write!(f, "closed after {} s without activity", d.as_secs_f64()),
            Farewell::Stalled(d) => write!(
                f,
                "closed after {} s in which none of its replies were read",
                d.as_secs_f64()
            ),
            Farewell::Deadline(d) => write!(
                f,
                "closed: a {unit} did not arrive whole within {} s of its first byte",
                d.as_secs_f64()
            ),
            Farewell::InputTooLarge(n) => {
                write!(f, "closed: {n} bytes arrived without completing a {unit}")
            }
        }
    }
}
