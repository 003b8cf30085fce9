//! The reporter's test hooks, compiled in only with this crate's `testhooks` feature
//! (loopd's `testhooks` turns it on; a release build leaves it out, and
//! `scripts/check-release` makes sure). Without the feature each function is an empty
//! inline stub, and the release binary holds neither the variables' names nor the code.
//!
//! - `BOXMAKER_TEST_HONCHO_ABORT_AFTER_POST=1`: the reporter aborts loopd right after
//!   Honcho accepted a batch and before the cursor is stored.
//! - `BOXMAKER_TEST_HONCHO_COMMIT_WINDOW_MS=<ms>`: the reporter waits this long, not
//!   `COMMIT_WINDOW`, before believing what Honcho says it holds after a post whose
//!   outcome it could not know.

#[cfg(feature = "testhooks")]
mod armed {
    pub const ABORT_AFTER_POST_ENV: &str = "BOXMAKER_TEST_HONCHO_ABORT_AFTER_POST";
    pub const COMMIT_WINDOW_ENV: &str = "BOXMAKER_TEST_HONCHO_COMMIT_WINDOW_MS";
}

/// Whether the reporter aborts after each batch Honcho accepts.
#[inline]
pub fn abort_after_post() -> bool {
    #[cfg(feature = "testhooks")]
    return std::env::var_os(armed::ABORT_AFTER_POST_ENV).is_some_and(|v| v == "1");
    #[cfg(not(feature = "testhooks"))]
    false
}

/// The reporter's commit window when a test sets it.
#[inline]
pub fn commit_window() -> Option<std::time::Duration> {
    #[cfg(feature = "testhooks")]
    return std::env::var(armed::COMMIT_WINDOW_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .map(std::time::Duration::from_millis);
    #[cfg(not(feature = "testhooks"))]
    None
}

/// Warns when a hook is set, so a stray variable shows up in the journal rather than as
/// a mysterious crash. loopd calls it once at start.
pub fn warn_if_armed() {
    #[cfg(feature = "testhooks")]
    if abort_after_post() {
        plumbing::warn!(
            "test hook armed: the Honcho reporter aborts loopd after each batch Honcho accepts"
        );
    }
}
