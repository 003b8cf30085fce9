//! Times as Honcho gives them back: UTC, as Pydantic writes them (six fraction digits,
//! none when they are all zero).

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, as Honcho writes a time.
pub fn now_utc() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format_utc(d.as_secs() as i64, d.subsec_micros())
}

/// Seconds since the epoch and microseconds as Pydantic writes a UTC time: six fraction
/// digits, none when they are all zero.
fn format_utc(secs: i64, micros: u32) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (year, month, day) = proto::time::civil_from_days(days);
    let frac = if micros == 0 {
        String::new()
    } else {
        format!(".{micros:06}")
    };
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}{frac}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A sent `created_at` (`…Z` or `…+00:00`, any fraction) as Honcho gives it back: UTC
/// with six fraction digits. Another offset is kept as it came (loopd sends UTC only).
pub(super) fn utc_micros(t: &str) -> Option<String> {
    let s = t.strip_suffix('Z').or_else(|| t.strip_suffix("+00:00"))?;
    if s.len() < 19 || !s.is_char_boundary(19) {
        return None;
    }
    let (whole, frac) = s.split_at(19);
    let b = whole.as_bytes();
    let ok = b.len() == 19
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':';
    if !ok {
        return None;
    }
    let digits = frac.strip_prefix('.').unwrap_or(frac);
    if !digits.bytes().all(|c| c.is_ascii_digit()) || (frac.starts_with('.') && digits.is_empty()) {
        return None;
    }
    let micros: String = format!("{digits:0<6}").chars().take(6).collect();
    Some(if micros == "000000" {
        format!("{whole}Z")
    } else {
        format!("{whole}.{micros}Z")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_come_back_as_pydantic_writes_them() {
        assert_eq!(
            utc_micros("2026-11-30T04:34:57.1Z").as_deref(),
            Some("2026-11-30T04:34:57.100000Z")
        );
        assert_eq!(
            utc_micros("2026-11-30T04:34:57.000Z").as_deref(),
            Some("2026-11-30T04:34:57Z")
        );
        assert_eq!(utc_micros("yesterday"), None);
        assert_eq!(format_utc(0, 5), "1970-01-01T00:00:00.000005Z");
        assert_eq!(format_utc(1_796_013_296, 0), "2026-11-30T04:34:56Z");
    }
}
