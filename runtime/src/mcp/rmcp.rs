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

use std::io;
use std::sync::Arc;

use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::tool::{IntoCallToolResult, ToolCallContext};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ContentBlock, CustomRequest, CustomResult, ErrorCode,
    Implementation, JsonObject, ListToolsResult, MetaObject, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};

use crate::envelope::ErrorEnvelope;
use crate::escalation::Escalation;
use crate::limits::EnvelopeLimits;
use crate::mcp::context::ToolContext;
use crate::mcp::definition::{JSON_SCHEMA_2020_12, ToolDefinition, success_or_envelope};
use crate::mcp::live::LiveRequest;
use crate::mcp::reply::{ProtocolError, ReplyContent, ToolReply};
use crate::mcp::toolset::ToolSet;

/// The rmcp shape of a definition.
fn to_rmcp_tool(definition: &ToolDefinition) -> Tool {
    let value = serde_json::to_value(definition).expect("a definition serializes");
    serde_json::from_value(value).expect("a definition is a valid MCP tool")
}

/// The rmcp shape of every definition, made once per tool set: a stateless
/// server makes a server per request, and lists or routes with these.
fn rmcp_tools(tools: &ToolSet) -> &[Tool] {
    tools.rmcp_tools(|definitions| definitions.iter().map(to_rmcp_tool).collect())
}

/// The rmcp shape of a block; text is not serialized again.
fn to_rmcp_block(block: ReplyContent) -> ContentBlock {
    match block {
        ReplyContent::Text { text } => ContentBlock::text(text),
        other => {
            let value = serde_json::to_value(&other).expect("a content block serializes");
            serde_json::from_value(value).expect("a content block is a valid MCP content block")
        }
    }
}

/// The rmcp shape of a result.
fn to_rmcp_result(result: ToolReply) -> rmcp::model::CallToolResult {
    let content = result.content.into_iter().map(to_rmcp_block).collect();
    let mut converted = if result.is_error {
        rmcp::model::CallToolResult::error(content)
    } else {
        rmcp::model::CallToolResult::success(content)
    };
    converted.structured_content = result.structured_content;
    converted.meta = result.meta.map(MetaObject);
    converted
}

/// The JSON-RPC error of a protocol error.
fn to_error_data(error: ProtocolError) -> ErrorData {
    ErrorData::new(ErrorCode(error.code), error.message, error.data)
}

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

/// What [`ToolSet::http_service_with`] serves: where from, how many at once,
/// and how much.
///
/// The defaults are those of a server on the developer's machine: sessions
/// kept in memory (each client's `initialize` opens one, and its requests
/// must reach the same process), only loopback `Host` headers accepted, as
/// a defence against DNS rebinding, no `Origin` check, and rmcp's default
/// body limit. Behind a load balancer, serve [`stateless`](Self::stateless)
/// and list the names clients reach the service by.
///
/// ```
/// use tool_envelope::mcp::{HttpOptions, ToolSet};
///
/// let options = HttpOptions::new()
///     .stateless()
///     .allowed_hosts(["tools.example.com"])
///     .allowed_origins(["https://app.example.com"])
///     .max_body_bytes(1024 * 1024);
/// let service = ToolSet::new().http_service_with(options);
/// # let _ = service;
/// ```
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    config: StreamableHttpServerConfig,
}

impl HttpOptions {
    /// The defaults: sessions in memory, loopback hosts only.
    pub fn new() -> Self {
        HttpOptions::default()
    }

    /// Serves without sessions: every request stands alone and any replica
    /// answers it, so N replicas can sit behind a round-robin load balancer.
    /// Replies to simple calls are plain JSON. What needs a session is lost:
    /// a tool cannot make requests of the client (sampling, elicitation),
    /// and `logging/setLevel` lasts one request.
    #[must_use]
    pub fn stateless(mut self) -> Self {
        self.config = self
            .config
            .with_legacy_session_mode(false)
            .with_json_response(true);
        self
    }

