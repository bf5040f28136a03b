//! Every attribute key the macros read, spelled once (as `serde_derive`'s
//! `internals/symbol.rs` does): the parsers match on these, and the lists
//! that suggest the nearest key are made of them.

// `#[tool(...)]`.
pub const NAME: &str = "name";
pub const TITLE: &str = "title";
pub const DESCRIPTION: &str = "description";
pub const SKIP: &str = "skip";
pub const REDACT: &str = "redact";
pub const READ_ONLY: &str = "read_only";
pub const DESTRUCTIVE: &str = "destructive";
pub const IDEMPOTENT: &str = "idempotent";
pub const OPEN_WORLD: &str = "open_world";
pub const GUARD: &str = "guard";
pub const LOCAL: &str = "local";
pub const DESCRIBE_FAILURES: &str = "describe_failures";
pub const TIMEOUT: &str = "timeout";
/// Written by `#[tools]` on the `#[tool]` of each method it serves, never
/// by users.
pub const IN_TOOLS: &str = "__tools";

/// Every key `#[tool(...)]` accepts from users.
pub const TOOL_KEYS: &[&str] = &[
    NAME,
    TITLE,
    DESCRIPTION,
    SKIP,
    REDACT,
    READ_ONLY,
    DESTRUCTIVE,
    IDEMPOTENT,
    OPEN_WORLD,
    GUARD,
    LOCAL,
    DESCRIBE_FAILURES,
    TIMEOUT,
];

// `#[tool_error(...)]` on a variant or a struct.
pub const TRANSIENT: &str = "transient";
pub const VALIDATION: &str = "validation";
pub const BUSINESS: &str = "business";
pub const PERMISSION: &str = "permission";
pub const OTHER: &str = "other";
pub const RETRYABLE: &str = "retryable";
pub const ALTERNATIVES: &str = "alternatives";
pub const REASON: &str = "reason";
pub const NOT_APPLIED: &str = "not_applied";
pub const TRANSPARENT: &str = "transparent";

/// The categories, as `#[tool_error(...)]` names them.
pub const CATEGORIES: &[&str] = &[TRANSIENT, VALIDATION, BUSINESS, PERMISSION, OTHER];

/// The other settings of a variant or struct.
pub const CASE_SETTINGS: &[&str] = &[RETRYABLE, ALTERNATIVES, REASON, NOT_APPLIED, TRANSPARENT];

// `#[tool_error(...)]` on a field.
pub const RETRY_AFTER: &str = "retry_after";
pub const PARTIAL: &str = "partial";
pub const VIOLATIONS: &str = "violations";

/// Every marker of a field.
pub const FIELD_MARKERS: &[&str] = &[RETRY_AFTER, PARTIAL, VIOLATIONS];

/// Every key of a variant or struct: a category, or a setting.
pub fn case_keys() -> impl Iterator<Item = &'static str> {
    CATEGORIES.iter().chain(CASE_SETTINGS).copied()
}
