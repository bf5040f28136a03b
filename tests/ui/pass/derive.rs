//! Every supported shape of `#[derive(ToolError)]`, next to thiserror, with
//! warnings denied.
#![deny(warnings)]

use std::time::Duration;

use tool_envelope::{ErrorEnvelope, Partial, ToolError, Violation};

#[derive(Debug, thiserror::Error, ToolError)]
enum OrdersError {
    #[error("orders DB timed out after {0:?}")]
    #[tool_error(transient, reason = "DB_TIMEOUT", alternatives("Retry in {0:?}", "Use the replica {{read-only}}"))]
    Timeout(Duration),
    #[error("rate limited")]
    #[tool_error(transient, not_applied)]
    RateLimited {
        #[tool_error(retry_after)]
        wait: Option<Duration>,
    },
    #[error("quota exhausted")]
    #[tool_error(transient, retryable = false)]
    Quota,
    #[error("bad input")]
    #[tool_error(validation)]
    BadInput {
        #[tool_error(violations)]
        violations: Vec<Violation>,
    },
    #[error("refund of {amount} over {cap}")]
    #[tool_error(business, alternatives("Refund exceeds ${cap} — escalate", "Offer {amount} as credit"))]
    OverCap {
        amount: u64,
        cap: u64,
        #[tool_error(partial)]
        checked: Partial<String>,
    },
    #[error(transparent)]
    #[tool_error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    #[tool_error(transparent)]
    Inner(#[from] ErrorEnvelope),
    #[error("type {type}")]
    #[tool_error(other, alternatives("type was {type}"))]
    Raw { r#type: String },
}

#[derive(Debug, thiserror::Error, ToolError)]
#[error("access denied to {table}")]
#[tool_error(permission, alternatives("Request read grant on {table}"))]
struct Denied {
    table: String,
}

#[derive(Debug, thiserror::Error, ToolError)]
#[error("unit")]
#[tool_error(other)]
struct Unit;

#[derive(Debug, thiserror::Error, ToolError)]
#[error("wrapped: {0}")]
#[tool_error(transient)]
struct Tuple(String);

#[derive(Debug, thiserror::Error, ToolError)]
enum Empty {}

fn main() {
    let _ = OrdersError::Quota.into_envelope();
    let _ = Denied { table: "payroll".into() }.into_envelope();
    let _ = Unit.into_envelope();
    let _ = Tuple("x".into()).into_envelope();
    let _: Option<Empty> = None;
}
