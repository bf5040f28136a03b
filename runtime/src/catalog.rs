//! How a tool can fail, told in advance: the catalog an MCP definition
//! publishes so that a model knows its next moves before it calls.

use std::borrow::Cow;

use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::category::ErrorCategory;
use crate::keys;

/// One way a tool can fail, as the tool's `_meta` publishes it: the keys of
/// the envelope it would send (`errorCategory`, `isRetryable`, `reason`,
/// `message`, `alternatives`), with templates for the texts.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FailureMode {
    /// The failure type.
    pub category: ErrorCategory,
    /// Whether repeating the call may succeed.
    pub retryable: bool,
    /// The stable machine code, when there is one: set it with
    /// [`with_reason`](Self::with_reason), which normalizes it; the
    /// definition normalizes whatever is here once more.
    pub reason: Option<Cow<'static, str>>,
    /// The message, as a template (`"Refund of {amount} exceeds the cap"`).
    pub message: Option<Cow<'static, str>>,
    /// The next moves this failure suggests, as templates.
    pub alternatives: Vec<Cow<'static, str>>,
}

/// The keys of the envelope the failure would send, spelled as
/// [`crate::keys`] spells them.
impl Serialize for FailureMode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry(keys::ERROR_CATEGORY, &self.category)?;
        map.serialize_entry(keys::IS_RETRYABLE, &self.retryable)?;
        if let Some(reason) = &self.reason {
            map.serialize_entry(keys::REASON, reason)?;
        }
        if let Some(message) = &self.message {
            map.serialize_entry(keys::MESSAGE, message)?;
        }
        if !self.alternatives.is_empty() {
            map.serialize_entry(keys::ALTERNATIVES, &self.alternatives)?;
        }
        map.end()
    }
}

impl FailureMode {
    /// A failure of `category`, retryable as the category says.
    pub fn new(category: ErrorCategory) -> Self {
        FailureMode {
            category,
            retryable: category.is_retryable_by_default(),
            reason: None,
            message: None,
            alternatives: Vec::new(),
        }
    }

    /// Sets whether repeating the call may succeed.
    #[must_use]
    pub fn with_retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// Sets the machine code, normalized into `UPPER_SNAKE_CASE` as every
    /// reason is ([`crate::reasons`]); one with no letter to make a code of
    /// is ignored.
    #[must_use]
    pub fn with_reason(mut self, reason: impl Into<Cow<'static, str>>) -> Self {
        if let Some(reason) = crate::reasons::normalize(reason.into()) {
            self.reason = Some(reason);
        }
        self
    }

    /// Sets the message template.
    #[must_use]
    pub fn with_message(mut self, message: impl Into<Cow<'static, str>>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// Sets the alternative templates.
    #[must_use]
    pub fn with_alternatives<I>(mut self, alternatives: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<Cow<'static, str>>,
    {
        self.alternatives = alternatives.into_iter().map(Into::into).collect();
        self
    }
}

/// An error type that can list its failure modes up front.
/// `#[derive(ToolError)]` implements it from the `#[tool_error]` attributes.
pub trait DescribeFailures {
    /// Every way this error can come out.
    fn failure_modes() -> Vec<FailureMode>;
}

/// An I/O error can be any of its kinds' categories.
impl DescribeFailures for std::io::Error {
    fn failure_modes() -> Vec<FailureMode> {
        vec![
            FailureMode::new(ErrorCategory::Transient)
                .with_message("a timeout, an interruption or a dropped connection"),
            FailureMode::new(ErrorCategory::Permission).with_message("permission denied"),
            FailureMode::new(ErrorCategory::Validation).with_message("invalid input or data"),
            FailureMode::new(ErrorCategory::Other),
        ]
    }
}

/// A one-line summary of `modes`, for a tool's description:
/// `"Can fail: transient (DB_TIMEOUT, retryable); business (REFUND_OVER_CAP)."`
pub fn summary(modes: &[FailureMode]) -> String {
    let parts: Vec<String> = modes
        .iter()
        .map(|mode| {
            let mut notes = Vec::new();
            if let Some(reason) = &mode.reason {
                notes.push(reason.to_string());
            }
            if mode.retryable {
                notes.push("retryable".to_owned());
            }
            if notes.is_empty() {
                mode.category.to_string()
            } else {
                format!("{} ({})", mode.category, notes.join(", "))
            }
        })
        .collect();
    format!("Can fail: {}.", parts.join("; "))
}
