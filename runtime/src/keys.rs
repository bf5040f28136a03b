//! The wire keys of an error envelope, in one table: the writer, the reader,
//! the JSON Schema and the tests all read their spellings from here.
//!
//! The spellings are fixed by the wire format, mixed case included
//! (`isError` next to `attempted_query`). Readers ignore keys they do not
//! know.
//!
//! ```
//! use tool_envelope::{keys, ErrorEnvelope};
//!
//! let json = serde_json::to_value(ErrorEnvelope::transient("orders DB timed out")).unwrap();
//! assert_eq!(json[keys::IS_RETRYABLE], true);
//! assert!(keys::REQUIRED.iter().all(|key| json.get(key).is_some()));
//! ```

/// `true`: marks a failure (`false` on a success payload).
pub const IS_ERROR: &str = "isError";
/// The failure type: `transient`, `validation`, `business`, `permission`, `other`.
pub const ERROR_CATEGORY: &str = "errorCategory";
/// Whether the same call may succeed if repeated.
pub const IS_RETRYABLE: &str = "isRetryable";
/// One human-readable sentence.
pub const MESSAGE: &str = "message";
/// What was tried: the captured arguments, or a query string.
pub const ATTEMPTED_QUERY: &str = "attempted_query";
/// What was gathered before the failure.
pub const PARTIAL_RESULTS: &str = "partial_results";
/// Concrete next moves.
pub const ALTERNATIVES: &str = "alternatives";
/// A stable machine code in `UPPER_SNAKE_CASE`.
pub const REASON: &str = "reason";
/// The server's hint for the next attempt, in milliseconds.
pub const RETRY_AFTER_MS: &str = "retryAfterMs";
/// Field-level detail: `{field, description}` objects.
pub const VIOLATIONS: &str = "violations";
/// The tool that failed.
pub const TOOL: &str = "tool";
/// Present when the failure was escalated: an object with the keys of
/// [`escalation`].
pub const ESCALATION: &str = "escalation";

/// Every key, in the order an envelope is written.
pub const ALL: [&str; 12] = [
    IS_ERROR,
    ERROR_CATEGORY,
    IS_RETRYABLE,
    MESSAGE,
    ATTEMPTED_QUERY,
    PARTIAL_RESULTS,
    ALTERNATIVES,
    REASON,
    RETRY_AFTER_MS,
    VIOLATIONS,
    TOOL,
    ESCALATION,
];

/// The keys every envelope has; the rest are written when there is something
/// to say.
pub const REQUIRED: [&str; 4] = [IS_ERROR, ERROR_CATEGORY, IS_RETRYABLE, MESSAGE];

/// The keys of a violation.
pub mod violation {
    /// The path of the offending field.
    pub const FIELD: &str = "field";
    /// What is wrong with it.
    pub const DESCRIPTION: &str = "description";
}

/// The keys of the `escalation` object.
pub mod escalation {
    /// Why the failure went upward (`retries_exhausted`, …).
    pub const REASON: &str = "reason";
    /// How many times the tool ran.
    pub const ATTEMPTS: &str = "attempts";
    /// How long, in milliseconds, from the first attempt to the decision.
    pub const ELAPSED_MS: &str = "elapsedMs";
    /// A sentence on the decision.
    pub const DETAIL: &str = "detail";
    /// The ticket of a call that waits for an approver.
    pub const TICKET: &str = "ticket";
}
