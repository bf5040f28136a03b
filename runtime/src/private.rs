//! Support for the code the macros generate. Not a public API: names here may
//! change in any release.

pub use schemars;
pub use serde;
pub use serde_json;

#[cfg(feature = "tokio")]
pub use crate::call::timeout_needs_the_tokio_feature;
pub use crate::call::{
    IntoToolResult, PartialHandle, PartialItem, PartialSource, Query, ToolInfo, call_async,
    call_sync, check_guard, partial_source,
};

/// The success type of a `#[tool]`'s return type, as its signature names it.
pub type OkOf<R> = <R as IntoToolResult>::Ok;

/// The error type of a `#[tool]`'s return type.
pub type ErrOf<R> = <R as IntoToolResult>::Err;

/// The success value of a served tool, as JSON.
#[diagnostic::on_unimplemented(
    message = "the result of a served tool must implement `serde::Serialize`",
    label = "the success type in `{Self}` cannot be sent to an MCP client",
    note = "derive `Serialize` for it, or do not serve this tool"
)]
pub trait Output {
    /// The success type.
    type Value;
    /// The value as JSON; a value that fails to serialize is an `other` failure.
    fn to_json(value: &Self::Value, tool: &ToolInfo) -> crate::ToolResult<Value>;
}

#[diagnostic::do_not_recommend]
impl<M, T: serde::Serialize> Output for (M, T) {
    type Value = T;

    fn to_json(value: &T, tool: &ToolInfo) -> crate::ToolResult<Value> {
        serde_json::to_value(value).map_err(|error| {
            crate::ErrorEnvelope::other(format!(
                "the result of `{}` could not be serialized: {error}",
                tool.name
            ))
            .with_reason("UNSERIALIZABLE_RESULT")
            .with_tool(tool.name.clone())
        })
    }
}

/// A schema function, as a definition takes it.
pub type SchemaFn = fn(&mut schemars::SchemaGenerator) -> schemars::Schema;

/// Autoref specialization: the output schema of `T` when it implements `JsonSchema`.
pub struct SchemaProbe<T>(std::marker::PhantomData<fn() -> T>);

impl<T> SchemaProbe<T> {
    /// A probe of `T`.
    pub fn new() -> Self {
        SchemaProbe(std::marker::PhantomData)
    }
}

impl<T> Default for SchemaProbe<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Chosen when the probed type implements `JsonSchema`.
pub trait ViaSchema {
    /// Its schema.
    fn output_schema(&self) -> Option<SchemaFn>;
}

impl<T: schemars::JsonSchema> ViaSchema for SchemaProbe<T> {
    fn output_schema(&self) -> Option<SchemaFn> {
        Some(|generator| generator.subschema_for::<T>())
    }
}

/// Chosen otherwise.
pub trait ViaNoSchema {
    /// `None`.
    fn output_schema(&self) -> Option<SchemaFn> {
        None
    }
}

impl<T> ViaNoSchema for &SchemaProbe<T> {}

/// Autoref specialization: the failure modes of `E` when it implements `DescribeFailures`.
pub struct FailureProbe<E>(std::marker::PhantomData<fn() -> E>);

impl<E> FailureProbe<E> {
    /// A probe of `E`.
    pub fn new() -> Self {
        FailureProbe(std::marker::PhantomData)
    }
}

impl<E> Default for FailureProbe<E> {
    fn default() -> Self {
        Self::new()
    }
}

/// Chosen when the probed type implements `DescribeFailures`.
pub trait ViaFailures {
    /// Its failure modes.
    fn failure_modes(&self) -> Option<Vec<crate::FailureMode>>;
}

impl<E: crate::DescribeFailures> ViaFailures for FailureProbe<E> {
    fn failure_modes(&self) -> Option<Vec<crate::FailureMode>> {
        Some(E::failure_modes())
    }
}

/// Chosen otherwise.
pub trait ViaNoFailures {
    /// `None`.
    fn failure_modes(&self) -> Option<Vec<crate::FailureMode>> {
        None
    }
}

impl<E> ViaNoFailures for &FailureProbe<E> {}
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
