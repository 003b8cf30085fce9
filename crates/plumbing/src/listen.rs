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
use std::sync::atomic::{AtomicU8, Ordering};

/// The first fd systemd passes, per sd_listen_fds(3).
const LISTEN_FDS_START: i32 = 3;

/// Whether fd 3 was open when the process started (`keep_inherited_from_children`): not
/// yet known, open, or closed.
static FD3_AT_START: AtomicU8 = AtomicU8::new(FD3_UNKNOWN);
const FD3_UNKNOWN: u8 = 0;
const FD3_OPEN: u8 = 1;
const FD3_CLOSED: u8 = 2;

#[derive(Debug)]
pub enum ListenError {
    /// `LISTEN_FDS` is ours but does not hold exactly one usable socket.
    Activation(String),
    /// fd 3 is not a listening Unix stream socket.
    NotAListener(String),
    /// Another process answers on the path.
    InUse(PathBuf),
    /// Something that is not a socket (a file, a directory, a link) is at the path: it is
    /// someone's, never removed to make room.
    NotASocket(PathBuf),
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
            ListenError::NotASocket(p) => write!(
                f,
                "{} exists and is not a socket; it is left as it is (is the socket path in the config right?)",
                p.display()
            ),
            ListenError::Bind { path, source } => write!(f, "bind {}: {source}", path.display()),
        }
    }
}

impl std::error::Error for ListenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ListenError::Bind { source, .. } => Some(source),
            ListenError::Activation(_)
            | ListenError::NotAListener(_)
            | ListenError::InUse(_)
            | ListenError::NotASocket(_) => None,
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
    if activation_fd()? {
        let listener = check_listener()?;
        return Ok((listener, Origin::Systemd));
    }
    Ok((bind(path)?, Origin::Bound(path.to_path_buf())))
}

/// Reads and clears `LISTEN_PID`/`LISTEN_FDS`/`LISTEN_FDNAMES`; whether fd 3 was passed
/// to this process. Variables meant for another process (a parent that was activated and
/// started us) are not ours: they are cleared so our own children do not see them either,
/// and the path is bound instead.
fn activation_fd() -> Result<bool, ListenError> {
    let pid = std::env::var("LISTEN_PID").ok();
    let fds = std::env::var("LISTEN_FDS").ok();
    for var in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] {
        std::env::remove_var(var);
    }
    let (Some(pid), Some(fds)) = (pid, fds) else {
        return Ok(false);
    };
    if pid.trim().parse::<u32>().ok() != Some(std::process::id()) {
        crate::info!("LISTEN_PID={pid} is not this process; binding the socket path instead");
        return Ok(false);
    }
    match fds.trim().parse::<u32>() {
        Ok(1) => Ok(true),
        Ok(n) => Err(ListenError::Activation(format!(
            "LISTEN_FDS={n}, expected exactly one socket"
        ))),
        Err(_) => Err(ListenError::Activation(format!(
            "LISTEN_FDS={fds:?} is not a number"
        ))),
    }
}

/// Takes fd 3, the socket systemd passed, once it is known to be a listening AF_UNIX
/// stream socket: the one thing a unit file or a hand-made environment could get wrong
/// otherwise (a datagram socket, a TCP port, a plain file, nothing at all). Until then
/// fd 3 is only looked at: when the environment claims a socket that is not there, fd 3
/// may be closed, or be a file this process opened itself, and is not this function's
/// to close.
fn check_listener() -> Result<UnixListener, ListenError> {
    let bad = |m: String| ListenError::NotAListener(m);
    let inherited = match FD3_AT_START.load(Ordering::Relaxed) {
        FD3_OPEN => true,
        FD3_CLOSED => false,
        _ => fcntl(LISTEN_FDS_START, FcntlArg::F_GETFD).is_ok(),
    };
    if !inherited {
        return Err(ListenError::Activation(
            "LISTEN_FDS=1 but fd 3 is not open".into(),
        ));
    }
    let fd = {
        #[allow(unsafe_code)]
        // SAFETY: fd 3 is open (just checked), and the borrow ends before anything in
        // this function closes or takes it.
        unsafe {
            std::os::fd::BorrowedFd::borrow_raw(LISTEN_FDS_START)
        }
    };
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
    #[allow(unsafe_code)]
    // SAFETY: LISTEN_PID names this process and LISTEN_FDS=1, so by the sd_listen_fds(3)
    // contract fd 3 was handed to us alone, and it is the listening socket just checked;
    // the env variables that described it were cleared, so nothing takes it again.
    let fd = unsafe { OwnedFd::from_raw_fd(LISTEN_FDS_START) };
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
///
/// It also notes whether fd 3 was open before this process opened anything: a socket
/// claimed by `LISTEN_FDS` but not passed leaves fd 3 free for the first file the daemon
/// opens, which must then not be taken for the socket (`check_listener`).
pub fn keep_inherited_from_children() {
    // Before the listing below opens a descriptor of its own, which could be fd 3.
    let fd3 = fcntl(LISTEN_FDS_START, FcntlArg::F_GETFD).is_ok();
    FD3_AT_START.store(if fd3 { FD3_OPEN } else { FD3_CLOSED }, Ordering::Relaxed);
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
/// path from a daemon that still answers on it, and never removing anything at the path
/// that is not a socket: a config naming the owner's file by mistake must not cost them
/// the file.
fn bind(path: &Path) -> Result<UnixListener, ListenError> {
    use std::os::unix::fs::FileTypeExt;
    let bind_err = |source| ListenError::Bind {
        path: path.to_path_buf(),
        source,
    };
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(ListenError::NotASocket(path.to_path_buf()));
        }
        // Only a socket nobody listens on is stale (`ECONNREFUSED`); one that cannot be
        // tried (another user's, say) is named, never removed.
        match UnixStream::connect(path) {
            Ok(_) => return Err(ListenError::InUse(path.to_path_buf())),
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(bind_err(e)),
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

    /// Regression: a socket path naming a regular file (a typo in the config) had the
    /// file removed and a socket put in its place; so was a FIFO, a link, anything that
    /// did not answer a connect.
    #[test]
    fn what_is_at_the_path_and_is_not_a_socket_is_never_removed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("notes.txt");
        std::fs::write(&file, "precious data").unwrap();
        let e = bind(&file).unwrap_err();
        assert!(matches!(e, ListenError::NotASocket(_)), "{e}");
        assert!(e.to_string().contains("is not a socket"), "{e}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "precious data");
        let sub = dir.path().join("a-directory");
        std::fs::create_dir(&sub).unwrap();
        assert!(matches!(bind(&sub), Err(ListenError::NotASocket(_))));
        assert!(sub.is_dir());
        let link = dir.path().join("link.sock");
        let stale = dir.path().join("stale.sock");
        drop(UnixListener::bind(&stale).unwrap());
        std::os::unix::fs::symlink(&stale, &link).unwrap();
        assert!(matches!(bind(&link), Err(ListenError::NotASocket(_))));
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
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
