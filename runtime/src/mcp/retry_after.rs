//! An HTTP `Retry-After` header read as a delay: what a server that is
//! down or busy asks a client (the MCP client) or a sender (the approvals'
//! webhook) to wait before it tries again.

use std::time::{Duration, SystemTime};

/// A `Retry-After` header's delay (RFC 9110 §10.2.3): seconds, or an
/// HTTP date — as long as there is until then. None for a date passed:
/// the server's clock, or a cache, may be behind, and the policy's own
/// backoff is better than none.
pub(crate) fn delay(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    date.duration_since(now).ok()
}
