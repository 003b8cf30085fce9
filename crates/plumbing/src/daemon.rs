//! What both daemons do the same from `main` to their poll loop: the journal's name for
//! their lines, the one line and the failed exit a start-up or loop error ends in, the
//! listening socket (systemd's or bound at a path) with its `listening` line, and the
//! poll loop over it, which sends `READY=1` and takes the signals. What a daemon builds
//! before listening and what it serves stays in the daemon.

use crate::limits::Limits;
use crate::listen::{self, ListenError};
use crate::server::{Server, Service};
use std::fmt;
use std::io;
use std::path::Path;
use std::process::ExitCode;

/// A daemon's `main`: its log lines named `name`, `run` given the command line after the
/// program's name, and an error `run` returns written as one error line to the journal
/// (or stderr) with a failed exit.
pub fn main<E: fmt::Display>(
    name: &'static str,
    run: impl FnOnce(std::iter::Skip<std::env::Args>) -> Result<(), E>,
) -> ExitCode {
    // First, before anything opens a descriptor (`keep_inherited_from_children`).
    listen::keep_inherited_from_children();
    crate::log::init(name);
    match run(std::env::args().skip(1)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            crate::error!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// Why the listening socket or the poll loop failed.
#[derive(Debug)]
pub enum DaemonError {
    Listen(ListenError),
    /// The poll loop could not be set up, or failed while serving.
    Poll(io::Error),
}

impl fmt::Display for DaemonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DaemonError::Listen(e) => write!(f, "listen: {e}"),
            DaemonError::Poll(e) => write!(f, "poll loop: {e}"),
        }
    }
}

impl std::error::Error for DaemonError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DaemonError::Listen(e) => Some(e),
            DaemonError::Poll(e) => Some(e),
        }
    }
}

/// The listening socket for `socket` (systemd's when it passed one, else bound there),
/// logged as `listening (ORIGIN); {what}`, and the poll loop over it under `limits`.
pub fn listen(socket: &Path, limits: Limits, what: &str) -> Result<Server, DaemonError> {
    let (listener, origin) = listen::listener(socket).map_err(DaemonError::Listen)?;
    crate::info!("listening ({origin:?}); {what}");
    Server::new(listener, limits).map_err(DaemonError::Poll)
}

/// Serves `svc` until SIGTERM or SIGINT (`Server::run`).
pub fn serve<S: Service>(server: &mut Server, svc: &mut S) -> Result<(), DaemonError> {
    server.run(svc).map_err(DaemonError::Poll)
}
