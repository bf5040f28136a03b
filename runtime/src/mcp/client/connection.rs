//! The connection to a server: how the client reaches it, the live rmcp
//! session (made again when it broke — the child restarted, the HTTP session
//! opened anew), the progress notifications routed to their calls, and the
//! tools listed on each session.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use rmcp::model::{ProgressToken, ProtocolVersion};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService,
};
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::sync::Mutex as AsyncMutex;

use crate::envelope::ErrorEnvelope;
use crate::mcp::client::failure;
use crate::mcp::client::http::Http;
pub(crate) use crate::mcp::client::options::{Options, Revision};
use crate::mcp::client::paced::PacedClient;
use crate::mcp::client::tools::{self, Catalog, RemoteTool};

pub use crate::mcp::client::handler::Progress;
pub(crate) use crate::mcp::client::handler::ProgressCallback;
use crate::mcp::client::handler::{Handler, ProgressRoutes};
use crate::mcp::client::secrets::Sent;

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
            // Its credentials `[redacted]`.
            Endpoint::Http(url) => f.write_str(&crate::mcp::client::address::shown(url)),
        }
    }
}

/// A server's tools as listed, or why they could not be.
type Listed = Result<Arc<Catalog>, ErrorEnvelope>;

/// What a listing of a server's tools holds for: the session it was made
/// on, how many times the server had said its tools changed, when it was
/// made, and until when the server said it is fresh (`ttlMs`), if it said.
#[derive(Clone, Copy)]
struct Listing {
    on: (u64, u64),
    made: tokio::time::Instant,
    fresh_until: Option<tokio::time::Instant>,
    /// Which listing of the connection it is: 1, 2, …
    number: u64,
}

impl Listing {
    /// Whether it holds on `connection` now: on its session, no change
    /// said since, and not past its freshness.
    fn holds(&self, connection: &Connection) -> bool {
        self.on == connection.listing()
            && (self.fresh_until).is_none_or(|until| tokio::time::Instant::now() < until)
    }

    /// When a change the server said since may be listed: a second after
    /// the listing at the soonest. `None` when none was said.
    fn changed_listable_at(&self, connection: &Connection) -> Option<tokio::time::Instant> {
        let (session, changes) = connection.listing();
        (self.on.0 == session && self.on.1 != changes).then_some(self.made + tools::LEAST_FRESH)
    }
}

/// A live rmcp connection, and its server's tools as listed on its
/// session: once per session, however many calls wait for the list,
/// whether the listing succeeded or not.
pub(crate) struct Connection {
    service: RunningService<RoleClient, Handler>,
    /// Its server's tools, as listed on the session they were listed on
    /// ([`listing`](Self::listing)): listed again once rmcp opened another
    /// (the server restarted, and may have changed them), or the server
    /// said they changed.
    tools: AsyncMutex<Option<(Listing, Listed)>>,
    /// How many times its tools were listed.
    listings: AtomicU64,
    /// The HTTP client it speaks through, which counts its sessions.
    paced: Option<PacedClient>,
    /// Why the connection speaks 2025-11-25 although the client
    /// negotiated: what the server answered the probe.
    fell_back: Option<String>,
}

impl Connection {
    /// The peer to send requests to.
    pub(crate) fn peer(&self) -> &rmcp::Peer<RoleClient> {
        self.service.peer()
    }

    /// The revision the connection speaks, as negotiated.
    pub(crate) fn protocol_version(&self) -> Option<String> {
        let info = self.service.peer().peer_info()?;
        Some(info.protocol_version.to_string())
    }

    /// Why a negotiating client speaks 2025-11-25 on this connection.
    pub(crate) fn fell_back(&self) -> Option<&str> {
        self.fell_back.as_deref()
    }

    /// Which session the connection is on: rmcp opens another on it when
    /// the server forgot the one before (a restart). 0 on stdio, where a
    /// restart is a new connection.
    pub(crate) fn session(&self) -> u64 {
        self.paced.as_ref().map_or(0, PacedClient::sessions)
    }

