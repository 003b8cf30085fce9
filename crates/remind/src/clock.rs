//! The wall clock reminders are due by (docs/reminders.md). In a build with the
//! `testhooks` feature a test can move it forward: `BOXMAKER_TEST_CLOCK_OFFSET_S` sets
//! how far ahead of the real clock loopd starts, and the channel command `/testclock +S`
//! moves it on while loopd runs. Only the reminders' clock moves: log times, heartbeats
//! and deadlines keep the real one. Without the feature this is `Utc::now()`.

use chrono::{DateTime, Utc};

#[cfg(feature = "testhooks")]
mod armed {
    use std::sync::atomic::{AtomicI64, Ordering};
    use std::sync::OnceLock;

    pub const OFFSET_ENV: &str = "BOXMAKER_TEST_CLOCK_OFFSET_S";

    fn cell() -> &'static AtomicI64 {
        static OFFSET: OnceLock<AtomicI64> = OnceLock::new();
        OFFSET.get_or_init(|| {
            let start = std::env::var(OFFSET_ENV)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            AtomicI64::new(start)
        })
    }

    pub fn offset() -> i64 {
        cell().load(Ordering::SeqCst)
    }

    pub fn advance(seconds: i64) -> i64 {
        cell().fetch_add(seconds, Ordering::SeqCst) + seconds
    }
}

/// Now, by the reminders' clock.
pub fn now() -> DateTime<Utc> {
    #[cfg(feature = "testhooks")]
    return Utc::now() + chrono::Duration::seconds(armed::offset());
    #[cfg(not(feature = "testhooks"))]
    Utc::now()
}

/// Moves the reminders' clock `seconds` forward (a test hook); returns the new offset.
#[cfg(feature = "testhooks")]
pub fn advance(seconds: i64) -> i64 {
    armed::advance(seconds)
}

/// The time between two instants of this clock, never negative.
pub fn until(from: DateTime<Utc>, to: DateTime<Utc>) -> std::time::Duration {
    (to - from).to_std().unwrap_or_default()
}
