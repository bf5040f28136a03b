//! Calling MCP tools: every tool of every MCP server — a child process on
//! stdio or a Streamable HTTP endpoint, written in any language — called like
//! a local `#[tool]`, its failure an [`ErrorEnvelope`] with the same one
//! retry decision the servers of this crate make.
//!
//! rmcp's client carries the protocol; this module reads envelopes out of
//! results, classifies the failures that are not envelopes, decides what is
//! safe to repeat, and repairs a broken connection before the next call.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ContentBlock,
    ProgressNotificationParam, ProgressToken, ServerResult, Tool,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RoleClient, RunningService, ServiceError,
};
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tokio::sync::Mutex as AsyncMutex;

use crate::category::ErrorCategory;
use crate::classify::ToolError;
use crate::envelope::ErrorEnvelope;
use crate::guard::Guards;
use crate::json::depth::bounded;
use crate::limits::text_for_wire;
use crate::mcp::definition::ToolAnnotations;
use crate::mcp::paced::PacedClient;
use crate::reasons;
use crate::redact::schema::SecretPaths;

/// The least time `tools/list` is given, whatever the calls' timeout: the
/// annotations it brings decide what is safe to repeat.
const LIST_TIMEOUT: Duration = Duration::from_secs(30);

/// The most bytes of a server's text kept in an envelope's message.
const MAX_MESSAGE_BYTES: usize = 4 * 1024;

/// A tool of a remote server, as its `tools/list` describes it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RemoteTool {
    /// The tool's name.
    pub name: String,
    /// What it does.
    pub description: Option<String>,
    /// Its annotations, MCP's defaults where the server gave none
    /// (`readOnlyHint` false, `destructiveHint` true, `idempotentHint`
    /// false, `openWorldHint` true).
    pub annotations: ToolAnnotations,
    /// JSON Schema of its arguments.
    pub input_schema: Map<String, Value>,
    /// JSON Schema of its structured content, if it declares one.
    pub output_schema: Option<Map<String, Value>>,
    /// How it can fail, when its server publishes it
    /// (`_meta["tool-envelope/failureModes"]`).
    pub failure_modes: Option<Value>,
    /// Where its arguments hold secrets, when its schema lists them.
    secrets: Option<Arc<SecretPaths>>,
}

impl RemoteTool {
    fn from_rmcp(tool: &Tool) -> Self {
        let annotations = tool.annotations.as_ref();
        let hint = |read: fn(&rmcp::model::ToolAnnotations) -> Option<bool>, default: bool| {
            annotations.and_then(read).unwrap_or(default)
        };
        let input_schema = (*tool.input_schema).clone();
        RemoteTool {
            name: tool.name.to_string(),
            description: tool.description.as_ref().map(|text| text.to_string()),
            annotations: ToolAnnotations {
                read_only_hint: hint(|a| a.read_only_hint, false),
                destructive_hint: hint(|a| a.destructive_hint, true),
                idempotent_hint: hint(|a| a.idempotent_hint, false),
                open_world_hint: hint(|a| a.open_world_hint, true),
            },
            // A schema that lists no properties says nothing of secrets.
            secrets: input_schema
                .get("properties")
                .is_some_and(Value::is_object)
                .then(|| Arc::new(SecretPaths::from_schema(&input_schema, &[]))),
            input_schema,
            output_schema: tool.output_schema.as_ref().map(|schema| (**schema).clone()),
            failure_modes: tool
                .meta
                .as_ref()
                .and_then(|meta| meta.0.get(crate::mcp::FAILURE_MODES_META_KEY).cloned()),
        }
    }

    /// Whether repeating a call of this tool is safe, as its annotations say:
    /// it is read-only or idempotent.
    pub fn is_safe_to_repeat(&self) -> bool {
        self.annotations.read_only_hint || self.annotations.idempotent_hint
    }
}

/// A progress notification of a call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// The progress so far.
    pub progress: f64,
    /// The total, if the server knows it.
    pub total: Option<f64>,
    /// What the server says it is doing.
    pub message: Option<String>,
}

type ProgressCallback = Arc<dyn Fn(Progress) + Send + Sync>;
type ProgressRoutes = Arc<Mutex<HashMap<ProgressToken, ProgressCallback>>>;

/// The client side of a connection: routes progress notifications to the
/// call they belong to.
#[derive(Clone, Default)]
struct Handler {
    progress: ProgressRoutes,
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let callback = self
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&params.progress_token)
            .cloned();
        if let Some(callback) = callback {
            callback(Progress {
                progress: params.progress,
                total: params.total,
                message: params.message,
            });
        }
    }
}