    /// What a listing of the server's tools holds for: the session, and
    /// how many times the server has said its tools changed.
    fn listing(&self) -> (u64, u64) {
        let changed = &self.service.service().tools_changed;
        (self.session(), changed.load(Ordering::Relaxed))
    }
}

/// Everything a client and its clones share: where the server is, how to
/// call it, the live connection, and what it counted.
pub(crate) struct Link {
    endpoint: Endpoint,
    pub(crate) options: Options,
    /// The HTTP client, for an HTTP endpoint.
    http: Option<Http>,
    progress: ProgressRoutes,
    connection: AsyncMutex<Option<Arc<Connection>>>,
    sent_calls: AtomicU64,
    connections: AtomicU64,
    /// The credentials sent, and the secrets of the calls in flight.
    pub(crate) sent: Arc<Sent>,
}

impl fmt::Debug for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field("endpoint", &self.endpoint)
            .field("sent", &self.sent_calls())
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
        let sent = Arc::new(Sent::default());
        let http = match &endpoint {
            Endpoint::Http(url) => Some(Http::new(url, &options, &sent)?),
            Endpoint::Stdio(_) => None,
        };
        let link = Link {
            endpoint,
            options,
            http,
            progress: ProgressRoutes::default(),
            connection: AsyncMutex::new(None),
            sent_calls: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            sent,
        };
        let connection = link.connection().await?;
        // The annotations decide what is safe to repeat: known from the start.
        let _ = link.catalog(&connection).await;
        Ok(link)
    }

    /// How many `tools/call` requests went out.
    pub(crate) fn sent_calls(&self) -> u64 {
        self.sent_calls.load(Ordering::Relaxed)
    }

    /// Counts a `tools/call` that went out.
    pub(crate) fn count_sent(&self) {
        self.sent_calls.fetch_add(1, Ordering::Relaxed);
    }

    /// How many connections this link made.
    pub(crate) fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// Routes the progress notifications of `token` to `callback` while
    /// `call` runs ([`route`]).
    pub(crate) async fn routing<T>(
        &self,
        token: &ProgressToken,
        callback: Option<ProgressCallback>,
        call: impl Future<Output = T>,
    ) -> T {
        route(&self.progress, token, callback, call).await
    }

    /// The live connection, made anew if there is none or it broke: the
    /// child restarted, the HTTP session initialized again. The handshake
    /// gets the client's timeout; a server that does not answer it in time
    /// fails as `transient`, reason `TIMEOUT`, and its child is stopped.
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
            answers: self.options.answers.clone(),
            sent: Arc::clone(&self.sent),
            max_questions: u64::try_from(self.options.questions_in_all()).unwrap_or(u64::MAX),
            tasks: self.options.tasks,
            tools_changed: Arc::default(),
        };
        let timeout = self.options.timeout;
        let handshake = async {
            let revision = self.options.revision;
            let first = self.handshake(&handler, revision.lifecycle()).await;
            match first {
                // A 2025-11-25 server refuses the 2026-07-28 probe: with a
                // JSON-RPC error, an HTTP 400 for a request without a
                // session, a closed stream, or the versions it speaks. Then
                // the handshake it knows, on a fresh connection, and the
                // reason said.
                Err((error, older)) if revision == Revision::Negotiate && older => {
                    // Logged, and kept for `negotiation`: quoting no credential.
                    let error = self.sent.hide_credentials(error);
                    let why = format!(
                        "the server refused server/discover ({})",
                        crate::limits::text_for_wire(error.message(), 256)
                    );
                    tracing::info!(endpoint = ?self.endpoint, reason = %why, "MCP client falls back to 2025-11-25");
                    let opened = self
                        .handshake(&handler, ClientLifecycleMode::Initialize)
                        .await
                        .map_err(|(error, _)| error)?;
                    Ok((opened, Some(why)))
                }
                other => other
                    .map(|service| (service, None))
                    .map_err(|(error, _)| error),
            }
        };
        let ((service, paced), fell_back) = tokio::time::timeout(timeout, handshake)
            .await
            .map_err(|_| {
                failure::not_sent(format!(
                    "the MCP server did not complete the handshake within {} ms",
                    timeout.as_millis()
                ))
                .with_reason(crate::reasons::TIMEOUT)
            })?
            .map_err(|envelope| self.sent.hide_credentials(envelope))?;
        service
            .set_response_cache_config(rmcp::ClientCacheConfig::disabled())
            .await;
        self.connections.fetch_add(1, Ordering::Relaxed);
        let connection = Arc::new(Connection {
            service,
            tools: AsyncMutex::new(None),
            listings: AtomicU64::new(0),
            paced,
            fell_back,
        });
        *slot = Some(Arc::clone(&connection));
        Ok(connection)
    }

    /// Reaches the server and opens a session with `lifecycle`: the
    /// service, or the envelope of the failure and whether the server may
    /// speak an older revision with a handshake.
    async fn handshake(
        &self,
        handler: &Handler,
        lifecycle: ClientLifecycleMode,
    ) -> Result<(RunningService<RoleClient, Handler>, Option<PacedClient>), (ErrorEnvelope, bool)>
    {
        let handler = handler.clone();
        let refused = |error: ClientInitializeError| {
            let envelope = failure::classify_initialize(&error);
            let older = failure::may_speak_an_older_revision(&error, &envelope);
            (envelope, older)
        };
        match &self.endpoint {
            Endpoint::Stdio(command) => {
                let transport = TokioChildProcess::new(command()).map_err(|error| {
                    let envelope =
                        failure::not_sent(format!("could not start the MCP server: {error}"));
                    (envelope, false)
                })?;
                let service = handler.serve_with_lifecycle(transport, lifecycle).await;
                service.map(|service| (service, None)).map_err(refused)
            }
            Endpoint::Http(_) => {
                let http = self.http.as_ref().ok_or_else(|| {
                    (
                        failure::not_sent("the HTTP client was not made".to_owned()),
                        false,
                    )
                })?;
                let mut config =
                    StreamableHttpClientTransportConfig::with_uri(Arc::clone(&http.url));
                config.custom_headers = http.headers.clone();
                // rmcp resumes a broken SSE stream for ever by default.
                let mut backoff = ExponentialBackoff::default();
                backoff.max_times = Some(3);
                backoff.base_duration = Duration::from_millis(100);
                config.retry_config = Arc::new(backoff);
                let client = PacedClient::new(http.client.clone());
                let paced = client.clone();
                let transport = StreamableHttpClientTransport::with_client(client, config);
                let service =
                    (handler.serve_with_lifecycle(transport, lifecycle).await).map_err(refused)?;
                let version = service
                    .peer()
                    .peer_info()
                    .map(|info| info.protocol_version.clone());
                if version.is_some_and(|version| version >= ProtocolVersion::V_2026_07_28) {
                    // A broken stream ends the call: the one retry decision
                    // says whether it goes out again.
                    paced.refuse_resumption();
                }
                Ok((service, Some(paced)))
            }
        }
    }

    /// The tools of `connection`, listed on it once per session, within
    /// the timeout: however many calls wait for the list, it is asked once,
    /// whether the listing succeeded or not, until rmcp opens another
    /// session (the server restarted), the server says its tools changed,
    /// or the time it said the listing is fresh for (`ttlMs`, a second at
    /// least) has passed — then asked again; a change said within a second
    /// of the listing, a second after it (this waits for that).
    pub(crate) async fn catalog(
        &self,
        connection: &Connection,
    ) -> Result<Arc<Catalog>, ErrorEnvelope> {
        (self.listed(connection, true).await).expect("a listing waited for is made")
    }

    /// [`catalog`](Self::catalog), or, when `wait` is not set and a change
    /// the server said cannot be listed yet, `None`: what the listing
    /// before says is out of date.
    async fn listed(&self, connection: &Connection, wait: bool) -> Option<Listed> {
        let asked = connection.listings.load(Ordering::Acquire);
        let mut listed = connection.tools.lock().await;
        if let Some((listing, tools)) = listed.as_ref() {
            // Holding, or made since this was asked (by a call before it
            // in line): however many calls wait, one listing serves them.
            if listing.holds(connection)
                || (listing.number > asked && listing.on.0 == connection.session())
            {
                return Some(tools.clone());
            }
            // A change said within a second of the listing is listed a
            // second after it, not at once: a server that says its tools
            // change at every call does not have them listed at every
            // call. Until then a call takes them for unknown (none safe to
            // repeat, every argument masked) rather than wait, or be
            // settled on what the server said is out of date.
            if let Some(at) = listing.changed_listable_at(connection)
                && tokio::time::Instant::now() < at
            {
                if !wait {
                    return None;
                }
                tokio::time::sleep_until(at).await;
            }
        }
        let on = connection.listing();
        let started = tokio::time::Instant::now();
        let (tools, fresh) = match tools::list(connection.peer(), self.options.timeout).await {
            Ok((tools, fresh)) => (Ok(Arc::new(tools)), fresh),
            Err(envelope) => (Err(envelope), None),
        };
        let fresh_until = fresh.map(|fresh| started + fresh.max(tools::LEAST_FRESH));
        let listing = Listing {
            on,
            made: started,
            fresh_until,
            number: connection.listings.fetch_add(1, Ordering::AcqRel) + 1,
        };
        *listed = Some((listing, tools.clone()));
        Some(tools)
    }

    /// The tool called `name` as `connection` listed it: `None` when it did
    /// not, or could not list its tools. What an earlier connection listed
    /// says nothing of the server on this one, which may have restarted
    /// with other tools.
    pub(crate) async fn known_tool(
        &self,
        connection: &Connection,
        name: &str,
    ) -> Option<Arc<RemoteTool>> {
        self.listed(connection, false)
            .await?
            .ok()?
            .get(name)
            .cloned()
    }

    /// The tool called `name` as the live connection listed it, if it has
    /// been listed and the listing holds — found without waiting,
    /// connecting or asking the server.
    pub(crate) fn listed_tool(&self, name: &str) -> Option<Arc<RemoteTool>> {
        let slot = self.connection.try_lock().ok()?;
        let connection = slot.as_ref()?;
        let listed = connection.tools.try_lock().ok()?;
        match listed.as_ref()? {
            (listing, Ok(tools)) if listing.holds(connection) => tools.get(name).cloned(),
            _ => None,
        }
    }
}

