//! The schedule's decisions, on a clock the tests move by hand.

use super::*;

const NOON: u32 = 12 * 60;

/// A config beating every `every_s` seconds in session `main`, within `window` (minutes
/// after midnight) when there is one.
fn settings(every_s: u64, window: Option<(u32, u32)>) -> Config {
    let mut cfg = Config::default();
    cfg.heartbeat.every_s = every_s;
    if let Some((from, to)) = window {
        cfg.heartbeat.active_hours = format!(
            "{:02}:{:02}-{:02}:{:02}",
            from / 60,
            from % 60,
            to / 60,
            to % 60
        );
    }
    cfg
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn off_means_no_deadline_and_no_beat() {
    let t0 = Instant::now();
    let cfg = settings(0, None);
    let mut s = Schedule::new(&cfg, t0);
    assert_eq!(s.deadline(&cfg), None);
    assert_eq!(s.poll(&cfg, t0 + secs(3600), true, || NOON), None);
}

#[test]
fn the_first_beat_comes_a_period_after_start_and_the_next_a_period_after_it_ended() {
    let t0 = Instant::now();
    let cfg = settings(60, None);
    let mut s = Schedule::new(&cfg, t0);
    assert_eq!(s.deadline(&cfg), Some(t0 + secs(60)));
    assert_eq!(s.poll(&cfg, t0 + secs(59), true, || NOON), None);
    assert_eq!(
        s.poll(&cfg, t0 + secs(60), true, || NOON).unwrap().as_str(),
        "main"
    );
    assert!(s.running);
    assert_eq!(s.deadline(&cfg), None, "no timer while a beat runs");
    assert_eq!(
        s.poll(&cfg, t0 + secs(200), true, || NOON),
        None,
        "one beat at a time"
    );
    s.ended(&cfg, t0 + secs(90));
    assert_eq!(s.deadline(&cfg), Some(t0 + secs(150)));
}

#[test]
fn a_beat_due_while_the_worker_is_busy_waits_and_runs_once_it_is_idle() {
    let t0 = Instant::now();
    let cfg = settings(10, None);
    let mut s = Schedule::new(&cfg, t0);
    assert_eq!(s.poll(&cfg, t0 + secs(10), false, || NOON), None);
    assert_eq!(
        s.deadline(&cfg),
        None,
        "the worker going idle wakes the loop, not a timer"
    );
    assert_eq!(s.poll(&cfg, t0 + secs(11), false, || NOON), None);
    assert!(s.poll(&cfg, t0 + secs(12), true, || NOON).is_some());
}

#[test]
fn outside_active_hours_the_beat_is_skipped_until_the_window_opens() {
    let t0 = Instant::now();
    let night_out = (22 * 60, 7 * 60);
    let cfg = settings(60, Some(night_out));
    let mut s = Schedule::new(&cfg, t0);
    assert_eq!(s.poll(&cfg, t0 + secs(60), true, || NOON), None);
    // Noon to 22:00 is ten hours.
    assert_eq!(s.deadline(&cfg), Some(t0 + secs(60 + 10 * 3600)));
    assert!(s
        .poll(&cfg, t0 + secs(60 + 10 * 3600), true, || 22 * 60)
        .is_some());
}

#[test]
fn a_window_opening_sooner_than_a_period_still_waits_a_period() {
    let t0 = Instant::now();
    let cfg = settings(3600, Some((NOON + 1, NOON + 120)));
    let mut s = Schedule::new(&cfg, t0);
    assert_eq!(s.poll(&cfg, t0 + secs(3600), true, || NOON), None);
    assert_eq!(s.deadline(&cfg), Some(t0 + secs(7200)));
}

#[test]
fn a_waiting_beat_outside_the_window_is_dropped() {
    let t0 = Instant::now();
    let cfg = settings(60, Some((8 * 60, 22 * 60)));
    let mut s = Schedule::new(&cfg, t0);
    assert_eq!(s.poll(&cfg, t0 + secs(60), false, || 21 * 60 + 59), None);
    assert_eq!(s.deadline(&cfg), None);
    assert_eq!(s.poll(&cfg, t0 + secs(120), true, || 22 * 60), None);
    assert_eq!(s.deadline(&cfg), Some(t0 + secs(120 + 10 * 3600)));
}

#[test]
fn a_reload_with_new_settings_restarts_the_period_and_unchanged_ones_do_not() {
    let t0 = Instant::now();
    let cfg = settings(60, None);
    let mut s = Schedule::new(&cfg, t0);
    let same = settings(60, None);
    s.reloaded(&cfg, &same, t0 + secs(30));
    assert_eq!(s.deadline(&same), Some(t0 + secs(60)));
    let faster = settings(10, None);
    s.reloaded(&same, &faster, t0 + secs(30));
    assert_eq!(s.deadline(&faster), Some(t0 + secs(40)));
    let off = settings(0, None);
    s.reloaded(&faster, &off, t0 + secs(31));
    assert_eq!(s.deadline(&off), None);
}

#[test]
fn a_reload_to_another_session_restarts_the_period_and_beats_there() {
    let t0 = Instant::now();
    let cfg = settings(60, None);
    let mut s = Schedule::new(&cfg, t0);
    let mut moved = settings(60, None);
    moved.session = "desk".into();
    s.reloaded(&cfg, &moved, t0 + secs(30));
    assert_eq!(s.deadline(&moved), Some(t0 + secs(90)));
    let beat = s.poll(&moved, t0 + secs(90), true, || NOON);
    assert_eq!(beat.unwrap().as_str(), "desk");
}

#[test]
fn a_reload_while_a_beat_runs_keeps_it_running_until_it_ends() {
    let t0 = Instant::now();
    let cfg = settings(5, None);
    let mut s = Schedule::new(&cfg, t0);
    assert!(s.poll(&cfg, t0 + secs(5), true, || NOON).is_some());
    let slower = settings(7, None);
    s.reloaded(&cfg, &slower, t0 + secs(6));
    assert!(s.running);
    assert_eq!(s.poll(&slower, t0 + secs(100), true, || NOON), None);
    s.ended(&slower, t0 + secs(8));
    assert_eq!(s.deadline(&slower), Some(t0 + secs(15)));
}

#[test]
fn an_absurd_period_is_capped_instead_of_overflowing_the_clock() {
    let cfg = proto::config::Config::parse(
        "[heartbeat]\nevery_s = 9223372036854775807\n",
        std::path::Path::new("t.toml"),
    )
    .unwrap();
    assert_eq!(Settings::of(&cfg).every, Some(MAX_PERIOD));
    let t0 = Instant::now();
    let mut s = Schedule::new(&cfg, t0);
    assert_eq!(s.deadline(&cfg), Some(t0 + MAX_PERIOD));
    assert!(s.poll(&cfg, t0 + MAX_PERIOD, true, || NOON).is_some());
    s.ended(&cfg, t0 + MAX_PERIOD);
}
