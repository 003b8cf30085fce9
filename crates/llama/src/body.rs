//! Reading a response body from llama.cpp with a bound on its size. The deadline is
//! already on the reader (ureq sets the socket's read timeout to the time left before
//! each read), so a body that trickles ends at the call's deadline; this bounds how much
//! a server can make loopd hold.

use std::fmt;
use std::io::{self, Read};

#[derive(Debug)]
pub enum BodyError {
    /// The body is longer than the caller's cap; nothing past the cap was read.
    TooLarge {
        cap: u64,
    },
    /// The call's deadline passed while reading.
    TimedOut,
    Io(io::Error),
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyError::TooLarge { cap } => write!(f, "the answer is over {cap} bytes"),
            BodyError::TimedOut => f.write_str("reading the answer timed out"),
            BodyError::Io(e) => write!(f, "reading the answer: {e}"),
        }
    }
}

impl std::error::Error for BodyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BodyError::Io(e) => Some(e),
            BodyError::TooLarge { .. } | BodyError::TimedOut => None,
        }
    }
}

impl From<io::Error> for BodyError {
    fn from(e: io::Error) -> BodyError {
        if is_timeout(&e) {
            BodyError::TimedOut
        } else {
            BodyError::Io(e)
        }
    }
}

/// Whether an I/O error is a read timeout (`WouldBlock` is how Linux reports
/// `SO_RCVTIMEO` running out).
pub fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    )
}

/// The whole body, refused when it is longer than `cap` bytes.
pub fn read_capped(r: impl Read, cap: u64) -> Result<Vec<u8>, BodyError> {
    let mut buf = Vec::new();
    r.take(cap.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > cap {
        return Err(BodyError::TooLarge { cap });
    }
    Ok(buf)
}

/// The first `cap` bytes of the body; the rest is left unread (an error body, where the
/// beginning says what went wrong).
pub fn read_prefix(r: impl Read, cap: u64) -> Result<Vec<u8>, BodyError> {
    let mut buf = Vec::new();
    r.take(cap).read_to_end(&mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_over_its_cap_is_refused_with_the_cap_named() {
        let big = [b'x'; 100];
        let err = read_capped(&big[..], 99).unwrap_err();
        assert_eq!(err.to_string(), "the answer is over 99 bytes");
        assert_eq!(read_capped(&big[..], 100).unwrap().len(), 100);
        assert_eq!(read_prefix(&big[..], 10).unwrap().len(), 10);
    }
}
