//! What the code the macros generate names: every path it uses goes through
//! this module, re-exported as `__private`. Not a public API: names here may
//! change in any release, and nothing here is documented for users.

pub use schemars;
pub use serde;
pub use serde_json;

pub use crate::body::hints::{RetryAfterHint, ViolationList, partial_value};
pub use crate::body::probe::{ErrorProbe, FailureProbe, SchemaFn, SchemaProbe};
#[cfg(feature = "tokio")]
pub use crate::body::timeout_needs_the_tokio_feature;
pub use crate::body::{
    IntoToolResult, PartialHandle, PartialItem, PartialSource, ToolInfo, call_async, call_sync,
    captured, check_guard, partial_source,
};
pub use crate::catalog::{DescribeFailures, FailureMode};
pub use crate::category::ErrorCategory;
pub use crate::classify::{ToolError, envelope_of};
pub use crate::envelope::{ErrorEnvelope, ToolResult, Violation};
pub use crate::mcp::ServableTool;
pub use crate::mcp::ToolProvider;
pub use crate::mcp::definition::{ParamSpec, ToolDefinition, definition, param};
pub use crate::mcp::server::arguments::{
    Arg, Decoder, Output, Success, json_of, json_ready, ready, serve,
};
pub use crate::mcp::server::state::{BoxFuture, CallState};
pub use crate::mcp::server::toolset::{FreeTool, MethodTool};
pub use crate::query::Query;
pub use crate::query::capture::{Capturable, Capture, CaptureWriter, SecretProbe, capture};

/// The traits of autoref specialization, to bring into scope with one glob.
pub mod probe {
    pub use crate::body::probe::{
        ViaFailures, ViaNoFailures, ViaNoSchema, ViaNothing, ViaSchema, ViaStdError,
    };
    pub use crate::query::capture::{
        ViaNoRedactedValue, ViaNoSecretValue, ViaRedactedValue, ViaSecretValue,
    };
}

/// The success type of a `#[tool]`'s return type, as its signature names it.
pub type OkOf<R> = <R as IntoToolResult>::Ok;

/// The error type of a `#[tool]`'s return type.
pub type ErrOf<R> = <R as IntoToolResult>::Err;
