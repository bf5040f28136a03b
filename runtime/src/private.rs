//! Support for the code the macros generate. Not a public API: names here may
//! change in any release. Everything lives in the module it belongs to; this
//! one only gathers it under one path.

pub use schemars;
pub use serde;
pub use serde_json;

#[cfg(feature = "tokio")]
pub use crate::call::timeout_needs_the_tokio_feature;
pub use crate::call::{
    IntoToolResult, PartialHandle, PartialItem, PartialSource, Query, ToolInfo, call_async,
    call_sync, check_guard, partial_source,
};
pub use crate::capture::{Capturable, Capture, CaptureWriter, capture};
pub use crate::classify::envelope_of;
pub use crate::hints::{RetryAfterHint, ViolationList, partial_value};
pub use crate::mcp::arguments::{Output, json_of, json_ready};
pub use crate::probe::{
    ErrorProbe, FailureProbe, SchemaFn, SchemaProbe, ViaFailures, ViaNoFailures, ViaNoSchema,
    ViaNothing, ViaSchema, ViaStdError,
};

/// The success type of a `#[tool]`'s return type, as its signature names it.
pub type OkOf<R> = <R as IntoToolResult>::Ok;

/// The error type of a `#[tool]`'s return type.
pub type ErrOf<R> = <R as IntoToolResult>::Err;
