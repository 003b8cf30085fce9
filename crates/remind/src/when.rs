//! Reading a reminder's WHEN (docs/reminders.md, "When"): `17:30` (the next 17:30),
//! `today 17:30`, `tomorrow 9:00`, `in 2h` (also `in 90m`, `in 1h30m`, `in 2 hours`,
//! `in 3 days`), and `2026-12-24 09:00` (or `2026-12-24T09:00`), all in local time.
//! Anything else is an error that names the word it could not read and shows the forms.

use chrono::{DateTime, Duration, Local, LocalResult, NaiveDate, NaiveDateTime, NaiveTime};
use chrono::{TimeZone, Utc};
use std::fmt;

/// The furthest ahead a reminder may be set. Ten years covers any real plan; a date past
/// it is a typo (`2206` for `2026`) that would otherwise sit on disk unseen.
pub const MAX_AHEAD_DAYS: i64 = 3653;

/// The forms, for error messages.
pub const FORMS: &str = "WHEN is 17:30, tomorrow 9:00, in 2h or 2026-12-24 09:00 (local time)";

/// A WHEN read from the front of a line: when it is due, and the words it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct When {
    pub due: DateTime<Utc>,
    pub words: usize,
}

/// A WHEN that could not be read (docs/reminders.md, 'When'): each names the word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WhenError {
    /// Nothing after `/remind` or in the tool's `when`.
    Missing,
    /// `today`, `tomorrow` or a date with no time after it.
    NeedsTime(String),
    /// `in` with nothing after it.
    NeedsSpan,
    /// `in 2` with no unit.
    NeedsUnit(String),
    /// `in 2 fortnights`.
    Unit(String),
    /// `in 2x`.
    Span(String),
    /// Not `H:MM` or `HH:MM`.
    Time(String),
    /// Not `YYYY-MM-DD`.
    Date(String),
    /// A local time a clock change skips.
    Skipped { word: String, day: NaiveDate },
    /// Past the calendar's end.
    OutOfRange,
    /// Already past, as the owner's clock shows it.
    Past(String),
    /// More than `MAX_AHEAD_DAYS` ahead.
    TooFar,
    /// A span of more than `MAX_AHEAD_DAYS`.
    SpanTooFar(String),
    /// More digits than a number holds.
    TooLarge(String),
    /// Words after the WHEN where only a WHEN may stand (the tool's `when`).
    Trailing(String),
}

impl fmt::Display for WhenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WhenError::Missing => write!(f, "no time given; {FORMS}"),
            WhenError::NeedsTime(w) => write!(f, "{w:?} needs a time after it; {FORMS}"),
            WhenError::NeedsSpan => {
                write!(f, "\"in\" needs a span after it, like 2h or 30m; {FORMS}")
            }
            WhenError::NeedsUnit(w) => write!(f, "{w:?} needs a unit (m, h, d); {FORMS}"),
            WhenError::Unit(w) => {
                write!(
                    f,
                    "could not read {w:?} as a unit of time (m, h, d); {FORMS}"
                )
            }
            WhenError::Span(w) => write!(
                f,
                "could not read {w:?} as a span of time (like 2h, 30m, 1h30m); {FORMS}"
            ),
            WhenError::Time(w) => write!(f, "could not read {w:?} as a time (HH:MM); {FORMS}"),
            WhenError::Date(w) => {
                write!(f, "could not read {w:?} as a date (YYYY-MM-DD); {FORMS}")
            }
            WhenError::Skipped { word, day } => write!(
                f,
                "{word:?} on {day} does not exist in local time (a clock change skips it)"
            ),
            WhenError::OutOfRange => write!(f, "the date is out of range"),
            WhenError::Past(shown) => write!(f, "{shown} is in the past"),
            WhenError::TooFar => {
                write!(f, "that is more than {MAX_AHEAD_DAYS} days ahead; {FORMS}")
            }
            WhenError::SpanTooFar(w) => write!(f, "{w:?} is more than {MAX_AHEAD_DAYS} days ahead"),
            WhenError::TooLarge(w) => write!(f, "{w:?} is too large a number; {FORMS}"),
            WhenError::Trailing(rest) => write!(f, "could not read {rest:?}; {FORMS}"),
        }
    }
}

impl std::error::Error for WhenError {}

