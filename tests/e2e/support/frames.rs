//! A blocking frame client for memoryd, as loopd and `memoryd recall` use the socket.

use super::HANG;
use proto::frame::{read_frame, write_frame};
use proto::memory::{Request, Response};
use std::os::unix::net::UnixStream;
use std::path::Path;

/// Sends one request on a new connection and returns the answer.
pub fn ask(sock: &Path, request: &Request) -> Result<Response, String> {
    let mut stream = UnixStream::connect(sock).map_err(|e| format!("connect: {e}"))?;
    stream.set_read_timeout(Some(HANG)).unwrap();
    write_frame(&mut stream, request).map_err(|e| e.to_string())?;
    read_frame(&mut stream).map_err(|e| e.to_string())
}
