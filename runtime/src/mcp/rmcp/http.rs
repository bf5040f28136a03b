//! Serving over Streamable HTTP: who is served, and the one way to serve
//! any rmcp server — a tool set, or a server of your own — or to mount it.

use std::io;
use std::sync::Arc;

use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use crate::mcp::toolset::ToolSet;

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
    /// requests may carry, *instead of* loopback: a local health check that
    /// calls `localhost` gets 403 unless `localhost` is listed too.
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

    /// The Streamable HTTP service of `servers`, served as these options
    /// say, to mount in an axum router
    /// (`Router::new().nest_service("/mcp", HttpOptions::new().service(tools))`).
    pub fn service<N: NewServer>(
        self,
        servers: N,
    ) -> StreamableHttpService<N::Server, LocalSessionManager> {
        StreamableHttpService::new(
            move || Ok(servers.new_server()),
            Arc::new(LocalSessionManager::default()),
            self.config,
        )
    }

    /// Serves `servers` over Streamable HTTP at `/mcp` on `listener`, as
    /// these options say, until the listener fails: [`service`](Self::service),
    /// mounted.
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
        let router = axum::Router::new().nest_service("/mcp", self.service(servers));
        axum::serve(listener, router).await
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

impl From<StreamableHttpServerConfig> for HttpOptions {
    fn from(config: StreamableHttpServerConfig) -> Self {
        HttpOptions { config }
    }
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
}
