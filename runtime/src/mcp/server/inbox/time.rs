//! Times as people read them on the page: UTC, to the second.

use crate::json::millis::civil;

/// `ms` since the Unix epoch as `2026-12-02 13:40:05 UTC`.
pub(super) fn utc(ms: i64) -> String {
    let ((year, month, day), second_of_day) = civil(ms);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        second_of_day / 3600,
        second_of_day % 3600 / 60,
        second_of_day % 60
    )
}

/// A duration of `ms` as people say it: `850 ms`, `12 s`, `3 min`, `2 h`.
pub(super) fn span(ms: i64) -> String {
    match ms {
        ..1_000 => format!("{ms} ms"),
        1_000..120_000 => format!("{} s", ms / 1_000),
        120_000..7_200_000 => format!("{} min", ms / 60_000),
        _ => format!("{} h", ms / 3_600_000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_utc() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_796_218_320_699), "2026-12-02 13:32:00 UTC");
        assert_eq!(
            crate::json::millis::iso8601(1_796_218_320_699),
            "2026-12-02T13:32:00.699Z"
        );
        assert_eq!(span(850), "850 ms");
        assert_eq!(span(12_000), "12 s");
        assert_eq!(span(180_000), "3 min");
    }
}
