//! The failure type: a small, fixed vocabulary a caller can route on.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What kind of failure happened, from the fixed vocabulary of the wire format.
///
/// The category answers the caller's first question — *what do I do now?* —
/// without reading prose:
///
/// | category | meaning | retry? | typical next move |
/// |---|---|---|---|
/// | [`Transient`](Self::Transient) | a timeout, a rate limit, a 503 | yes | retry with backoff |
/// | [`Validation`](Self::Validation) | the input was wrong | no | fix the arguments |
/// | [`Business`](Self::Business) | a rule forbids it | no | ask a human, offer an alternative |
/// | [`Permission`](Self::Permission) | access denied | no | request a grant, escalate |
/// | [`Other`](Self::Other) | nothing above fits | no | escalate |
///
/// On the wire it is lower case (`"transient"`).
///
/// ```
/// use tool_envelope::ErrorCategory;
///
/// assert!(ErrorCategory::Transient.is_retryable_by_default());
/// assert!(!ErrorCategory::Permission.is_retryable_by_default());
/// assert_eq!("business".parse::<ErrorCategory>(), Ok(ErrorCategory::Business));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ErrorCategory {
    /// A passing fault: timeout, rate limit, unavailable dependency. Retrying may succeed.
    Transient,
    /// The arguments were rejected. The same call will fail again; reformulate it.
    Validation,
    /// A business rule or policy forbids the operation (a refund above the cap).
    Business,
    /// The caller is not allowed to do this.
    Permission,
    /// Anything not foreseen by the categories above.
    Other,
}

impl ErrorCategory {
    /// Every category, in wire order.
    pub const ALL: [ErrorCategory; 5] = [
        ErrorCategory::Transient,
        ErrorCategory::Validation,
        ErrorCategory::Business,
        ErrorCategory::Permission,
        ErrorCategory::Other,
    ];

    /// The lower-case wire name (`"transient"`, `"validation"`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCategory::Transient => "transient",
            ErrorCategory::Validation => "validation",
            ErrorCategory::Business => "business",
            ErrorCategory::Permission => "permission",
            ErrorCategory::Other => "other",
        }
    }

    /// Whether an error of this category may succeed when repeated, unless the
    /// error says otherwise: `true` for [`Transient`](Self::Transient) only.
    pub const fn is_retryable_by_default(self) -> bool {
        matches!(self, ErrorCategory::Transient)
    }
}

impl fmt::Display for ErrorCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error returned when parsing a string that is not a category name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCategory(String);

impl fmt::Display for UnknownCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown error category `{}`: expected one of transient, validation, business, permission, other",
            self.0
        )
    }
}

impl std::error::Error for UnknownCategory {}

impl FromStr for ErrorCategory {
    type Err = UnknownCategory;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ErrorCategory::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownCategory(s.to_owned()))
    }
}
