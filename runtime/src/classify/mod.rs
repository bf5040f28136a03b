//! Classifying errors: the [`ToolError`] trait and its implementations for the
//! standard library's errors.

use std::any::Any;
use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::category::ErrorCategory;
use crate::envelope::{ErasedOrigin, ErrorEnvelope, Origin, Violation};

/// An error that knows how to describe itself to a caller that must recover from it.
///
/// Only [`category`](Self::category) is required; everything else has a default
/// that says nothing more. The [`Display`](fmt::Display) text becomes the
/// envelope's `message`. Most errors derive it:
///
/// ```
/// use tool_envelope::{ToolError, ErrorCategory};
///
/// #[derive(Debug, thiserror::Error, ToolError)]
/// enum OrdersError {
///     #[error("Connection to orders DB timed out after {0}s")]
///     #[tool_error(transient, reason = "DB_TIMEOUT", alternatives("Retry against the read replica"))]
///     Timeout(u64),
///     #[error("Refund of {amount} is above the {cap} cap")]
///     #[tool_error(business, alternatives("Refund exceeds ${cap} policy cap — escalate to human"))]
///     OverCap { amount: u64, cap: u64 },
/// }
///
/// let envelope = OrdersError::OverCap { amount: 620, cap: 500 }.into_envelope();
/// assert_eq!(envelope.category(), ErrorCategory::Business);
/// assert!(!envelope.is_retryable());
/// assert_eq!(envelope.alternatives(), ["Refund exceeds $500 policy cap — escalate to human"]);
/// ```
///
/// Implementing it by hand is as short:
///
/// ```
/// use tool_envelope::{ErrorCategory, ToolError};
///
/// #[derive(Debug)]
/// struct Denied;
/// impl std::fmt::Display for Denied {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str("Access denied to payroll table")
///     }
/// }
/// impl ToolError for Denied {
///     fn category(&self) -> ErrorCategory {
///         ErrorCategory::Permission
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not implement `ToolError`, so a #[tool] cannot turn it into an error envelope",
    label = "`{Self}` is not classified",
    note = "derive it: `#[derive(ToolError)]` with a category on each variant, e.g. `#[tool_error(transient)]`",
    note = "or implement `tool_envelope::ToolError` by hand: only `fn category(&self) -> ErrorCategory` is required"
)]
pub trait ToolError: fmt::Display + fmt::Debug + Send + Sync + 'static {
    /// The failure type.
    fn category(&self) -> ErrorCategory;

    /// Whether repeating the same call may succeed. Defaults from the category:
    /// only [`ErrorCategory::Transient`] is retryable.
    fn is_retryable(&self) -> bool {
        self.category().is_retryable_by_default()
    }

    /// Concrete next moves for the caller.
    fn alternatives(&self) -> Vec<String> {
        Vec::new()
    }

    /// A stable machine code in `UPPER_SNAKE_CASE`, such as `"DB_TIMEOUT"`.
    fn reason(&self) -> Option<Cow<'static, str>> {
        None
    }

    /// The server's hint for when to try again (`Retry-After`).
    fn retry_after(&self) -> Option<Duration> {
        None
    }

    /// Field-level detail for a rejected input.
    fn violations(&self) -> Vec<Violation> {
        Vec::new()
    }

    /// Partial results the error carries itself. When `Some`, they are the
    /// envelope's `partial_results`, in place of the items of the tool's
    /// [`Partial`](crate::Partial) collector: the error knows best what it
    /// gathered.
    fn partial_results(&self) -> Option<Value> {
        None
    }

    /// Whether the error proves the operation was not applied (the request never
    /// left, as with a refused connection), so that even a non-idempotent tool
    /// may be retried.
    fn not_applied(&self) -> bool {
        false
    }

    /// This error as a [`std::error::Error`], for `source()` chains. The derive
    /// fills it in when the type implements `Error`.
    fn as_error(&self) -> Option<&(dyn StdError + 'static)> {
        None
    }

    /// Builds the envelope. The error is kept inside it, reachable through
    /// [`ErrorEnvelope::downcast_ref`] and [`std::error::Error::source`].
    fn into_envelope(self) -> ErrorEnvelope
    where
        Self: Sized,
    {
        envelope_of(self)
    }
}

/// `error`'s envelope, with a panic while it is built — in its `Display`,
/// in one of its `ToolError` methods — caught: the envelope then says so, as
/// an `other` failure, and the call keeps whatever else it knows.
pub(crate) fn caught_envelope<E: ToolError>(error: E) -> ErrorEnvelope {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| error.into_envelope())) {
        Ok(envelope) => envelope,
        Err(panic) => {
            let envelope = ErrorEnvelope::other(format!(
                "the tool failed, and describing its error panicked: {}",
                crate::panic::panic_message(panic.as_ref())
            ))
            .with_reason(crate::reasons::PANIC);
            foreign(envelope)
        }
    }
}

