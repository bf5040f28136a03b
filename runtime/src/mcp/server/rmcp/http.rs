//! Serving over Streamable HTTP: who is served, and the one way to serve
//! any rmcp server — a tool set, or a server of your own — or to mount it.

use std::convert::Infallible;
use std::fmt::Display;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::http::Request;
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use crate::mcp::server::rmcp::bearer::BearerAuth;
use crate::mcp::server::rmcp::hosts::{AllowedHosts, admit_host};
use crate::mcp::server::rmcp::refusals::cut_refusal;
use crate::mcp::server::rmcp::sessions::{
    DEFAULT_SESSIONS_PER_CALLER, McpResponse, SESSION_ID, SessionOwners, counted, opens_a_session,
    read_method, shutting_down, unknown_session,
};
use crate::mcp::server::toolset::ToolSet;

/// How tools are served over Streamable HTTP: where from, how many at once,
/// and how much — for a [`ToolSet`] or any rmcp server ([`serve`](Self::serve),
/// [`service`](Self::service)).
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
/// let service = options.service(ToolSet::new());
/// # let _ = service;
/// ```
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    config: StreamableHttpServerConfig,
    bearer: Option<BearerAuth>,
    /// How many sessions one caller may hold open, when not the default.
    sessions_per_caller: Option<usize>,
    /// The inbox page served beside the tools.
    #[cfg(feature = "inbox")]
    inbox: Option<crate::mcp::server::inbox::Inbox>,
}

impl HttpOptions {
    /// The defaults: sessions in memory, loopback hosts only.
    pub fn new() -> Self {
        HttpOptions::default()
    }

    /// Serves without sessions: every request stands alone and any replica
    /// answers it, so N replicas can sit behind a round-robin load balancer.
    /// Replies to simple calls are plain JSON. On MCP 2026-07-28, which has
    /// no sessions, nothing is lost: a tool asks the client in rounds any
    /// replica resumes (give every replica the same
    /// [`ToolSet::request_state_key`], and the same [`ToolSet::store`] for
    /// rounds that bring a person's yes). On 2025-11-25, what needs a session
    /// is: a tool cannot make requests of the client (sampling,
    /// elicitation — the question says so, and a guard's block stands), and
    /// `logging/setLevel` lasts one request.
    #[must_use]
    pub fn stateless(mut self) -> Self {
        self.config = self
            .config
            .with_legacy_session_mode(false)
            .with_json_response(true);
        self
    }

