//! Serving tools over the Model Context Protocol.
//!
//! Every `#[tool]` carries its MCP definition — name, description from the
//! doc comment, `inputSchema` from the parameters, `outputSchema` from the
//! success type, annotations, and the ways it can fail — and a free function
//! with owned arguments can be served as it is. A [`ToolSet`] lists the tools
//! and dispatches `tools/call`; with the `rmcp` feature it is an rmcp
//! `ServerHandler`, served over stdio or Streamable HTTP.

pub(crate) mod arguments;
mod definition;
#[cfg(feature = "rmcp")]
mod rmcp;
mod toolset;
mod violations;

pub use arguments::{Arg, Decoder};
pub use definition::{
    FAILURE_MODES_META_KEY, JSON_SCHEMA_2020_12, ParamSpec, ToolAnnotations, ToolDefinition,
    ToolMeta, build,
};
pub use toolset::{
    BoxFuture, CallContext, CallFn, CallToolResult, Content, DEFAULT_MAX_RESULT_BYTES, MethodCall,
    PartialArg, ProtocolError, ServableTool, ToolProvider, ToolSet, ToolSpec,
};
