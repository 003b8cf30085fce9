//! The listening socket: taken from systemd (`LISTEN_FDS`) when it is ours, else bound at
//! the configured path.

use nix::fcntl::{fcntl, FcntlArg, FdFlag};
use nix::sys::socket::SockaddrStorage;
use nix::sys::socket::{getsockname, getsockopt, sockopt, AddressFamily, SockType, SockaddrLike};
use std::fmt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// The first fd systemd passes, per sd_listen_fds(3).
const LISTEN_FDS_START: i32 = 3;

#[derive(Debug)]
pub enum ListenError {
    /// `LISTEN_FDS` is ours but does not hold exactly one usable socket.
    Activation(String),
    /// fd 3 is not a listening Unix stream socket.
    NotAListener(String),
    /// Another process answers on the path.
    InUse(PathBuf),
    Bind {
        path: PathBuf,
        source: io::Error,
    },
}

impl fmt::Display for ListenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenError::Activation(m) => write!(f, "socket activation: {m}"),
            ListenError::NotAListener(m) => {
                write!(f, "passed fd 3 is not a listening unix stream socket: {m}")
            }
            ListenError::InUse(p) => {
                write!(f, "{} is in use by another running daemon", p.display())
            }
            ListenError::Bind { path, source } => write!(f, "bind {}: {source}", path.display()),
        }
    }
}

impl std::error::Error for ListenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ListenError::Bind { source, .. } => Some(source),
            ListenError::Activation(_) | ListenError::NotAListener(_) | ListenError::InUse(_) => {
                None
            }
        }
    }
}

/// Where the listener came from, for the startup log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Systemd,
    Bound(PathBuf),
}

/// The listener systemd passed us, or a freshly bound one at `path`.
pub fn listener(path: &Path) -> Result<(UnixListener, Origin), ListenError> {
    if let Some(fd) = activation_fd()? {
        let listener = check_listener(fd)?;
        return Ok((listener, Origin::Systemd));
    }
    Ok((bind(path)?, Origin::Bound(path.to_path_buf())))
}

/// Reads and clears `LISTEN_PID`/`LISTEN_FDS`/`LISTEN_FDNAMES`. Variables meant for another
/// process (a parent that was activated and started us) are not ours: they are cleared so
/// our own children do not see them either, and the path is bound instead.
fn activation_fd() -> Result<Option<OwnedFd>, ListenError> {
    let pid = std::env::var("LISTEN_PID").ok();
    let fds = std::env::var("LISTEN_FDS").ok();
    for var in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] {
        std::env::remove_var(var);
    }
    let (Some(pid), Some(fds)) = (pid, fds) else {
        return Ok(None);
    };
    if pid.trim().parse::<u32>().ok() != Some(std::process::id()) {
        crate::info!("LISTEN_PID={pid} is not this process; binding the socket path instead");
        return Ok(None);
    }
    match fds.trim().parse::<u32>() {
        Ok(1) => Ok(Some(take_fd3())),
        Ok(n) => Err(ListenError::Activation(format!(
            "LISTEN_FDS={n}, expected exactly one socket"
        ))),
        Err(_) => Err(ListenError::Activation(format!(
            "LISTEN_FDS={fds:?} is not a number"
        ))),
    }
}

#[allow(unsafe_code)]
fn take_fd3() -> OwnedFd {
    // SAFETY: LISTEN_PID names this process and LISTEN_FDS=1, so by the sd_listen_fds(3)
    // contract fd 3 is open and was handed to us alone; nothing else in this process owns
    // or closes it, and the env variables that described it were just cleared so no
    // second call can take it again.
    unsafe { OwnedFd::from_raw_fd(LISTEN_FDS_START) }
}