    /// The `Host` names (`example.com`) or authorities (`example.com:8443`)
    /// requests may carry, instead of loopback only.
    #[must_use]
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.config = self.config.with_allowed_hosts(hosts);
        self
    }

    /// Accepts any `Host` header: for a server behind a proxy that checks it.
    #[must_use]
    pub fn any_host(mut self) -> Self {
        self.config = self.config.disable_allowed_hosts();
        self
    }

    /// The browser origins whose requests are accepted; a request from any
    /// other `Origin` is refused (403). Requests without an `Origin` header,
    /// from programs rather than browsers, pass.
    ///
    /// An origin is its scheme, host and port, and all three must match.
    /// An entry without a port means the scheme's own (`https://app.example.com`
    /// is `https://app.example.com:443`, so `https://app.example.com:8443`
    /// is another origin); a port wildcard is written out:
    /// `http://localhost:*`. (rmcp's own config reads a port-less entry as
    /// any port; these options never give it one.)
    #[must_use]
    pub fn allowed_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.config = self
            .config
            .with_allowed_origins(origins.into_iter().map(|origin| with_port(origin.into())));
        self
    }

    /// The largest request body accepted; a larger one is refused with 413
    /// before it is read whole.
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.config = self.config.with_max_request_body_bytes(bytes);
        self
    }

    /// The rmcp configuration these options make, for what they do not cover.
    pub fn into_config(self) -> StreamableHttpServerConfig {
        self.config
    }

    /// The Streamable HTTP service of any rmcp server, served as these
    /// options say: `new_server` makes the server of each session (or,
    /// stateless, of each request) — a server of your own that composes a
    /// tool set gives each its [`ToolSet::for_session`]. Mount it in an axum
    /// router, or serve it with [`serve`](Self::serve).
    pub fn service<S, F>(self, new_server: F) -> StreamableHttpService<S, LocalSessionManager>
    where
        S: ServerHandler,
        F: Fn() -> S + Send + Sync + 'static,
    {
        StreamableHttpService::new(
            move || Ok(new_server()),
            Arc::new(LocalSessionManager::default()),
            self.config,
        )
    }

    /// Serves any rmcp server over Streamable HTTP at `/mcp` on `listener`,
    /// until the listener fails: [`service`](Self::service), mounted.
    ///
    /// # Errors
    ///
    /// If serving fails.
    pub async fn serve<S, F>(
        self,
        listener: tokio::net::TcpListener,
        new_server: F,
    ) -> io::Result<()>
    where
        S: ServerHandler,
        F: Fn() -> S + Send + Sync + 'static,
    {
        let router = axum::Router::new().nest_service("/mcp", self.service(new_server));
        axum::serve(listener, router).await
    }
}

/// `origin` with its port written out: an `http` or `https` origin without
/// one gets its scheme's (80, 443). Anything else — a port or a `:*`
/// already, `null`, another scheme, text that is not an origin — as given.
fn with_port(origin: String) -> String {
    let trimmed = origin.trim().trim_end_matches('/');
    if trimmed.ends_with(":*") {
        return origin;
    }
    let Ok(uri) = axum::http::Uri::try_from(trimmed) else {
        return origin;
    };
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
        return origin;
    };
    let port = match scheme.to_ascii_lowercase().as_str() {
        _ if authority.port().is_some() => return origin,
        "http" => 80,
        "https" => 443,
        _ => return origin,
    };
    format!("{scheme}://{}:{port}", authority.host())
}

impl From<StreamableHttpServerConfig> for HttpOptions {
    fn from(config: StreamableHttpServerConfig) -> Self {
        HttpOptions { config }
    }
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
                }) as crate::mcp::state::BoxFuture<'_, _>
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

    /// The Streamable HTTP service of the tools with the default
    /// [`HttpOptions`], to mount in an axum router
    /// (`Router::new().nest_service("/mcp", tools.http_service())`).
    pub fn http_service(&self) -> StreamableHttpService<ToolSet, LocalSessionManager> {
        self.http_service_with(HttpOptions::default())
    }

    /// The Streamable HTTP service of the tools, served as `options` say;
    /// each session (or, stateless, each request) gets its own log level.
    pub fn http_service_with(
        &self,
        options: HttpOptions,
    ) -> StreamableHttpService<ToolSet, LocalSessionManager> {
        let tools = self.clone();
        options.service(move || tools.for_session())
    }

    /// Serves the tools over Streamable HTTP at `/mcp` on `listener`, until
    /// the listener fails.
    ///
    /// # Errors
    ///
    /// If serving fails.
    pub async fn serve_http(self, listener: tokio::net::TcpListener) -> io::Result<()> {
        self.serve_http_with(listener, HttpOptions::default()).await
    }

    /// [`serve_http`](Self::serve_http), served as `options` say.
    ///
    /// # Errors
    ///
    /// If serving fails.
    pub async fn serve_http_with(
        self,
        listener: tokio::net::TcpListener,
        options: HttpOptions,
    ) -> io::Result<()> {
        options.serve(listener, move || self.for_session()).await
    }
}

/// The reply of a failed call, as rmcp sends it: `isError`, the envelope as
/// `structuredContent`, and its JSON as a text block.
fn failed_result(structured: Value, text: String) -> Result<CallToolResponse, ErrorData> {
    let mut result = rmcp::model::CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    Ok(result.into())
}

#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
/// An envelope is a tool result in rmcp's own `#[tool]` methods: one may
/// return `Result<Json<T>, ErrorEnvelope>`, `Result<String, ErrorEnvelope>`
/// and the like, and a failure is sent as `isError` with the envelope (within
/// the default [`EnvelopeLimits`]) as `structuredContent` and as text. Clients
/// that check `structuredContent` against `outputSchema` even on errors need
/// the tool's schema to admit the envelope: see [`admit_envelopes`].
impl IntoCallToolResult for ErrorEnvelope {
    fn into_call_tool_result(self) -> Result<CallToolResponse, ErrorData> {
        let limits = EnvelopeLimits::default();
        failed_result(self.to_wire(&limits), self.to_wire_text(&limits))
    }
}

