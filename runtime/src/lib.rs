//! The runtime of [`tool-envelope`](https://docs.rs/tool-envelope).
//!
//! Depend on `tool-envelope`, which re-exports everything here together with
//! the macros. This crate holds the types and the flow of a call:
//! arguments → capture → body → classify → envelope.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod call;
mod capture;
mod category;
mod classify;
mod envelope;
mod found;
mod partial;
mod schema;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

pub use call::ToolResult;
pub use category::{ErrorCategory, UnknownCategory};
pub use classify::ToolError;
pub use envelope::{EnvelopeData, ErrorEnvelope, REDACTED, Violation};
pub use found::Found;
pub use partial::Partial;
pub use schema::SCHEMA_ID;