    /// The `Host` names (`example.com`) or authorities (`example.com:8443`)
    /// requests may carry, *instead of* loopback: a local health check that
    /// calls `localhost` gets 403 unless `localhost` is listed too. An empty
    /// list (a setting read from an empty variable, say) accepts no host:
    /// [`any_host`](Self::any_host) is the one way to accept any.
    #[must_use]
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let hosts: Vec<String> = hosts.into_iter().map(Into::into).collect();
        // rmcp reads an empty list as any host; a blank entry, as none.
        let none = hosts.iter().all(|host| host.trim().is_empty());
        self.config = match none {
            true => self.config.with_allowed_hosts([String::new()]),
            false => self.config.with_allowed_hosts(hosts),
        };
        self
    }

    /// Accepts any `Host` header: for a server behind a proxy that checks it.
    #[must_use]
    pub fn any_host(mut self) -> Self {
        self.config = self.config.disable_allowed_hosts();
        self
    }

    /// The browser origins whose requests are accepted; a request from any
    /// other `Origin` is refused (403) — every one, when the list is empty.
    /// Requests without an `Origin` header, from programs rather than
    /// browsers, pass.
    ///
    /// An origin is its scheme, host and port, and all three must match.
    /// An entry without a port means the scheme's own (`https://app.example.com`
    /// is `https://app.example.com:443`, so `https://app.example.com:8443`
    /// is another origin); a port wildcard is written out:
    /// `http://localhost:*`. (rmcp's own config reads a port-less entry as
    /// any port; these options never give it one.)
    #[must_use]
    pub fn allowed_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        // rmcp checks no origin when its list is empty, unless told to.
        self.config = self
            .config
            .with_allowed_origins(origins.into_iter().map(|origin| with_port(origin.into())))
            .enforce_origin_validation();
        self
    }

    /// The largest request body accepted; a larger one is refused with 413
    /// before it is read whole.
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.config = self.config.with_max_request_body_bytes(bytes);
        self
    }

    /// Serves only requests with a bearer token `auth`'s validator accepts
    /// ([`BearerAuth`]): the others get 401 or 403, with a challenge that
    /// points at the protected resource metadata, which
    /// [`router`](Self::router) and [`serve`](Self::serve) serve — or 503,
    /// with no challenge, when the validator does not answer in time
    /// ([`BearerAuth::validator_timeout`]).
    #[must_use]
    pub fn require_bearer(mut self, auth: BearerAuth) -> Self {
        self.bearer = Some(auth);
        self
    }

    /// Serves `inbox`, the page where people decide approvals and
    /// escalations, beside the tools: [`router`](Self::router) and
    /// [`serve`](Self::serve) add its routes under `/inbox`. Its pages are
    /// for browsers: they are not behind the bearer token check of `/mcp`,
    /// and sign people in with the inbox's own validator.
    #[cfg(feature = "inbox")]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "inbox")))]
    #[must_use]
    pub fn inbox(mut self, inbox: crate::mcp::server::inbox::Inbox) -> Self {
        self.inbox = Some(inbox);
        self
    }

    /// How many sessions one caller (one subject of
    /// [`require_bearer`](Self::require_bearer)'s validator) may hold open
    /// at once: [`DEFAULT_SESSIONS_PER_CALLER`] unless told. An `initialize` past
    /// it is answered `429 Too Many Requests`, its session closed at once;
    /// the caller's others are untouched, and a session frees its place
    /// when it ends (`DELETE`, or idle past rmcp's keep-alive, 5 minutes).
    /// Without `require_bearer` callers are not told apart and nothing is
    /// counted. MCP 2026-07-28 opens no sessions.
    #[must_use]
    pub fn sessions_per_caller(mut self, most: usize) -> Self {
        self.sessions_per_caller = Some(most);
        self
    }

    /// The rmcp configuration these options make, for what they do not
    /// cover. A [`require_bearer`](Self::require_bearer) is not part of it.
    pub fn into_config(self) -> StreamableHttpServerConfig {
        self.config
    }

    /// The Streamable HTTP service of `servers`, served as these options
    /// say, to mount in an axum router
    /// (`Router::new().nest_service("/mcp", HttpOptions::new().service(tools))`).
    /// With [`require_bearer`](Self::require_bearer), it checks each
    /// request's token; route the metadata document too
    /// ([`BearerAuth::metadata`], or mount [`router`](Self::router)).
    pub fn service<N: NewServer>(self, servers: N) -> McpService<N::Server> {
        let sessions = Arc::new(LocalSessionManager::default());
        // Stateless, no request opens a session: none to count.
        let counted = self.bearer.is_some() && self.config.legacy_session_mode;
        let max_body = self.config.max_request_body_bytes;
        McpService {
            max_body,
            inner: StreamableHttpService::new(
                move || Ok(servers.new_server()),
                Arc::clone(&sessions),
                self.config,
            ),
            owners: counted.then(|| {
                let most = (self.sessions_per_caller).unwrap_or(DEFAULT_SESSIONS_PER_CALLER);
                Arc::new(SessionOwners::new(sessions, most))
            }),
            bearer: self.bearer,
        }
    }

    /// An axum router with the [`service`](Self::service) of `servers` at
    /// `/mcp` and, with [`require_bearer`](Self::require_bearer), the
    /// protected resource metadata document at its well-known path; with
    /// an inbox, its pages under `/inbox`. Every route checks the `Host`
    /// header against [`allowed_hosts`](Self::allowed_hosts), as `/mcp`'s
    /// does (403 for another).
    pub fn router<N: NewServer>(self, servers: N) -> axum::Router {
        let hosts = AllowedHosts::new(&self.config.allowed_hosts);
        let mut beside = axum::Router::new();
        let mut routes = 0;
        #[cfg(feature = "inbox")]
        if let Some(inbox) = &self.inbox {
            beside = beside.merge(inbox.router());
            routes += 1;
        }
        if let Some(auth) = &self.bearer {
            let document = auth.metadata().to_string();
            let json = [(axum::http::header::CONTENT_TYPE, "application/json")];
            beside = beside.route(
                auth.metadata_path(),
                axum::routing::get(move || std::future::ready((json, document.clone()))),
            );
            routes += 1;
        }
        let router = axum::Router::new().nest_service("/mcp", self.service(servers));
        match routes {
            0 => router,
            _ => router
                .merge(beside.route_layer(axum::middleware::from_fn_with_state(hosts, admit_host))),
        }
    }

    /// Serves `servers` over Streamable HTTP at `/mcp` on `listener`, as
    /// these options say: [`router`](Self::router), served, with
    /// `TCP_NODELAY` on every connection it accepts, and each connection
    /// closed when it sends no complete request head within 75 s of the
    /// server waiting for one (a slow client, or an idle kept connection).
    /// It holds no other bound on connections: facing untrusted networks,
    /// serve behind a proxy that bounds them per client. It speaks
    /// HTTP/1.1 (serve [`router`](Self::router) yourself for HTTP/2).
    ///
    /// Without `TCP_NODELAY` a reply streamed as server-sent events waits
    /// for the client's delayed acknowledgement (~40 ms on Linux) on a kept
    /// connection: its events are small writes that Nagle's algorithm holds
    /// back. Serving [`router`](Self::router) yourself, do the same
    /// (`axum::serve::ListenerExt::tap_io` with `set_nodelay(true)`).
    ///
    /// ```no_run
    /// use tool_envelope::mcp::{HttpOptions, ToolSet};
    ///
    /// # async fn run(tools: ToolSet) -> std::io::Result<()> {
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
    /// HttpOptions::new().serve(listener, tools).await
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// If serving fails.
    pub async fn serve<N: NewServer>(
        self,
        listener: tokio::net::TcpListener,
        servers: N,
    ) -> io::Result<()> {
        super::accept::serve(listener, self.router(servers)).await
    }
}

