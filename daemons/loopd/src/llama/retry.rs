//! Which failures of a request to llama.cpp are worth another try, and how long to wait
//! before it. Connection errors, 503 (the model is loading) and other 5xx are retried
//! with doubling backoff; everything else fails at once. Nothing is retried once the
//! answer has started streaming, since its text has already reached the client.

use std::io;
use std::time::Duration;

/// The wait before the first retry. llama.cpp restarting or loading a model takes
/// seconds, so the first wait is short and the next ones double.
pub const BACKOFF_FIRST: Duration = Duration::from_millis(500);

/// The longest single wait: with `llama.retries` at most 10 the whole wait stays around
/// a minute, which is as long as a person at the socket should be kept waiting.
pub const BACKOFF_MAX: Duration = Duration::from_secs(8);

/// The wait before retry number `n` (1 for the first retry).
pub fn delay(n: u32) -> Duration {
    plumbing::backoff::Backoff::nth(BACKOFF_FIRST, BACKOFF_MAX, n)
}

/// Whether an HTTP status is worth retrying: 503 while the model loads, and any 5xx.
pub fn status_is_retryable(status: u16) -> bool {
    (500..600).contains(&status)
}

/// Whether a transport failure before any response is worth retrying. A read timeout
/// is not: the server accepted the request and then sat on it for `llama.timeout_s`,
/// and asking again would only wait as long once more.
pub fn transport_is_retryable(t: &ureq::Transport) -> bool {
    use ureq::ErrorKind as K;
    match t.kind() {
        K::ConnectionFailed | K::Dns => true,
        K::Io => !is_timeout(t),
        _ => false,
    }
}

pub fn is_timeout(t: &ureq::Transport) -> bool {
    let mut source = std::error::Error::source(t);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            return matches!(
                io.kind(),
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
            );
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
    fn server_errors_are_retried_client_errors_are_not() {
        assert!(status_is_retryable(503));
        assert!(status_is_retryable(500));
        assert!(!status_is_retryable(400));
        assert!(!status_is_retryable(404));
    }
}