/// Accepts `fd` only if it is a listening AF_UNIX stream socket, the one thing a unit
/// file could mistakenly hand us otherwise (a datagram socket, a TCP port, a plain file).
fn check_listener(fd: OwnedFd) -> Result<UnixListener, ListenError> {
    let bad = |m: String| ListenError::NotAListener(m);
    let ty = getsockopt(&fd, sockopt::SockType).map_err(|e| bad(e.to_string()))?;
    if ty != SockType::Stream {
        return Err(bad(format!("socket type is {ty:?}")));
    }
    let listening = getsockopt(&fd, sockopt::AcceptConn).map_err(|e| bad(e.to_string()))?;
    if !listening {
        return Err(bad("socket is not listening".into()));
    }
    let addr: SockaddrStorage = getsockname(fd.as_raw_fd()).map_err(|e| bad(e.to_string()))?;
    if addr.family() != Some(AddressFamily::Unix) {
        return Err(bad(format!("address family is {:?}", addr.family())));
    }
    // systemd passes the socket without close-on-exec (it must survive the exec that
    // started us); set it here, or every child loopd starts (the notify command) inherits
    // the listening socket and could accept the owner's connections (docs/systemd.md,
    // 'Descriptors').
    close_on_exec(&fd).map_err(|e| bad(format!("cannot set close-on-exec: {e}")))?;
    let listener = UnixListener::from(fd);
    listener
        .set_nonblocking(true)
        .map_err(|e| bad(e.to_string()))?;
    Ok(listener)
}

/// Marks every descriptor this process inherited above standard error close-on-exec, so
/// no child it starts (the notify command) inherits what the parent left open: a
/// descriptor passed on without `FD_CLOEXEC` by a shell or a supervisor would reach
/// every child otherwise (docs/systemd.md, 'Descriptors'). Run first thing in `main`,
/// before anything is opened; the process keeps using them all as before. A descriptor
/// that cannot be read or changed is left as it is: this narrows what children see and
/// never stops a start.
pub fn keep_inherited_from_children() {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let fds: Vec<i32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd > 2)
        .collect();
    for fd in fds {
        if let Ok(flags) = fcntl(fd, FcntlArg::F_GETFD) {
            let flags = FdFlag::from_bits_truncate(flags) | FdFlag::FD_CLOEXEC;
            let _ = fcntl(fd, FcntlArg::F_SETFD(flags));
        }
    }
}

/// Sets `FD_CLOEXEC` on `fd`, keeping its other descriptor flags.
pub fn close_on_exec(fd: &impl AsFd) -> nix::Result<()> {
    let flags = fcntl(fd.as_fd().as_raw_fd(), FcntlArg::F_GETFD)?;
    let flags = FdFlag::from_bits_truncate(flags) | FdFlag::FD_CLOEXEC;
    fcntl(fd.as_fd().as_raw_fd(), FcntlArg::F_SETFD(flags)).map(|_| ())
}

/// Binds `path`, replacing a stale socket file left by a crash but refusing to steal the
/// path from a daemon that still answers on it.
fn bind(path: &Path) -> Result<UnixListener, ListenError> {
    let bind_err = |source| ListenError::Bind {
        path: path.to_path_buf(),
        source,
    };
    if path.exists() {
        if UnixStream::connect(path).is_ok() {
            return Err(ListenError::InUse(path.to_path_buf()));
        }
        std::fs::remove_file(path).map_err(bind_err)?;
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(bind_err)?;
    }
    let listener = UnixListener::bind(path).map_err(bind_err)?;
    listener.set_nonblocking(true).map_err(bind_err)?;
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_socket_file_is_replaced_and_a_live_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.sock");
        drop(UnixListener::bind(&path).unwrap());
        let live = bind(&path).unwrap();
        assert!(matches!(bind(&path), Err(ListenError::InUse(_))));
        drop(live);
    }

    #[test]
    fn close_on_exec_is_set_on_a_descriptor_without_it() {
        let dir = tempfile::tempdir().unwrap();
        let listener = UnixListener::bind(dir.path().join("y.sock")).unwrap();
        let raw = listener.as_raw_fd();
        fcntl(raw, FcntlArg::F_SETFD(FdFlag::empty())).unwrap();
        close_on_exec(&listener).unwrap();
        let flags = FdFlag::from_bits_truncate(fcntl(raw, FcntlArg::F_GETFD).unwrap());
        assert!(flags.contains(FdFlag::FD_CLOEXEC));
    }
}
