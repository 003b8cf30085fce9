//! When, in a reminder asked for in words (docs/reminders.md, 'Asked in words'): a span
//! (`in 2 hours`), a clock time (`5pm`, `17:00`, `noon`) and a day (`tomorrow`, `friday`,
//! `2026-12-24`), read from a sentence's words and written as `/remind` reads WHEN.

use chrono::{DateTime, Datelike, Duration, Local, NaiveDate, Utc, Weekday};

/// Parts of a day that may follow a day's name (`tomorrow morning`, `friday evening`):
/// they say when, so they are not part of TEXT.
const PARTS_OF_DAY: &[&str] = &["morning", "afternoon", "evening", "night"];

/// The day a sentence names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Day {
    Today,
    Tomorrow,
    On(NaiveDate),
}

/// What a sentence says about when: a span (`in 2 hours`), or a day and a clock time,
/// and which of its words said it.
#[derive(Debug, Default)]
pub(crate) struct Time {
    span: Option<String>,
    day: Option<Day>,
    clock: Option<(u32, u32)>,
    /// `at 8`: an hour without am or pm, a time only in the evening (`tonight at 8`),
    /// since alone it could be either.
    bare: Option<u32>,
    /// `tonight`, `evening`, `afternoon`: an hour under 12 without am or pm is after noon.
    late: bool,
    /// Which of the sentence's words said it.
    pub used: Vec<bool>,
}

impl Time {
    /// What `low` (a sentence's words, as matched) says about when, as of `now`.
    pub fn read(low: &[&str], now: DateTime<Utc>) -> Time {
        let today = now.with_timezone(&Local).date_naive();
        let mut t = Time {
            used: vec![false; low.len()],
            ..Time::default()
        };
        let mut i = 0;
        while i < low.len() {
            let w = low[i];
            let next = low.get(i + 1).copied();
            if w == "in" {
                if let Some((span, took)) = span(&low[i + 1..]) {
                    t.span.get_or_insert(span);
                    t.mark(i, 1 + took);
                    i += 1 + took;
                    continue;
                }
            }
            if let Some(day) = day(w, today) {
                t.day.get_or_insert(day);
                t.late |= w == "tonight";
                let before = i.checked_sub(1).map(|b| low[b]);
                if matches!(before, Some("on" | "next" | "this")) {
                    t.mark(i - 1, 1);
                }
                t.mark(i, 1);
                i += 1;
                // `tomorrow morning`: part of when, though no clock time is read from it.
                if let Some(part) = next.filter(|n| PARTS_OF_DAY.contains(n)) {
                    t.late |= part != "morning";
                    t.mark(i, 1);
                    i += 1;
                }
                continue;
            }
            if matches!(w, "evening" | "afternoon") && i > 0 && matches!(low[i - 1], "this" | "the")
            {
                t.late = true;
                t.mark(i - 1, 2);
                i += 1;
                continue;
            }
            let hour = next
                .filter(|n| n.len() <= 2)
                .and_then(|n| n.parse::<u32>().ok());
            if let (true, Some(h), None) = (w == "at", hour, clock(next.unwrap_or(""), None)) {
                if (1..=12).contains(&h)
                    && low.get(i + 2).is_none_or(|a| !matches!(*a, "am" | "pm"))
                {
                    t.bare.get_or_insert(h);
                    t.mark(i, 2);
                    i += 2;
                    continue;
                }
            }
            if let Some((clock, took)) = clock(w, next) {
                t.clock.get_or_insert(clock);
                let before = i.checked_sub(1).map(|b| low[b]);
                if matches!(before, Some("at" | "by" | "around" | "for" | "@")) {
                    t.mark(i - 1, 1);
                }
                t.mark(i, took);
                i += took;
                continue;
            }
            i += 1;
        }
        t
    }

    fn mark(&mut self, from: usize, n: usize) {
        for u in self.used.iter_mut().skip(from).take(n) {
            *u = true;
        }
    }

    /// Whether the sentence names a time at all.
    pub fn found(&self) -> bool {
        self.span.is_some() || self.day.is_some() || self.clock.is_some() || self.bare.is_some()
    }