/// How a client reaches its server, again after a broken connection.
#[derive(Clone)]
enum Endpoint {
    Stdio(Arc<dyn Fn() -> tokio::process::Command + Send + Sync>),
    Http(Arc<str>),
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Stdio(_) => f.write_str("stdio"),
            Endpoint::Http(url) => write!(f, "{url}"),
        }
    }
}

/// How a client calls: its timeout, and the guards checked before anything
/// is sent. Build one, then [`spawn`](Self::spawn) a server or
/// [`connect`](Self::connect) to one.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    timeout: Duration,
    guards: Arc<Guards>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            timeout: Duration::from_secs(60),
            guards: Arc::new(Guards::default()),
        }
    }
}

impl ClientOptions {
    /// The defaults: a 60-second timeout per call, no guards.
    pub fn new() -> Self {
        ClientOptions::default()
    }

    /// How long one call may take; then it is cancelled (the server is
    /// told) and fails as `transient`, reason `TIMEOUT`.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Guards checked on each call's arguments before anything is sent: a
    /// blocked call never leaves the process.
    #[must_use]
    pub fn guards(mut self, guards: Guards) -> Self {
        self.guards = Arc::new(guards);
        self
    }

    /// Starts the server `command` makes as a child process and talks MCP
    /// to it over stdio. After the child dies, the next call starts a new
    /// one from `command`.
    ///
    /// # Errors
    ///
    /// A `transient` envelope if the child does not start or initialize.
    pub async fn spawn(
        self,
        command: impl Fn() -> tokio::process::Command + Send + Sync + 'static,
    ) -> Result<McpClient, ErrorEnvelope> {
        McpClient::start(Endpoint::Stdio(Arc::new(command)), self).await
    }

    /// Connects to the Streamable HTTP endpoint at `url` (`http://host/mcp`).
    /// Plain HTTP only: no TLS backend is built in, so an `https://` URL
    /// fails to connect. Redirects are not followed. An event stream that
    /// ends before the answer is resumed at most every 100 ms, and not after
    /// 10 resumptions in a row that brought nothing (SECURITY.md).
    ///
    /// # Errors
    ///
    /// A classified envelope if the server cannot be reached or does not
    /// initialize.
    pub async fn connect(self, url: impl Into<String>) -> Result<McpClient, ErrorEnvelope> {
        McpClient::start(Endpoint::Http(url.into().into()), self).await
    }
}

/// A server's tools by name, each shared with the calls that use it.
type Catalog = HashMap<String, Arc<RemoteTool>>;

/// A `tools/list`, and the number of the connection it came on.
struct Known {
    connection: u64,
    tools: Arc<Catalog>,
}

/// A live rmcp session.
struct Connection {
    service: RunningService<RoleClient, Handler>,
}

/// An MCP server's tools, called like local `#[tool]`s: a call returns the
/// tool's value, or an [`ErrorEnvelope`] — the server's own when it sends
/// one, a classified one otherwise — with `attempted_query` the arguments
/// sent (secrets masked) and `tool` the tool's name.
///
/// | what came back | the envelope |
/// |---|---|
/// | `isError` with an envelope (`structuredContent`, or a JSON text block) | the server's envelope |
/// | `isError` with plain text | `other`, not retryable, the text as its message |
/// | JSON-RPC `-32602` (unknown tool, bad params) | `validation` |
/// | any other JSON-RPC error, an unreadable reply | `other` |
/// | no answer in time | `transient`, reason `TIMEOUT` |
/// | the connection closed, refused or reset | `transient`, reason `CONNECTION_LOST` (or `NOT_APPLIED` when nothing was sent) |
/// | HTTP 5xx, HTTP 429 | `transient`, reason `HTTP_503`…, `retryAfterMs` from `Retry-After` |
/// | HTTP 401, 403 | `permission` |
///
/// The one retry decision applies on this side too: a failure is retryable
/// only if the server said so *and* repeating the call is safe — the tool's
/// annotations say `readOnlyHint` or `idempotentHint`, or the failure says
/// the call was not applied (reason `NOT_APPLIED`). Otherwise it comes back
/// with `isRetryable: false` and the reason `MAY_HAVE_TAKEN_EFFECT`. So a
/// [`RetryPolicy`](crate::retry::RetryPolicy) around [`call`](Self::call)
/// never repeats a refund, and an explicit human request or a policy gap is
/// never retried.
///
/// Cheap to clone: clones share the connection.
#[derive(Clone)]
pub struct McpClient {
    shared: Arc<Shared>,
}

