//! Time cues in a question: "in October 2023", "in 2022", "on 8 May 2023", "yesterday",
//! "last week", "last month", "three days ago". A record has a time (its log line's, UTC);
//! a question naming a time prefers the records from then. Relative cues count from
//! `now`, which the caller passes (the clock in memoryd, a fixed day in tests and the
//! bench), so the same question asks about the same days wherever it is answered.
//!
//! A cue is a span of whole days, `from..=to` as `YYYY-MM-DD`, compared with a record's
//! time by its UTC day (`proto::time`; RFC 3339 days sort as text).

/// Month names as a question writes them; a three-letter prefix matches too ("Oct").
pub(crate) const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

use proto::time::{days_from_civil as days, format_day as date};
pub use proto::time::{today, Day};

/// The numbers that can be years: one is read as a year only where a time cue puts it
/// ("in 2023", "May 8, 2023"), so "port 2049" stays a number.
pub(crate) const YEARS: std::ops::RangeInclusive<i32> = 1900..=2200;

/// A span of days, both ends included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub from: String,
    pub to: String,
}

impl Span {
    /// Whether a record logged at `time` (RFC 3339) falls in the span: by its UTC day,
    /// its offset applied, or by its first ten characters when it does not read as one.
    pub fn holds(&self, time: &str) -> bool {
        let utc = proto::time::utc_day(time);
        let day = utc.as_deref().unwrap_or(time.get(..10).unwrap_or(time));
        day >= self.from.as_str() && day <= self.to.as_str()
    }
}

/// The day of an RFC 3339 time ("2023-05-08T13:56:00Z"), in UTC, if it reads as one; a
/// bare date is taken as it is.
pub fn day_of(time: &str) -> Option<Day> {
    if let Some(day) = proto::time::utc_date(time) {
        return Some(day);
    }
    let y = time.get(0..4)?.parse().ok()?;
    let m = time.get(5..7)?.parse().ok()?;
    let d = time.get(8..10)?.parse().ok()?;
    ((1..=12).contains(&m) && (1..=31).contains(&d)).then_some((y, m, d))
}

/// The first time cue in `text`, counted from `now` when relative.
pub fn cue(text: &str, now: Day) -> Option<Span> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let today = days(now);
    let w = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
    for i in 0..words.len() {
        match (w(i), w(i + 1)) {
            ("yesterday", _) => return Some(span(today - 1, today - 1)),
            ("today", _) | ("tonight", _) => return Some(span(today, today)),
            ("last" | "past", "week") => {
                // The week before this one, and this one so far: "last week" is said loosely.
                let monday = today - weekday(today);
                return Some(span(monday - 7, today));
            }
            ("this", "week") => return Some(span(today - weekday(today), today)),
            ("last", "month") => {
                let (y, m, _) = now;
                let (y, m) = if m == 1 { (y - 1, 12) } else { (y, m - 1) };
                return Some(month_span(y, m));
            }
            ("this", "month") => return Some(month_span(now.0, now.1)),
            ("last", "year") => return Some(year_span(now.0 - 1)),
            ("this", "year") => return Some(year_span(now.0)),
            (n, "days" | "day") if w(i + 2) == "ago" && number(n).is_some() => {
                let n = number(n).unwrap_or(1);
                return Some(span(today - n - 1, today - n + 1));
            }
            (n, "weeks" | "week") if w(i + 2) == "ago" && number(n).is_some() => {
                let n = number(n).unwrap_or(1);
                return Some(span(today - 7 * n - 3, today - 7 * n + 3));
            }
            _ => {}
        }
        if let Some(m) = month(w(i)) {
            // "8 May 2023", "May 8, 2023", "May 2023", "in May"
            let before = w(i.wrapping_sub(1))
                .parse::<u32>()
                .ok()
                .filter(|d| (1..=31).contains(d));
            let after = w(i + 1).parse::<u32>().ok();
            // "may" is a verb more often than a month: only with a number or after "in".
            let bare = before.is_none() && after.is_none();
            if w(i) == "may"
                && bare
                && !matches!(
                    w(i.wrapping_sub(1)),
                    "in" | "during" | "of" | "since" | "early" | "late" | "mid"
                )
            {
                continue;
            }
            let (day, year) = match (before, after) {
                (Some(d), Some(y)) if y > 31 => (Some(d), Some(y)),
                (Some(d), _) => (Some(d), None),
                (None, Some(d)) if (1..=31).contains(&d) => {
                    (Some(d), w(i + 2).parse::<u32>().ok().filter(|y| *y > 31))
                }
                (None, Some(y)) if y > 31 => (None, Some(y)),
                _ => (None, None),
            };
            // Without a year, the latest such month not after now.
            let year = year.map_or_else(
                || if m <= now.1 { now.0 } else { now.0 - 1 },
                |y| i32::try_from(y).unwrap_or(now.0),
            );
            return Some(match day {
                Some(d) => {
                    let at = days((year, m, d));
                    span(at, at)
                }
                None => month_span(year, m),
            });
        }
        if w(i) == "in" || w(i) == "during" {
            if let Ok(y) = w(i + 1).parse::<i32>() {
                if YEARS.contains(&y) {
                    return Some(year_span(y));
                }
            }
        }
    }
    None
}

