//! The connection to a server: how the client reaches it, the live rmcp
//! session (made again when it broke — the child restarted, the HTTP session
//! opened anew), the progress notifications routed to their calls, and the
//! tools listed on each connection.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use tokio::sync::{Mutex as AsyncMutex, OnceCell};

use crate::envelope::ErrorEnvelope;
use crate::guard::Guards;
use crate::mcp::client::failure;
use crate::mcp::client::paced::PacedClient;
use crate::mcp::client::tools::{self, Catalog, RemoteTool};

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

/// What a call does with its progress notifications.
pub(crate) type ProgressCallback = Arc<dyn Fn(Progress) + Send + Sync>;
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
pub(crate) enum Endpoint {
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
/// is sent.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) timeout: Duration,
    pub(crate) guards: Arc<Guards>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            timeout: Duration::from_secs(60),
            guards: Arc::new(Guards::default()),
        }
    }
}

/// A live rmcp session, and its server's tools as listed on it: once,
/// however many calls wait for the list, and never again on this
/// connection, whether the listing succeeded or not.
pub(crate) struct Connection {
    service: RunningService<RoleClient, Handler>,
    tools: OnceCell<Result<Arc<Catalog>, ErrorEnvelope>>,
}

impl Connection {
    /// The peer to send requests to.
    pub(crate) fn peer(&self) -> &rmcp::Peer<RoleClient> {
        self.service.peer()
    }
}

/// Everything a client and its clones share: where the server is, how to
/// call it, the live connection, and what it counted.
pub(crate) struct Link {
    endpoint: Endpoint,
    pub(crate) options: Options,
    progress: ProgressRoutes,
    connection: AsyncMutex<Option<Arc<Connection>>>,
    /// The last `tools/list` that succeeded, on any connection.
    listed: Mutex<Option<Arc<Catalog>>>,
    sent: AtomicU64,
    connections: AtomicU64,
}

impl fmt::Debug for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field("endpoint", &self.endpoint)
            .field("sent", &self.sent())
            .finish_non_exhaustive()
    }
}

impl Link {
    /// A link to `endpoint`, connected, its tools listed.
    ///
    /// # Errors
    ///
    /// The envelope of a connection that could not be made.
    pub(crate) async fn open(endpoint: Endpoint, options: Options) -> Result<Self, ErrorEnvelope> {
        let link = Link {
            endpoint,
            options,
            progress: ProgressRoutes::default(),
            connection: AsyncMutex::new(None),
            listed: Mutex::new(None),
            sent: AtomicU64::new(0),
            connections: AtomicU64::new(0),
        };
        let connection = link.connection().await?;
        // The annotations decide what is safe to repeat: known from the start.
        let _ = link.catalog(&connection).await;
        Ok(link)
    }

    /// How many `tools/call` requests went out.
    pub(crate) fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Counts a `tools/call` that went out.
    pub(crate) fn count_sent(&self) {
        self.sent.fetch_add(1, Ordering::Relaxed);
    }

    /// How many connections this link made.
    pub(crate) fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// Routes the progress notifications of `token` to `callback` while
    /// `call` runs.
    pub(crate) async fn routing<T>(
        &self,
        token: &ProgressToken,
        callback: Option<ProgressCallback>,
        call: impl Future<Output = T>,
    ) -> T {
        let routes = &self.progress;
        if let Some(callback) = callback {
            routes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(token.clone(), callback);
        }
        let outcome = call.await;
        routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(token);
        outcome
    }

    /// The live connection, made anew if there is none or it broke: the
    /// child restarted, the HTTP session initialized again.
    pub(crate) async fn connection(&self) -> Result<Arc<Connection>, ErrorEnvelope> {
        let mut slot = self.connection.lock().await;
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
            progress: Arc::clone(&self.progress),
        };
        let service = match &self.endpoint {
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
        self.connections.fetch_add(1, Ordering::Relaxed);
        let connection = Arc::new(Connection {
            service,
            tools: OnceCell::new(),
        });
        *slot = Some(Arc::clone(&connection));
        Ok(connection)
    }

    /// The tools of `connection`, listed on it once, within the timeout.
    pub(crate) async fn catalog(
        &self,
        connection: &Connection,
    ) -> Result<Arc<Catalog>, ErrorEnvelope> {
        connection
            .tools
            .get_or_init(|| async {
                let tools = Arc::new(tools::list(connection.peer(), self.options.timeout).await?);
                *self.listed.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some(Arc::clone(&tools));
                Ok(tools)
            })
            .await
            .clone()
    }

    /// The tool called `name` as last listed: by `connection`, or, when the
    /// server could not list its tools on it, by an earlier one.
    pub(crate) async fn known_tool(
        &self,
        connection: &Connection,
        name: &str,
    ) -> Option<Arc<RemoteTool>> {
        match self.catalog(connection).await {
            Ok(tools) => tools.get(name).cloned(),
            Err(_) => self
                .listed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_ref()
                .and_then(|tools| tools.get(name).cloned()),
        }
    }
}
