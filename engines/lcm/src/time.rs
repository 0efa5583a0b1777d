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

/// Unix milliseconds from a number (unix seconds) or an ISO 8601 date or UTC time:
/// `2026-11-23`, `2026-11-23T19:46`, `2026-11-23T19:46:49Z`.
pub fn parse_time(value: &serde_json::Value) -> Result<i64, String> {
    if let Some(seconds) = value.as_f64() {
        return Ok((seconds * 1000.0) as i64);
    }
    let text = value
        .as_str()
        .ok_or("a time must be unix seconds or an ISO 8601 date")?;
    let bad = || format!("`{text}` is not an ISO 8601 date like 2026-11-23 or 2026-11-23T19:46:49Z");
    let text_trimmed = text.trim().trim_end_matches('Z');
    let (date, clock) = text_trimmed.split_once(['T', ' ']).unwrap_or((text_trimmed, ""));
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
    Ok((days_from_civil(year, month, day) * 86_400 + seconds) * 1000)
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
    fn a_malformed_time_is_an_error() {
        assert!(parse_time(&json!("yesterday")).is_err());
        assert!(parse_time(&json!("2026-13-01")).is_err());
        assert!(parse_time(&json!(true)).is_err());
    }
}
