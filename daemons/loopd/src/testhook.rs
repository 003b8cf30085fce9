//! Crash points for the end-to-end tests. `BOXMAKER_TEST_ABORT_AT=<point>` makes loopd
//! call `std::process::abort()` when it reaches the named point, the nearest a test can
//! get to pulling the plug at an exact moment. Unset (always, outside tests), every call
//! here is one comparison against a cached `None`.

use std::sync::OnceLock;

/// The named points, so a typo in a test is caught by `is_known` rather than silently
/// never firing.
pub const POINTS: &[&str] = &[
    // The owner's `user` record is on disk; the model has not been asked yet.
    "after-user-append",
    // The first piece of the model's answer has been streamed to the client.
    "mid-stream",
    // The `assistant` record is on disk; its `usage` is not.
    "after-assistant-append",
    // Compaction: the summary is in hand; nothing of the new epoch is on disk.
    "compact-after-summary",
    // The new epoch's (empty) log exists; its head does not.
    "compact-after-log-create",
    // The new head is written and fsynced under its temporary name, not renamed.
    "compact-after-head-temp",
    // The head is renamed into place: the new epoch is current on disk.
    "compact-after-head-rename",
];

fn armed() -> Option<&'static str> {
    static POINT: OnceLock<Option<String>> = OnceLock::new();
    POINT
        .get_or_init(|| std::env::var("BOXMAKER_TEST_ABORT_AT").ok())
        .as_deref()
}

/// Aborts the process if the test hook names `point`.
pub fn abort_at(point: &str) {
    debug_assert!(is_known(point), "unknown test hook point {point}");
    if armed() == Some(point) {
        plumbing::error!("test hook: aborting at {point}");
        std::process::abort();
    }
}

pub fn is_known(point: &str) -> bool {
    POINTS.contains(&point)
}

/// Warns once at start when the hook is set, so a stray variable in a real deployment
/// shows up in the journal rather than as a mysterious crash.
pub fn warn_if_armed() {
    if std::env::var_os(crate::honcho::ABORT_AFTER_POST_ENV).is_some_and(|v| v == "1") {
        plumbing::warn!(
            "test hook armed: the Honcho reporter aborts loopd after each batch Honcho accepts"
        );
    }
    if let Some(point) = armed() {
        if is_known(point) {
            plumbing::warn!("test hook armed: will abort at {point}");
        } else {
            plumbing::warn!("test hook names an unknown point {point:?}; it will never fire");
        }
    }
}
