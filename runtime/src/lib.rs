//! The runtime of [`tool-envelope`](https://docs.rs/tool-envelope).
//!
//! Depend on `tool-envelope`, which re-exports everything here together with
//! the macros. This crate holds the types and the flow of a call:
//! arguments → capture → body → classify → envelope.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod call;
mod capture;
mod catalog;
mod category;
mod classify;
mod coordinator;
mod envelope;
mod escalation;
mod found;
mod guard;
mod hints;
mod json;
mod limits;
pub mod mcp;
mod panic;
mod partial;
mod probe;
pub mod reasons;
mod redact;
mod retry;
mod schema;
mod secret;
mod wire;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

pub use call::ToolResult;
pub use catalog::{DescribeFailures, FailureMode};
pub use category::{ErrorCategory, UnknownCategory};
pub use classify::ToolError;
pub use coordinator::{BranchResult, Completed, Coordinator, Gap, Report};
pub use envelope::{EnvelopeData, ErrorEnvelope, NO_MESSAGE, Violation};
pub use escalation::{Escalation, EscalationReason};
pub use found::Found;
pub use guard::{Blocked, Guard, Guards, ToolCall};
pub use json::depth::MAX_DEPTH;
pub use limits::EnvelopeLimits;
pub use partial::Partial;
pub use redact::REDACTED;
#[cfg(feature = "tokio")]
pub use retry::TokioSleeper;
pub use retry::{
    AttemptRecord, Backoff, Delays, Jitter, Outcome, RetryAction, RetryBudget, RetryEvent,
    RetryPolicy, RetryStats, Sleeper,
};
pub use schema::SCHEMA_ID;
pub use secret::Secret;
