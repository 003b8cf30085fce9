//! `heartbeat.active_hours`: the local hours when heartbeats may run, so the assistant
//! does not check in at night. The config parses `"HH:MM-HH:MM"` into minutes after local
//! midnight (`proto::config::Config::active_hours`); this module answers "is now inside?"
//! and reads the local clock.
//!
//! Local time needs the timezone. `chrono::Local` reads `TZ` and `/etc/localtime` itself,
//! in safe code and safely from any thread; libc's `localtime_r` would need `unsafe`
//! (denied workspace-wide), and the `time` crate refuses to give a local offset once a
//! process has more than one thread, which loopd always has.

use chrono::Timelike;

/// Minutes in a day; the window's ends are below this.
pub(crate) const DAY_MINUTES: u32 = 24 * 60;

/// True when `now` (minutes after local midnight) is inside the window `(start, end)`.
/// The start is inside and the end is not. A window whose end is before its start wraps
/// past midnight (`22:00-07:00` is the night); one whose ends are equal covers the whole
/// day, since an empty window would turn heartbeats off, which `every_s = 0` already says.
pub(crate) fn within(now: u32, (start, end): (u32, u32)) -> bool {
    if start == end {
        true
    } else if start < end {
        (start..end).contains(&now)
    } else {
        now >= start || now < end
    }
}

/// Minutes after midnight on the local clock now.
pub(crate) fn local_minutes() -> u32 {
    let now = chrono::Local::now();
    now.hour() * 60 + now.minute()
}

/// Minutes from `now` until the window next opens (0 when it is open), so a quiet night
/// costs one timer, not one wake-up a beat.
pub(crate) fn until_open(now: u32, window: (u32, u32)) -> u32 {
    if within(now, window) {
        return 0;
    }
    (window.0 + DAY_MINUTES - now) % DAY_MINUTES
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hm(h: u32, m: u32) -> u32 {
        h * 60 + m
    }

    #[test]
    fn a_day_window_holds_its_start_but_not_its_end() {
        let day = (hm(8, 30), hm(22, 0));
        assert!(!within(hm(8, 29), day));
        assert!(within(hm(8, 30), day));
        assert!(within(hm(12, 0), day));
        assert!(within(hm(21, 59), day));
        assert!(!within(hm(22, 0), day));
        assert!(!within(hm(3, 0), day));
    }

    #[test]
    fn a_window_ending_before_it_starts_wraps_past_midnight() {
        let night = (hm(22, 0), hm(7, 0));
        assert!(within(hm(22, 0), night));
        assert!(within(hm(23, 59), night));
        assert!(within(0, night));
        assert!(within(hm(6, 59), night));
        assert!(!within(hm(7, 0), night));
        assert!(!within(hm(12, 0), night));
        assert!(!within(hm(21, 59), night));
    }

    #[test]
    fn equal_ends_mean_the_whole_day() {
        for now in [0, hm(9, 0), DAY_MINUTES - 1] {
            assert!(within(now, (hm(9, 0), hm(9, 0))));
        }
    }

    #[test]
    fn the_wait_until_the_window_opens_wraps_too() {
        let day = (hm(8, 0), hm(22, 0));
        assert_eq!(until_open(hm(7, 0), day), 60);
        assert_eq!(until_open(hm(23, 0), day), hm(9, 0));
        assert_eq!(until_open(hm(12, 0), day), 0);
        let night = (hm(22, 0), hm(7, 0));
        assert_eq!(until_open(hm(21, 30), night), 30);
        assert_eq!(until_open(hm(7, 0), night), hm(15, 0));
        assert_eq!(until_open(hm(23, 0), night), 0);
    }

    #[test]
    fn the_local_clock_reads_a_minute_of_the_day() {
        assert!(local_minutes() < DAY_MINUTES);
    }

    #[test]
    fn the_config_parser_and_this_agree_on_a_wrapping_window() {
        let cfg = proto::config::Config::parse(
            "[heartbeat]\nactive_hours = \"22:00-07:00\"\n",
            std::path::Path::new("t.toml"),
        )
        .unwrap();
        let window = cfg.active_hours().unwrap();
        assert_eq!(window, (hm(22, 0), hm(7, 0)));
        assert!(within(hm(2, 0), window));
        assert!(!within(hm(14, 0), window));
    }
}
