//! The one error of the library: every call to the homeserver fails as one of these. A
//! body the homeserver sent is never quoted (docs/matrix.md, 'Bodies and errors'): an
//! error names the call, the kind of failure and at most a length and a Matrix `errcode`,
//! which is a fixed word of the protocol (checked to be one before it is kept).

use std::fmt;
use std::time::Duration;

/// What the library was doing, named in every error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Versions,
    Whoami,
    Sync,
    Messages,
    Send,
    Redact,
    Join,
    Leave,
    Typing,
    State,
    Members,
    Logout,
    TokenFile,
}

impl Call {
    pub fn name(self) -> &'static str {
        match self {
            Call::Versions => "versions",
            Call::Whoami => "whoami",
            Call::Sync => "sync",
            Call::Messages => "messages",
            Call::Send => "send",
            Call::Redact => "redact",
            Call::Join => "join",
            Call::Leave => "leave",
            Call::Typing => "typing",
            Call::State => "room state",
            Call::Members => "room members",
            Call::Logout => "logout",
            Call::TokenFile => "matrix.token_file",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// No answer: no connection, a reset, a name that does not resolve. `detail` is the
    /// transport's own message (it names the url, never a body or the token).
    Transport { call: Call, detail: String },
    /// No whole answer within the call's deadline.
    Timeout { call: Call, after: Duration },
    /// The homeserver does not know the access token (`M_UNKNOWN_TOKEN`, 401): it was
    /// revoked, logged out or is wrong. Retrying with the same token cannot help.
    UnknownToken { call: Call, soft_logout: bool },
    /// `M_LIMIT_EXCEEDED` (429): wait `retry_after` (when the homeserver said) and ask again.
    LimitExceeded {
        call: Call,
        retry_after: Option<Duration>,
    },
    /// `M_FORBIDDEN` (403): not allowed, e.g. no power to set a state event, or not in the room.
    Forbidden { call: Call },
    /// Any other status outside 2xx, with its `errcode` when the body had one.
    Status {
        call: Call,
        status: u16,
        errcode: Option<String>,
        body_len: usize,
    },
    /// The answer was longer than the call's bound.
    TooLarge { call: Call, limit: u64 },
    /// The answer was not the JSON the call expects. `why` names what was wrong in
    /// fixed words; `len` is the body's length.
    Malformed {
        call: Call,
        len: usize,
        why: &'static str,
    },
    /// The token file could not be read (its path and the reason, never its content).
    TokenFile { detail: String },
}

impl Error {
    pub fn call(&self) -> Call {
        match self {
            Error::Transport { call, .. }
            | Error::Timeout { call, .. }
            | Error::UnknownToken { call, .. }
            | Error::LimitExceeded { call, .. }
            | Error::Forbidden { call }
            | Error::Status { call, .. }
            | Error::TooLarge { call, .. }
            | Error::Malformed { call, .. } => *call,
            Error::TokenFile { .. } => Call::TokenFile,
        }
    }

    /// Whether the homeserver may have done what was asked although no success came back:
    /// no answer, a timeout, a 5xx. A send retried after one of these must carry the same
    /// transaction id (docs/matrix.md, 'Exactly once out').
    pub fn outcome_unknown(&self) -> bool {
        match self {
            Error::Transport { .. } | Error::Timeout { .. } => true,
            Error::Status { status, .. } => *status >= 500,
            // A cut-off or unreadable answer came after the work was done.
            Error::TooLarge { .. } | Error::Malformed { .. } => true,
            _ => false,
        }
    }

    /// Whether trying again later (same request, same transaction id) can succeed without
    /// the owner doing anything: not for a refused token, a refusal, or a 4xx.
    pub fn retryable(&self) -> bool {
        match self {
            Error::LimitExceeded { .. } => true,
            Error::Status { status, .. } => *status >= 500 || *status == 408,
            Error::Transport { .. } | Error::Timeout { .. } => true,
            Error::TooLarge { .. } | Error::Malformed { .. } => true,
            _ => false,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Transport { call, detail } => {
                write!(f, "matrix {}: no answer: {detail}", call.name())
            }
            Error::Timeout { call, after } => write!(
                f,
                "matrix {}: no answer within {} ms",
                call.name(),
                after.as_millis()
            ),
            Error::UnknownToken { call, soft_logout } => write!(
                f,
                "matrix {}: the homeserver refused the access token (M_UNKNOWN_TOKEN{})",
                call.name(),
                if *soft_logout { ", soft logout" } else { "" }
            ),
            Error::LimitExceeded { call, retry_after } => match retry_after {
                Some(d) => write!(
                    f,
                    "matrix {}: rate limited (M_LIMIT_EXCEEDED), retry after {} ms",
                    call.name(),
                    d.as_millis()
                ),
                None => write!(f, "matrix {}: rate limited (M_LIMIT_EXCEEDED)", call.name()),
            },
            Error::Forbidden { call } => {
                write!(f, "matrix {}: forbidden (M_FORBIDDEN)", call.name())
            }
            Error::Status {
                call,
                status,
                errcode,
                body_len,
            } => write!(
                f,
                "matrix {}: http {status} ({}, a body of {body_len} bytes)",
                call.name(),
                errcode.as_deref().unwrap_or("no errcode")
            ),
            Error::TooLarge { call, limit } => write!(
                f,
                "matrix {}: answer longer than {limit} bytes",
                call.name()
            ),
            Error::Malformed { call, len, why } => write!(
                f,
                "matrix {}: malformed answer ({why}, {len} bytes)",
                call.name()
            ),
            Error::TokenFile { detail } => write!(f, "matrix.token_file: {detail}"),
        }
    }
}

impl std::error::Error for Error {}

/// An `errcode` kept only when it looks like one (`M_FORBIDDEN`, or a namespaced code such
/// as `IO.ELEMENT.X_Y`): letters, digits, `_` and `.`, with a `_`, at most 64 bytes. A
/// body's other text might be the owner's words.
pub fn clean_errcode(code: &str) -> Option<String> {
    let ok = (3..=64).contains(&code.len())
        && code.contains('_')
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
    ok.then(|| code.to_string())
}
