//! The `http_fetch {url}` tool: one GET over http or https, bounded in size and time,
//! to addresses that pass the check in [`super::addr`], with HTML reduced to text.
//!
//! Redirects are followed here rather than by ureq, so each target goes through the same
//! checks as the first URL (scheme, then every resolved address) before anything
//! connects to it. Each hop gets its own agent pinned to the addresses just checked.
//!
//! Limits, as the model sees them:
//! - more than `max_bytes` of body: the first `max_bytes` are kept and the text ends with
//!   a `[truncated …]` line, because the start of a long page is usually what was wanted;
//! - the whole-request deadline (`timeout_s`, covering every lookup, connect, redirect and
//!   body read) passing: an error, even when part of the body had arrived, because a page
//!   that stalls mid-way is not trustworthy as a whole and the model should know.

use super::addr::{self, Check, Pinned, ResolveError};
use super::html::{self, BodyError};
use proto::config::HttpFetch;
use std::fmt;
use std::io::{self, Read};
use std::time::{Duration, Instant};
use url::Url;

/// Redirects followed for one fetch. Browsers allow about 20; a page that needs more than
/// 5 is broken or a trap, and every hop spends the same deadline.
pub const MAX_REDIRECTS: usize = 5;

/// Stands in for a `timeout_s` too large to add to the clock.
const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

/// Sent as `User-Agent`, so site owners can tell the agent from a browser.
const USER_AGENT: &str = concat!("boxmaker-loopd/", env!("CARGO_PKG_VERSION"));

/// Why a fetch gave no text. Every message names the URL it concerns.
#[derive(Debug, Clone, PartialEq)]
pub enum FetchError {
    BadUrl {
        url: String,
        message: String,
    },
    Scheme {
        url: String,
        scheme: String,
    },
    NoHost {
        url: String,
    },
    /// The URL carries a user name or password, which would go out as an
    /// `Authorization` header: never sent (docs/labels.md, 'Refusals and `/allow N`').
    Userinfo {
        url: String,
    },
    Address {
        url: String,
        error: ResolveError,
    },
    TimedOut {
        url: String,
        timeout_s: u64,
    },
    TooManyRedirects {
        url: String,
        last: String,
    },
    BadRedirect {
        url: String,
        location: String,
    },
    Status {
        url: String,
        code: u16,
        text: String,
    },
    Transport {
        url: String,
        message: String,
    },
    Body {
        url: String,
        error: BodyError,
    },
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FetchError::BadUrl { url, message } => write!(f, "{url:?} is not a valid url: {message}"),
            FetchError::Scheme { url, scheme } => write!(
                f,
                "{url}: scheme {scheme:?} is not fetched, only http and https are"
            ),
            FetchError::NoHost { url } => write!(f, "{url}: the url has no host"),
            FetchError::Userinfo { url } => write!(
                f,
                "{url}: the url carries a user name or password (before the @), which is never sent; fetch it without them"
            ),
            FetchError::Address { url, error } => write!(f, "{url}: {error}"),
            FetchError::TimedOut { url, timeout_s } => write!(
                f,
                "{url}: no complete answer within {timeout_s} s (tools.http_fetch.timeout_s)"
            ),
            FetchError::TooManyRedirects { url, last } => write!(
                f,
                "{url}: more than {MAX_REDIRECTS} redirects (the last to {last}), the fetch was stopped"
            ),
            FetchError::BadRedirect { url, location } => {
                write!(f, "{url}: redirect to an invalid location {location:?}")
            }
            FetchError::Status { url, code, text } => write!(f, "{url}: HTTP {code} {text}"),
            FetchError::Transport { url, message } => write!(f, "{url}: {message}"),
            FetchError::Body { url, error } => write!(f, "{url}: {error}"),
        }
    }
}

/// A fetched page as text.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    pub text: String,
    /// The body was longer than `max_bytes` and was cut there.
    pub truncated: bool,
}

/// Fetches `url` under `cfg`, checking addresses with the policy `cfg.allow_private` picks.
pub fn fetch(url: &str, cfg: &HttpFetch) -> Result<Fetched, FetchError> {
    let check: Check = if cfg.allow_private {
        addr::allow_all
    } else {
        addr::refusal
    };
    fetch_with(url, cfg, check)
}

