//! The Model Context Protocol: serving tools, and calling them.
//!
//! Every `#[tool]` carries its MCP definition — name, description from the
//! doc comment, `inputSchema` from the parameters, `outputSchema` from the
//! success type, annotations, and the ways it can fail — and a free function
//! with owned arguments can be served as it is. A [`ToolSet`] lists the tools
//! and dispatches `tools/call`; with the `rmcp` feature it is an rmcp
//! `ServerHandler`, served over stdio or Streamable HTTP ([`HttpOptions`]),
//! or merged into a server of your own ([`ToolSet::router`]). A tool may take
//! the request's [`ToolContext`] (progress, log messages, cancellation, the
//! client) and return rich [`Contents`]. rmcp's own `#[tool]`s may return an
//! `ErrorEnvelope`, with [`admit_envelopes`] on their router.
//!
//! With the `client` feature, [`client::McpClient`] calls the tools of any MCP
//! server like local tools.
//!
//! # The definition
//!
//! The name is checked at compile time against `^[A-Za-z0-9_.-]{1,64}$`; the
//! doc comment is the `description`; the `inputSchema` (JSON Schema 2020-12)
//! is generated with schemars from the parameters — a parameter's doc comment
//! is its description, `Option`s are optional, skipped, `Partial` and
//! `ToolContext` parameters never appear; the `outputSchema` comes from the
//! success type when it implements `JsonSchema`, and admits the error
//! envelope too, so that a client that validates `structuredContent` even on
//! errors never rejects one; the annotations are `read_only`,
//! `destructive`, `idempotent`, `open_world`. Beyond any MCP SDK, the
//! definition says in advance how the tool can fail: with
//! `#[derive(ToolError)]`, its categories, reasons and alternatives are in
//! the tool's `_meta` ([`FAILURE_MODES_META_KEY`]), and
//! `#[tool(describe_failures)]` adds a one-line summary to the description.
//!
//! # A tool set
//!
//! Guards ([`ToolSet::guards`]) run once the arguments decoded, and a retry
//! policy ([`ToolSet::retry`]) recovers transient faults inside the server;
//! what cannot be recovered comes back as an escalation. Calls through the
//! set take `attempted_query` from the JSON arguments as received — the
//! typed arguments are never serialized again — with every secret masked at
//! any depth and the value of every key the tool does not declare masked
//! (the key is shown, so the violation can name it).
//! [`ToolSet::mask_internal_errors`] hides what an internal error may say.
//! A synchronous tool runs on the server's async runtime thread: keep it
//! short, or write it as an `async fn` that awaits its I/O.
//!
//! A server of your own can take the set's tools as an rmcp router
//! ([`ToolSet::router`], merged with `#[tool_router]`'s: see
//! `examples/composed.rs`), or delegate: a `ToolSet` is a `ServerHandler`,
//! so a hand-written `call_tool` or `list_tools` can call the set's own.
//! `examples/full_server/` adds prompts, resources and completion, and
//! passes every scenario of the MCP conformance suite.
//!
//! # The request context
//!
//! A tool may take a [`ToolContext`] parameter: never captured, never in the
//! `inputSchema`; a caller in Rust passes [`ToolContext::detached`], which
//! sends nothing. Through it the tool reports progress (when the client sent
//! a `progressToken`; values only go forward), sends log messages (under the
//! client's `logging/setLevel`, `info` until it sets one), observes
//! cancellation, and asks the client — a form for its user, its model, its
//! roots — the same way on both revisions ([`ask`]). A cancelled call is stopped at its next `.await`, no retry
//! follows, and nothing more is sent for it. While [`ToolSet::retry`]
//! recovers locally, a client that asked for progress gets one notification
//! per retry: `attempt 1 of 3 failed (transient, RATE_LIMITED); retrying in
//! 250 ms`.
//!
//! # Rich results
//!
//! A success may be [`Contents`]: text, images, audio, embedded resources and
//! resource links in any mix, with `_meta` and optional structured content.
//! Failures stay envelopes.
//!
//! ```
//! use tool_envelope::{tool, ErrorEnvelope, mcp::Contents};
//!
//! /// Render a customer's order history as a chart.
//! #[tool(read_only)]
//! fn order_chart(customer_id: String) -> Result<Contents, ErrorEnvelope> {
//!     let png: Vec<u8> = vec![0x89, b'P', b'N', b'G'];
//!     Ok(Contents::new()
//!         .text(format!("Orders of {customer_id}, by month"))
//!         .image(png, "image/png")
//!         .resource_link(format!("orders://{customer_id}/history"), "history"))
//! }
//! # let _ = order_chart;
//! ```
//!
//! # Over HTTP, and N replicas
//!
//! [`HttpOptions`] serves Streamable HTTP at `/mcp` (`serve`), or gives the
//! service to mount in an axum router (`service`), for a tool set or any
//! rmcp server. The defaults suit a developer's machine: sessions in memory,
//! only loopback `Host` headers (a defence against DNS rebinding), rmcp's
//! body limit. `allowed_hosts` *replaces* the loopback names: list them too
//! if a local health check calls the service. To run N replicas behind a
//! load balancer:
//!
//! - serve `HttpOptions::new().stateless()`: no session, so any replica
//!   answers any request, and round-robin works;
//! - list the names clients reach the service by with `allowed_hosts` (or
//!   pass the proxy's `Host` through and list that), and browser origins
//!   with `allowed_origins` (scheme, host and port, compared in full); cap
//!   bodies with `max_body_bytes`;
//! - in the proxy, turn buffering off (`proxy_buffering off;`) so that
//!   progress and log messages stream, and raise the read timeout above your
//!   longest call. nginx passes a request whose connection a dead replica
//!   refused on to the next one (`proxy_next_upstream error`, its default),
//!   which is safe: nothing was sent. A request in flight when a replica
//!   dies comes back as a 502, which this crate's client treats as
//!   `transient` and retries only when the tool is safe to repeat.
//!
//! On MCP 2026-07-28 every request stands alone, and a tool that asks the
//! client does so in rounds any replica can resume: give every replica the
//! same [`ToolSet::request_state_key`] (and, for a round that brings a
//! person's yes, the same [`ToolSet::store`]: without one, only the tool
//! set that asked takes it). Stateless on 2025-11-25, a tool
//! cannot make requests of the client (the question says so, or a guard's
//! block stands) and `logging/setLevel` lasts one request. A deployment that
//! needs those on 2025-11-25 keeps sessions and routes each client to one
//! replica (a consistent hash on a header the client sets; not on
//! `Mcp-Session-Id`, which `initialize` does not carry).
//!
//! # Protocol revisions
//!
//! A served tool set speaks MCP 2025-11-25 (and the revisions before it)
//! and 2026-07-28 at once: each request is answered in the revision it
//! speaks, as rmcp negotiates it. On 2026-07-28 a tool's log messages go out
//! only under the request's `_meta` log level, `tools/list` carries cache
//! hints ([`ToolSet::list_cache`]), and the methods that revision removed
//! (`initialize`, `ping`, `logging/setLevel`) are not found. With
//! [`ToolSet::tasks`], calls run as tasks (the tasks extension) for the
//! clients that declare it. The client ([`client::McpClient`]) negotiates,
//! or is pinned to one revision.

