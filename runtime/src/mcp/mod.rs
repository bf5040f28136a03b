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

pub(crate) mod checks;
#[cfg(feature = "client")]
pub mod client;
pub(crate) mod context;
pub(crate) mod definition;
#[cfg(feature = "rmcp")]
pub(crate) mod live;
pub(crate) mod log;
pub(crate) mod reply;
#[cfg(feature = "rmcp")]
pub(crate) mod rmcp;
pub(crate) mod toolset;
pub(crate) mod violations;

pub use crate::catalog::{DescribeFailures, FailureMode};
pub use context::{DEFAULT_LOG_LEVEL, LogLevel, ToolContext};
pub use definition::{FAILURE_MODES_META_KEY, ToolDefinition, ToolHints};
pub use reply::{Contents, EmbeddedContents, ProtocolError, ReplyContent, ToolReply};
pub use toolset::{DEFAULT_MAX_RESULT_BYTES, ServableTool, ToolProvider, ToolSet};

#[cfg(feature = "rmcp")]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
pub use self::rmcp::{HttpOptions, NewServer, admit_envelopes, output_schema};
