//! Which failures of a request to llama.cpp are worth another try, and how long to wait
//! before it. An error the same request would get again is never retried: retrying it
//! only repeats the failure, and a session whose history draws it would fail every turn
//! three times over. The rules, read from llama.cpp's server (docs/llama-api.md,
//! 'Errors, and which ones the same request gets again'):
//!
//! - 4xx are the request's fault (bad JSON, a template that cannot render it, tools
//!   without `--jinja`, a prompt over the slot's context): the same request, the same
//!   answer. 408 and 429 are a busy peer (a proxy in front), worth another try.
//! - 500 is retried as any 5xx is, except the messages of an exception thrown while
//!   reading the request or rendering its template (`Failed to parse tool call arguments
//!   as JSON`, a template error): those the same request gets again. llama.cpp answers
//!   500 for any other exception too, and a proxy or a restarting server for anything;
//!   a 500 that is not known to repeat costs `llama.retries` tries, never a wedge.
//! - 501 is a feature the server was started without: the same again.
//! - 502, 503 (the model is loading), 504 and other 5xx, connection refused or reset:
//!   the server is restarting or a proxy lost it; retried with doubling backoff.
//!
//! Nothing is retried once the answer has started streaming, since its text has
//! already reached the client, and nothing past the call's deadline (`llama.timeout_s`).
//! A stream that broke or ended before any of the answer is a connection error; an error
//! the server sent in the stream before any of the answer is judged by these rules as if
//! it had come before the stream, its `code` taken as the status.

use std::time::Duration;

/// The wait before the first retry. llama.cpp restarting or loading a model takes
/// seconds, so the first wait is short and the next ones double.
pub const BACKOFF_FIRST: Duration = Duration::from_millis(500);

/// The longest single wait: with `llama.retries` at most 10 the whole wait stays around
/// a minute, which is as long as a person at the socket should be kept waiting.
pub const BACKOFF_MAX: Duration = Duration::from_secs(8);

/// Parts of llama.cpp's 500 messages (lower-cased) thrown while reading the request or
/// rendering the chat template: the same request throws the same again (docs/llama-api.md,
/// 'Errors, and which ones the same request gets again'). The decode step's own failures (`failed to find a memory slot`, `Compute
/// error.`) are not among them: they depend on what else the server is doing.
const REQUEST_500: [&str; 6] = [
    "failed to parse",
    "json.exception",
    "template",
    "jinja",
    "not supported",
    "unsupported",
];

/// The wait before retry number `n` (1 for the first retry).
pub fn delay(n: u32) -> Duration {
    plumbing::backoff::Backoff::nth(BACKOFF_FIRST, BACKOFF_MAX, n)
}

/// Whether the same request would get this HTTP error again (see the module doc).
pub fn status_repeats(status: u16, message: &str) -> bool {
    match status {
        408 | 429 => false,
        400..=499 | 501 => true,
        500 => {
            let m = message.to_ascii_lowercase();
            REQUEST_500.iter().any(|t| m.contains(t))
        }
        _ => false,
    }
}

/// Whether a transport failure before any response is worth retrying: the server is
/// not there (yet), or dropped the connection. A read timeout is not retried: the
/// call's deadline has passed.
pub fn transport_is_retryable(t: &ureq::Transport) -> bool {
    use ureq::ErrorKind as K;
    match t.kind() {
        K::ConnectionFailed | K::Dns => true,
        K::Io => !is_timeout(t),
        _ => false,
    }
}

/// Whether a transport failure is the call's deadline running out.
pub fn is_timeout(t: &ureq::Transport) -> bool {
    let mut source = std::error::Error::source(t);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return super::body::is_timeout(io);
        }
        source = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_up_to_its_cap() {
        assert_eq!(delay(1), BACKOFF_FIRST);
        assert_eq!(delay(2), BACKOFF_FIRST * 2);
        assert_eq!(delay(3), BACKOFF_FIRST * 4);
        assert_eq!(delay(10), BACKOFF_MAX);
        assert_eq!(delay(u32::MAX), BACKOFF_MAX);
    }

    #[test]
    fn a_server_restarting_or_loading_is_retried() {
        for status in [502, 503, 504, 408, 429] {
            assert!(!status_repeats(status, "Loading model"), "{status}");
        }
    }

    #[test]
    fn the_same_request_refused_again_is_not_retried() {
        assert!(status_repeats(
            500,
            "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101]"
        ));
        assert!(status_repeats(400, "tools param requires --jinja flag"));
        assert!(status_repeats(404, "File Not Found"));
        assert!(status_repeats(
            501,
            "This server does not support slots action"
        ));
    }

    /// Regression: any 500 but the decode step's was taken for one the same request gets
    /// again, so a server (or a proxy) failing once failed the turn at the first try.
    #[test]
    fn a_500_not_known_to_repeat_is_retried() {
        assert!(!status_repeats(500, "boom"));
        assert!(!status_repeats(500, "Internal Server Error"));
        assert!(status_repeats(500, "Failed to parse input at pos 12"));
        assert!(status_repeats(
            500,
            "Error rendering the chat template: Unknown method"
        ));
    }

    #[test]
    fn a_500_from_the_decode_step_is_retried() {
        assert!(!status_repeats(500, "Compute error."));
        assert!(!status_repeats(
            500,
            "failed to find a memory slot for batch of size 512"
        ));
    }
}
