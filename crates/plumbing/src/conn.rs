//! One client connection as the poll loop sees it: its stream, the bytes read but not yet
//! consumed by the service, the bytes queued for it, where it is in its life, and the
//! instants the loop's deadlines are counted from.

use mio::net::UnixStream;
use std::io::{self, Read, Write};
use std::time::Instant;

/// A connection's name for the `Service`: its poll token, stable while it is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub usize);

/// Bytes read per `read` call. Large enough that a 64 KiB line arrives in a few calls,
/// small enough to keep on the stack.
const READ_CHUNK: usize = 16 * 1024;

/// Reads `discard_unread` makes before giving up: a peer still writing at full speed
/// gets its reset, one that sent a few more bytes gets a clean end of stream.
const DISCARD_CHUNKS: usize = 4;

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Reading and writing.
    Open,
    /// The peer shut down its writing side and the service has been told; replies still
    /// go out.
    InputClosed,
    /// The service asked to close once everything queued has been written.
    Closing,
}

pub struct Conn {
    pub stream: UnixStream,
    pub state: State,
    pub input: Vec<u8>,
    pub output: Vec<u8>,
    /// The peer's end of input was read but the service has not been told yet: it still
    /// has buffered messages to take first (backpressure held them back).
    pub eof: bool,
    /// Reading and answering are held back: the output queue is over its limit, or the
    /// service will take no more input for now. The loop looks again after each turn.
    pub paused: bool,
    /// When the first byte of the message still unfinished in `input` arrived.
    pub partial_since: Option<Instant>,
    /// The last time bytes moved either way, for the idle timeout and eviction.
    pub last_active: Instant,
    /// The last time queued output was empty or some of it was written, for the stall
    /// timeout of a peer that does not read.
    pub last_drained: Instant,
    /// Whether WRITABLE interest is registered, so it is only re-registered on change.
    pub want_write: bool,
    /// Some of what is queued in `output` now has already been written: the peer may
    /// have read part of it. False whenever `output` is empty.
    pub partly_written: bool,
}

/// What became of the output a service queued for a connection that closed, since the
/// connection's output last drained (`Service::drained`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Left {
    /// Nothing: everything queued was written.
    Nothing,
    /// All of it, not a byte written: the peer cannot have read any of it.
    Unwritten,
    /// Some of it may have been written before the close.
    Partly,
}

/// What one round of reading found.
pub enum ReadOutcome {
    /// Some bytes (possibly none) and the socket would block.
    Drained(usize),
    /// The buffer reached its cap; the socket may hold more, and since readiness is
    /// edge-triggered no new event will say so: read again once the buffer is consumed.
    Full,
    /// The peer will send nothing more.
    Eof,
}

impl Conn {
    pub fn new(stream: UnixStream) -> Conn {
        let now = Instant::now();
        Conn {
            stream,
            state: State::Open,
            input: Vec::new(),
            output: Vec::new(),
            eof: false,
            paused: false,
            partial_since: None,
            last_active: now,
            last_drained: now,
            want_write: false,
            partly_written: false,
        }
    }

    /// Reads until the socket would block, stopping early once `cap` bytes are held so a
    /// peer cannot make us buffer without bound in one readiness event.
    pub fn read_available(&mut self, cap: usize) -> io::Result<ReadOutcome> {
        let mut chunk = [0u8; READ_CHUNK];
        let mut got = 0;
        loop {
            let want = cap.saturating_sub(self.input.len()).min(READ_CHUNK);
            if want == 0 {
                return Ok(ReadOutcome::Full);
            }
            match self.stream.read(&mut chunk[..want]) {
                Ok(0) => return Ok(ReadOutcome::Eof),
                Ok(n) => {
                    self.input.extend_from_slice(&chunk[..n]);
                    self.last_active = Instant::now();
                    got += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Ok(ReadOutcome::Drained(got))
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads and throws away what the peer sent that nobody will take, up to a bound,
    /// just before the close: closing a Unix socket with unread bytes makes the peer's
    /// next read fail with "connection reset" instead of seeing our last words and the
    /// end of the stream.
    pub fn discard_unread(&mut self) {
        discard_unread(&mut self.stream);
    }

    /// Writes queued output until done or the socket would block.
    pub fn flush(&mut self) -> io::Result<()> {
        let mut wrote = 0;
        while wrote < self.output.len() {
            let failed = match self.stream.write(&self.output[wrote..]) {
                Ok(0) => Some(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    wrote += n;
                    None
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => None,
                Err(e) => Some(e),
            };
            if let Some(e) = failed {
                self.partly_written |= wrote > 0;
                return Err(e);
            }
        }
        // One drain for the whole flush: draining per write would move the rest of a
        // large queue once for every socket-buffer's worth written.
        self.output.drain(..wrote);
        self.partly_written = !self.output.is_empty() && (self.partly_written || wrote > 0);
        if wrote > 0 || self.output.is_empty() {
            let now = Instant::now();
            self.last_drained = now;
            if wrote > 0 {
                self.last_active = now;
            }
        }
        Ok(())
    }
}

/// `Conn::discard_unread` for a stream that never became a `Conn` (a refused newcomer).
pub fn discard_unread(stream: &mut UnixStream) {
    let mut chunk = [0u8; READ_CHUNK];
    for _ in 0..DISCARD_CHUNKS {
        match stream.read(&mut chunk) {
            Ok(n) if n > 0 => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            _ => return,
        }
    }
}

impl Conn {
    /// What became of the output queued since it last drained, for a connection closing
    /// now.
    pub fn left(&self) -> Left {
        if self.output.is_empty() {
            Left::Nothing
        } else if self.partly_written {
            Left::Partly
        } else {
            Left::Unwritten
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Conn, Left};
    use mio::net::UnixStream;

    #[test]
    fn what_was_left_says_whether_any_of_the_queued_output_was_written() {
        // Everything written: nothing left.
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let mut conn = Conn::new(ours);
        conn.output.extend_from_slice(b"a line\n");
        conn.flush().unwrap();
        assert_eq!(conn.left(), Left::Nothing);
        let mut got = [0u8; 16];
        assert_eq!(std::io::Read::read(&mut theirs, &mut got).unwrap(), 7);
        // A peer that does not read: part of a large queue goes out, the rest waits.
        conn.output.resize(8 << 20, b'x');
        conn.flush().unwrap();
        assert!(!conn.output.is_empty());
        assert_eq!(conn.left(), Left::Partly);
        // A peer gone before anything queued since was written: not a byte of it left.
        let (ours, theirs) = UnixStream::pair().unwrap();
        drop(theirs);
        let mut conn = Conn::new(ours);
        conn.output.extend_from_slice(b"a reminder\n");
        assert!(conn.flush().is_err());
        assert_eq!(conn.left(), Left::Unwritten);
    }
}
