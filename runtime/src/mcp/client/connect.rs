//! A client to be made: where it reaches its server, and how it calls —
//! its options, set one by one, then `.await`ed.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "oauth")]
use super::OAuth;
use super::connection::{Endpoint, Link};
use super::options::{Options, Revision};
#[allow(deprecated)] // SEP-2577 deprecates sampling and roots; both revisions define them.
use super::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, McpClient,
    Root, Roots, TokenProvider, credentials,
};
use crate::envelope::ErrorEnvelope;
use crate::guard::Guards;

/// A client to be made: its options set, then `.await`ed
/// ([`McpClient::spawn`], [`McpClient::connect`]).
#[derive(Debug)]
#[must_use = "a client is made when it is awaited"]
pub struct Connect {
    endpoint: Endpoint,
    options: Options,
}

impl Connect {
    pub(super) fn new(endpoint: Endpoint) -> Self {
        Connect {
            endpoint,
            options: Options::default(),
        }
    }

    /// How long one call may take (60 s unless set), from the moment it is
    /// made: reaching the server (the handshake, when the connection is
    /// new), listing its tools (once per session) and the call itself;
    /// then it is cancelled (the server is told, if the call went out) and
    /// fails as `transient`, reason `TIMEOUT`. Making the client, its
    /// handshake and its listing get as long each. A server that does not
    /// list its tools in time is called without their annotations and
    /// schemas — no call of it is safe to repeat, and none of its arguments
    /// is shown — and is not asked again on that session.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.options.timeout = timeout;
        self
    }

    /// Guards checked on each call's arguments before anything is sent: a
    /// blocked call never leaves the process.
    pub fn guards(mut self, guards: Guards) -> Self {
        self.options.guards = Arc::new(guards);
        self
    }

    /// The MCP revision to speak: [`Revision::Negotiate`] unless set.
    pub fn revision(mut self, revision: Revision) -> Self {
        self.options.revision = revision;
        self
    }

    /// The most questions the server may ask in one round of a call (16
    /// unless set); on 2025-11-25, where questions are requests, ten times
    /// as many while one call runs. Past it the call ends with an `other`
    /// envelope, not retryable, reason `TOO_MANY_QUESTIONS`, and the
    /// handlers are not run for the rest.
    pub fn max_questions(mut self, most: usize) -> Self {
        self.options.max_questions = most.max(1);
        self
    }

    /// Declares MCP's tasks extension (`io.modelcontextprotocol/tasks`) on
    /// every request, so that a server may run a call as a task: the call
    /// then polls the task (`tasks/get`, at the pace the server suggests),
    /// answers its questions with the handlers (`tasks/update`), and
    /// returns its result — within the call's timeout, after which the task
    /// is cancelled. A tool the server runs only as a task
    /// (`TaskSupport::Required`) needs it.
    pub fn tasks(mut self) -> Self {
        self.options.tasks = true;
        self
    }

    /// Lets credentials — a bearer token, a provider's or an OAuth
    /// login's, the values of [`header`](Self::header), a user and
    /// password or query values in the URL — go over plain
    /// `http://` to a host that is not loopback; and an OAuth login's
    /// client secret, code and tokens to an issuer pinned with a plain
    /// `http://` URL ([`OAuth::issuer`](crate::mcp::client::OAuth::issuer)), or to an
    /// authorization server or endpoint the server's documents name with
    /// one. Without it such a client fails when it is made, as `other`,
    /// reason `CLIENT_MISCONFIGURED` (a login to a plain-HTTP endpoint,
    /// when it reaches it: `AUTHORIZATION_FAILED`): anyone on the path
    /// would read the token. For a private network you trust.
    pub fn insecure_credentials(mut self) -> Self {
        self.options.insecure_credentials = true;
        self
    }

    /// Trusts the certificate authorities of `pem` (one or more
    /// `BEGIN CERTIFICATE` blocks) besides the [`roots`](Self::roots): for
    /// a server whose certificate a private CA issued. Read when the client
    /// is made: a text without a certificate fails it then, as `other`,
    /// reason `CLIENT_MISCONFIGURED`.
    pub fn root_certificate_pem(mut self, pem: impl AsRef<[u8]>) -> Self {
        self.options.tls.added.push(pem.as_ref().into());
        self
    }

    /// The certificate authorities trusted: [`Roots::Platform`] unless set.
    pub fn roots(mut self, roots: Roots) -> Self {
        self.options.tls.roots = roots;
        self
    }

    /// The certificate the client shows a server that asks for one (mutual
    /// TLS): its chain and its private key, both PEM. The key is never
    /// printed.
    pub fn client_certificate_pem(
        mut self,
        chain: impl AsRef<[u8]>,
        private_key: impl AsRef<[u8]>,
    ) -> Self {
        self.options.tls.identity = Some((chain.as_ref().into(), private_key.as_ref().into()));
        self
    }

    /// Sends the header `name: value` with every HTTP request (an API key,
    /// a tenant). Its value is never printed. The transport's own headers
    /// (`Accept`, `Mcp-Session-Id`, …) cannot be set; a name or value HTTP
    /// does not allow fails the client when it is made, as `other`, reason
    /// `CLIENT_MISCONFIGURED`.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.options.headers.push((name.into(), value.into()));
        self
    }

    /// Sends `token` as `Authorization: Bearer …` with every HTTP request.
    /// A server that refuses it (401) fails the call as `permission`,
    /// reason `HTTP_401`. For a token that expires, give a provider
    /// ([`bearer_with`](Self::bearer_with)).
    pub fn bearer(mut self, token: impl Into<String>) -> Self {
        self.options.credentials = credentials::Credentials::Fixed(token.into().into());
        self
    }

    /// Gets the bearer token from `provider`: asked before the first
    /// request, and again, once, when the server refuses a request (HTTP
    /// 401, or 403 `insufficient_scope`), with the server's
    /// `WWW-Authenticate`; the refused request is then sent again with the
    /// new token — a refused request ran nothing. A provider may answer
    /// `None` (send no token), and a provider's `Err` ends the call with
    /// that envelope. The last token is kept for the next requests, until
    /// one is refused.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), tool_envelope::ErrorEnvelope> {
    /// use tool_envelope::mcp::client::{McpClient, TokenRequest};
    ///
    /// # async fn fetch_token(_: bool) -> Result<String, tool_envelope::ErrorEnvelope> { Ok(String::new()) }
    /// let orders = McpClient::connect("https://orders.example.com/mcp")
    ///     .bearer_with(|request: TokenRequest| async move {
    ///         // Refresh from your identity provider when the last one was refused.
    ///         fetch_token(matches!(request, TokenRequest::Refused { .. })).await.map(Some)
    ///     })
    ///     .await?;
    /// # let _ = orders; Ok(()) }
    /// ```
    pub fn bearer_with(mut self, provider: impl TokenProvider) -> Self {
        self.options.credentials = credentials::Credentials::Provider(Arc::new(provider));
        self
    }

    /// Logs in with OAuth 2.1 as MCP's authorization spec says ([`OAuth`]):
    /// on the server's 401, discovery, registration and a login; on a 403
    /// `insufficient_scope`, a step-up; tokens refreshed before they
    /// expire. The authorization server is reached with this client's TLS
    /// settings. A login that fails ends the call as `permission`, reason
    /// `AUTHORIZATION_FAILED`, saying what to do next.
    #[cfg(feature = "oauth")]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "oauth")))]
    pub fn oauth(mut self, oauth: OAuth) -> Self {
        self.options.credentials = credentials::Credentials::OAuth(oauth);
        self
    }

    /// Answers a server's forms for the user (elicitation) with `handler`:
    /// on 2025-11-25 a request from the server, on 2026-07-28 a question of
    /// an `InputRequiredResult`, after which the call is sent again with
    /// the answer (at most 10 rounds, within the call's timeout). With it,
    /// the client declares form elicitation (never URL elicitation: a
    /// request to open a URL is refused, never handed to `handler`).
    /// Without it, a call whose tool asks ends as a `business` envelope,
    /// not retryable, reason `CLIENT_CANNOT_ANSWER`, that names what was
    /// asked. What the handler is shown quotes no secret the call sent and
    /// none of the client's credentials: they are `[redacted]`.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), tool_envelope::ErrorEnvelope> {
    /// use serde_json::json;
    /// use tool_envelope::mcp::client::{ElicitResult, ElicitationAction, McpClient};
    ///
    /// let refunds = McpClient::connect("http://127.0.0.1:8080/mcp")
    ///     .on_elicitation(|request| async move {
    ///         // Show `request` to the person at the keyboard; here, a yes.
    ///         let _ = request;
    ///         ElicitResult::new(ElicitationAction::Accept)
    ///             .with_content(json!({"approver": "Ada", "note": "checked the order"}))
    ///     })
    ///     .await?;
    /// # let _ = refunds; Ok(()) }
    /// ```
    pub fn on_elicitation<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(ElicitRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ElicitResult> + Send + 'static,
    {
        self.options.answers.on_elicitation(handler);
        self
    }

    /// Answers a server's requests for a completion (sampling) with
    /// `handler`, as [`on_elicitation`](Self::on_elicitation) answers forms;
    /// an `Err` is the handler's failure, sent back as such.
    #[allow(deprecated)] // SEP-2577 deprecates sampling; both revisions define it.
    pub fn on_sampling<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, String>> + Send + 'static,
    {
        self.options.answers.on_sampling(handler);
        self
    }

    /// Answers a server's requests for the client's roots with `handler`,
    /// as [`on_elicitation`](Self::on_elicitation) answers forms.
    #[allow(deprecated)] // SEP-2577 deprecates roots; both revisions define them.
    pub fn on_roots<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<Root>> + Send + 'static,
    {
        self.options.answers.on_roots(handler);
        self
    }
}

impl IntoFuture for Connect {
    type Output = Result<McpClient, ErrorEnvelope>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let link = Link::open(self.endpoint, self.options).await?;
            Ok(McpClient {
                link: Arc::new(link),
            })
        })
    }
}