/// Routes the progress notifications of `token` to `callback` while `call`
/// runs, and not after: not even when the call is dropped before it ends.
async fn route<T>(
    routes: &ProgressRoutes,
    token: &ProgressToken,
    callback: Option<ProgressCallback>,
    call: impl Future<Output = T>,
) -> T {
    /// Takes the route away however the call ends.
    struct Route<'a> {
        routes: &'a ProgressRoutes,
        token: &'a ProgressToken,
    }
    impl Drop for Route<'_> {
        fn drop(&mut self) {
            self.routes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(self.token);
        }
    }
    let Some(callback) = callback else {
        return call.await;
    };
    routes
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(token.clone(), callback);
    let _route = Route { routes, token };
    call.await
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;
    use rmcp::model::NumberOrString;

    use super::*;

    #[test]
    fn a_call_dropped_before_it_ends_takes_its_progress_route_with_it() {
        let routes = ProgressRoutes::default();
        let token = ProgressToken(NumberOrString::Number(7));
        let callback: ProgressCallback = Arc::new(|_| {});
        let running = route(
            &routes,
            &token,
            Some(callback),
            std::future::pending::<()>(),
        );
        // Polled once, then dropped: a call cancelled by its caller.
        assert!(running.now_or_never().is_none());
        assert!(routes.lock().unwrap().is_empty());
    }
}
