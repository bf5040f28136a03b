//! The `reason` codes this crate writes, and those that change what a
//! caller does: stable machine codes in UPPER_SNAKE_CASE, as AIP-193's
//! `ErrorInfo.reason`.
//!
//! A tool raises [`HUMAN_REQUESTED`] or [`POLICY_GAP`] itself; whatever the
//! category, such a failure is sent with `isRetryable: false` and escalates
//! at once, never retried:
//!
//! ```
//! use tool_envelope::{reasons, ErrorEnvelope};
//!
//! let envelope = ErrorEnvelope::business("The customer asked for a human agent")
//!     .with_reason(reasons::HUMAN_REQUESTED);
//! # let _ = envelope;
//! ```

/// The user explicitly asked for a human: escalate at once, don't try again.
pub const HUMAN_REQUESTED: &str = "HUMAN_REQUESTED";
/// No rule covers the case: escalate at once.
pub const POLICY_GAP: &str = "POLICY_GAP";
/// A guard blocked the call before it ran (unless the guard gave its own reason).
pub const BLOCKED_BY_GUARD: &str = "BLOCKED_BY_GUARD";
/// A guard could not read an argument it needs (missing, or not of the type
/// it expects), and blocked the call rather than let it through.
pub const UNREADABLE_ARGUMENT: &str = "UNREADABLE_ARGUMENT";
/// The failure looked transient, but the tool is not idempotent and the
/// error does not say the call was not applied: repeating it could apply it
/// twice, so it is sent with `isRetryable: false`.
pub const MAY_HAVE_TAKEN_EFFECT: &str = "MAY_HAVE_TAKEN_EFFECT";
/// The arguments could not be used: wrong types, missing or unknown keys.
pub const INVALID_ARGUMENTS: &str = "INVALID_ARGUMENTS";
/// The call failed before it had any effect, so repeating it is safe even
/// though the tool is not idempotent: a server sends it with a transient
/// failure of such a tool whose error said so (when the error gave no reason
/// of its own), and a client that reads it repeats the call. A client also
/// gives it to a call it knows never reached the server.
pub const NOT_APPLIED: &str = "NOT_APPLIED";
/// The connection to an MCP server broke while a call was on its way: the
/// call may or may not have reached the tool.
pub const CONNECTION_LOST: &str = "CONNECTION_LOST";
/// An MCP server's reply was not one MCP defines, or could not be read.
pub const UNEXPECTED_REPLY: &str = "UNEXPECTED_REPLY";
/// An MCP server answered with an HTTP status: the status follows, as in
/// `HTTP_503`, `HTTP_429`, `HTTP_401`.
pub const HTTP_STATUS_PREFIX: &str = "HTTP_";
/// An argument JSON cannot carry (a NaN, an infinity, a value whose
/// `Serialize` fails) reached a tool with a guard, which could not judge it.
pub const UNREPRESENTABLE_ARGUMENT: &str = "UNREPRESENTABLE_ARGUMENT";
/// The tool, or the description of its error, panicked.
pub const PANIC: &str = "PANIC";
/// The guard of the tool panicked; the call was blocked.
pub const GUARD_PANIC: &str = "GUARD_PANIC";
/// An async tool ran past its `timeout`.
pub const TIMEOUT: &str = "TIMEOUT";
/// A retry loop's deadline came while an attempt was running.
pub const DEADLINE_EXCEEDED: &str = "DEADLINE_EXCEEDED";
/// The tool's result could not be serialized.
pub const UNSERIALIZABLE_RESULT: &str = "UNSERIALIZABLE_RESULT";
/// The tool's result was larger than the server sends.
pub const RESULT_TOO_LARGE: &str = "RESULT_TOO_LARGE";

/// Whether a failure with this reason is never retried, whatever its
/// category and `isRetryable` say: an explicit human request, a policy gap.
pub(crate) fn never_retried(reason: Option<&str>) -> bool {
    matches!(reason, Some(HUMAN_REQUESTED | POLICY_GAP))
}
