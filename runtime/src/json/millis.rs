//! Durations on the wire (`retryAfterMs`, `elapsedMs`): whole milliseconds.

use std::time::Duration;

/// Milliseconds, rounded up so that a sub-millisecond hint never reads as "now".
pub(crate) fn duration_to_ms(delay: Duration) -> u64 {
    let ms = delay.as_millis() + u128::from(!delay.subsec_nanos().is_multiple_of(1_000_000));
    u64::try_from(ms).unwrap_or(u64::MAX)
}
