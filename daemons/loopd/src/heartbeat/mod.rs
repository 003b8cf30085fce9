//! Heartbeat turns (docs/honcho.md): every `heartbeat.every_s` seconds, while loopd is idle, a
//! turn with `origin: heartbeat` whose text is `heartbeat.md`, so the assistant can speak
//! up without being asked. An answer that is [`ack::TOKEN`] (with little else) is logged
//! and not delivered; anything else goes to the connected clients of the session as a
//! reply block of its own, between their reply blocks, or to the inbox when none is
//! connected (`channel::broadcast`, docs/reminders.md).
//!
//! The work is split by thread. The [`Schedule`] lives in the poll loop: its deadline is
//! the loop's timer (`plumbing::Service::deadline`), so no thread sleeps for it, and it
//! starts a beat only when the worker has nothing queued or running, so a heartbeat never
//! interrupts or queues behind a turn. A beat that falls due while the worker is busy
//! waits, and runs as soon as the worker is idle again. The beat itself runs on the
//! worker like any turn (`beat::run`), reading `heartbeat.md` afresh each time.
//!
//! Which session: the configured `session`, the one a new connection starts in and the
//! one `STATUS=` shows. Sessions a client switched to with `/session` get no heartbeats:
//! they are side conversations, and beating in each would multiply the model's work.
//!
//! Timing: the next beat is due `every_s` after the previous one ended, so there are
//! always `every_s` idle seconds between beats however slow the model is, and the first
//! beat comes `every_s` after start (or after a reload that changed the settings).

pub(crate) mod ack;
pub(crate) mod beat;
pub(crate) mod hours;

use proto::config::Config;
use proto::SessionId;
use std::time::{Duration, Instant};

/// The longest period honoured. A longer `every_s` is as good as off for a daemon that
/// restarts with the machine, and capping it keeps `Instant` arithmetic from overflowing
/// (which would panic the poll loop) on an absurd value the config accepts.
pub(crate) const MAX_PERIOD: Duration = Duration::from_secs(366 * 24 * 3600);

/// What a schedule runs on, read from the configuration in force whenever it is needed
/// and never kept: the channel hands its one `Config` in with each call, so a reload
/// needs no copying, only [`Schedule::reloaded`] to restart the period when these change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings<'a> {
    /// `None` when heartbeats are off (`every_s = 0`).
    pub(crate) every: Option<Duration>,
    /// `heartbeat.active_hours` in minutes after local midnight; `None` means any hour.
    pub(crate) window: Option<(u32, u32)>,
    /// `session`: where beats run.
    pub(crate) session: &'a str,
}

impl Settings<'_> {
    pub(crate) fn of(cfg: &Config) -> Settings<'_> {
        Settings {
            every: (cfg.heartbeat.every_s > 0).then(|| {
                conversation::testhook::heartbeat_period()
                    .unwrap_or(Duration::from_secs(cfg.heartbeat.every_s))
                    .min(MAX_PERIOD)
            }),
            window: cfg.active_hours(),
            session: &cfg.session,
        }
    }
}

/// When the next beat is due, and whether one is running or waiting for the worker.
#[derive(Debug)]
pub(crate) struct Schedule {
    next: Instant,
    /// A beat fell due while the worker was busy; it runs once the worker is idle.
    waiting: bool,
    /// A beat is running on the worker.
    running: bool,
    /// Outside `active_hours` last time it fell due; logged once per quiet spell.
    quiet: bool,
}

impl Schedule {
    pub(crate) fn new(cfg: &Config, now: Instant) -> Schedule {
        Schedule {
            next: now + Settings::of(cfg).every.unwrap_or_default(),
            waiting: false,
            running: false,
            quiet: false,
        }
    }

    /// The configuration was reloaded from `old` to `new`. Changed settings start the
    /// period afresh; unchanged ones leave the schedule alone, so a reload does not
    /// postpone the next beat.
    pub(crate) fn reloaded(&mut self, old: &Config, new: &Config, now: Instant) {
        let settings = Settings::of(new);
        if settings == Settings::of(old) {
            return;
        }
        self.next = now + settings.every.unwrap_or_default();
        self.waiting = false;
        self.quiet = false;
    }

    /// When the poll loop should next call [`Schedule::poll`]: `None` while heartbeats are
    /// off, a beat runs, or a due beat waits for the worker (its end wakes the loop).
    pub(crate) fn deadline(&self, cfg: &Config) -> Option<Instant> {
        if Settings::of(cfg).every.is_none() || self.running || self.waiting {
            return None;
        }
        Some(self.next)
    }

    /// Called on the timer and whenever the worker may have gone idle. Returns the session
    /// to beat in when a beat should start now; the caller submits it and later calls
    /// [`Schedule::ended`]. `local_minutes` is asked only when there is a window to check.
    pub(crate) fn poll(
        &mut self,
        cfg: &Config,
        now: Instant,
        worker_idle: bool,
        local_minutes: impl FnOnce() -> u32,
    ) -> Option<SessionId> {
        let settings = Settings::of(cfg);
        let every = settings.every?;
        if self.running || (!self.waiting && now < self.next) {
            return None;
        }
        if let Some(window) = settings.window {
            if self.outside(window, local_minutes(), now, every) {
                return None;
            }
        }
        // Loading refuses a `session` that is not an id, so this is a config built in
        // code; it gets no beats, and says so each period rather than spinning.
        let session = match SessionId::parse(settings.session) {
            Ok(session) => session,
            Err(e) => {
                plumbing::error!("heartbeat: {e}; no beat");
                self.waiting = false;
                self.next = now + every;
                return None;
            }
        };
        if !worker_idle {
            if !self.waiting {
                plumbing::info!("heartbeat: due while a turn is running; it waits for the turn");
                self.waiting = true;
            }
            return None;
        }
        self.waiting = false;
        self.running = true;
        Some(session)
    }

    /// Whether `minutes` after local midnight is outside `window`; if so the beat is
    /// skipped until the window opens, and the first skip of a quiet spell is logged.
    fn outside(&mut self, window: (u32, u32), minutes: u32, now: Instant, every: Duration) -> bool {
        if hours::within(minutes, window) {
            self.quiet = false;
            return false;
        }
        let wait = u64::from(hours::until_open(minutes, window)) * 60;
        if !self.quiet {
            plumbing::info!(
                "heartbeat: outside active_hours; quiet for about {} minutes",
                wait / 60
            );
            self.quiet = true;
        }
        self.waiting = false;
        // At least one period, so a window that opens in a minute does not make beats
        // come faster than configured.
        self.next = now + every.max(Duration::from_secs(wait));
        true
    }

    /// The running beat is over (or could not be started): the next is due a period on.
    pub(crate) fn ended(&mut self, cfg: &Config, now: Instant) {
        self.running = false;
        if let Some(every) = Settings::of(cfg).every {
            self.next = now + every;
        }
    }
}

#[cfg(test)]
mod tests;