    /// WHEN as `/remind` reads it, only when it reads and is ahead of `now`.
    pub fn when(&self, now: DateTime<Utc>) -> Option<String> {
        let clock = self
            .clock
            .or_else(|| self.bare.filter(|_| self.late).map(|h| (h, 0)));
        let when = match (&self.span, self.day, clock) {
            (Some(span), _, _) => span.clone(),
            (None, day, Some((mut h, m))) => {
                if self.late && h < 12 {
                    h += 12;
                }
                let at = format!("{h:02}:{m:02}");
                match day {
                    Some(Day::Tomorrow) => format!("tomorrow {at}"),
                    Some(Day::On(date)) => format!("{date} {at}"),
                    Some(Day::Today) | None => at,
                }
            }
            (None, _, None) => return None,
        };
        let words: Vec<&str> = when.split_whitespace().collect();
        remind::when::parse(&words, now).ok().map(|_| when)
    }
}

/// `tomorrow`, `today`, `tonight`, a weekday (the next one after today) or `2026-12-24`.
fn day(w: &str, today: NaiveDate) -> Option<Day> {
    match w {
        "tomorrow" | "tmrw" => return Some(Day::Tomorrow),
        "today" | "tonight" => return Some(Day::Today),
        _ => {}
    }
    if let Ok(date) = NaiveDate::parse_from_str(w, "%Y-%m-%d") {
        return Some(Day::On(date));
    }
    let weekday: Weekday = w.parse().ok()?;
    // `parse` takes `mon` and `monday`; a word like `sat` or `sun` is rarely a day in a
    // request, so only the whole name counts.
    if w.len() < 6 {
        return None;
    }
    let ahead = (7 + weekday.num_days_from_monday() as i64
        - today.weekday().num_days_from_monday() as i64)
        % 7;
    let ahead = if ahead == 0 { 7 } else { ahead };
    Some(Day::On(today + Duration::days(ahead)))
}

/// A clock time from `w` (and `next`, for `5 pm`): `17:00`, `5pm`, `5:30pm`, `5.30pm`,
/// `noon`, `midnight`; with how many words it took. A bare number is not a time.
fn clock(w: &str, next: Option<&str>) -> Option<((u32, u32), usize)> {
    match w {
        "noon" | "midday" => return Some(((12, 0), 1)),
        "midnight" => return Some(((0, 0), 1)),
        _ => {}
    }
    let (body, suffix, took) = if let Some(b) = w.strip_suffix("am").or(w.strip_suffix("a.m")) {
        (b, Some(false), 1)
    } else if let Some(b) = w.strip_suffix("pm").or(w.strip_suffix("p.m")) {
        (b, Some(true), 1)
    } else {
        match next {
            Some("am" | "a.m") => (w, Some(false), 2),
            Some("pm" | "p.m") => (w, Some(true), 2),
            _ => (w, None, 1),
        }
    };
    let (h, m) = match body.split_once([':', '.']) {
        Some((h, m)) if m.len() == 2 => (h, m),
        Some(_) => return None,
        // A bare hour is a time only with am or pm after it.
        None if suffix.is_some() => (body, "00"),
        None => return None,
    };
    let digits = |s: &str| !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(h) || !digits(m) {
        return None;
    }
    let (mut h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    match suffix {
        Some(_) if !(1..=12).contains(&h) => return None,
        Some(true) if h < 12 => h += 12,
        Some(false) if h == 12 => h = 0,
        _ => {}
    }
    (h < 24 && m < 60).then_some(((h, m), took))
}

/// The span after `in`: `2 hours`, `90 minutes`, `3 days`, `an hour`, `half an hour`, or
/// one word as `/remind` writes it (`2h`, `90m`, `1h30m`); as `/remind` writes it, with
/// the words it took.
fn span(words: &[&str]) -> Option<(String, usize)> {
    let first = *words.first()?;
    if first == "half" && words.get(1..3) == Some(&["an", "hour"][..]) {
        return Some(("in 30m".to_string(), 3));
    }
    let unit = |u: &str| match u {
        "minute" | "minutes" | "min" | "mins" => Some('m'),
        "hour" | "hours" | "hr" | "hrs" => Some('h'),
        "day" | "days" => Some('d'),
        _ => None,
    };
    if matches!(first, "a" | "an") {
        let u = unit(words.get(1)?)?;
        return Some((format!("in 1{u}"), 2));
    }
    if first.bytes().all(|b| b.is_ascii_digit()) && first.len() <= 4 {
        let u = unit(words.get(1)?)?;
        return Some((format!("in {first}{u}"), 2));
    }
    let compact = first.len() <= 8
        && first
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'h' | b'm' | b'd'))
        && first.bytes().next().is_some_and(|b| b.is_ascii_digit())
        && !first.bytes().all(|b| b.is_ascii_digit());
    compact.then(|| (format!("in {first}"), 1))
}
