//! `#[derive(ToolError)]` next to `#[derive(thiserror::Error)]`.

use std::error::Error as _;
use std::time::Duration;

use serde_json::json;
use tool_envelope::{ErrorCategory, ErrorEnvelope, Partial, ToolError, Violation};

#[derive(Debug, thiserror::Error, ToolError)]
enum InventoryError {
    #[error("Rate limit hit on inventory service")]
    #[tool_error(transient, reason = "RATE_LIMITED", alternatives("Retry in {wait:?}"))]
    RateLimited {
        #[tool_error(retry_after)]
        wait: Duration,
    },
    #[error("connection refused by {0}")]
    #[tool_error(transient, not_applied)]
    Refused(String),
    #[error("monthly quota exhausted")]
    #[tool_error(
        transient,
        retryable = false,
        alternatives("Ask an admin to raise the {{monthly}} quota")
    )]
    QuotaExhausted,
    #[error("held for manual review")]
    #[tool_error(business, retryable = true)]
    HeldForReview,
    #[error("invalid order")]
    #[tool_error(validation, reason = "INVALID_ORDER")]
    Invalid {
        #[tool_error(violations)]
        violations: Vec<Violation>,
    },
    #[error("crawl stopped at {page}")]
    #[tool_error(transient)]
    Stopped {
        page: u32,
        #[tool_error(partial)]
        pages: Partial<String>,
    },
    #[error(transparent)]
    #[tool_error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    #[tool_error(transparent)]
    Tool(#[from] ErrorEnvelope),
}

#[test]
fn category_reason_alternatives_and_retry_after() {
    let envelope = InventoryError::RateLimited {
        wait: Duration::from_millis(1500),
    }
    .into_envelope();
    assert_eq!(envelope.category(), ErrorCategory::Transient);
    assert!(envelope.is_retryable());
    assert_eq!(envelope.message(), "Rate limit hit on inventory service");
    assert_eq!(envelope.reason(), Some("RATE_LIMITED"));
    assert_eq!(envelope.alternatives(), ["Retry in 1.5s"]);
    assert_eq!(envelope.retry_after(), Some(Duration::from_millis(1500)));
    assert_eq!(
        serde_json::to_value(&envelope).unwrap()["retryAfterMs"],
        1500
    );
}

#[test]
fn retryable_can_be_overridden_both_ways() {
    let quota = InventoryError::QuotaExhausted.into_envelope();
    assert_eq!(quota.category(), ErrorCategory::Transient);
    assert!(!quota.is_retryable());
    assert_eq!(
        quota.alternatives(),
        ["Ask an admin to raise the {monthly} quota"]
    );
    let held = InventoryError::HeldForReview.into_envelope();
    assert_eq!(held.category(), ErrorCategory::Business);
    assert!(held.is_retryable());
}

#[test]
fn not_applied_and_violations() {
    let refused = InventoryError::Refused("inventory:443".into()).into_envelope();
    assert!(refused.not_applied());
    // Said on the wire, where a reader has only the reason.
    assert_eq!(refused.reason(), Some("NOT_APPLIED"));
    assert_eq!(
        serde_json::to_value(&refused).unwrap()["reason"],
        "NOT_APPLIED"
    );
    let invalid = InventoryError::Invalid {
        violations: vec![Violation::new("quantity", "must be at least 1")],
    }
    .into_envelope();
    assert_eq!(
        serde_json::to_value(&invalid).unwrap()["violations"],
        json!([{"field": "quantity", "description": "must be at least 1"}])
    );
}

#[test]
fn a_partial_field_becomes_partial_results() {
    let pages = Partial::from(vec!["/a".to_string(), "/b".to_string()]);
    let envelope = InventoryError::Stopped { page: 3, pages }.into_envelope();
    assert_eq!(envelope.partial_results(), Some(&json!(["/a", "/b"])));
}

#[test]
fn transparent_variants_delegate_and_envelopes_pass_through() {
    let io = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
    let envelope = InventoryError::from(io).into_envelope();
    assert_eq!(envelope.category(), ErrorCategory::Permission);
    assert!(envelope.downcast_ref::<std::io::Error>().is_some());

    let inner =
        ErrorEnvelope::business("Refund blocked by policy threshold").with_tool("process_refund");
    let error = InventoryError::from(inner.clone());
    assert_eq!(error.category(), ErrorCategory::Business);
    assert_eq!(error.into_envelope(), inner);
}

#[test]
fn the_original_error_is_the_source() {
    let envelope = InventoryError::QuotaExhausted.into_envelope();
    let source = envelope.source().unwrap();
    assert!(matches!(
        source.downcast_ref::<InventoryError>(),
        Some(InventoryError::QuotaExhausted)
    ));
}

/// A struct, classified as a whole.
#[derive(Debug, thiserror::Error, ToolError)]
#[error("Access denied to {table} table")]
#[tool_error(
    permission,
    reason = "ACCESS_DENIED",
    alternatives(
        "Request read grant on {table} schema",
        "Escalate to data-owner for approval"
    )
)]
struct AccessDenied {
    table: String,
}

#[test]
fn structs_derive_too() {
    let envelope = AccessDenied {
        table: "payroll".into(),
    }
    .into_envelope();
    assert_eq!(envelope.category(), ErrorCategory::Permission);
    assert!(!envelope.is_retryable());
    assert_eq!(envelope.message(), "Access denied to payroll table");
    assert_eq!(
        envelope.alternatives(),
        [
            "Request read grant on payroll schema",
            "Escalate to data-owner for approval"
        ]
    );
}

/// Implementing `Display` by hand, without `std::error::Error`, is enough.
#[derive(Debug, ToolError)]
#[tool_error(other)]
struct NotAnError;

impl std::fmt::Display for NotAnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("something odd")
    }
}

#[test]
fn a_type_that_is_not_std_error_still_works() {
    let envelope = NotAnError.into_envelope();
    assert_eq!(envelope.message(), "something odd");
    assert!(envelope.downcast_ref::<NotAnError>().is_some());
    assert_eq!(envelope.source().unwrap().to_string(), "something odd");
}