/// The Streamable HTTP service of a tool set or an rmcp server
/// ([`HttpOptions::service`]): rmcp's, behind the bearer token check when
/// there is one. A tower service, to mount in any router.
///
/// With a bearer token check, a session is its caller's: a request that
/// names another subject's `Mcp-Session-Id`, or one its subject opened
/// with a token that granted a scope this one lacks, is answered as for an
/// unknown session (404), and never reaches it.
pub struct McpService<S> {
    inner: StreamableHttpService<S, LocalSessionManager>,
    bearer: Option<BearerAuth>,
    /// Who opened each session, when tokens are checked.
    owners: Option<Arc<SessionOwners>>,
    /// The largest request body rmcp reads.
    max_body: usize,
}

impl<S> Clone for McpService<S> {
    fn clone(&self) -> Self {
        McpService {
            inner: self.inner.clone(),
            bearer: self.bearer.clone(),
            owners: self.owners.clone(),
            max_body: self.max_body,
        }
    }
}

impl<S> std::fmt::Debug for McpService<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpService")
            .field("bearer", &self.bearer)
            .finish_non_exhaustive()
    }
}

impl<B, S> tower_service::Service<Request<B>> for McpService<S>
where
    B: http_body::Body + Send + 'static,
    B::Error: Display,
    B::Data: Send + 'static,
    S: ServerHandler + Send + 'static,
{
    type Response = McpResponse;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<McpResponse, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        let mut inner = self.inner.clone();
        let bearer = self.bearer.clone();
        let owners = self.owners.clone();
        let max_body = self.max_body;
        let served = async move {
            let Some(auth) = bearer else {
                return tower_service::Service::call(&mut inner, request).await;
            };
            let caller = match auth.check(request.headers()).await {
                Ok(caller) => caller,
                Err(refusal) => return Ok(refusal),
            };
            // The token goes no further than the validator.
            request
                .headers_mut()
                .remove(axum::http::header::AUTHORIZATION);
            let session = (request.headers().get(SESSION_ID))
                .map(|id| String::from_utf8_lossy(id.as_bytes()).into_owned());
            if let (Some(owners), Some(id)) = (&owners, &session)
                && !owners.admits(id, &caller)
            {
                return Ok(unknown_session());
            }
            let opener = Arc::clone(&caller);
            request.extensions_mut().insert(caller);
            let (Some(owners), None) = (owners, &session) else {
                return tower_service::Service::call(&mut inner, request).await;
            };
            // Only an `initialize` opens a session: a request that cannot
            // be one stays tied to its connection, and is cancelled when its
            // client leaves. Which it is, the body says (read as rmcp
            // would read it), not the headers: rmcp serves a request whose
            // `_meta` carries its revision without a session, whatever its
            // version header names.
            if !opens_a_session(&request) {
                return counted(inner, request, owners, opener).await;
            }
            let (request, initialize) = match read_method(request, max_body).await {
                Ok(read) => read,
                Err(refused) => return Ok(refused),
            };
            let counted = counted(inner, request, owners, opener);
            if !initialize {
                return counted.await;
            }
            // Run, and its session counted, apart from the connection: a
            // client that leaves while rmcp makes the session (or keeps it
            // in a session store) would otherwise leave it made and never
            // counted against its bound.
            let opening = tokio::spawn(tracing::Instrument::in_current_span(counted));
            match opening.await {
                Ok(response) => response,
                Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
                // The runtime is shutting down.
                Err(_) => Ok(shutting_down()),
            }
        };
        // rmcp's refusals quote what the request sent: cut.
        Box::pin(async move { Ok(cut_refusal(served.await?).await) })
    }
}