/// Reads the WHEN at the start of `words`, relative to `now` in local time.
pub fn parse(words: &[&str], now: DateTime<Utc>) -> Result<When, WhenError> {
    let local_now = now.with_timezone(&Local);
    let Some(&first) = words.first() else {
        return Err(WhenError::Missing);
    };
    let lower = first.to_ascii_lowercase();
    let (due, used) = match lower.as_str() {
        "in" => {
            let (span, used) = span(&words[1..])?;
            (now + span, 1 + used)
        }
        "today" | "tomorrow" => {
            let Some(&at) = words.get(1) else {
                return Err(WhenError::NeedsTime(first.to_string()));
            };
            let time = clock_time(at)?;
            let mut day = local_now.date_naive();
            if lower == "tomorrow" {
                day = day.succ_opt().ok_or(WhenError::OutOfRange)?;
            }
            (local(day.and_time(time), at)?, 2)
        }
        _ if first.contains('-') => {
            let (day, at, used) = match first.split_once(['T', 't']) {
                Some((day, at)) => (day, at, 1),
                None => {
                    let Some(&at) = words.get(1) else {
                        return Err(WhenError::NeedsTime(first.to_string()));
                    };
                    (first, at, 2)
                }
            };
            let day = date(day)?;
            let time = clock_time(at)?;
            (local(day.and_time(time), at)?, used)
        }
        _ => {
            let time = clock_time(first)?;
            let today = local(local_now.date_naive().and_time(time), first)?;
            if today > now {
                (today, 1)
            } else {
                let day = local_now
                    .date_naive()
                    .succ_opt()
                    .ok_or(WhenError::OutOfRange)?;
                (local(day.and_time(time), first)?, 1)
            }
        }
    };
    if due <= now {
        let shown = due.with_timezone(&Local).format("%Y-%m-%d %H:%M");
        return Err(WhenError::Past(shown.to_string()));
    }
    if due - now > Duration::days(MAX_AHEAD_DAYS) {
        return Err(WhenError::TooFar);
    }
    Ok(When { due, words: used })
}

/// `9:00` or `17:30`: hours 0–23, two-digit minutes 00–59.
fn clock_time(word: &str) -> Result<NaiveTime, WhenError> {
    let bad = || WhenError::Time(word.to_string());
    let (h, m) = word.split_once(':').ok_or_else(bad)?;
    let digits = |s: &str, max_len: usize| {
        !s.is_empty() && s.len() <= max_len && s.bytes().all(|b| b.is_ascii_digit())
    };
    if !digits(h, 2) || !digits(m, 2) || m.len() != 2 {
        return Err(bad());
    }
    let (h, m) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    NaiveTime::from_hms_opt(h, m, 0).ok_or_else(bad)
}

/// `2026-12-24`.
fn date(word: &str) -> Result<NaiveDate, WhenError> {
    NaiveDate::parse_from_str(word, "%Y-%m-%d").map_err(|_| WhenError::Date(word.to_string()))
}

/// A local date and time as UTC. A time a clock change skips does not exist and is an
/// error; one it repeats is taken at its first occurrence.
fn local(at: NaiveDateTime, word: &str) -> Result<DateTime<Utc>, WhenError> {
    match Local.from_local_datetime(&at) {
        LocalResult::Single(t) => Ok(t.with_timezone(&Utc)),
        LocalResult::Ambiguous(first, _) => Ok(first.with_timezone(&Utc)),
        LocalResult::None => Err(WhenError::Skipped {
            word: word.to_string(),
            day: at.date(),
        }),
    }
}

/// The span after `in`: `2h`, `90m`, `1h30m`, `45s`, `3d`, or a number and a unit word
/// (`2 hours`). Returns the span and the words it took.
fn span(words: &[&str]) -> Result<(Duration, usize), WhenError> {
    let Some(&first) = words.first() else {
        return Err(WhenError::NeedsSpan);
    };
    if first.bytes().all(|b| b.is_ascii_digit()) {
        let Some(&unit) = words.get(1) else {
            return Err(WhenError::NeedsUnit(first.to_string()));
        };
        let n = number(first)?;
        let Some(one) = unit_seconds(unit) else {
            return Err(WhenError::Unit(unit.to_string()));
        };
        return Ok((seconds(n, one, first)?, 2));
    }
    let bad = || WhenError::Span(first.to_string());
    let mut total = Duration::zero();
    let mut rest = first;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let letters = rest[digits..]
            .bytes()
            .take_while(u8::is_ascii_alphabetic)
            .count();
        if digits == 0 || letters == 0 {
            return Err(bad());
        }
        let n = number(&rest[..digits])?;
        let one = unit_seconds(&rest[digits..digits + letters]).ok_or_else(bad)?;
        total += seconds(n, one, first)?;
        rest = &rest[digits + letters..];
    }
    Ok((total, 1))
}