struct Shared {
    endpoint: Endpoint,
    options: ClientOptions,
    progress: ProgressRoutes,
    connection: AsyncMutex<Option<Arc<Connection>>>,
    /// The last `tools/list`, and the connection it came from.
    tools: Mutex<Option<Known>>,
    sent: AtomicU64,
    connections: AtomicU64,
}

impl fmt::Debug for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field("endpoint", &self.shared.endpoint)
            .field("sent", &self.sent())
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// [`ClientOptions::spawn`] with the default options.
    ///
    /// # Errors
    ///
    /// A `transient` envelope if the child does not start or initialize.
    pub async fn spawn(
        command: impl Fn() -> tokio::process::Command + Send + Sync + 'static,
    ) -> Result<Self, ErrorEnvelope> {
        ClientOptions::default().spawn(command).await
    }

    /// [`ClientOptions::connect`] with the default options.
    ///
    /// # Errors
    ///
    /// A classified envelope if the server cannot be reached or does not
    /// initialize.
    pub async fn connect(url: impl Into<String>) -> Result<Self, ErrorEnvelope> {
        ClientOptions::default().connect(url).await
    }

    async fn start(endpoint: Endpoint, options: ClientOptions) -> Result<Self, ErrorEnvelope> {
        let client = McpClient {
            shared: Arc::new(Shared {
                endpoint,
                options,
                progress: ProgressRoutes::default(),
                connection: AsyncMutex::new(None),
                tools: Mutex::new(None),
                sent: AtomicU64::new(0),
                connections: AtomicU64::new(0),
            }),
        };
        client.connection().await?;
        // The annotations decide what is safe to repeat: known from the start.
        let _ = client.catalog().await;
        Ok(client)
    }

    /// How many `tools/call` requests this client has sent, over every
    /// connection it made.
    pub fn sent(&self) -> u64 {
        self.shared.sent.load(Ordering::Relaxed)
    }

    /// How many connections this client has made: 1, plus one per repair.
    pub fn connections(&self) -> u64 {
        self.shared.connections.load(Ordering::Relaxed)
    }

    /// The live connection, made anew if there is none or it broke: the
    /// child restarted, the HTTP session initialized again.
    async fn connection(&self) -> Result<Arc<Connection>, ErrorEnvelope> {
        let mut slot = self.shared.connection.lock().await;
        if let Some(connection) = slot.as_ref()
            && !connection.service.peer().is_transport_closed()
        {
            return Ok(Arc::clone(connection));
        }
        if let Some(old) = slot.take() {
            // Whatever it was doing is over; its child, if any, is reaped on drop.
            drop(old);
        }
        let handler = Handler {
            progress: Arc::clone(&self.shared.progress),
        };
        let service = match &self.shared.endpoint {
            Endpoint::Stdio(command) => {
                let transport = TokioChildProcess::new(command()).map_err(|error| {
                    not_sent(format!("could not start the MCP server: {error}"))
                })?;
                handler.serve(transport).await
            }
            Endpoint::Http(url) => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(Arc::clone(url));
                // rmcp resumes a broken SSE stream for ever by default.
                let mut backoff = ExponentialBackoff::default();
                backoff.max_times = Some(3);
                backoff.base_duration = Duration::from_millis(100);
                config.retry_config = Arc::new(backoff);
                handler
                    .serve(StreamableHttpClientTransport::with_client(
                        PacedClient::new(),
                        config,
                    ))
                    .await
            }
        }
        .map_err(|error| not_sent(format!("the MCP server did not initialize: {error}")))?;
        service
            .set_response_cache_config(rmcp::ClientCacheConfig::disabled())
            .await;
        self.shared.connections.fetch_add(1, Ordering::Relaxed);
        let connection = Arc::new(Connection { service });
        *slot = Some(Arc::clone(&connection));
        Ok(connection)
    }

    /// The server's tools (`tools/list`), fetched once per connection.
    ///
    /// # Errors
    ///
    /// A classified envelope if the server cannot be reached.
    pub async fn tools(&self) -> Result<Vec<RemoteTool>, ErrorEnvelope> {
        let tools = self.catalog().await?;
        let mut tools: Vec<RemoteTool> = tools.values().map(|tool| (**tool).clone()).collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(tools)
    }

    /// The tool called `name`, if the server lists it.
    ///
    /// # Errors
    ///
    /// A classified envelope if the server cannot be reached.
    pub async fn tool(&self, name: &str) -> Result<Option<RemoteTool>, ErrorEnvelope> {
        Ok(self.catalog().await?.get(name).map(|tool| (**tool).clone()))
    }

    /// The tools of the current connection, listed once per connection.
    async fn catalog(&self) -> Result<Arc<Catalog>, ErrorEnvelope> {
        let connection = self.connection().await?;
        let number = self.connections();
        if let Some(known) = self
            .shared
            .tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .filter(|known| known.connection == number)
        {
            return Ok(Arc::clone(&known.tools));
        }
        let listed = tokio::time::timeout(
            self.shared.options.timeout.max(LIST_TIMEOUT),
            connection.service.peer().list_all_tools(),
        )
        .await
        .map_err(|_| {
            ErrorEnvelope::transient("the MCP server did not list its tools in time")
                .with_reason(reasons::TIMEOUT)
        })?
        .map_err(|error| classify_error(&error, true))?;
        let tools: Catalog = listed
            .iter()
            .map(|tool| (tool.name.to_string(), Arc::new(RemoteTool::from_rmcp(tool))))
            .collect();
        let tools = Arc::new(tools);
        *self
            .shared
            .tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Known {
            connection: number,
            tools: Arc::clone(&tools),
        });
        Ok(tools)
    }

    /// The tool called `name` as last listed: by this connection, or, when
    /// the server cannot list its tools now, by an earlier one.
    async fn known_tool(&self, name: &str) -> Option<Arc<RemoteTool>> {
        match self.catalog().await {
            Ok(tools) => tools.get(name).cloned(),
            Err(_) => self
                .shared
                .tools
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_ref()
                .and_then(|known| known.tools.get(name).cloned()),
        }
    }

    /// Calls the tool `name` with `arguments` (a JSON object, or `null` for
    /// none): its value — the structured content if there is one, else the
    /// text parsed as JSON, else the text, else the content blocks — or an
    /// envelope. See the table above.
    ///
    /// # Errors
    ///
    /// The envelope of the failure, never retryable unless repeating the
    /// call is safe.
    pub async fn call(&self, name: &str, arguments: Value) -> Result<Value, ErrorEnvelope> {
        self.call_inner(name, arguments, None).await
    }

    /// [`call`](Self::call), with each progress notification of the call
    /// passed to `on_progress` (they may arrive out of order, or after the
    /// result: rmcp handles each in a task of its own).
    ///
    /// # Errors
    ///
    /// As [`call`](Self::call).
    pub async fn call_with_progress(
        &self,
        name: &str,
        arguments: Value,
        on_progress: impl Fn(Progress) + Send + Sync + 'static,
    ) -> Result<Value, ErrorEnvelope> {
        self.call_inner(name, arguments, Some(Arc::new(on_progress)))
            .await
    }

    /// [`call`](Self::call), the value decoded as `T` — from the structured
    /// content, or from its `result` when the server wrapped a value that is
    /// not an object as `{"result": value}`.
    ///
    /// # Errors
    ///
    /// As [`call`](Self::call); a value that does not decode is an `other`
    /// envelope, reason `UNEXPECTED_REPLY`.
    pub async fn call_as<T: DeserializeOwned>(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<T, ErrorEnvelope> {
        let value = self.call(name, arguments.clone()).await?;
        let unwrapped = match &value {
            Value::Object(fields) if fields.len() == 1 => fields.get("result").cloned(),
            _ => None,
        };
        match serde_json::from_value::<T>(value) {
            Ok(decoded) => Ok(decoded),
            Err(error) => unwrapped
                .and_then(|inner| serde_json::from_value::<T>(inner).ok())
                .ok_or_else(|| {
                    ErrorEnvelope::other(format!(
                        "the result of `{name}` is not a {}: {error}",
                        std::any::type_name::<T>()
                    ))
                    .with_reason(reasons::UNEXPECTED_REPLY)
                    .with_tool(name.to_owned())
                    .with_attempted_query(arguments)
                }),
        }
    }

    async fn call_inner(
        &self,
        name: &str,
        arguments: Value,
        on_progress: Option<ProgressCallback>,
    ) -> Result<Value, ErrorEnvelope> {
        let arguments = match arguments {
            Value::Object(arguments) => arguments,
            Value::Null => Map::new(),
            other => {
                let envelope = ErrorEnvelope::validation(format!(
                    "the arguments of `{name}` must be a JSON object, not {}",
                    crate::mcp::violations::kind(&other)
                ))
                .with_reason(reasons::INVALID_ARGUMENTS);
                return Err(self.finish(envelope, name, &Map::new(), None, true));
            }
        };
        if let Err(blocked) = self.shared.options.guards.check(name, &arguments) {
            let mut envelope = blocked.into_envelope();
            envelope.set_refused();
            return Err(self.finish(envelope, name, &arguments, None, true));
        }
        let connection = match self.connection().await {
            Ok(connection) => connection,
            Err(envelope) => return Err(self.finish(envelope, name, &arguments, None, true)),
        };
        let tool = self.known_tool(name).await;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(
            CallToolRequestParams::new(name.to_owned()).with_arguments(arguments.clone()),
        ));
        let options = PeerRequestOptions::with_timeout(self.shared.options.timeout);
        let handle = match connection
            .service
            .peer()
            .send_cancellable_request(request, options)
            .await
        {
            Ok(handle) => handle,
            Err(error) => {
                let envelope = classify_error(&error, true);
                return Err(self.finish(envelope, name, &arguments, tool.as_deref(), true));
            }
        };
        self.shared.sent.fetch_add(1, Ordering::Relaxed);
        let token = handle.progress_token.clone();
        let routes = &self.shared.progress;
        if let Some(callback) = on_progress {
            routes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(token.clone(), callback);
        }
        let response = handle.await_response().await;
        routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&token);
        let outcome = match response {
            Ok(ServerResult::CallToolResult(result)) => read_result(result, name),
            Ok(other) => Err(ErrorEnvelope::other(format!(
                "the MCP server answered `tools/call` of `{name}` with a result of another kind: {}",
                text_for_wire(&format!("{other:?}"), 256)
            ))
            .with_reason(reasons::UNEXPECTED_REPLY)),
            Err(error) => Err(classify_error(&error, false)),
        };
        outcome.map_err(|envelope| self.finish(envelope, name, &arguments, tool.as_deref(), false))
    }

    /// What every failure carries: the tool, the arguments sent (secrets
    /// and undeclared keys masked), and the one retry decision.
    fn finish(
        &self,
        mut envelope: ErrorEnvelope,
        name: &str,
        arguments: &Map<String, Value>,
        tool: Option<&RemoteTool>,
        not_sent: bool,
    ) -> ErrorEnvelope {
        if envelope.fields.tool.is_none() {
            envelope.fields.tool = Some(Cow::Owned(name.to_owned()));
        }
        if envelope.fields.attempted_query.is_none() {
            let shown = match tool {
                Some(RemoteTool {
                    secrets: Some(secrets),
                    ..
                }) => Value::Object(secrets.mask(arguments).into_owned()),
                _ => Value::Object(arguments.clone()),
            };
            envelope.fields.attempted_query = Some(shown);
        }
        envelope.fields.attempted_query = envelope.fields.attempted_query.take().map(bounded);
        envelope.fields.partial_results = envelope.fields.partial_results.take().map(bounded);
        let not_applied = not_sent
            || envelope.not_applied()
            || envelope.fields.reason.as_deref() == Some(reasons::NOT_APPLIED);
        let safe = tool.is_some_and(RemoteTool::is_safe_to_repeat);
        if envelope.is_retryable() && !safe && !not_applied {
            envelope.withhold_retry(Cow::Owned(name.to_owned()));
        }
        envelope
    }
}