/// The envelope of a panic of `subject` (``"tool `refund`"``): `other`, not
/// retryable, reason `PANIC`, its message one this crate did not write.
pub(crate) fn panicked(subject: &str, payload: &(dyn std::any::Any + Send)) -> ErrorEnvelope {
    let envelope = ErrorEnvelope::other(format!(
        "{subject} panicked: {}",
        crate::panic::panic_message(payload)
    ))
    .with_reason(crate::reasons::PANIC);
    foreign(envelope)
}

/// `envelope`, its message marked as written by a type this crate does not
/// know, so that a tool set masking internal errors hides it.
pub(crate) fn foreign(envelope: ErrorEnvelope) -> ErrorEnvelope {
    envelope.remade(|parts| parts.foreign = true)
}

/// The envelope every method of `error` describes, keeping `error` inside it:
/// what [`ToolError::into_envelope`] does unless a type says otherwise.
pub fn envelope_of<E: ToolError>(error: E) -> ErrorEnvelope {
    let envelope = ErrorEnvelope::new(error.category(), error.to_string())
        .with_retryable(error.is_retryable())
        .with_not_applied(error.not_applied());
    envelope.remade(|parts| {
        // Moved in, not copied.
        parts.alternatives = error.alternatives();
        parts.violations = error.violations();
        parts.set_reason(error.reason());
        parts.retry_after = error.retry_after();
        parts.partial_results = error.partial_results();
        parts.origin = Some(Origin(Arc::new(Original(error))));
    })
}

/// The original error, kept inside the envelope.
struct Original<E>(E);

impl<E: ToolError> ErasedOrigin for Original<E> {
    fn as_any(&self) -> &dyn Any {
        &self.0
    }

    fn as_error(&self) -> &(dyn StdError + 'static) {
        match self.0.as_error() {
            Some(error) => error,
            None => self,
        }
    }
}

impl<E: fmt::Display> fmt::Display for Original<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<E: fmt::Debug> fmt::Debug for Original<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<E: fmt::Display + fmt::Debug> StdError for Original<E> {}

/// An envelope passes through unchanged: a tool that calls another tool and
/// returns its envelope with `?` keeps every pillar the inner tool reported.
impl ToolError for ErrorEnvelope {
    fn category(&self) -> ErrorCategory {
        ErrorEnvelope::category(self)
    }

    fn is_retryable(&self) -> bool {
        ErrorEnvelope::is_retryable(self)
    }

    fn alternatives(&self) -> Vec<String> {
        ErrorEnvelope::alternatives(self).to_vec()
    }

    fn reason(&self) -> Option<Cow<'static, str>> {
        self.reason_code()
    }

    fn retry_after(&self) -> Option<Duration> {
        ErrorEnvelope::retry_after(self)
    }

    fn violations(&self) -> Vec<Violation> {
        ErrorEnvelope::violations(self).to_vec()
    }

    fn partial_results(&self) -> Option<Value> {
        ErrorEnvelope::partial_results(self).cloned()
    }

    fn not_applied(&self) -> bool {
        ErrorEnvelope::not_applied(self)
    }

    fn as_error(&self) -> Option<&(dyn StdError + 'static)> {
        Some(self)
    }

    fn into_envelope(self) -> ErrorEnvelope {
        self
    }
}

/// Classified by [`io::ErrorKind`]:
///
/// | category | kinds |
/// |---|---|
/// | `transient` | `TimedOut`, `Interrupted`, `ConnectionReset`, `ConnectionRefused`, `ConnectionAborted`, `WouldBlock`, and the other faults that pass with time: `NotConnected`, `BrokenPipe`, `HostUnreachable`, `NetworkUnreachable`, `NetworkDown`, `ResourceBusy` |
/// | `permission` | `PermissionDenied`, `ReadOnlyFilesystem` |
/// | `validation` | `InvalidInput`, `InvalidData`, `InvalidFilename` |
/// | `other` | every other kind |
///
/// The `reason` is the kind in `UPPER_SNAKE_CASE` (`TIMED_OUT`). No kind
/// says the call was [not applied](ToolError::not_applied): a refused
/// connection says only that this one connection was not made, not what the
/// tool did before it. The message is the error's own text, so a tool set
/// that [masks internal errors](crate::mcp::ToolSet::mask_internal_errors)
/// hides it whatever the category.
impl ToolError for io::Error {
    fn category(&self) -> ErrorCategory {
        use io::ErrorKind::*;
        match self.kind() {
            TimedOut | Interrupted | ConnectionReset | ConnectionRefused | ConnectionAborted
            | WouldBlock | NotConnected | BrokenPipe | HostUnreachable | NetworkUnreachable
            | NetworkDown | ResourceBusy => ErrorCategory::Transient,
            PermissionDenied | ReadOnlyFilesystem => ErrorCategory::Permission,
            InvalidInput | InvalidData | InvalidFilename => ErrorCategory::Validation,
            _ => ErrorCategory::Other,
        }
    }

    fn reason(&self) -> Option<Cow<'static, str>> {
        crate::reasons::normalize(Cow::Owned(format!("{:?}", self.kind())))
    }

    fn as_error(&self) -> Option<&(dyn StdError + 'static)> {
        Some(self)
    }

    fn into_envelope(self) -> ErrorEnvelope {
        foreign(envelope_of(self))
    }
}

