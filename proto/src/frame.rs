//! The frame codec between loopd and memoryd: a 4-byte big-endian length, then that many
//! bytes of payload: a 4-byte version mark (`WIRE_MAGIC`, then `WIRE_VERSION` as a
//! big-endian u16), then bincode. All of bincode lives here, behind `encode` and `decode`,
//! so the rest of the system never sees its options or its errors. The mark lets a daemon
//! that meets a peer of another release say so in words instead of "malformed frame"
//! (docs/memoryd.md, "Frames").

use bincode::Options;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt;
use std::io::{self, Read, Write};

/// The largest payload a frame may carry. A recall answer of 50 hits of a few KiB each fits
/// many times over; anything larger is a bug or an attack, and refusing it before
/// allocating keeps one bad peer from costing memoryd more than this.
pub const MAX_FRAME: u32 = 1 << 20;

/// Bytes in the length prefix.
pub const HEADER: usize = 4;

/// The first two payload bytes of every versioned frame. An unversioned frame (the wire
/// before versions, called version 1 here) starts with a bincode enum tag, a small
/// number, never these bytes.
pub const WIRE_MAGIC: [u8; 2] = *b"bx";

/// The version of the messages in `crate::memory` this build speaks. Raise it whenever a
/// message's layout changes: bincode has no field names, so an old peer would otherwise
/// misread the bytes or call them malformed.
pub const WIRE_VERSION: u16 = 2;

/// Bytes of the version mark at the start of each payload.
const MARK: usize = 4;

#[derive(Debug)]
pub enum FrameError {
    /// The length prefix claims more than `MAX_FRAME`.
    TooLarge(u64),
    /// The payload is not a valid message of the expected type.
    Malformed(String),
    /// The payload decoded, but bytes were left over after the message.
    Trailing,
    /// The length prefix was 0: no version mark and no message. No release ever sent
    /// one, so it is not called a version.
    Empty,
    /// The peer speaks another version of the wire (`peer` 1: before versions).
    Version {
        peer: u16,
        ours: u16,
    },
    /// The stream ended inside a frame.
    Truncated {
        have: usize,
        want: usize,
    },
    Io(io::Error),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::TooLarge(n) => {
                write!(f, "frame of {n} bytes is over the {MAX_FRAME}-byte limit")
            }
            FrameError::Malformed(e) => write!(f, "malformed frame: {e}"),
            FrameError::Trailing => f.write_str("frame has trailing bytes after its message"),
            FrameError::Empty => f.write_str(
                "empty frame: its length is 0, so it holds neither the version mark nor a message",
            ),
            FrameError::Version { peer, ours } => write!(
                f,
                "the peer speaks wire version {peer} and this daemon speaks version {ours}: \
                 loopd and memoryd are from different releases; restart both after an upgrade"
            ),
            FrameError::Truncated { have, want } => {
                write!(f, "stream ended inside a frame ({have} of {want} bytes)")
            }
            FrameError::Io(e) => write!(f, "frame i/o: {e}"),
        }
    }
}

impl std::error::Error for FrameError {}

impl FrameError {
    /// The I/O error underneath, if the stream failed rather than the bytes on it: a
    /// client tells a socket timeout from a bad frame by it.
    pub fn io(&self) -> Option<&io::Error> {
        match self {
            FrameError::Io(e) => Some(e),
            _ => None,
        }
    }
}

fn options() -> impl Options {
    // The limit bounds every length bincode reads inside the payload, so a claimed 2^62
    // element vector fails after a few bytes instead of reserving memory for it.
    bincode::DefaultOptions::new()
        .with_limit(u64::from(MAX_FRAME))
        .reject_trailing_bytes()
}

