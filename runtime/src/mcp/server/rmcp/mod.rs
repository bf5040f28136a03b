//! The tool set on rmcp, the official Rust MCP SDK: rmcp owns the protocol
//! and the transports; this module maps tools, requests and results across,
//! and lets envelopes into servers written with rmcp's own macros.
//!
//! rmcp marks logging deprecated: MCP's 2026-07-28 revision drops it. The
//! clients in use today (the Python and TypeScript SDKs, the Inspector, the
//! conformance suite) negotiate 2025-11-25, where `logging/setLevel` and
//! `notifications/message` are how a server talks to its user, so they are
//! served here.
#![allow(deprecated)]

mod accept;
pub(crate) mod bearer;
mod convert;
mod handler;
mod hosts;
mod http;
mod own_tools;
mod refusals;
mod sessions;
mod stdio;

pub use bearer::BearerAuth;
pub use http::{HttpOptions, McpService, NewServer};
pub use own_tools::{admit_envelopes, output_schema};
pub use sessions::DEFAULT_SESSIONS_PER_CALLER;
