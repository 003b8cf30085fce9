//! The small `GET`s loopd asks llama.cpp outside a turn (`/health`, `/props`, `/slots`):
//! each answered from the server's memory, so one short deadline (`PROBE_TIMEOUT`) and a
//! body cap (`MAX_PROBE_BODY`) bound them all, and one error type says which request
//! failed and how.

use super::{body, MAX_PROBE_BODY, PROBE_TIMEOUT};
use std::fmt;

/// Why a probe of `url` failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeError {
    /// The server answered with an HTTP error status and this message.
    Status {
        url: String,
        status: u16,
        message: String,
    },
    /// No answer: refused, reset, timed out.
    Transport { url: String, why: String },
    /// The body could not be read whole within the cap.
    Body { url: String, why: String },
    /// The body was not the json expected.
    Json { url: String, why: String },
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeError::Status {
                url,
                status,
                message,
            } => write!(f, "GET {url}: {status}: {message}"),
            ProbeError::Transport { url, why } | ProbeError::Body { url, why } => {
                write!(f, "GET {url}: {why}")
            }
            ProbeError::Json { url, why } => write!(f, "GET {url}: bad json: {why}"),
        }
    }
}

impl std::error::Error for ProbeError {}

/// `GET url` on the client's `agent` as json of type `T`, within `PROBE_TIMEOUT` in all
/// (ureq's request timeout covers connecting, sending and every read) and
/// `MAX_PROBE_BODY` bytes.
pub fn get<T: serde::de::DeserializeOwned>(
    agent: &ureq::Agent,
    url: &str,
) -> Result<T, ProbeError> {
    let url_owned = || url.to_string();
    match agent.get(url).timeout(PROBE_TIMEOUT).call() {
        Ok(r) => {
            let bytes = body::read_capped(r.into_reader(), MAX_PROBE_BODY).map_err(|e| {
                ProbeError::Body {
                    url: url_owned(),
                    why: e.to_string(),
                }
            })?;
            serde_json::from_slice(&bytes).map_err(|e| ProbeError::Json {
                url: url_owned(),
                why: e.to_string(),
            })
        }
        Err(ureq::Error::Status(status, r)) => Err(ProbeError::Status {
            url: url_owned(),
            status,
            message: match super::error_body(r) {
                Ok((_, message)) => message,
                Err(e) => e.to_string(),
            },
        }),
        Err(ureq::Error::Transport(t)) => Err(ProbeError::Transport {
            url: url_owned(),
            why: t.to_string(),
        }),
    }
}
