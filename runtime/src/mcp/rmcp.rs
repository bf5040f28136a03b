//! The tool set on rmcp, the official Rust MCP SDK: rmcp owns the protocol
//! and the transports; this module only maps tools and results across.

use std::io;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ContentBlock, CustomRequest, CustomResult, ErrorCode,
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use crate::mcp::definition::ToolDefinition;
use crate::mcp::reply::{ReplyContent, ToolReply};
use crate::mcp::toolset::ToolSet;

/// The rmcp shape of a definition.
fn to_rmcp_tool(definition: &ToolDefinition) -> Tool {
    let value = serde_json::to_value(definition).expect("a definition serializes");
    serde_json::from_value(value).expect("a definition is a valid MCP tool")
}

/// The rmcp shape of a result; the text is not serialized again.
fn to_rmcp_result(result: ToolReply) -> rmcp::model::CallToolResult {
    let content = result
        .content
        .into_iter()
        .map(|ReplyContent::Text { text }| ContentBlock::text(text))
        .collect();
    let mut converted = if result.is_error {
        rmcp::model::CallToolResult::error(content)
    } else {
        rmcp::model::CallToolResult::success(content)
    };
    converted.structured_content = result.structured_content;
    converted
}

#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
/// A tool set is an rmcp server: it lists its tools and dispatches
/// `tools/call`, with tool failures as `isError` results carrying envelopes
/// and an unknown tool as a `-32602` protocol error.
impl ServerHandler for ToolSet {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                self.name().unwrap_or("tool-envelope"),
                self.version().unwrap_or(env!("CARGO_PKG_VERSION")),
            ))
            .with_instructions(
                "Tool failures come back as isError results whose structuredContent is an error envelope: \
                 errorCategory and isRetryable say what to do next; attempted_query, partial_results and \
                 alternatives carry the context.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.list().iter().map(to_rmcp_tool).collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.get(name).map(to_rmcp_tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.map_or(Value::Null, Value::Object);
        match self.call(&request.name, arguments).await {
            Ok(result) => Ok(to_rmcp_result(result).into()),
            Err(error) => Err(ErrorData::new(
                ErrorCode(error.code),
                error.message,
                error.data,
            )),
        }
    }

    /// A request rmcp could not read as one of MCP's: a known method whose
    /// params do not fit MCP's schema — `tools/call` with `arguments` that
    /// are not an object — is "invalid params" (`-32602`), saying what was
    /// wrong without echoing it; anything else is "method not found".
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(invalid_request(&request.method, request.params.as_ref()))
    }
}

/// The protocol error of a request rmcp could not read.
fn invalid_request(method: &str, params: Option<&Value>) -> ErrorData {
    const KNOWN: &[&str] = &["tools/call", "tools/list", "initialize", "ping"];
    if !KNOWN.contains(&method) {
        let method = crate::limits::text_for_wire(method, 256);
        return ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("unknown method `{method}`"),
            None,
        );
    }
    let arguments = params.and_then(|params| params.get("arguments"));
    let message = match arguments {
        Some(arguments)
            if method == "tools/call" && !arguments.is_object() && !arguments.is_null() =>
        {
            format!(
                "invalid params of `tools/call`: `arguments` must be a JSON object, not {}",
                crate::mcp::violations::kind(arguments)
            )
        }
        _ => format!("invalid params of `{method}`: they do not fit MCP's schema"),
    };
    ErrorData::new(ErrorCode::INVALID_PARAMS, message, None)
}

#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
impl ToolSet {
    /// Serves the tools over stdio until the client closes it. Nothing else
    /// may write to stdout meanwhile; log to stderr.
    ///
    /// # Errors
    ///
    /// If the client does not initialize, or the transport fails.
    pub async fn serve_stdio(self) -> io::Result<()> {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(io::Error::other)?;
        running.waiting().await.map_err(io::Error::other)?;
        Ok(())
    }

    /// The Streamable HTTP service of the tools, to mount in an axum router
    /// (`Router::new().nest_service("/mcp", tools.http_service())`). Sessions
    /// are kept in memory; only loopback `Host` headers are accepted, as a
    /// defence against DNS rebinding.
    pub fn http_service(&self) -> StreamableHttpService<ToolSet, LocalSessionManager> {
        let tools = self.clone();
        StreamableHttpService::new(
            move || Ok(tools.clone()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        )
    }

    /// Serves the tools over Streamable HTTP at `/mcp` on `listener`, until
    /// the listener fails.
    ///
    /// # Errors
    ///
    /// If serving fails.
    pub async fn serve_http(self, listener: tokio::net::TcpListener) -> io::Result<()> {
        let router = axum::Router::new().nest_service("/mcp", self.http_service());
        axum::serve(listener, router).await
    }
}