/// Malformed or mistyped JSON is a `validation` error; the position of the
/// problem is a violation.
impl ToolError for serde_json::Error {
    fn category(&self) -> ErrorCategory {
        ErrorCategory::Validation
    }

    fn reason(&self) -> Option<Cow<'static, str>> {
        Some(Cow::Borrowed(match self.classify() {
            serde_json::error::Category::Io => "JSON_IO",
            serde_json::error::Category::Syntax => "JSON_SYNTAX",
            serde_json::error::Category::Data => "JSON_DATA",
            serde_json::error::Category::Eof => "JSON_EOF",
        }))
    }

    fn violations(&self) -> Vec<Violation> {
        if self.line() == 0 {
            return Vec::new();
        }
        vec![Violation::new(
            format!("line {} column {}", self.line(), self.column()),
            self.to_string(),
        )]
    }

    fn as_error(&self) -> Option<&(dyn StdError + 'static)> {
        Some(self)
    }

    fn into_envelope(self) -> ErrorEnvelope {
        foreign(envelope_of(self))
    }
}

/// Parse errors of the standard library: the input was not what was expected.
macro_rules! validation_errors {
    ($($ty:ty => $reason:literal),* $(,)?) => {$(
        #[doc = concat!("A `validation` error with reason `", $reason, "`.")]
        impl ToolError for $ty {
            fn category(&self) -> ErrorCategory {
                ErrorCategory::Validation
            }

            fn reason(&self) -> Option<Cow<'static, str>> {
                Some(Cow::Borrowed($reason))
            }

            fn as_error(&self) -> Option<&(dyn StdError + 'static)> {
                Some(self)
            }

            fn into_envelope(self) -> ErrorEnvelope {
                foreign(envelope_of(self))
            }
        }
    )*

        /// The reason of a standard parse error inside an `anyhow::Error`,
        /// through any context: such an error is `validation`, as it is on
        /// its own.
        #[cfg(feature = "anyhow")]
        fn parse_error_reason(error: &anyhow::Error) -> Option<&'static str> {
            $(
                if error.downcast_ref::<$ty>().is_some() {
                    return Some($reason);
                }
            )*
            None
        }
    };
}

validation_errors! {
    std::num::ParseIntError => "INVALID_INTEGER",
    std::num::ParseFloatError => "INVALID_FLOAT",
    std::num::TryFromIntError => "INTEGER_OUT_OF_RANGE",
    std::str::ParseBoolError => "INVALID_BOOL",
    std::char::ParseCharError => "INVALID_CHAR",
    std::net::AddrParseError => "INVALID_ADDRESS",
    std::str::Utf8Error => "INVALID_UTF8",
    std::string::FromUtf8Error => "INVALID_UTF8",
}

/// With the `anyhow` feature, an `anyhow::Error` is classified by the error
/// it wraps, through any `.context(...)`: an [`ErrorEnvelope`] passes
/// through unchanged; an [`io::Error`], a `serde_json::Error` and the
/// standard library's parse errors (`ParseIntError` and the like) are
/// classified as they are on their own (a timed-out connection is
/// `transient`, with the kind as its reason; a bad integer is `validation`);
/// anything else is `other`. The
/// message is the whole context chain (`"loading orders: connection reset"`).
#[cfg(feature = "anyhow")]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "anyhow")))]
impl ToolError for anyhow::Error {
    fn category(&self) -> ErrorCategory {
        if let Some(envelope) = self.downcast_ref::<ErrorEnvelope>() {
            envelope.category()
        } else if let Some(io) = self.downcast_ref::<io::Error>() {
            io.category()
        } else if self.downcast_ref::<serde_json::Error>().is_some()
            || parse_error_reason(self).is_some()
        {
            ErrorCategory::Validation
        } else {
            ErrorCategory::Other
        }
    }

    fn is_retryable(&self) -> bool {
        match self.downcast_ref::<ErrorEnvelope>() {
            Some(envelope) => envelope.is_retryable(),
            None => self.category().is_retryable_by_default(),
        }
    }

    fn reason(&self) -> Option<Cow<'static, str>> {
        if let Some(envelope) = self.downcast_ref::<ErrorEnvelope>() {
            envelope.reason_code()
        } else if let Some(io) = self.downcast_ref::<io::Error>() {
            io.reason()
        } else if let Some(json) = self.downcast_ref::<serde_json::Error>() {
            json.reason()
        } else {
            parse_error_reason(self).map(Cow::Borrowed)
        }
    }

    fn as_error(&self) -> Option<&(dyn StdError + 'static)> {
        Some(self.as_ref())
    }

    fn into_envelope(self) -> ErrorEnvelope {
        match self.downcast::<ErrorEnvelope>() {
            Ok(envelope) => envelope,
            Err(error) => {
                let envelope = ErrorEnvelope::new(error.category(), format!("{error:#}"));
                foreign(envelope.remade(|parts| {
                    parts.set_reason(error.reason());
                    parts.origin = Some(Origin(Arc::new(Original(error))));
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests;
