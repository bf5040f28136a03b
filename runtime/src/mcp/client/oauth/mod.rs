//! OAuth 2.1 in the client, as MCP's authorization spec orders it, through
//! rmcp's `auth` module: the server's 401 names its protected resource
//! metadata, which names the authorization server, whose metadata is
//! checked against its issuer; the client registers (pre-registered, a
//! client ID metadata document, or dynamically — in that order), sends the
//! person to log in (authorization code with PKCE, through the caller's
//! handler), and exchanges the code; a 403 `insufficient_scope` asks for the
//! union of the scopes granted and the one wanted (step-up). A machine logs
//! in with client credentials instead. Tokens are kept in rmcp's credential
//! store, in memory unless another is given, and refreshed before they
//! expire.
//!
//! Every failure is a `permission` envelope, reason `AUTHORIZATION_FAILED`,
//! that says what to do next: never a protocol error.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::transport::auth::{AuthorizationManager, CredentialStore};

use crate::envelope::ErrorEnvelope;

mod addresses;
mod pinned;
mod provider;
mod refusals;
mod transport;

pub(crate) use provider::OAuthProvider;

/// The HTTP client of one login: this client's settings, every name
/// resolved through the login's address [`Policy`](addresses::Policy).
pub(crate) struct OAuthHttp {
    http: reqwest::Client,
    /// The same, past any proxy the environment names: for what a login
    /// sends over plain HTTP (`insecure_credentials`), which a proxy
    /// would read whole.
    in_clear: reqwest::Client,
    policy: Arc<addresses::Policy>,
    /// What the policy last refused, for the login's failure to say.
    refused: Arc<std::sync::Mutex<Option<String>>>,
}

impl OAuthHttp {
    /// The clients `builder` makes for a login of `oauth` to the MCP server
    /// at `url`, their names resolved through the login's address policy.
    pub(crate) fn new(
        url: &str,
        oauth: &OAuth,
        builder: impl Fn() -> reqwest::ClientBuilder,
    ) -> reqwest::Result<Self> {
        let policy = Arc::new(addresses::Policy::new(url, oauth.private_addresses));
        let http = builder().dns_resolver(Arc::clone(&policy)).build()?;
        let in_clear = (builder().no_proxy())
            .dns_resolver(Arc::clone(&policy))
            .build()?;
        Ok(OAuthHttp {
            http,
            in_clear,
            policy,
            refused: Arc::default(),
        })
    }
}

/// What a login handler answers: the URL the authorization server
/// redirected the person to (with its `code`), or the envelope that ends
/// the call.
type Redirected = Pin<Box<dyn Future<Output = Result<String, ErrorEnvelope>> + Send>>;

/// Sends a person to an authorization URL and hands back where they were
/// redirected.
type Login = Arc<dyn Fn(String) -> Redirected + Send + Sync>;

/// Puts a clone of the caller's credential store into a manager.
type StoreSetter = Arc<dyn Fn(&mut AuthorizationManager) + Send + Sync>;

/// How an [`McpClient`](crate::mcp::client::McpClient) logs in to a server
/// that MCP's authorization protects (OAuth 2.1): given to
/// [`Connect::oauth`](crate::mcp::client::Connect::oauth).
///
/// ```no_run
/// # async fn run() -> Result<(), tool_envelope::ErrorEnvelope> {
/// use tool_envelope::mcp::client::{McpClient, OAuth};
///
/// # async fn open_browser_and_wait_for_redirect(_: String) -> Result<String, tool_envelope::ErrorEnvelope> { Ok(String::new()) }
/// let login = OAuth::authorization_code("http://localhost:8765/callback", |url: String| {
///     // Show the person `url`; answer with the URL they come back to.
///     open_browser_and_wait_for_redirect(url)
/// })
/// .client_name("orders agent")
/// .client_metadata_url("https://agent.example.com/oauth/client.json");
/// let orders = McpClient::connect("https://orders.example.com/mcp")
///     .oauth(login)
///     .await?;
/// # let _ = orders; Ok(()) }
/// ```
#[derive(Clone)]
pub struct OAuth {
    flow: Flow,
    client_name: Option<String>,
    client_metadata_url: Option<String>,
    scopes: Vec<String>,
    store: Option<StoreSetter>,
    max_authorizations: u32,
    issuer: Option<String>,
    private_addresses: bool,
}

#[derive(Clone)]
enum Flow {
    AuthorizationCode {
        redirect_uri: String,
        login: Login,
        preregistered: Option<(String, Option<String>)>,
    },
    ClientCredentials {
        client_id: String,
        client_secret: String,
    },
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flow = match &self.flow {
            Flow::AuthorizationCode { .. } => "authorization code",
            Flow::ClientCredentials { .. } => "client credentials",
        };
        f.debug_struct("OAuth")
            .field("flow", &flow)
            .field("scopes", &self.scopes)
            .field("issuer", &self.issuer)
            .field("private_addresses", &self.private_addresses)
            .finish_non_exhaustive()
    }
}