/// A failure before anything was sent: repeating the call is safe.
fn not_sent(message: String) -> ErrorEnvelope {
    ErrorEnvelope::transient(text_for_wire(&message, MAX_MESSAGE_BYTES).into_owned())
        .with_reason(reasons::NOT_APPLIED)
}

/// A tool's reply: its value, or its failure as an envelope.
fn read_result(result: CallToolResult, name: &str) -> Result<Value, ErrorEnvelope> {
    let text = result.content.iter().find_map(|block| match block {
        ContentBlock::Text(text) => Some(text.text.as_str()),
        _ => None,
    });
    if result.is_error != Some(true) {
        if let Some(structured) = result.structured_content {
            return Ok(structured);
        }
        return Ok(match (text, result.content.len()) {
            (Some(text), 1) => {
                serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
            }
            _ => serde_json::to_value(&result.content).unwrap_or(Value::Null),
        });
    }
    // An envelope, in the structured content or as a JSON text block.
    let envelope = result
        .structured_content
        .as_ref()
        .and_then(read_envelope)
        .or_else(|| {
            text.and_then(|text| serde_json::from_str::<Value>(text).ok())
                .as_ref()
                .and_then(read_envelope)
        });
    if let Some(envelope) = envelope {
        return Err(envelope);
    }
    let message = match text {
        Some(text) if !text.trim().is_empty() => text.to_owned(),
        _ => format!("the tool `{name}` failed without saying why"),
    };
    let mut envelope =
        ErrorEnvelope::other(text_for_wire(&message, MAX_MESSAGE_BYTES).into_owned());
    envelope.set_foreign();
    Err(envelope)
}