/// Encodes `msg` as a whole frame: length prefix and payload.
pub fn encode<T: Serialize>(msg: &T) -> Result<Vec<u8>, FrameError> {
    let body = options().serialize(msg).map_err(|e| match *e {
        // The limit stopped serialisation part-way; the size it would have had is
        // counted without one, so the error says how far over the message is.
        bincode::ErrorKind::SizeLimit => FrameError::TooLarge(
            bincode::DefaultOptions::new()
                .serialized_size(msg)
                .unwrap_or(u64::MAX),
        ),
        other => FrameError::Malformed(other.to_string()),
    })?;
    let mut payload = Vec::with_capacity(MARK + body.len());
    payload.extend_from_slice(&WIRE_MAGIC);
    payload.extend_from_slice(&WIRE_VERSION.to_be_bytes());
    payload.extend_from_slice(&body);
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|&n| n <= MAX_FRAME)
        .ok_or(FrameError::TooLarge(payload.len() as u64))?;
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// Decodes one payload (the bytes after the length prefix).
pub fn decode<T: DeserializeOwned>(payload: &[u8]) -> Result<T, FrameError> {
    if payload.len() > MAX_FRAME as usize {
        return Err(FrameError::TooLarge(payload.len() as u64));
    }
    if payload.is_empty() {
        return Err(FrameError::Empty);
    }
    // The start of the mark and no more is a frame cut short, not an older peer: before
    // versions a payload began with a small enum tag, never `b`.
    if payload.len() < MARK && WIRE_MAGIC.starts_with(&payload[..payload.len().min(2)]) {
        return Err(FrameError::Malformed(format!(
            "{} bytes, shorter than the {MARK}-byte version mark",
            payload.len()
        )));
    }
    let body = match payload.split_first_chunk::<MARK>() {
        Some(([m0, m1, v0, v1], body)) if [*m0, *m1] == WIRE_MAGIC => {
            let peer = u16::from_be_bytes([*v0, *v1]);
            if peer != WIRE_VERSION {
                return Err(FrameError::Version {
                    peer,
                    ours: WIRE_VERSION,
                });
            }
            body
        }
        _ => {
            return Err(FrameError::Version {
                peer: 1,
                ours: WIRE_VERSION,
            })
        }
    };
    options().deserialize(body).map_err(|e| match *e {
        bincode::ErrorKind::Custom(ref m) if m.contains("bytes remaining") => FrameError::Trailing,
        // bincode reads from a slice: its only I/O error is the slice running out, a
        // length inside the frame larger than what follows it (its own words are empty).
        bincode::ErrorKind::Io(_) => {
            FrameError::Malformed("a length inside the frame runs past its end".into())
        }
        other => FrameError::Malformed(other.to_string()),
    })
}

/// Checks a length prefix; the one place the limit is enforced for incoming frames.
fn payload_len(header: [u8; HEADER]) -> Result<usize, FrameError> {
    let n = u32::from_be_bytes(header);
    if n > MAX_FRAME {
        return Err(FrameError::TooLarge(u64::from(n)));
    }
    Ok(n as usize)
}

/// Collects bytes from a non-blocking reader and yields whole payloads. It never holds
/// more than one frame plus what a single read returned, because a frame over the limit
/// is refused as soon as its header is in.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    buf: Vec<u8>,
}

impl FrameDecoder {
    pub fn new() -> FrameDecoder {
        FrameDecoder::default()
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes held that are not yet a whole frame.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// The next whole payload, `None` when more bytes are needed, or an error after which
    /// the stream cannot be resynchronised and should be closed.
    pub fn next_payload(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        take_payload(&mut self.buf)
    }
}

/// Removes the first whole frame from the front of `buf` and returns its payload; `None`
/// when `buf` holds only part of one. For a poll loop that owns the read buffer itself.
pub fn take_payload(buf: &mut Vec<u8>) -> Result<Option<Vec<u8>>, FrameError> {
    let Some(header) = buf.first_chunk::<HEADER>() else {
        return Ok(None);
    };
    let len = payload_len(*header)?;
    if buf.len() < HEADER + len {
        return Ok(None);
    }
    let payload = buf[HEADER..HEADER + len].to_vec();
    buf.drain(..HEADER + len);
    Ok(Some(payload))
}

/// Writes one frame to a blocking writer.
pub fn write_frame<T: Serialize>(w: &mut impl Write, msg: &T) -> Result<(), FrameError> {
    let bytes = encode(msg)?;
    w.write_all(&bytes).map_err(FrameError::Io)?;
    w.flush().map_err(FrameError::Io)
}

/// Reads one frame from a blocking reader. The payload buffer is allocated only after the
/// length has been checked against `MAX_FRAME`.
pub fn read_frame<T: DeserializeOwned>(r: &mut impl Read) -> Result<T, FrameError> {
    let mut header = [0u8; HEADER];
    read_full(r, &mut header)?;
    let len = payload_len(header)?;
    let mut payload = vec![0u8; len];
    read_full(r, &mut payload)?;
    decode(&payload)
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> Result<(), FrameError> {
    let mut have = 0;
    while have < buf.len() {
        match r.read(&mut buf[have..]) {
            Ok(0) => {
                return Err(FrameError::Truncated {
                    have,
                    want: buf.len(),
                })
            }
            Ok(n) => have += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(FrameError::Io(e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
