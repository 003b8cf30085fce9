//! One client connection as the poll loop sees it: its stream, the bytes read but not yet
//! consumed by the service, the bytes queued for it, and where it is in its life.

use mio::net::UnixStream;
use std::io::{self, Read, Write};
use std::time::Instant;

/// Bytes read per `read` call. Large enough that a 64 KiB line arrives in a few calls,
/// small enough to keep on the stack.
const READ_CHUNK: usize = 16 * 1024;

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Reading and writing.
    Open,
    /// The peer shut down its writing side; replies still go out.
    InputClosed,
    /// The service asked to close once everything queued has been written.
    Closing,
}

pub struct Conn {
    pub stream: UnixStream,
    pub state: State,
    pub input: Vec<u8>,
    pub output: Vec<u8>,
    /// The last time bytes arrived, for the partial-message and idle timeouts.
    pub last_input: Instant,
    /// Whether WRITABLE interest is registered, so it is only re-registered on change.
    pub want_write: bool,
}

/// What one round of reading found.
pub enum ReadOutcome {
    /// Some bytes (possibly none) and the socket would block.
    Drained,
    /// The buffer reached its cap; the socket may hold more, and since readiness is
    /// edge-triggered no new event will say so: read again once the buffer is consumed.
    Full,
    /// The peer will send nothing more.
    Eof,
}

impl Conn {
    pub fn new(stream: UnixStream) -> Conn {
        Conn {
            stream,
            state: State::Open,
            input: Vec::new(),
            output: Vec::new(),
            last_input: Instant::now(),
            want_write: false,
        }
    }

    /// Reads until the socket would block, stopping early once `cap` bytes are held so a
    /// peer cannot make us buffer without bound in one readiness event.
    pub fn read_available(&mut self, cap: usize) -> io::Result<ReadOutcome> {
        let mut chunk = [0u8; READ_CHUNK];
        loop {
            if self.input.len() >= cap {
                return Ok(ReadOutcome::Full);
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => return Ok(ReadOutcome::Eof),
                Ok(n) => {
                    self.input.extend_from_slice(&chunk[..n]);
                    self.last_input = Instant::now();
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(ReadOutcome::Drained),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes queued output until done or the socket would block.
    pub fn flush(&mut self) -> io::Result<()> {
        while !self.output.is_empty() {
            match self.stream.write(&self.output) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.output.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
