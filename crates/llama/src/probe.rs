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
            why: super::transport_words(&t),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_probe_names_its_url_once_in_lower_case() {
        // Regression: ureq's text was quoted whole after the URL loopd named, so the URL
        // came twice and the rest in title case ("…/health: …/health: Connection Failed").
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let url = format!("http://127.0.0.1:{port}/health");
        let e = get::<serde_json::Value>(&ureq::agent(), &url)
            .unwrap_err()
            .to_string();
        assert_eq!(e.matches(&url).count(), 1, "{e}");
        assert!(
            e.starts_with(&format!("GET {url}: connection failed: ")),
            "{e}"
        );
        assert!(e.contains("connection refused"), "{e}");
    }
}
