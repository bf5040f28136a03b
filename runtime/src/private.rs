//! Support for the code the macros generate. Not a public API: names here may
//! change in any release.

pub use schemars;
pub use serde;
pub use serde_json;

pub use crate::call::{
    IntoToolResult, PartialHandle, PartialItem, PartialSource, ToolInfo, call_async, call_sync,
    check_guard, partial_source,
};

/// The success type of a `#[tool]`'s return type, as its signature names it.
pub type OkOf<R> = <R as IntoToolResult>::Ok;
pub use crate::capture::{Capturable, Capture, CaptureWriter, capture};

pub use crate::classify::envelope_of;

use std::error::Error as StdError;
use std::time::Duration;

use serde_json::Value;

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

/// A field marked `#[tool_error(partial)]`, as JSON.
pub fn partial_value<T: PartialItem + ?Sized>(partial: &T) -> Option<Value> {
    serde_json::to_value(partial).ok()
}

/// Autoref specialization: `(&ErrorProbe(value)).as_std_error()` is
/// `Some(value)` when the value's type implements [`std::error::Error`] and
/// `None` otherwise. Used by `#[derive(ToolError)]` to fill in `as_error`.
pub struct ErrorProbe<'a, T: ?Sized>(pub &'a T);

/// Chosen when the probed type implements [`std::error::Error`].
pub trait ViaStdError<'a> {
    /// The value as an error.
    fn as_std_error(&self) -> Option<&'a (dyn StdError + 'static)>;
}

impl<'a, T: StdError + 'static> ViaStdError<'a> for ErrorProbe<'a, T> {
    fn as_std_error(&self) -> Option<&'a (dyn StdError + 'static)> {
        Some(self.0)
    }
}

/// Chosen otherwise.
pub trait ViaNothing<'a> {
    /// `None`.
    fn as_std_error(&self) -> Option<&'a (dyn StdError + 'static)>;
}

impl<'a, T: ?Sized> ViaNothing<'a> for &ErrorProbe<'a, T> {
    fn as_std_error(&self) -> Option<&'a (dyn StdError + 'static)> {
        None
    }
}
