//! The channel's limits: what one client may make loopd hold (lines, queued replies,
//! slots, time), each a named constant beside the reason for its number, and the
//! `plumbing::Limits` the poll loop enforces them with. A module of its own below every
//! other, so the channel and the heartbeat take them from below, not from the crate root.

use conversation::testhook;
use plumbing::Limits;
use std::time::Duration;

/// Clients on the channel at once. One owner with a few terminals and scripts needs a
/// handful; 64 leaves room for bursts of scripted `socat` calls. When all are taken, the
/// connection quiet longest (`EVICT_QUIET`) gives its slot to the newcomer, so idle or
/// trickling connections cannot keep the owner out; when none is quiet the newcomer
/// reads one `error:` line saying so.
pub const MAX_CLIENTS: usize = 64;

/// The longest line a client may send (docs/channel.md). Longer lines get `error:` and are
/// discarded; the input buffer never holds more than this plus one read.
pub const MAX_LINE: usize = 64 * 1024;

/// What the poll loop may hold of one client's unconsumed input: a whole line, the `\r`
/// of a `\r\n` still waiting for its `\n`, and one byte to tell "too long" apart.
pub const MAX_INPUT: usize = MAX_LINE + 2;

/// Reply text queued for a client past which its next line is not started and its socket
/// not read until it reads (backpressure). A `/help` or a streamed answer is far less; a
/// script that pipes thousands of lines and reads as it goes never waits on this.
pub const MAX_OUTPUT: usize = 1024 * 1024;

/// Reply text queued for a client past which it is disconnected. Only the block in flight
/// can grow past `MAX_OUTPUT` (the model's text streams as it comes; the worker does not
/// wait for a reader), so this bounds one long answer to a client that stopped reading;
/// its turn still completes and is logged.
pub const HARD_OUTPUT: usize = 8 * 1024 * 1024;

/// How long a line may take to arrive whole, counted from its first byte. socat and
/// terminals send a line in one write when Enter is pressed, and scripts write faster;
/// a line still unfinished after this is a stuck or hostile peer holding a slot.
pub const LINE_DEADLINE: Duration = Duration::from_secs(30);

/// How long a connection may sit with nothing in or out and nothing in flight before it
/// is closed with an `error:` line. An hour keeps a terminal left open over lunch (and
/// the heartbeat replies it receives), and still returns slots that scripts leaked.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(3600);

/// How long replies may wait unread before the client is closed. A person who paused
/// their terminal has ten minutes; a client that stopped reading for good is let go.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(600);

/// How long a connection must have been quiet (nothing in or out, nothing in flight)
/// before a newcomer may take its slot when all `MAX_CLIENTS` are taken. A second is
/// far longer than the gap between a script's writes, so only an idle or trickling
/// connection is ever evicted, never one mid-exchange.
pub const EVICT_QUIET: Duration = Duration::from_secs(1);

/// The limits the channel's poll loop runs with; the line deadline may be shortened by a
/// test hook (the conversation crate's `testhook::line_deadline`).
pub fn channel() -> Limits {
    Limits {
        max_clients: MAX_CLIENTS,
        max_input: MAX_INPUT,
        max_output: MAX_OUTPUT,
        hard_output: HARD_OUTPUT,
        message_deadline: testhook::line_deadline().unwrap_or(LINE_DEADLINE),
        idle_timeout: IDLE_TIMEOUT,
        stall_timeout: STALL_TIMEOUT,
        evict_quiet: EVICT_QUIET,
    }
}