pub(crate) fn month(word: &str) -> Option<u32> {
    let i = MONTHS
        .iter()
        .position(|m| *m == word || (word.len() == 3 && word != "may" && m.starts_with(word)))
        .or_else(|| (word == "may").then_some(4))?;
    u32::try_from(i + 1).ok()
}

fn number(word: &str) -> Option<i64> {
    const SMALL: [&str; 10] = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ];
    word.parse::<i64>()
        .ok()
        .or_else(|| SMALL.iter().position(|s| *s == word).map(|i| i as i64 + 1))
        .or_else(|| (word == "a").then_some(1))
        .filter(|n| (1..=366).contains(n))
}

fn span(from: i64, to: i64) -> Span {
    Span {
        from: date(from),
        to: date(to),
    }
}

fn month_span(y: i32, m: u32) -> Span {
    let next = if m == 12 {
        days((y + 1, 1, 1))
    } else {
        days((y, m + 1, 1))
    };
    span(days((y, m, 1)), next - 1)
}

fn year_span(y: i32) -> Span {
    span(days((y, 1, 1)), days((y, 12, 31)))
}

/// Monday is 0.
fn weekday(days: i64) -> i64 {
    // 1970-01-01 was a Thursday.
    (days + 3).rem_euclid(7)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Day = (2026, 12, 1); // a Tuesday

    fn c(q: &str) -> (String, String) {
        let s = cue(q, NOW).expect("a cue");
        (s.from, s.to)
    }

    #[test]
    fn a_named_month_and_year_is_that_month() {
        assert_eq!(
            c("what did I buy in October 2023?"),
            ("2023-10-01".into(), "2023-10-31".into())
        );
        assert_eq!(
            c("plans for Feb 2024"),
            ("2024-02-01".into(), "2024-02-29".into())
        );
    }

    #[test]
    fn a_month_without_a_year_is_the_latest_one_not_after_now() {
        assert_eq!(
            c("what happened in October?"),
            ("2026-10-01".into(), "2026-10-31".into())
        );
        let june = cue("what did we do in December", (2026, 6, 1)).expect("a cue");
        assert_eq!(
            (june.from, june.to),
            ("2025-12-01".into(), "2025-12-31".into())
        );
    }

    #[test]
    fn a_full_date_is_that_day_either_way_round() {
        assert_eq!(
            c("on 8 May, 2023"),
            ("2023-05-08".into(), "2023-05-08".into())
        );
        assert_eq!(
            c("on May 8, 2023"),
            ("2023-05-08".into(), "2023-05-08".into())
        );
    }

    #[test]
    fn relative_cues_count_from_now() {
        assert_eq!(
            c("what did I eat yesterday"),
            ("2026-11-30".into(), "2026-11-30".into())
        );
        assert_eq!(
            c("who called last week?"),
            ("2026-11-23".into(), "2026-12-01".into())
        );
        assert_eq!(c("last month"), ("2026-11-01".into(), "2026-11-30".into()));
        assert_eq!(
            c("three days ago"),
            ("2026-11-27".into(), "2026-11-29".into())
        );
        assert_eq!(c("in 2022"), ("2022-01-01".into(), "2022-12-31".into()));
    }

    #[test]
    fn may_the_verb_and_words_without_a_time_are_no_cue() {
        assert_eq!(cue("what is my wifi password", NOW), None);
        assert_eq!(cue("may I ask where the keys are", NOW), None);
        assert!(cue("what did we do in May", NOW).is_some());
    }

    #[test]
    fn a_span_holds_the_records_of_its_days() {
        let s = cue("in October 2023", NOW).expect("a cue");
        assert!(s.holds("2023-10-31T23:59:00.000Z"));
        assert!(!s.holds("2023-11-01T00:00:00.000Z"));
    }

    /// Regression: a span compared a record's first ten characters, so a time with an
    /// offset was held by its local day while its row id sorted it by its UTC instant.
    #[test]
    fn a_span_holds_a_record_by_its_utc_day_whatever_its_offset() {
        let s = cue("in October 2023", NOW).expect("a cue");
        // 23:30 five hours west of UTC on the 31st is 04:30 UTC on 1 November.
        assert!(!s.holds("2023-10-31T23:30:00-05:00"));
        // 01:00 two hours east on 1 November is 23:00 UTC on the 31st.
        assert!(s.holds("2023-11-01T01:00:00+02:00"));
        assert_eq!(day_of("2023-11-01T01:00:00+02:00"), Some((2023, 10, 31)));
        // A bare date still names its day.
        assert!(s.holds("2023-10-05"));
    }
}
