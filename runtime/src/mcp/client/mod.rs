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
    CallToolRequest, CallToolRequestParams, ClientRequest, ProgressNotificationParam,
    ProgressToken, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RoleClient, RunningService};
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tokio::sync::{Mutex as AsyncMutex, OnceCell};

use crate::classify::ToolError;
use crate::envelope::ErrorEnvelope;
use crate::guard::Guards;
use crate::json::depth::bounded;
use crate::limits::text_for_wire;
use crate::mcp::paced::PacedClient;
use crate::reasons;
use crate::redact::values::SecretValues;
use tools::Catalog;

mod failure;
mod sdk_errors;
mod tools;

pub use tools::RemoteTool;

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
    /// told) and fails as `transient`, reason `TIMEOUT`. The tool list
    /// (`tools/list`, every page of it) gets as long: a server that does not
    /// list its tools in time is called without their annotations, as if no
    /// tool were safe to repeat, and is not asked again on that connection.
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

/// A live rmcp session, and its server's tools as listed on it: once,
/// however many calls wait for the list, and never again on this
/// connection, whether the listing succeeded or not.
struct Connection {
    service: RunningService<RoleClient, Handler>,
    tools: OnceCell<Result<Arc<Catalog>, ErrorEnvelope>>,
}

/// An MCP server's tools, called like local `#[tool]`s: a call returns the
/// tool's value, or an [`ErrorEnvelope`] — the server's own when it sends
/// one, a classified one otherwise.
///
/// | what came back | the envelope |
/// |---|---|
/// | `isError` with an envelope (`structuredContent`, or a JSON text block) | the server's envelope |
/// | `isError` with the argument error of a common SDK (TypeScript v1 and v2, the Python SDK, FastMCP) | `validation`, reason `INVALID_ARGUMENTS`, a violation per field named |
/// | `isError` with other plain text | `other`, not retryable, the text as its message |
/// | JSON-RPC `-32602` (unknown tool, bad params) | `validation` |
/// | a handshake refused for its protocol version (`-32022`) | `other`, not retryable, reason `UNSUPPORTED_PROTOCOL_VERSION` |
/// | any other JSON-RPC error, an unreadable reply | `other` |
/// | no answer in time | `transient`, reason `TIMEOUT` |
/// | the connection closed, refused or reset | `transient`, reason `CONNECTION_LOST` (or `NOT_APPLIED` when nothing was sent) |
/// | HTTP 5xx, HTTP 429 | `transient`, reason `HTTP_503`…, `retryAfterMs` from `Retry-After` |
/// | HTTP 401, 403 | `permission` |
///
/// Whatever the server says, a failure names the tool that was called
/// (`tool`), and its `attempted_query` — the server's account of the
/// arguments, or the arguments sent — holds no secret the tool's schema
/// marks `writeOnly` and no value of a key it does not declare; no secret
/// value that was sent appears in its message, alternatives or violations.
/// An envelope the server sent [escalated](ErrorEnvelope::escalation) keeps
/// its `escalation` and is never retryable.
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
    /// The last `tools/list` that succeeded, on any connection.
    listed: Mutex<Option<Arc<Catalog>>>,
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
                listed: Mutex::new(None),
                sent: AtomicU64::new(0),
                connections: AtomicU64::new(0),
            }),
        };
        let connection = client.connection().await?;
        // The annotations decide what is safe to repeat: known from the start.
        let _ = client.catalog(&connection).await;
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
                    failure::not_sent(format!("could not start the MCP server: {error}"))
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
        .map_err(|error| failure::classify_initialize(&error))?;
        service
            .set_response_cache_config(rmcp::ClientCacheConfig::disabled())
            .await;
        self.shared.connections.fetch_add(1, Ordering::Relaxed);
        let connection = Arc::new(Connection {
            service,
            tools: OnceCell::new(),
        });
        *slot = Some(Arc::clone(&connection));
        Ok(connection)
    }

    /// The server's tools (`tools/list`), listed once per connection
    /// within the client's timeout. A server that pages on without end is
    /// listed as far as a repeated cursor, 100 pages or 10,000 tools.
    ///
    /// # Errors
    ///
    /// A classified envelope if the server cannot be reached or does not
    /// list its tools in time.
    pub async fn tools(&self) -> Result<Vec<RemoteTool>, ErrorEnvelope> {
        let connection = self.connection().await?;
        let tools = self.catalog(&connection).await?;
        let mut tools: Vec<RemoteTool> = tools.values().map(|tool| (**tool).clone()).collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(tools)
    }

    /// The tool called `name`, if the server lists it.
    ///
    /// # Errors
    ///
    /// As [`tools`](Self::tools).
    pub async fn tool(&self, name: &str) -> Result<Option<RemoteTool>, ErrorEnvelope> {
        let connection = self.connection().await?;
        Ok(self
            .catalog(&connection)
            .await?
            .get(name)
            .map(|tool| (**tool).clone()))
    }

    /// The tools of `connection`, listed on it once.
    async fn catalog(&self, connection: &Connection) -> Result<Arc<Catalog>, ErrorEnvelope> {
        connection
            .tools
            .get_or_init(|| async {
                let peer = connection.service.peer();
                let tools = Arc::new(tools::list(peer, self.shared.options.timeout).await?);
                *self
                    .shared
                    .listed
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&tools));
                Ok(tools)
            })
            .await
            .clone()
    }

    /// The tool called `name` as last listed: by `connection`, or, when the
    /// server could not list its tools on it, by an earlier one.
    async fn known_tool(&self, connection: &Connection, name: &str) -> Option<Arc<RemoteTool>> {
        match self.catalog(connection).await {
            Ok(tools) => tools.get(name).cloned(),
            Err(_) => self
                .shared
                .listed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_ref()
                .and_then(|tools| tools.get(name).cloned()),
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
        let tool = self.known_tool(&connection, name).await;
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
                let envelope = failure::classify_error(&error, true);
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
            Ok(ServerResult::CallToolResult(result)) => failure::read_result(result, name),
            Ok(other) => Err(ErrorEnvelope::other(format!(
                "the MCP server answered `tools/call` of `{name}` with a result of another kind: {}",
                text_for_wire(&format!("{other:?}"), 256)
            ))
            .with_reason(reasons::UNEXPECTED_REPLY)),
            Err(error) => Err(failure::classify_error(&error, false)),
        };
        outcome.map_err(|envelope| self.finish(envelope, name, &arguments, tool.as_deref(), false))
    }

    /// What every failure carries, whatever the server said: the tool that
    /// was called, the arguments (the server's account of them, or the
    /// arguments sent) with every secret the tool's schema marks and every
    /// value of an undeclared key masked, no secret value that was sent in
    /// any of its texts, and the one retry decision.
    fn finish(
        &self,
        mut envelope: ErrorEnvelope,
        name: &str,
        arguments: &Map<String, Value>,
        tool: Option<&RemoteTool>,
        not_sent: bool,
    ) -> ErrorEnvelope {
        envelope.fields.tool = Some(Cow::Owned(name.to_owned()));
        let secrets = tool.and_then(RemoteTool::secrets);
        let shown = match secrets {
            Some(secrets) => secrets.mask(arguments),
            None => Cow::Borrowed(arguments),
        };
        let mut values = SecretValues::default();
        if let Cow::Owned(masked) = &shown {
            values.add_hidden(arguments, masked);
        }
        let query = match (envelope.fields.attempted_query.take(), secrets) {
            (None, _) => Value::Object(shown.into_owned()),
            // A server's own account of the arguments: masked as the arguments are.
            (Some(Value::Object(theirs)), Some(secrets)) => {
                Value::Object(secrets.mask(&theirs).into_owned())
            }
            (Some(theirs), _) => theirs,
        };
        envelope.fields.attempted_query = Some(bounded(query));
        envelope.fields.partial_results = envelope.fields.partial_results.take().map(bounded);
        if let Some(masker) = values.masker() {
            envelope.mask_values(&masker);
        }
        let not_applied =
            not_sent || envelope.not_applied() || envelope.reason() == Some(reasons::NOT_APPLIED);
        let safe = tool.is_some_and(RemoteTool::is_safe_to_repeat);
        if envelope.is_retryable() && !safe && !not_applied {
            envelope.withhold_retry(Cow::Owned(name.to_owned()));
        }
        envelope
    }
}