pub(crate) mod argument;
#[cfg(feature = "rmcp")]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
pub mod ask;
pub(crate) mod checks;
#[cfg(feature = "client")]
pub mod client;
pub(crate) mod context;
pub(crate) mod definition;
#[cfg(feature = "rmcp")]
mod kept;
pub(crate) mod log;
pub(crate) mod reply;
#[cfg(any(feature = "client", feature = "inbox"))]
pub(crate) mod retry_after;
pub(crate) mod server;
pub(crate) mod violations;

pub use crate::catalog::{DescribeFailures, FailureMode};
/// Who may cache a listing ([`ToolSet::list_cache`]): rmcp's own type.
#[cfg(feature = "rmcp")]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
pub use ::rmcp::model::CacheScope;
#[cfg(feature = "rmcp")]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
pub use ask::{Elicitation, Question};
pub use context::{DEFAULT_LOG_LEVEL, LogLevel, ToolContext};
pub use definition::{FAILURE_MODES_META_KEY, ToolDefinition, ToolHints};
pub use reply::{Contents, EmbeddedContents, ProtocolError, ReplyContent, ToolReply};
#[cfg(feature = "rmcp")]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
pub use server::approval::APPROVAL_META_KEY;
#[cfg(feature = "inbox")]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "inbox")))]
pub use server::inbox::Inbox;
#[cfg(feature = "rmcp")]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
pub use server::rmcp::{
    BearerAuth, DEFAULT_SESSIONS_PER_CALLER, HttpOptions, McpService, NewServer, admit_envelopes,
    output_schema,
};
#[cfg(feature = "rmcp")]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
pub use server::sealed::DEFAULT_REQUEST_STATE_TTL;
#[cfg(feature = "rmcp")]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
pub use server::tasks::{DEFAULT_MAX_TASKS, DEFAULT_MAX_TASKS_PER_CALLER, TaskSupport};
#[cfg(feature = "rmcp")]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
pub use server::ticket::{DEFAULT_APPROVAL_TTL, DEFAULT_MAX_WAITING_APPROVALS};
#[cfg(feature = "tokio")]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "tokio")))]
pub use server::toolset::DEFAULT_MAX_OPEN_ESCALATIONS;
#[cfg(feature = "rmcp")]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
pub use server::toolset::DecisionError;
#[cfg(feature = "rmcp")]
pub use server::toolset::{DEFAULT_ASK_TIMEOUT, DEFAULT_LIST_TTL};
pub use server::toolset::{DEFAULT_MAX_RESULT_BYTES, ServableTool, ToolProvider, ToolSet};
#[cfg(feature = "inbox")]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "inbox")))]
pub use server::webhook::Webhook;