/// An envelope, if `value` is one.
fn read_envelope(value: &Value) -> Option<ErrorEnvelope> {
    <ErrorEnvelope as serde::Deserialize>::deserialize(value).ok()
}

/// The envelope of a failure rmcp reports: a protocol error, a timeout, a
/// broken connection, an HTTP status. `before_sending` says whether the
/// request had not been sent yet.
fn classify_error(error: &ServiceError, before_sending: bool) -> ErrorEnvelope {
    let text = |message: String| text_for_wire(&message, MAX_MESSAGE_BYTES).into_owned();
    match error {
        ServiceError::McpError(data) if data.code.0 == -32602 => {
            ErrorEnvelope::validation(text(data.message.to_string()))
                .with_reason(reasons::INVALID_ARGUMENTS)
        }
        ServiceError::McpError(data) => ErrorEnvelope::other(text(format!(
            "the MCP server answered with error {}: {}",
            data.code.0, data.message
        ))),
        ServiceError::Timeout { timeout } => ErrorEnvelope::transient(format!(
            "the MCP server did not answer within {} ms; the call was cancelled",
            timeout.as_millis()
        ))
        .with_reason(reasons::TIMEOUT),
        ServiceError::TransportSend(send) => match send
            .error
            .downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            Some(StreamableHttpError::HttpStatus(status)) => {
                http_status(status.status, status.retry_after.as_deref())
            }
            Some(StreamableHttpError::AuthRequired(_)) => http_status(401, None),
            Some(StreamableHttpError::InsufficientScope(_)) => http_status(403, None),
            Some(StreamableHttpError::UnexpectedServerResponse(message)) => {
                match message
                    .strip_prefix("HTTP ")
                    .and_then(|rest| rest.get(..3))
                    .and_then(|code| code.parse().ok())
                {
                    Some(status) => http_status(status, None),
                    None => ErrorEnvelope::other(text(format!(
                        "the MCP server's reply could not be read: {message}"
                    )))
                    .with_reason(reasons::UNEXPECTED_REPLY),
                }
            }
            Some(StreamableHttpError::Client(client)) if client.is_connect() => {
                not_sent(format!("could not reach the MCP server: {client}"))
            }
            _ if before_sending => not_sent(format!("could not send to the MCP server: {send}")),
            _ => ErrorEnvelope::transient(text(format!(
                "the connection to the MCP server broke: {send}"
            )))
            .with_reason(reasons::CONNECTION_LOST),
        },
        ServiceError::TransportClosed if before_sending => {
            not_sent("the connection to the MCP server is closed".to_owned())
        }
        ServiceError::TransportClosed => {
            ErrorEnvelope::transient("the connection to the MCP server closed before it answered")
                .with_reason(reasons::CONNECTION_LOST)
        }
        other => ErrorEnvelope::other(text(format!("the MCP call failed: {other}")))
            .with_reason(reasons::UNEXPECTED_REPLY),
    }
}

/// The envelope of an HTTP status: 5xx and 429 `transient` (with the server's
/// `Retry-After`, in seconds), 401 and 403 `permission`, the rest `other`.
fn http_status(status: u16, retry_after: Option<&str>) -> ErrorEnvelope {
    let reason = format!("{}{status}", reasons::HTTP_STATUS_PREFIX);
    let message = format!("the MCP server answered HTTP {status}");
    let category = match status {
        429 | 500..=599 => ErrorCategory::Transient,
        401 | 403 => ErrorCategory::Permission,
        _ => ErrorCategory::Other,
    };
    let mut envelope = ErrorEnvelope::new(category, message).with_reason(reason);
    if let Some(seconds) = retry_after.and_then(|value| value.trim().parse::<u64>().ok()) {
        envelope = envelope.with_retry_after(Duration::from_secs(seconds));
    }
    if status == 429 {
        // Refused before it ran: safe to repeat once the server allows.
        envelope.set_not_applied(true);
        envelope = envelope.with_alternative("Wait for the server's rate limit, then call again");
    }
    envelope
}
