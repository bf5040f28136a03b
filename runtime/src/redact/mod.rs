//! Secrets: what is never shown — in `attempted_query`, to a guard, in a
//! violation, in a log line or an escalation — and how it is found.

pub(crate) mod arguments;
pub(crate) mod schema;
pub(crate) mod secret;
pub(crate) mod text;
pub(crate) mod values;

/// The text that stands in for a redacted value, wherever it is captured.
pub const REDACTED: &str = "[redacted]";
