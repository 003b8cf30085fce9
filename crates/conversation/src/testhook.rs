//! Test hooks, compiled in only with the `testhooks` cargo feature (the test command turns
//! it on; a release build leaves it out, and `scripts/check-release` makes sure). Without
//! the feature every function here is an empty inline stub, so the call sites cost
//! nothing and the release binary holds neither the variables' names nor the code.
//!
//! - `BOXMAKER_TEST_ABORT_AT=<point>`: loopd calls `std::process::abort()` when it reaches
//!   the named point, the nearest a test can get to pulling the plug at an exact moment.
//!   With `BOXMAKER_TEST_ABORT_NTH=<n>` it aborts at the point's nth arrival instead of
//!   its first (the nth write of the inbox, say).
//! - `BOXMAKER_TEST_LINE_DEADLINE_MS=<ms>`: the channel's line deadline in place of
//!   loopd's `limits::LINE_DEADLINE` (30 s), so the test of it does not wait out half a minute.
//! - `BOXMAKER_TEST_HEARTBEAT_MS=<ms>`: the heartbeat period in place of
//!   `heartbeat.every_s` (when that is not 0), so a flood of heartbeats takes seconds.
//! - `BOXMAKER_BENCH_SUMMARY_SLOT=main`: tool summaries go to `slots.main` instead of
//!   `slots.background`, so `scripts/bench compaction` can measure what the background
//!   slot saves.
//!
//! The Honcho reporter's hooks are its crate's (`honcho::testhook`), the reminders' clock
//! is remind's (`remind::clock`); this feature turns on theirs too.

#[cfg(feature = "testhooks")]
mod armed {
    use std::sync::OnceLock;

    /// The named points, so a typo in a test is caught by `is_known` rather than
    /// silently never firing.
    pub(crate) const POINTS: &[&str] = &[
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
        // Forgetting: the plan is on disk; no log or head has changed.
        "forget-after-plan",
        // Forgetting: one more epoch log is rewritten.
        "forget-after-log",
        // Forgetting: every log and head is rewritten; slots and memoryd are not told.
        "forget-after-heads",
        // Forgetting: everything is done but the plan file is still there.
        "forget-before-plan-removed",
        // The inbox file was written (the Nth time, with `BOXMAKER_TEST_ABORT_NTH=N`).
        "inbox-write",
        // Matrix: a sync's lines are in loopd's store; the sync thread is not told.
        "matrix-lines-stored",
        // Matrix: a reply's events are planned into the store; none is sent yet.
        "matrix-reply-planned",
        // Matrix: the homeserver acknowledged an event; the store does not know yet.
        "matrix-acknowledged",
    ];

    pub(crate) const ABORT_AT_ENV: &str = "BOXMAKER_TEST_ABORT_AT";
    pub(crate) const ABORT_NTH_ENV: &str = "BOXMAKER_TEST_ABORT_NTH";

    /// Whether this is the time the armed point aborts: its `BOXMAKER_TEST_ABORT_NTH`th
    /// arrival (the first when unset).
    pub(crate) fn nth_arrival() -> bool {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NTH: OnceLock<u64> = OnceLock::new();
        static SEEN: AtomicU64 = AtomicU64::new(0);
        let nth = *NTH.get_or_init(|| {
            std::env::var(ABORT_NTH_ENV)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(1)
        });
        SEEN.fetch_add(1, Ordering::SeqCst) + 1 == nth
    }
    pub(crate) const BENCH_SLOT_ENV: &str = "BOXMAKER_BENCH_SUMMARY_SLOT";
    pub(crate) const LINE_DEADLINE_ENV: &str = "BOXMAKER_TEST_LINE_DEADLINE_MS";
    pub(crate) const HEARTBEAT_ENV: &str = "BOXMAKER_TEST_HEARTBEAT_MS";

