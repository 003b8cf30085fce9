//! Time for the whole system, without a date crate: RFC 3339 UTC timestamps for records,
//! the one reader of them, and the civil-date conversion both need (a few lines; the
//! system needs nothing else from a calendar). Records are written in UTC with `Z`; the
//! reader also takes a `±HH:MM` offset (a log written or edited by hand) and gives the
//! instant it names, so every caller agrees on which UTC day a record belongs to.

use std::time::{SystemTime, UNIX_EPOCH};

/// A civil date: (year, month 1-12, day 1-31).
pub type Day = (i32, u32, u32);

/// Milliseconds in a day.
const DAY_MS: i64 = 86_400_000;

/// Now, as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn now_rfc3339() -> String {
    format_unix_millis(now_unix_millis())
}

/// Now in milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_unix_millis() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// Today's date, UTC, by the system clock.
pub fn today() -> Day {
    civil_from_days(now_unix_millis().div_euclid(DAY_MS))
}

/// Formats milliseconds since the Unix epoch as RFC 3339 UTC with milliseconds.
pub fn format_unix_millis(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A day count as `YYYY-MM-DD`.
pub fn format_day(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Milliseconds since the Unix epoch of an RFC 3339 time (`2026-11-30T06:00:00.000Z`,
/// any fraction, `T`, `t` or a space between date and time, `Z`, `z` or a `±HH:MM`
/// offset). `None` for anything else.
pub fn unix_millis(time: &str) -> Option<i64> {
    let b = time.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let s = time.get(from..from + len)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())
            .flatten()
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (h, mi, s) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut i = 19;
    let mut millis = 0;
    if b[i] == b'.' {
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        let frac = time.get(i + 1..i + 1 + digits.min(3))?;
        let scale = 10_i64.pow(3 - u32::try_from(frac.len()).ok()?);
        millis = frac.parse::<i64>().ok()? * scale;
        i += 1 + digits;
    }
    let offset_min = match time.get(i..)? {
        "Z" | "z" => 0,
        rest if rest.len() == 6 && rest.as_bytes()[3] == b':' => {
            let sign = match rest.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (oh, om) = (num(i + 1, 2)?, num(i + 4, 2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            sign * (oh * 60 + om)
        }
        _ => return None,
    };
    let days = days_from_civil((i32::try_from(y).ok()?, mo as u32, d as u32));
    let secs = days * 86_400 + h * 3600 + mi * 60 + s - offset_min * 60;
    Some(secs * 1000 + millis)
}

/// The UTC date of an RFC 3339 time (its offset applied), as `YYYY-MM-DD`; `None` when
/// `unix_millis` cannot read it.
pub fn utc_day(time: &str) -> Option<String> {
    unix_millis(time).map(|ms| format_day(ms.div_euclid(DAY_MS)))
}

/// The UTC date of an RFC 3339 time (its offset applied); `None` when `unix_millis`
/// cannot read it.
pub fn utc_date(time: &str) -> Option<Day> {
    unix_millis(time).map(|ms| civil_from_days(ms.div_euclid(DAY_MS)))
}

/// Howard Hinnant's `days_from_civil`: a civil date to days since 1970-01-01.
pub fn days_from_civil((y, m, d): Day) -> i64 {
    let (m, d) = (i64::from(m), i64::from(d));
    let y = i64::from(y) - i64::from(m <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Howard Hinnant's `civil_from_days`: days since 1970-01-01 to a civil date. Years
/// outside `i32` (more than two million years away) are clamped.
pub fn civil_from_days(z: i64) -> Day {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let y = i32::try_from(y).unwrap_or(if y < 0 { i32::MIN } else { i32::MAX });
    // `d` is 1..=31 and `m` 1..=12 by construction.
    (y, m as u32, d as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(format_unix_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_unix_millis(951_782_400_123),
            "2000-02-29T00:00:00.123Z"
        );
        assert_eq!(
            format_unix_millis(1_796_013_296_000),
            "2026-11-30T04:34:56.000Z"
        );
    }

    #[test]
    fn reads_back_what_it_writes() {
        for ms in [0, 951_782_400_123, 1_796_013_296_000, 1_796_013_296_999, -1] {
            assert_eq!(unix_millis(&format_unix_millis(ms)), Some(ms));
        }
    }

    #[test]
    fn civil_dates_round_trip_across_four_centuries() {
        for z in -146_097..146_097 * 2 {
            assert_eq!(days_from_civil(civil_from_days(z)), z, "day {z}");
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(days_from_civil((2000, 3, 1)), 11_017);
    }

    #[test]
    fn fractions_and_malformed_times() {
        let base = unix_millis("2026-11-30T06:00:00Z").unwrap();
        assert_eq!(unix_millis("2026-11-30T06:00:00.5Z"), Some(base + 500));
        assert_eq!(unix_millis("2026-11-30T06:00:00.123456Z"), Some(base + 123));
        assert_eq!(unix_millis("2026-11-30 06:00:00z"), Some(base));
        for bad in [
            "",
            "yesterday",
            "2026-11-30",
            "2026-13-30T06:00:00Z",
            "2026-11-30T06:00:00",
            "2026-11-30T06:00:00.Z",
            "2026-11-30T06:00:00+0100",
            "2026-11-30T06:00:00+24:00",
            "2026-11-30T06:00:00*01:00",
            "2026-11-30T06:00:00Zjunk",
        ] {
            assert_eq!(unix_millis(bad), None, "{bad}");
        }
    }

    /// Regression: memoryd had two readers of record times. One applied a `±HH:MM`
    /// offset, the other took the first ten characters as the day, so a record near
    /// midnight with an offset sorted by one day and was matched to a question by another.
    #[test]
    fn an_offset_moves_the_instant_and_so_the_utc_day() {
        let base = unix_millis("2026-11-30T06:00:00Z").unwrap();
        assert_eq!(unix_millis("2026-11-30T07:00:00+01:00"), Some(base));
        assert_eq!(unix_millis("2026-11-30T01:30:00-04:30"), Some(base));
        assert_eq!(unix_millis("2026-11-30T06:00:00+00:00"), Some(base));
        assert_eq!(unix_millis("2026-11-30T06:00:00-00:00"), Some(base));
        // Late on the 31st five hours west of UTC is already the 1st in UTC, and early
        // on the 1st two hours east is still the 31st.
        assert_eq!(
            utc_day("2023-10-31T23:30:00-05:00").as_deref(),
            Some("2023-11-01")
        );
        assert_eq!(
            utc_day("2023-11-01T01:00:00+02:00").as_deref(),
            Some("2023-10-31")
        );
        assert_eq!(
            utc_day("2023-10-31T23:59:59.999Z").as_deref(),
            Some("2023-10-31")
        );
        assert_eq!(utc_day("2023-10-31"), None);
        assert_eq!(utc_date("2023-10-31T23:30:00-05:00"), Some((2023, 11, 1)));
    }
}
