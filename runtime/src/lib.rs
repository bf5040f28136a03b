//! The runtime of [`tool-envelope`](https://docs.rs/tool-envelope).
//!
//! Depend on `tool-envelope`, which re-exports everything here together with
//! the macros. This crate holds the types and the flow of a call:
//! arguments → capture → guard → body → classify → envelope → wire →
//! retry → escalation → coordinator → MCP.
#![deny(missing_docs, missing_debug_implementations)]
#![forbid(unsafe_code)]
#![cfg_attr(tool_envelope_docsrs, feature(doc_cfg))]

// Alphabetical, as rustfmt keeps them. No module imports from a module that
// imports it: the `use crate::` graph has no cycle. What a user meets is
// here; what the macros' generated code needs is under `private/`.
mod body;
mod caller;
mod catalog;
mod category;
mod classify;
pub mod coordinator;
mod envelope;
mod escalation;
mod found;
pub mod guard;
mod json;
pub mod keys;
mod limits;
pub mod mcp;
mod panic;
mod partial;
mod private;
mod query;
pub mod reasons;
mod redact;
pub mod retry;
mod schema;
mod scope;
mod settle;
pub mod store;
mod wire;

#[doc(hidden)]
pub use private::api as __private;

pub use category::{ErrorCategory, UnknownCategory};
pub use classify::ToolError;
pub use envelope::{ErrorEnvelope, ToolResult, Violation};
pub use escalation::{Escalated, Escalation, EscalationReason, Ticket};
pub use found::Found;
pub use json::depth::MAX_DEPTH;
pub use limits::EnvelopeLimits;
pub use partial::Partial;
pub use redact::REDACTED;
pub use redact::secret::Secret;