fn number(digits: &str) -> Result<i64, WhenError> {
    digits
        .parse()
        .map_err(|_| WhenError::TooLarge(digits.to_string()))
}

fn seconds(n: i64, unit: i64, word: &str) -> Result<Duration, WhenError> {
    n.checked_mul(unit)
        .filter(|s| *s <= MAX_AHEAD_DAYS * 86_400)
        .and_then(Duration::try_seconds)
        .ok_or_else(|| WhenError::SpanTooFar(word.to_string()))
}

fn unit_seconds(unit: &str) -> Option<i64> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "s" | "sec" | "secs" | "second" | "seconds" => 1,
        "m" | "min" | "mins" | "minute" | "minutes" => 60,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3600,
        "d" | "day" | "days" => 86_400,
        "w" | "week" | "weeks" => 7 * 86_400,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(local: &str) -> DateTime<Utc> {
        let naive = NaiveDateTime::parse_from_str(local, "%Y-%m-%d %H:%M").unwrap();
        Local
            .from_local_datetime(&naive)
            .earliest()
            .unwrap()
            .with_timezone(&Utc)
    }

    fn due(line: &str, now: &str) -> Result<(String, usize), String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        parse(&words, at(now))
            .map(|w| {
                let shown = w.due.with_timezone(&Local).format("%Y-%m-%d %H:%M");
                (shown.to_string(), w.words)
            })
            .map_err(|e| e.to_string())
    }

    #[test]
    fn each_form_reads_in_local_time() {
        let now = "2026-12-05 10:00";
        assert_eq!(due("17:30 tea", now), Ok(("2026-12-05 17:30".into(), 1)));
        assert_eq!(due("9:00 tea", now), Ok(("2026-12-06 09:00".into(), 1)));
        assert_eq!(
            due("tomorrow 9:00 x", now),
            Ok(("2026-12-06 09:00".into(), 2))
        );
        assert_eq!(
            due("today 23:59 x", now),
            Ok(("2026-12-05 23:59".into(), 2))
        );
        assert_eq!(due("in 2h x", now), Ok(("2026-12-05 12:00".into(), 2)));
        assert_eq!(due("in 1h30m x", now), Ok(("2026-12-05 11:30".into(), 2)));
        assert_eq!(due("in 2 hours x", now), Ok(("2026-12-05 12:00".into(), 3)));
        assert_eq!(due("IN 90M x", now), Ok(("2026-12-05 11:30".into(), 2)));
        assert_eq!(
            due("2026-12-24 09:00 x", now),
            Ok(("2026-12-24 09:00".into(), 2))
        );
        assert_eq!(
            due("2026-12-24T09:00 x", now),
            Ok(("2026-12-24 09:00".into(), 1))
        );
    }

    #[test]
    fn a_bad_when_names_what_could_not_be_read() {
        let now = "2026-12-05 10:00";
        for (line, word) in [
            ("noon tea", "\"noon\""),
            ("25:00 tea", "\"25:00\""),
            ("17:3 tea", "\"17:3\""),
            ("tomorrow morning", "\"morning\""),
            ("in a while", "\"a\""),
            ("in 2 fortnights", "\"fortnights\""),
            ("in 2", "\"2\""),
            ("2026-13-01 09:00", "\"2026-13-01\""),
            ("2026-12-24 nine", "\"nine\""),
        ] {
            let e = due(line, now).unwrap_err();
            assert!(e.contains(word), "{line}: {e}");
        }
        assert!(due("2026-01-01 09:00 x", now)
            .unwrap_err()
            .contains("in the past"));
        assert!(due("in 99999999999999999999h x", now).is_err());
        assert!(due("in 20000d x", now).unwrap_err().contains("days ahead"));
        assert!(due("", now).unwrap_err().contains("no time"));
    }
}
