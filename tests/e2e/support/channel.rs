//! A client of loopd's channel socket, as a script using socat would be: send lines,
//! read reply blocks up to the `.` line, undoing the dot-stuffing.

use super::HANG;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

pub struct LineClient {
    pub stream: UnixStream,
    reader: BufReader<UnixStream>,
}

impl LineClient {
    pub fn connect(path: &Path) -> LineClient {
        LineClient::over(UnixStream::connect(path).unwrap())
    }

    /// A client on a connection already made.
    pub fn over(stream: UnixStream) -> LineClient {
        stream.set_read_timeout(Some(HANG)).unwrap();
        let reader = BufReader::new(stream.try_clone().unwrap());
        LineClient { stream, reader }
    }

    pub fn send(&mut self, line: &str) {
        self.send_raw(format!("{line}\n").as_bytes());
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// The next reply block's lines, un-stuffed, without the terminating `.`. Panics
    /// if the server closes first.
    pub fn block(&mut self) -> Vec<String> {
        self.try_block()
            .expect("the server closed before a whole reply block")
    }

    /// The next reply block, or `None` at end of stream (before any line of one).
    pub fn try_block(&mut self) -> Option<Vec<String>> {
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            let n = self.reader.read_line(&mut line).unwrap();
            if n == 0 {
                assert!(lines.is_empty(), "stream ended inside a block: {lines:?}");
                return None;
            }
            let line = line
                .strip_suffix('\n')
                .expect("a reply line without its newline");
            if line == "." {
                return Some(lines);
            }
            lines.push(line.strip_prefix('.').unwrap_or(line).to_string());
        }
    }

    /// The next line as it arrives, without its newline and un-stuffed: for reading the
    /// start of a block whose end has not come yet.
    pub fn line(&mut self) -> String {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let line = line
            .strip_suffix('\n')
            .expect("a reply line without its newline");
        line.strip_prefix('.').unwrap_or(line).to_string()
    }

    /// Sends `line` and returns its reply block.
    pub fn ask(&mut self, line: &str) -> Vec<String> {
        self.send(line);
        self.block()
    }

    /// Shuts down the writing side, as `printf … | socat` does at end of input.
    pub fn half_close(&self) {
        self.stream.shutdown(std::net::Shutdown::Write).unwrap();
    }

    /// Reads to end of stream and returns every block that came.
    pub fn rest(&mut self) -> Vec<Vec<String>> {
        std::iter::from_fn(|| self.try_block()).collect()
    }
}
