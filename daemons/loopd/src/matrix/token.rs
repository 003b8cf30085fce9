//! The access token (docs/matrix.md, 'Faults'): read from `matrix.token_file` (never
//! logged), checked with `whoami`, and, when the homeserver refuses it or the file cannot
//! be read, waited for: the file is looked at once a second and read again when it
//! changes, or at a SIGHUP. Nothing is sent to the homeserver meanwhile, so a revoked
//! token makes no request loop.

use super::{set_status, Reach};
use matrix::{Client, Error};

use std::time::{Duration, SystemTime};

/// How often a refused token's file is looked at: the contract's "within a second".
pub(crate) const TOKEN_POLL: Duration = Duration::from_secs(1);

/// The longest wait between tries while the homeserver does not answer at all. Short
/// enough that the owner's first message after an outage is taken soon; long enough not to
/// hammer a server that is starting.
pub(crate) const MAX_UNREACHABLE_WAIT: Duration = Duration::from_secs(30);

/// What the token's file looked like when it was last read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Seen {
    modified: Option<SystemTime>,
    len: Option<u64>,
    hup: u64,
}

fn seen(reach: &Reach) -> Seen {
    let meta = std::fs::metadata(&reach.cfg.token_file).ok();
    Seen {
        modified: meta.as_ref().and_then(|m| m.modified().ok()),
        len: meta.map(|m| m.len()),
        hup: reach.hup.load(std::sync::atomic::Ordering::SeqCst),
    }
}

/// Sets the channel's state in `/status`, and says it in the journal when it changed
/// (`warn`: a fault) so a fault is one line, not one a second.
pub(crate) fn state(reach: &Reach, words: String, warn: bool) {
    let mut changed = false;
    set_status(&reach.status, |s| {
        changed = s.state != words;
        s.state = words.clone();
    });
    if changed {
        match warn {
            true => plumbing::warn!("matrix: {words}"),
            false => plumbing::info!("matrix: {words}"),
        }
    }
}

/// A client whose token the homeserver accepts for `matrix.user_id`, and that token;
/// waits (without a request loop) until there is one.
pub(crate) fn connect(reach: &Reach) -> (Client, String) {
    let mut backoff = plumbing::backoff::Backoff::new(Duration::from_secs(1), MAX_UNREACHABLE_WAIT);
    loop {
        let before = seen(reach);
        let token = match matrix::read_token(&reach.cfg.token_file) {
            Ok(t) => t,
            Err(e) => {
                state(
                    reach,
                    format!("no access token: {e}; waiting for the file to change"),
                    true,
                );
                wait_change(reach, &before);
                continue;
            }
        };
        let client = Client::new(&reach.cfg.homeserver, &reach.cfg.user_id, &token);
        match client.whoami() {
            Ok(who) if who.user_id == reach.cfg.user_id => {
                super::device::keep(&reach.state_dir, who.device_id.as_deref());
                return (client, token);
            }
            Ok(who) => {
                state(
                    reach,
                    format!(
                        "the access token in {} is {}'s, not matrix.user_id {}; waiting for the file to change",
                        reach.cfg.token_file.display(),
                        who.user_id,
                        reach.cfg.user_id
                    ),
                    true,
                );
                wait_change(reach, &before);
            }
            Err(e) => {
                if refused(&e) {
                    refused_wait(reach, &token, &before);
                } else {
                    state(reach, format!("homeserver unreachable: {e}"), true);
                    std::thread::sleep(backoff.next_wait());
                }
            }
        }
    }
}

/// Whether `e` says the token itself is refused (retrying with it cannot help).
pub(crate) fn refused(e: &Error) -> bool {
    matches!(e, Error::UnknownToken { .. })
}

/// The homeserver refused `token`: unless the file already holds another one (the
/// other thread's refusal came first, or the owner was quick), say so and wait for the
/// file to change.
pub(crate) fn refused_wait(reach: &Reach, token: &str, before: &Seen) {
    if matrix::read_token(&reach.cfg.token_file).is_ok_and(|t| t != token) {
        return;
    }
    state(
        reach,
        format!(
            "the homeserver refused the access token in {} (M_UNKNOWN_TOKEN: revoked, logged out or wrong); put a new one there (it is read within a second) or send SIGHUP",
            reach.cfg.token_file.display()
        ),
        true,
    );
    wait_change(reach, before);
}

/// Now, for a caller that will wait for a change from here.
pub(crate) fn now(reach: &Reach) -> Seen {
    seen(reach)
}

/// Waits until the token's file changes or a SIGHUP comes, looking once a second.
fn wait_change(reach: &Reach, before: &Seen) {
    loop {
        std::thread::sleep(TOKEN_POLL);
        if seen(reach) != *before {
            return;
        }
    }
}