    /// The variable as whole milliseconds, above 0; anything else is ignored.
    pub fn heartbeat_period() -> Option<std::time::Duration> {
        static PERIOD: OnceLock<Option<std::time::Duration>> = OnceLock::new();
        *PERIOD.get_or_init(|| {
            let ms = std::env::var(HEARTBEAT_ENV).ok()?.parse::<u64>().ok()?;
            (ms > 0).then(|| std::time::Duration::from_millis(ms))
        })
    }

    pub fn point() -> Option<&'static str> {
        static POINT: OnceLock<Option<String>> = OnceLock::new();
        POINT
            .get_or_init(|| std::env::var(ABORT_AT_ENV).ok())
            .as_deref()
    }

    pub(crate) fn flag(var: &str, value: &str) -> bool {
        std::env::var_os(var).is_some_and(|v| v == value)
    }

    /// The variable as whole milliseconds; anything else is ignored (and warned of at
    /// start by `warn_if_armed`).
    pub fn line_deadline() -> Option<std::time::Duration> {
        let ms = std::env::var(LINE_DEADLINE_ENV).ok()?.parse::<u64>().ok()?;
        Some(std::time::Duration::from_millis(ms))
    }

    pub(crate) fn summaries_on_main() -> bool {
        static ON_MAIN: OnceLock<bool> = OnceLock::new();
        *ON_MAIN.get_or_init(|| flag(BENCH_SLOT_ENV, "main"))
    }
}

/// Aborts the process if the test hook names `point`.
#[inline]
pub fn abort_at(point: &str) {
    #[cfg(feature = "testhooks")]
    {
        debug_assert!(
            armed::POINTS.contains(&point),
            "unknown test hook point {point}"
        );
        if armed::point() == Some(point) && armed::nth_arrival() {
            plumbing::error!("test hook: aborting at {point}");
            std::process::abort();
        }
    }
    #[cfg(not(feature = "testhooks"))]
    let _ = point;
}

/// The heartbeat period a test set in place of `heartbeat.every_s`, if any.
#[inline]
pub fn heartbeat_period() -> Option<std::time::Duration> {
    #[cfg(feature = "testhooks")]
    return armed::heartbeat_period();
    #[cfg(not(feature = "testhooks"))]
    None
}

/// Whether tool summaries run on `slots.main` (the compaction benchmark's switch).
#[inline]
pub(crate) fn summaries_on_main() -> bool {
    #[cfg(feature = "testhooks")]
    return armed::summaries_on_main();
    #[cfg(not(feature = "testhooks"))]
    false
}

/// The line deadline a test set in place of loopd's `limits::LINE_DEADLINE`, if any.
#[inline]
pub fn line_deadline() -> Option<std::time::Duration> {
    #[cfg(feature = "testhooks")]
    return armed::line_deadline();
    #[cfg(not(feature = "testhooks"))]
    None
}

/// Warns once at start when a hook is set, so a stray variable shows up in the journal
/// rather than as a mysterious crash.
pub fn warn_if_armed() {
    #[cfg(feature = "testhooks")]
    {
        plumbing::warn!("built with test hooks (the `testhooks` feature): not for deployment");
        honcho::testhook::warn_if_armed();
        if summaries_on_main() {
            plumbing::warn!(
                "{}=main: tool summaries run on slots.main (a benchmark setting)",
                armed::BENCH_SLOT_ENV
            );
        }
        if let Some(d) = line_deadline() {
            plumbing::warn!(
                "test hook armed: the line deadline is {} s",
                d.as_secs_f64()
            );
        } else if std::env::var_os(armed::LINE_DEADLINE_ENV).is_some() {
            plumbing::warn!(
                "{} is not a whole number of milliseconds; the line deadline stays as it is",
                armed::LINE_DEADLINE_ENV
            );
        }
        if let Some(p) = heartbeat_period() {
            plumbing::warn!(
                "test hook armed: the heartbeat period is {} ms",
                p.as_millis()
            );
        }
        if let Some(point) = armed::point() {
            if armed::POINTS.contains(&point) {
                plumbing::warn!("test hook armed: will abort at {point}");
            } else {
                plumbing::warn!("test hook names an unknown point {point:?}; it will never fire");
            }
        }
    }
}
