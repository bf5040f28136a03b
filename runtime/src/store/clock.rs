//! The clock every lease and expiry is read by, and how long what ended is
//! kept.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in milliseconds since the Unix epoch: the clock every lease and
/// expiry is read by.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}

/// How long past its time to live a task its caller cancelled, and that
/// never finished, is kept for its own service to take it over and
/// withdraw what it waited for ([`Store::sweep`](super::Store::sweep)): a week.
pub(crate) const KEEP_CANCELLED_TASK_MS: i64 = 7 * 24 * 60 * 60 * 1000;

/// How long a decided approval is kept past its expiry, for the audit's
/// readers (7 days).
pub(crate) const KEEP_DECIDED_MS: i64 = 7 * 24 * 60 * 60 * 1000;
