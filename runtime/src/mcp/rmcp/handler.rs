//! A tool set as an rmcp server: the `ServerHandler`, a tool set's tools as
//! an rmcp router, and serving over stdio.

use std::io;

use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, ErrorCode,
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    SetLevelRequestParams, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use crate::mcp::context::ToolContext;
use crate::mcp::live::LiveRequest;
use crate::mcp::rmcp::convert::{rmcp_tools, to_error_data, to_rmcp_result};
use crate::mcp::toolset::ToolSet;

const INSTRUCTIONS: &str = "Tool failures come back as isError results whose structuredContent is an error envelope: \
     errorCategory and isRetryable say what to do next; attempted_query, partial_results and \
     alternatives carry the context.";

#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
/// A tool set is an rmcp server: it lists its tools and dispatches
/// `tools/call`, with tool failures as `isError` results carrying envelopes
/// and an unknown tool as a `-32602` protocol error; it answers
/// `logging/setLevel` for the log messages its tools send.
///
/// A server of your own can delegate to it — call these methods on the tool
/// set from yours — or take its tools as an rmcp router with
/// [`ToolSet::router`].
impl ServerHandler for ToolSet {
    fn get_info(&self) -> ServerConfig {
        #[allow(deprecated)]
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_tools()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                self.name().unwrap_or("tool-envelope"),
                self.version().unwrap_or(env!("CARGO_PKG_VERSION")),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(rmcp_tools(self).to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        rmcp_tools(self)
            .iter()
            .find(|tool| tool.name == name)
            .cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.map_or(Value::Null, Value::Object);
        self.call_in_request(&request.name, arguments, &context)
            .await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.set_log_level(request.level.into());
        Ok(())
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
    const KNOWN: &[&str] = &[
        "tools/call",
        "tools/list",
        "initialize",
        "ping",
        "logging/setLevel",
    ];
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
    /// Calls a tool for an rmcp request: the tool gets the request's
    /// context, and the result or protocol error comes back in rmcp's shape.
    async fn call_in_request(
        &self,
        name: &str,
        arguments: Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let live = ToolContext::live(LiveRequest::new(context, name, self.log_threshold()));
        match self.call_with(name, arguments, live).await {
            Ok(result) => Ok(to_rmcp_result(result).into()),
            Err(error) => Err(to_error_data(error)),
        }
    }

    /// The tools as an rmcp [`ToolRouter`], to merge with the routers of
    /// rmcp's `#[tool_router]` in a server of your own — one server with
    /// this set's tools (their retries, guards, masking and limits), rmcp's
    /// own tools, and your prompts, resources and completions:
    ///
    /// ```
    /// use rmcp::handler::server::router::tool::ToolRouter;
    /// use rmcp::{ServerHandler, tool, tool_handler, tool_router};
    /// use tool_envelope::ErrorEnvelope;
    /// use tool_envelope::mcp::ToolSet;
    ///
    /// /// Look up a customer's orders.
    /// #[tool_envelope::tool(read_only)]
    /// fn lookup_orders(customer_id: String) -> Result<Vec<String>, ErrorEnvelope> {
    ///     Ok(vec![format!("{customer_id}-1")])
    /// }
    ///
    /// #[derive(Clone)]
    /// struct Server {
    ///     tool_router: ToolRouter<Self>,
    /// }
    ///
    /// #[tool_router]
    /// impl Server {
    ///     /// Say hello: a tool of rmcp's own.
    ///     #[tool]
    ///     fn hello(&self) -> String {
    ///         "hello".into()
    ///     }
    /// }
    ///
    /// // Serve the router in the field: `#[tool_handler]` alone serves `Self::tool_router()`.
    /// #[tool_handler(router = self.tool_router)]
    /// impl ServerHandler for Server {}
    ///
    /// let tools = ToolSet::new().tool::<lookup_orders>();
    /// let server = Server { tool_router: Server::tool_router() + tools.router() };
    /// assert!(server.tool_router.has_route("hello"));
    /// assert!(server.tool_router.has_route("lookup_orders"));
    /// ```
    ///
    /// The routes share this set, and its log level: a server that answers
    /// `logging/setLevel` forwards it to [`ToolSet::set_log_level`].
    pub fn router<S: Send + Sync + 'static>(&self) -> ToolRouter<S> {
        let mut router = ToolRouter::new();
        for tool in rmcp_tools(self) {
            let tools = self.clone();
            let route = ToolRoute::new_dyn(tool.clone(), move |call: ToolCallContext<'_, S>| {
                let tools = tools.clone();
                Box::pin(async move {
                    let arguments = call.arguments.map_or(Value::Null, Value::Object);
                    tools
                        .call_in_request(&call.name, arguments, &call.request_context)
                        .await
                }) as crate::private::state::BoxFuture<'_, _>
            });
            router.add_route(route);
        }
        router
    }

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
}
