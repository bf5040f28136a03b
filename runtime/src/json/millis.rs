//! Durations on the wire (`retryAfterMs`, `elapsedMs`): whole milliseconds.

use std::time::Duration;

/// The most milliseconds written: 2^53 − 1, the largest integer every JSON
/// reader holds exactly (JavaScript's numbers; some 285,000 years).
pub(crate) const MAX_MS: u64 = (1 << 53) - 1;

/// Milliseconds, rounded up so that a sub-millisecond hint never reads as
/// "now", and at most [`MAX_MS`].
pub(crate) fn duration_to_ms(delay: Duration) -> u64 {
    let ms = delay.as_millis() + u128::from(!delay.subsec_nanos().is_multiple_of(1_000_000));
    u64::try_from(ms).unwrap_or(u64::MAX).min(MAX_MS)
}

/// `ms` since the Unix epoch as ISO 8601, UTC, to the millisecond
/// (`2026-12-02T13:40:05.123Z`), as MCP's task timestamps are written.
#[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
pub(crate) fn iso8601(ms: i64) -> String {
    let (date, second_of_day) = civil(ms);
    let (year, month, day) = date;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        second_of_day / 3600,
        second_of_day % 3600 / 60,
        second_of_day % 60,
        ms.rem_euclid(1000)
    )
}

/// The civil date (year, month, day) and the second of the day of `ms`
/// since the Unix epoch, in UTC (Howard Hinnant's algorithm).
#[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
pub(crate) fn civil(ms: i64) -> ((i64, u32, u32), i64) {
    let seconds = ms.div_euclid(1000);
    let (days, second_of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let month = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let year = yoe + era * 400 + i64::from(month <= 2);
    ((year, month, day), second_of_day)
}