/// [`fetch`] with the address check given, so tests can allow their 127.0.0.1 server and
/// still see every other address refused.
pub(crate) fn fetch_with(url: &str, cfg: &HttpFetch, check: Check) -> Result<Fetched, FetchError> {
    let now = Instant::now();
    // `Instant + Duration` panics on overflow, and timeout_s has no upper bound in the
    // config; a timeout too large to represent is as good as a year.
    let deadline = now
        .checked_add(Duration::from_secs(cfg.timeout_s))
        .unwrap_or(now + YEAR);
    let first = url;
    let mut url = Url::parse(url).map_err(|e| FetchError::BadUrl {
        url: url.to_string(),
        message: e.to_string(),
    })?;
    let timed_out = |url: &Url| FetchError::TimedOut {
        url: url.to_string(),
        timeout_s: cfg.timeout_s,
    };
    for _hop in 0..=MAX_REDIRECTS {
        let agent = agent_for(&url, deadline, cfg.timeout_s, check)?;
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(timed_out(&url));
        }
        let response = match agent.request_url("GET", &url).timeout(remaining).call() {
            Ok(r) => r,
            Err(ureq::Error::Status(code, r)) => {
                return Err(FetchError::Status {
                    url: url.to_string(),
                    code,
                    text: r.status_text().to_string(),
                })
            }
            Err(ureq::Error::Transport(t)) => {
                if Instant::now() >= deadline || is_timeout(&t) {
                    return Err(timed_out(&url));
                }
                return Err(FetchError::Transport {
                    url: url.to_string(),
                    message: t.to_string(),
                });
            }
        };
        if (300..400).contains(&response.status()) {
            url = redirect_target(&url, &response)?;
            continue;
        }
        return read_body(&url, response, cfg, deadline);
    }
    Err(FetchError::TooManyRedirects {
        url: first.to_string(),
        last: url.to_string(),
    })
}

/// Checks the scheme and every address of `url`'s host, and builds an agent that can
/// connect only to those addresses and follows no redirect on its own.
fn agent_for(
    url: &Url,
    deadline: Instant,
    timeout_s: u64,
    check: Check,
) -> Result<ureq::Agent, FetchError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(FetchError::Scheme {
            url: url.to_string(),
            scheme: url.scheme().to_string(),
        });
    }
    // ureq would send them as a Basic `Authorization` header: a channel out of the box
    // the owner does not see in the address they read, and credentials nobody asked to
    // send. Checked on every hop, so a redirect cannot add them either.
    if !url.username().is_empty() || url.password().is_some() {
        return Err(FetchError::Userinfo {
            url: url.to_string(),
        });
    }
    let host = url.host().ok_or_else(|| FetchError::NoHost {
        url: url.to_string(),
    })?;
    // http and https always have a known default port, so the fallback is never used.
    let port = url.port_or_known_default().unwrap_or(80);
    let addrs =
        addr::resolve_checked(&host, port, deadline, check).map_err(|error| match error {
            ResolveError::TimedOut { .. } => FetchError::TimedOut {
                url: url.to_string(),
                timeout_s,
            },
            error => FetchError::Address {
                url: url.to_string(),
                error,
            },
        })?;
    Ok(ureq::AgentBuilder::new()
        .resolver(Pinned(addrs))
        .redirects(0)
        .user_agent(USER_AGENT)
        .build())
}

fn redirect_target(from: &Url, response: &ureq::Response) -> Result<Url, FetchError> {
    let location = response
        .header("location")
        .ok_or_else(|| FetchError::Status {
            url: from.to_string(),
            code: response.status(),
            text: format!("{} without a location", response.status_text()),
        })?;
    from.join(location).map_err(|_| FetchError::BadRedirect {
        url: from.to_string(),
        location: location.to_string(),
    })
}

fn is_timeout(t: &ureq::Transport) -> bool {
    use std::error::Error;
    let mut source = t.source();
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            if matches!(
                io.kind(),
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
            ) {
                return true;
            }
        }
        source = e.source();
    }
    false
}

/// Reads at most `max_bytes` of the (decompressed) body, so neither an endless page nor a
/// compression bomb can hold more than that in memory.
fn read_body(
    url: &Url,
    response: ureq::Response,
    cfg: &HttpFetch,
    deadline: Instant,
) -> Result<Fetched, FetchError> {
    let max_bytes = cfg.max_bytes;
    let content_type = response.header("content-type").map(str::to_string);
    let mut body = Vec::new();
    let read = response
        .into_reader()
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut body);
    if let Err(e) = read {
        // ureq turns the deadline into a read timeout on the socket, so a stalled or
        // endless-but-slow body ends here once the deadline passes.
        if Instant::now() >= deadline || matches!(e.kind(), io::ErrorKind::TimedOut) {
            return Err(FetchError::TimedOut {
                url: url.to_string(),
                timeout_s: cfg.timeout_s,
            });
        }
        return Err(FetchError::Transport {
            url: url.to_string(),
            message: format!("reading the body: {e}"),
        });
    }
    let limit = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    let truncated = body.len() > limit;
    body.truncate(limit);
    let mut text = html::body_text(content_type.as_deref(), &body, truncated).map_err(|error| {
        FetchError::Body {
            url: url.to_string(),
            error,
        }
    })?;
    // Rendered HTML can outgrow its source (tables are padded); hold the text to the
    // same bound so the log line stays bounded too.
    if text.len() > limit {
        let mut end = limit;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    if truncated {
        text.push_str(&format!(
            "\n[truncated: the page is longer than {max_bytes} bytes (tools.http_fetch.max_bytes)]"
        ));
    }
    Ok(Fetched { text, truncated })
}

#[cfg(test)]
mod tests;
