//! One offending field of a rejected input.

use serde::{Deserialize, Serialize};

/// One offending field of a rejected input (AIP-193's `BadRequest.FieldViolation`).
///
/// ```
/// use tool_envelope::Violation;
///
/// let v = Violation::new("amount", "expected a positive integer, got -5");
/// assert_eq!(serde_json::to_string(&v).unwrap(),
///            r#"{"field":"amount","description":"expected a positive integer, got -5"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Violation {
    /// The path of the offending field, such as `filters.status` or `items[2]`.
    pub field: String,
    /// What is wrong with it and what was expected.
    pub description: String,
}

impl Violation {
    /// A violation of `field`, described by `description`.
    pub fn new(field: impl Into<String>, description: impl Into<String>) -> Self {
        Violation {
            field: field.into(),
            description: description.into(),
        }
    }
}