/// What HTTP serving makes the server of each session — or, stateless, of
/// each request — from: a [`ToolSet`], whose sessions each get their own
/// log level ([`ToolSet::for_session`]), or a function that makes any rmcp
/// server (`move || MyServer::new(tools.for_session())`).
pub trait NewServer: Send + Sync + 'static {
    /// The server it makes.
    type Server: ServerHandler;

    /// The server of a new session.
    fn new_server(&self) -> Self::Server;
}

impl NewServer for ToolSet {
    type Server = ToolSet;

    fn new_server(&self) -> ToolSet {
        self.for_session()
    }
}

impl<S: ServerHandler, F: Fn() -> S + Send + Sync + 'static> NewServer for F {
    type Server = S;

    fn new_server(&self) -> S {
        self()
    }
}

/// `origin` as a browser sends it — no spaces around it, no `/` after it —
/// with its port written out: an `http` or `https` origin without one gets
/// its scheme's (80, 443). Anything else — a port or a `:*` already,
/// `null`, another scheme, text that is not an origin — as given, trimmed.
fn with_port(origin: String) -> String {
    let trimmed = origin.trim().trim_end_matches('/');
    let port = (!trimmed.ends_with(":*"))
        .then(|| axum::http::Uri::try_from(trimmed).ok())
        .flatten()
        .and_then(|uri| {
            let (scheme, authority) = (uri.scheme_str()?, uri.authority()?);
            let port = match scheme.to_ascii_lowercase().as_str() {
                _ if authority.port().is_some() => return None,
                "http" => 80,
                "https" => 443,
                _ => return None,
            };
            Some(format!("{scheme}://{}:{port}", authority.host()))
        });
    port.unwrap_or_else(|| trimmed.to_owned())
}

/// rmcp's own config, its allowed origins read as
/// [`allowed_origins`](HttpOptions::allowed_origins) reads them: an entry
/// without a port means its scheme's, never any port. Its empty lists keep
/// rmcp's meaning — an empty `allowed_hosts` accepts any host, an empty
/// `allowed_origins` checks no origin unless it enforces the check —
/// where [`HttpOptions::allowed_hosts`] and
/// [`HttpOptions::allowed_origins`] read an empty list as none.
impl From<StreamableHttpServerConfig> for HttpOptions {
    fn from(mut config: StreamableHttpServerConfig) -> Self {
        config.allowed_origins = std::mem::take(&mut config.allowed_origins)
            .into_iter()
            .map(with_port)
            .collect();
        HttpOptions {
            config,
            ..HttpOptions::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{HttpOptions, StreamableHttpServerConfig, with_port};

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
            (
                " https://app.example.com:8443/ ",
                "https://app.example.com:8443",
            ),
            ("http://localhost:*", "http://localhost:*"),
            (" http://localhost:* ", "http://localhost:*"),
            ("null", "null"),
            ("chrome-extension://abcdef", "chrome-extension://abcdef"),
        ] {
            assert_eq!(with_port(given.to_owned()), sent, "{given}");
        }
    }

    #[test]
    fn rmcps_own_config_gets_the_same_reading_of_its_origins() {
        let config = StreamableHttpServerConfig::default()
            .with_allowed_origins(["https://app.example.com", "http://localhost:*"]);
        let options = HttpOptions::from(config);
        assert_eq!(
            options.config.allowed_origins,
            ["https://app.example.com:443", "http://localhost:*"]
        );
    }
}
