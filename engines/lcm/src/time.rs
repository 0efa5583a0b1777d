//! Times as the store keeps them (unix milliseconds) and as the tools show them (ISO 8601, UTC).

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in unix milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as i64)
}

/// `2026-11-23T19:46:49Z` for unix milliseconds `ms`.
pub fn format_iso(ms: i64) -> String {
    let seconds = ms.div_euclid(1000);
    let (days, day_seconds) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        day_seconds / 3600,
        day_seconds / 60 % 60,
        day_seconds % 60
    )
}

/// Unix milliseconds from a number (unix seconds) or an ISO 8601 date or time, UTC unless it
/// gives an offset: `2026-11-23`, `2026-11-23T19:46`, `2026-11-23T19:46:49Z`,
/// `2026-11-23T19:46:49.120Z`, `2026-11-23T21:46:49+02:00`.
pub fn parse_time(value: &serde_json::Value) -> Result<i64, String> {
    if let Some(seconds) = value.as_f64() {
        return Ok((seconds * 1000.0) as i64);
    }
    let text = value
        .as_str()
        .ok_or("a time must be unix seconds or an ISO 8601 date")?;
    let bad = || format!("`{text}` is not an ISO 8601 date like 2026-11-23 or 2026-11-23T19:46:49Z");
    let trimmed = text.trim();
    let (date, clock) = trimmed.split_once(['T', 't', ' ']).unwrap_or((trimmed, ""));
    let (clock, offset_ms) = split_offset(clock).ok_or_else(bad)?;
    let numbers = |part: &str, sep: char| -> Result<Vec<i64>, String> {
        part.split(sep)
            .map(|n| n.parse::<i64>().map_err(|_| bad()))
            .collect()
    };
    let date = numbers(date, '-')?;
    let [year, month, day] = date[..] else {
        return Err(bad());
    };
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return Err(bad());
    }
    // Fractions of a second: milliseconds kept, finer digits dropped.
    let (clock, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    if !fraction.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(bad());
    }
    let millis = format!("{fraction:0<3}")[..3].parse::<i64>().map_err(|_| bad())?;
    let clock = if clock.is_empty() {
        vec![]
    } else {
        numbers(clock, ':')?
    };
    if clock.len() > 3 {
        return Err(bad());
    }
    let seconds = clock
        .iter()
        .zip([3600, 60, 1])
        .map(|(n, unit)| n * unit)
        .sum::<i64>();
    Ok((days_from_civil(year, month, day) * 86_400 + seconds) * 1000 + millis - offset_ms)
}

/// A time of day without its zone, and the zone's offset from UTC in milliseconds (`Z`: none).
fn split_offset(clock: &str) -> Option<(&str, i64)> {
    if let Some(clock) = clock.strip_suffix(['Z', 'z']) {
        return Some((clock, 0));
    }
    let Some(at) = clock.rfind(['+', '-']) else {
        return Some((clock, 0));
    };
    let (clock, offset) = clock.split_at(at);
    let sign = if offset.starts_with('-') { -1 } else { 1 };
    let digits = &offset[1..];
    let (hours, minutes) = match digits.split_once(':') {
        Some(parts) => parts,
        // `+0200`, or `+02`.
        None if digits.len() == 4 && digits.is_ascii() => digits.split_at(2),
        None => (digits, "0"),
    };
    let (hours, minutes) = (hours.parse::<i64>().ok()?, minutes.parse::<i64>().ok()?);
    Some((clock, sign * (hours * 3600 + minutes * 60) * 1000))
}

/// The time a message says it was written: its `timestamp` (kept by the Claude Code, Codex and
/// Hermes readers, and by agents that stamp their messages), as an ISO 8601 time or unix seconds
/// (or milliseconds, for a number too large to be seconds).
pub fn message_time(extra: &serde_json::Map<String, serde_json::Value>) -> Option<i64> {
    let value = extra.get("timestamp")?;
    match value.as_f64() {
        // Past the year 5000 as seconds: milliseconds, as JavaScript's `Date.now()` gives.
        Some(number) if number > 1e11 => Some(number as i64),
        _ => parse_time(value).ok(),
    }
}

// Howard Hinnant's algorithms (http://howardhinnant.github.io/date_algorithms.html).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year - era * 400;
    let doy = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn iso_times_round_trip() {
        let ms = parse_time(&json!("2026-11-23T19:46:49Z")).unwrap();
        assert_eq!(format_iso(ms), "2026-11-23T19:46:49Z");
        assert_eq!(parse_time(&json!("1970-01-02")).unwrap(), 86_400_000);
        assert_eq!(parse_time(&json!(10)).unwrap(), 10_000);
    }

    #[test]
    fn fractions_of_a_second_and_offsets_are_read() {
        let utc = parse_time(&json!("2025-12-24T10:00:05Z")).unwrap();
        assert_eq!(parse_time(&json!("2025-12-24T10:00:05.250Z")).unwrap(), utc + 250);
        assert_eq!(
            parse_time(&json!("2025-12-24T10:00:05.1234567Z")).unwrap(),
            utc + 123
        );
        assert_eq!(parse_time(&json!("2025-12-24T12:00:05+02:00")).unwrap(), utc);
        assert_eq!(parse_time(&json!("2025-12-24T05:30:05-04:30")).unwrap(), utc);
        assert_eq!(parse_time(&json!("2025-12-24T12:00:05+0200")).unwrap(), utc);
        assert_eq!(parse_time(&json!("2025-12-24T12:00:05+02")).unwrap(), utc);
        assert!(parse_time(&json!("2025-12-24T10:00:05.x5Z")).is_err());
    }

    #[test]
    fn a_message_time_comes_from_its_timestamp_in_seconds_milliseconds_or_iso() {
        let extra = |value: serde_json::Value| json!({ "timestamp": value }).as_object().unwrap().clone();
        let iso = message_time(&extra(json!("2025-12-24T10:00:05.000Z"))).unwrap();
        assert_eq!(format_iso(iso), "2025-12-24T10:00:05Z");
        assert_eq!(
            message_time(&extra(json!(1_766_570_405))),
            Some(1_766_570_405_000)
        );
        assert_eq!(
            message_time(&extra(json!(1_766_570_405_123_i64))),
            Some(1_766_570_405_123)
        );
        assert_eq!(message_time(&extra(json!("soon"))), None);
        assert_eq!(message_time(&serde_json::Map::new()), None);
    }

    #[test]
    fn a_malformed_time_is_an_error() {
        assert!(parse_time(&json!("yesterday")).is_err());
        assert!(parse_time(&json!("2026-13-01")).is_err());
        assert!(parse_time(&json!(true)).is_err());
    }
}