#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
/// An escalation is a tool result in rmcp's own `#[tool]` methods, like an
/// [`ErrorEnvelope`]: the envelope and why it escalated.
impl IntoCallToolResult for Escalation {
    fn into_call_tool_result(self) -> Result<CallToolResponse, ErrorData> {
        let limits = EnvelopeLimits::default();
        failed_result(self.to_wire(&limits), self.to_wire_text(&limits))
    }
}

/// Lets error envelopes into the output schemas of an rmcp router: each
/// tool's `outputSchema`, where it has one, becomes "the success value, or
/// an error envelope" (the envelope in a compact form, under 500 bytes).
/// rmcp derives a tool's output schema from its `Json<T>`, which an
/// envelope does not match, and some clients (the MCP Inspector, the
/// TypeScript SDK) check `structuredContent` against it even when `isError`
/// is true.
///
/// rmcp's `#[tool_handler]` serves `Self::tool_router()` unless told
/// otherwise: keep the fixed router in a field and serve that one, with
/// `#[tool_handler(router = self.tool_router)]`.
///
/// ```
/// use rmcp::handler::server::router::tool::ToolRouter;
/// use rmcp::handler::server::wrapper::{Json, Parameters};
/// use rmcp::{ServerHandler, tool, tool_handler, tool_router};
/// use tool_envelope::mcp::admit_envelopes;
/// use tool_envelope::{ErrorEnvelope, Found};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Lookup {
///     customer_id: String,
/// }
///
/// #[derive(Clone)]
/// struct Orders {
///     tool_router: ToolRouter<Self>,
/// }
///
/// #[tool_router]
/// impl Orders {
///     /// Look up a customer's orders.
///     #[tool]
///     async fn lookup_orders(&self, Parameters(lookup): Parameters<Lookup>) -> Result<Json<Found<String>>, ErrorEnvelope> {
///         let _ = lookup.customer_id;
///         Err(ErrorEnvelope::transient("The order service timed out."))
///     }
/// }
///
/// // Serve the router in the field, not a fresh `Self::tool_router()`.
/// #[tool_handler(router = self.tool_router)]
/// impl ServerHandler for Orders {}
///
/// let orders = Orders { tool_router: admit_envelopes(Orders::tool_router()) };
/// let schema = orders.tool_router.get("lookup_orders").unwrap().output_schema.clone().unwrap();
/// assert_eq!(schema["anyOf"][1]["title"], "ErrorEnvelope");
/// ```
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
pub fn admit_envelopes<S>(mut router: ToolRouter<S>) -> ToolRouter<S> {
    for route in router.map.values_mut() {
        if let Some(schema) = &route.attr.output_schema {
            route.attr.output_schema = Some(Arc::new(with_envelope(schema)));
        }
    }
    router
}

/// The output schema of a tool whose success is `T` (a type that
/// serializes as a JSON object, as rmcp's `Json<T>` requires) or an error
/// envelope: for rmcp's `#[tool(output_schema = output_schema::<T>())]`,
/// tool by tool, where [`admit_envelopes`] fixes a whole router.
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
pub fn output_schema<T: schemars::JsonSchema>() -> Arc<JsonObject> {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    let Value::Object(schema) = schema.to_value() else {
        unreachable!("a root schema is an object")
    };
    Arc::new(with_envelope(&schema))
}

/// `schema` or an envelope: its definitions (`$defs`, or draft 7's
/// `definitions`) move to the root, where its `$ref`s still find them.
fn with_envelope(schema: &Map<String, Value>) -> Map<String, Value> {
    if is_enveloped(schema) {
        return schema.clone();
    }
    let mut success = schema.clone();
    success.remove("$schema");
    let definitions = match success.remove("$defs") {
        Some(Value::Object(definitions)) => definitions,
        _ => Map::new(),
    };
    let legacy = success.remove("definitions");
    let mut combined = success_or_envelope(Value::Object(success), definitions);
    if let Some(legacy) = legacy {
        combined.insert("definitions".to_owned(), legacy);
    }
    combined.insert("$schema".to_owned(), JSON_SCHEMA_2020_12.into());
    combined
}

/// Whether `schema` already admits envelopes (made here, or by a tool set).
fn is_enveloped(schema: &Map<String, Value>) -> bool {
    schema
        .get("anyOf")
        .and_then(Value::as_array)
        .is_some_and(|branches| {
            branches
                .iter()
                .any(|branch| branch.get("title") == Some(&Value::from("ErrorEnvelope")))
        })
}

#[cfg(test)]
mod tests {
    use super::with_port;

    #[test]
    fn an_allowed_origin_gets_its_schemes_port() {
        for (given, sent) in [
            ("https://app.example.com", "https://app.example.com:443"),
            ("http://localhost", "http://localhost:80"),
            ("http://localhost/", "http://localhost:80"),
            ("http://[::1]", "http://[::1]:80"),
            (
                "https://app.example.com:8443",
                "https://app.example.com:8443",
            ),
            ("http://localhost:*", "http://localhost:*"),
            ("null", "null"),
            ("chrome-extension://abcdef", "chrome-extension://abcdef"),
        ] {
            assert_eq!(with_port(given.to_owned()), sent, "{given}");
        }
    }
}
