//! The schedule's decisions, on a clock the tests move by hand.

use super::*;

const NOON: u32 = 12 * 60;

fn settings(every_s: u64, window: Option<(u32, u32)>) -> Settings {
    Settings {
        every: (every_s > 0).then(|| Duration::from_secs(every_s)),
        window,
        session: SessionId::parse("main").unwrap(),
    }
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn off_means_no_deadline_and_no_beat() {
    let t0 = Instant::now();
    let mut s = Schedule::new(settings(0, None), t0);
    assert_eq!(s.deadline(), None);
    assert_eq!(s.poll(t0 + secs(3600), true, || NOON), None);
}

#[test]
fn the_first_beat_comes_a_period_after_start_and_the_next_a_period_after_it_ended() {
    let t0 = Instant::now();
    let mut s = Schedule::new(settings(60, None), t0);
    assert_eq!(s.deadline(), Some(t0 + secs(60)));
    assert_eq!(s.poll(t0 + secs(59), true, || NOON), None);
    assert_eq!(
        s.poll(t0 + secs(60), true, || NOON).unwrap().as_str(),
        "main"
    );
    assert!(s.running);
    assert_eq!(s.deadline(), None, "no timer while a beat runs");
    assert_eq!(
        s.poll(t0 + secs(200), true, || NOON),
        None,
        "one beat at a time"
    );
    s.ended(t0 + secs(90));
    assert_eq!(s.deadline(), Some(t0 + secs(150)));
}

#[test]
fn a_beat_due_while_the_worker_is_busy_waits_and_runs_once_it_is_idle() {
    let t0 = Instant::now();
    let mut s = Schedule::new(settings(10, None), t0);
    assert_eq!(s.poll(t0 + secs(10), false, || NOON), None);
    assert_eq!(
        s.deadline(),
        None,
        "the worker going idle wakes the loop, not a timer"
    );
    assert_eq!(s.poll(t0 + secs(11), false, || NOON), None);
    assert!(s.poll(t0 + secs(12), true, || NOON).is_some());
}

#[test]
fn outside_active_hours_the_beat_is_skipped_until_the_window_opens() {
    let t0 = Instant::now();
    let night_out = (22 * 60, 7 * 60);
    let mut s = Schedule::new(settings(60, Some(night_out)), t0);
    assert_eq!(s.poll(t0 + secs(60), true, || NOON), None);
    // Noon to 22:00 is ten hours.
    assert_eq!(s.deadline(), Some(t0 + secs(60 + 10 * 3600)));
    assert!(s
        .poll(t0 + secs(60 + 10 * 3600), true, || 22 * 60)
        .is_some());
}

#[test]
fn a_window_opening_sooner_than_a_period_still_waits_a_period() {
    let t0 = Instant::now();
    let mut s = Schedule::new(settings(3600, Some((NOON + 1, NOON + 120))), t0);
    assert_eq!(s.poll(t0 + secs(3600), true, || NOON), None);
    assert_eq!(s.deadline(), Some(t0 + secs(7200)));
}

#[test]
fn a_waiting_beat_outside_the_window_is_dropped() {
    let t0 = Instant::now();
    let mut s = Schedule::new(settings(60, Some((8 * 60, 22 * 60))), t0);
    assert_eq!(s.poll(t0 + secs(60), false, || 21 * 60 + 59), None);
    assert_eq!(s.deadline(), None);
    assert_eq!(s.poll(t0 + secs(120), true, || 22 * 60), None);
    assert_eq!(s.deadline(), Some(t0 + secs(120 + 10 * 3600)));
}

#[test]
fn a_reload_with_new_settings_restarts_the_period_and_unchanged_ones_do_not() {
    let t0 = Instant::now();
    let mut s = Schedule::new(settings(60, None), t0);
    s.reconfigure(settings(60, None), t0 + secs(30));
    assert_eq!(s.deadline(), Some(t0 + secs(60)));
    s.reconfigure(settings(10, None), t0 + secs(30));
    assert_eq!(s.deadline(), Some(t0 + secs(40)));
    s.reconfigure(settings(0, None), t0 + secs(31));
    assert_eq!(s.deadline(), None);
}

#[test]
fn a_reload_while_a_beat_runs_keeps_it_running_until_it_ends() {
    let t0 = Instant::now();
    let mut s = Schedule::new(settings(5, None), t0);
    assert!(s.poll(t0 + secs(5), true, || NOON).is_some());
    s.reconfigure(settings(7, None), t0 + secs(6));
    assert!(s.running);
    assert_eq!(s.poll(t0 + secs(100), true, || NOON), None);
    s.ended(t0 + secs(8));
    assert_eq!(s.deadline(), Some(t0 + secs(15)));
}

#[test]
fn an_absurd_period_is_capped_instead_of_overflowing_the_clock() {
    let cfg = proto::config::Config::parse(
        "[heartbeat]\nevery_s = 9223372036854775807\n",
        std::path::Path::new("t.toml"),
    )
    .unwrap();
    let settings = Settings::of(&cfg, SessionId::parse("main").unwrap());
    assert_eq!(settings.every, Some(MAX_PERIOD));
    let t0 = Instant::now();
    let mut s = Schedule::new(settings, t0);
    assert_eq!(s.deadline(), Some(t0 + MAX_PERIOD));
    assert!(s.poll(t0 + MAX_PERIOD, true, || NOON).is_some());
    s.ended(t0 + MAX_PERIOD);
}