impl OAuth {
    /// A person logs in (authorization code with PKCE): `login` gets the
    /// authorization URL to send them to, and answers with the URL the
    /// authorization server redirected them to, at `redirect_uri` — or an
    /// envelope, if they did not come back.
    pub fn authorization_code<F, Fut>(redirect_uri: impl Into<String>, login: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, ErrorEnvelope>> + Send + 'static,
    {
        OAuth::with_flow(Flow::AuthorizationCode {
            redirect_uri: redirect_uri.into(),
            login: Arc::new(move |url| Box::pin(login(url))),
            preregistered: None,
        })
    }

    /// A machine logs in with its client ID and secret (the client
    /// credentials grant), before its first request and again when a token
    /// is refused.
    pub fn client_credentials(
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        OAuth::with_flow(Flow::ClientCredentials {
            client_id: client_id.into(),
            client_secret: client_secret.into(),
        })
    }

    /// The client secret this login sends, if it has one: a credential
    /// like the tokens it gets.
    pub(crate) fn client_secret(&self) -> Option<&str> {
        match &self.flow {
            Flow::ClientCredentials { client_secret, .. } => Some(client_secret),
            Flow::AuthorizationCode { preregistered, .. } => preregistered.as_ref()?.1.as_deref(),
        }
    }

    fn with_flow(flow: Flow) -> Self {
        OAuth {
            flow,
            client_name: None,
            client_metadata_url: None,
            scopes: Vec::new(),
            store: None,
            max_authorizations: 3,
            issuer: None,
            private_addresses: false,
        }
    }

    /// The client's name, shown to the person and sent when it registers.
    #[must_use]
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = Some(name.into());
        self
    }

    /// The HTTPS URL of the client's ID metadata document: its `client_id`
    /// at an authorization server that supports them, with no registration.
    #[must_use]
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// A client registered with the authorization server beforehand: its
    /// ID, and its secret if it has one. Used before anything else.
    #[must_use]
    pub fn preregistered(
        mut self,
        client_id: impl Into<String>,
        client_secret: Option<String>,
    ) -> Self {
        if let Flow::AuthorizationCode { preregistered, .. } = &mut self.flow {
            *preregistered = Some((client_id.into(), client_secret));
        }
        self
    }

    /// The scopes to ask for. Unless set, the ones the server's challenge
    /// names, else those its metadata supports.
    #[must_use]
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Where tokens are kept: rmcp's [`CredentialStore`] (a file, the
    /// keychain); in memory unless given. One store for one client of one
    /// server: rmcp keeps one token in it, and does not ask whose it is.
    #[must_use]
    pub fn credential_store<S: CredentialStore + Clone + 'static>(mut self, store: S) -> Self {
        self.store = Some(Arc::new(move |manager: &mut AuthorizationManager| {
            manager.set_credential_store(store.clone());
        }));
        self
    }

    /// The authorization server this client logs in with, by its issuer
    /// identifier (`https://auth.example.com`): a login whose discovery
    /// leads to another — the MCP server's resource metadata, or its 401,
    /// names another authorization server — is refused before anything is
    /// sent there: no client secret, no code, no person sent to log in.
    /// Unset, the client logs in wherever the server's metadata points, as
    /// MCP's discovery has it; a client with a secret
    /// ([`client_credentials`](Self::client_credentials), a
    /// [`preregistered`](Self::preregistered) one with a secret) should pin
    /// the server the secret was issued by. Compared as URLs (`https://a`
    /// and `https://a/` are one issuer). The endpoints a pinned login uses
    /// are read from the issuer's own metadata (RFC 8414's well-known
    /// address, then OIDC discovery's), whatever document the server
    /// pointed at — one elsewhere may claim the issuer — so an issuer that
    /// publishes none cannot be pinned. An issuer is an `https://` URL
    /// with no query, fragment or user: `http://` to this machine only,
    /// or to any with
    /// [`insecure_credentials`](crate::mcp::client::Connect::insecure_credentials).
    #[must_use]
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Lets the login connect to private addresses (`10.0.0.0/8`,
    /// `172.16.0.0/12`, `192.168.0.0/16`, `100.64.0.0/10`, `fc00::/7`)
    /// wherever the MCP server is: an authorization server on the
    /// company's network (`sso.corp` at `10.0.0.9`), a pinned issuer
    /// there, or an MCP server reached by a name that resolves to a private
    /// address (a Kubernetes service, `mcp.corp`), whose own metadata the
    /// login reads first. rmcp still refuses a discovered document at a
    /// private address *written as one* in a URL (`http://10.0.0.9/…`) on
    /// another origin; a name is fine. Unless set, every
    /// address a login connects to — the documents discovery reads, the
    /// endpoints the authorization server's metadata names, a pinned
    /// [`issuer`](Self::issuer) too — is a public one, but where the MCP
    /// server's own URL names a private address, or this machine
    /// (`localhost`, a loopback address; then that kind is allowed): a
    /// server the client merely calls cannot send it, its secret with it,
    /// to a service on the client's own network. Link-local addresses (the
    /// cloud's instance metadata, `169.254.169.254`, and its other
    /// addresses: `fd00:ec2::254`, `100.100.100.200`…) and reserved ones
    /// are never connected to, nor this machine unless the server is on
    /// it. A proxy the environment names (`HTTPS_PROXY`) resolves the
    /// names it is asked for: what it can reach, a login can.
    #[must_use]
    pub fn private_addresses(mut self) -> Self {
        self.private_addresses = true;
        self
    }

    /// How many times in a row a client logs in (or steps up) before it
    /// gives up on a server that keeps refusing: 3 unless set. A login
    /// whose token served a minute or more was not refused
    /// at once: the count starts again after it, so that a client whose
    /// tokens expire logs in again for as long as it runs.
    #[must_use]
    pub fn max_authorizations(mut self, max: u32) -> Self {
        self.max_authorizations = max;
        self
    }
}
