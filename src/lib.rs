//! # tool-envelope
//!
//! Structured, routable errors for agent and MCP tools.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

#[doc(inline)]
pub use tool_envelope_runtime::*;

pub use tool_envelope_macros::{ToolError, tool};

#[doc(hidden)]
pub use tool_envelope_runtime::__private;
