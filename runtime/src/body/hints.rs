//! The fields `#[derive(ToolError)]` reads: what each marked field may be.

use std::time::Duration;

use serde_json::Value;

use crate::body::PartialItem;
use crate::envelope::Violation;

/// A field marked `#[tool_error(retry_after)]`.
#[diagnostic::on_unimplemented(
    message = "a `retry_after` field must be a `Duration` or an `Option<Duration>`, not `{Self}`",
    label = "not a `Duration`"
)]
pub trait RetryAfterHint {
    /// The hint.
    fn retry_after_hint(&self) -> Option<Duration>;
}

impl RetryAfterHint for Duration {
    fn retry_after_hint(&self) -> Option<Duration> {
        Some(*self)
    }
}

impl RetryAfterHint for Option<Duration> {
    fn retry_after_hint(&self) -> Option<Duration> {
        *self
    }
}

/// A field marked `#[tool_error(violations)]`.
#[diagnostic::on_unimplemented(
    message = "a `violations` field must be a `Vec<Violation>` or a `Violation`, not `{Self}`",
    label = "not `Violation`s"
)]
pub trait ViolationList {
    /// The violations.
    fn to_violations(&self) -> Vec<Violation>;
}

impl ViolationList for Vec<Violation> {
    fn to_violations(&self) -> Vec<Violation> {
        self.clone()
    }
}

impl ViolationList for Violation {
    fn to_violations(&self) -> Vec<Violation> {
        vec![self.clone()]
    }
}

/// A field marked `#[tool_error(partial)]`, as JSON. Partial results JSON
/// cannot carry leave a note saying so rather than vanishing.
pub fn partial_value<T: PartialItem + ?Sized>(partial: &T) -> Option<Value> {
    Some(
        crate::json::strict::to_value(partial).unwrap_or_else(|problem| {
            Value::String(format!(
                "[partial results not representable in JSON: {problem}]"
            ))
        }),
    )
}
