//! Calling MCP tools: every tool of every MCP server — a child process on
//! stdio or a Streamable HTTP endpoint, written in any language — called like
//! a local `#[tool]`, its failure an [`ErrorEnvelope`] with the same one
//! retry decision the servers of this crate make.
//!
//! rmcp's client carries the protocol; this module reads envelopes out of
//! results, classifies the failures that are not envelopes, decides what is
//! safe to repeat, and repairs a broken connection before the next call.
//!
//! - `connection`: reaching the server, and reaching it again;
//! - `tools`: its tools, as listed, within bounds;
//! - `call`: one call, guarded, timed and settled;
//! - `failure`, `sdk_errors`: what a failure that is not an envelope is;
//! - `paced`: rmcp's HTTP client, resuming event streams with care;
//! - `http`, `tls`, `credentials`, `token`, `oauth`: how an HTTP client
//!   reaches its server, whom it trusts, and the credentials it shows.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::envelope::ErrorEnvelope;
use crate::guard::Guards;
use crate::query::Query;
use crate::reasons;

mod answers;
mod call;
mod connection;
mod credentials;
mod failure;
mod handler;
mod http;
#[cfg(feature = "oauth")]
mod oauth;
mod options;
mod paced;
mod sdk_errors;
mod secrets;
mod task;
mod tls;
mod token;
mod tools;

pub use connection::Progress;
#[cfg(feature = "oauth")]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "oauth")))]
pub use oauth::OAuth;
pub use options::Revision;
/// What the handlers of a server's questions take and answer: rmcp's own
/// types, the same ones, so that a handler needs no other import.
#[allow(deprecated)] // SEP-2577 deprecates sampling and roots; both revisions define them.
pub use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, Role, Root, SamplingMessage,
};
pub use tls::Roots;
pub use token::{TokenAnswer, TokenProvider, TokenRequest};
pub use tools::RemoteTool;

use connection::{Endpoint, Link};
use options::Options;

/// An MCP server's tools, called like local `#[tool]`s: a call returns the
/// tool's value, or an [`ErrorEnvelope`] — the server's own when it sends
/// one, a classified one otherwise.
///
/// | what came back | the envelope |
/// |---|---|
/// | `isError` with an envelope (`structuredContent`, or a JSON text block) | the server's envelope |
/// | `isError` with the argument error of a common SDK (TypeScript v1 and v2, the Python SDK, `FastMCP`) | `validation`, reason `INVALID_ARGUMENTS`, a violation per field named |
/// | `isError` with other plain text | `other`, not retryable, the text as its message |
/// | JSON-RPC `-32602` (unknown tool, bad params) | `validation` |
/// | a handshake refused for its protocol version (`-32022`) | `other`, not retryable, reason `UNSUPPORTED_PROTOCOL_VERSION` |
/// | a capability the client did not declare (`-32021`), or a question it has no handler for | `business`, not retryable, reason `CLIENT_CANNOT_ANSWER`, naming it |
/// | any other JSON-RPC error, an unreadable reply | `other` |
/// | no answer in time | `transient`, reason `TIMEOUT` |
/// | the connection closed, refused or reset | `transient`, reason `CONNECTION_LOST` (or `NOT_APPLIED` when nothing was sent) |
/// | HTTP 5xx, HTTP 429 | `transient`, reason `HTTP_503`…, `retryAfterMs` from `Retry-After` |
/// | HTTP 401, 403 | `permission` (a token provider is asked once for a fresh token first) |
/// | HTTP 403 with `insufficient_scope` | `permission`, reason `INSUFFICIENT_SCOPE`, naming the scope |
/// | a TLS certificate not trusted, or the client's refused | `permission`, reason `TLS_CERTIFICATE` |
/// | HTTP 400, 404, another status | `other`, reason `HTTP_404`… |
///
/// Whatever the server says, a failure names the tool that was called
/// (`tool`), and its `attempted_query` — the server's account of the
/// arguments, or the arguments sent — holds no secret the tool's schema
/// marks `writeOnly` and no value of a key it does not declare; no secret
/// value that was sent appears in its message, alternatives or violations.
/// A tool the connection did not list has no schema to go by: none of its
/// arguments is shown, and every text sent is kept out of what comes back.
/// An envelope the server sent [escalated](ErrorEnvelope::escalation) keeps
/// its `escalation` and is never retryable.
///
/// The one retry decision applies on this side too: a failure is retryable
/// only if the server said so *and* repeating the call is safe — the tool's
/// annotations, as this connection listed them, say `readOnlyHint` or
/// `idempotentHint`, or the failure says
/// the call was not applied (reason `NOT_APPLIED`). Otherwise it comes back
/// with `isRetryable: false` and the reason `MAY_HAVE_TAKEN_EFFECT`. So a
/// [`RetryPolicy`](crate::retry::RetryPolicy) around [`call`](Self::call)
/// never repeats a refund, and an explicit human request or a policy gap is
/// never retried.
///
/// It speaks MCP 2026-07-28 where the server does, 2025-11-25 otherwise
/// ([`Connect::revision`] pins one). The server's questions — a form for the
/// user, a completion, the roots — are answered by the handlers the caller
/// registers ([`Connect::on_elicitation`], `on_sampling`, `on_roots`): on
/// 2025-11-25 as requests, on 2026-07-28 in `InputRequiredResult` rounds.
///
/// Cheap to clone: clones share the connection.
#[derive(Clone)]
pub struct McpClient {
    link: Arc<Link>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.link.fmt(f)
    }
}

impl McpClient {
    /// A client of the server `command` makes, started as a child process
    /// that talks MCP over stdio; after the child dies, the next call
    /// starts a new one from `command`. Set its options, then `.await` it:
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), tool_envelope::ErrorEnvelope> {
    /// use std::time::Duration;
    /// use tool_envelope::mcp::client::McpClient;
    ///
    /// let orders = McpClient::spawn(|| tokio::process::Command::new("orders-server"))
    ///     .timeout(Duration::from_secs(10))
    ///     .await?;
    /// # let _ = orders; Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// Awaited, a `transient` envelope if the child does not start, or does
    /// not complete the handshake within the timeout (reason `TIMEOUT`; the
    /// child is stopped); a refused handshake as [`McpClient`] says.
    pub fn spawn(command: impl Fn() -> tokio::process::Command + Send + Sync + 'static) -> Connect {
        Connect::new(Endpoint::Stdio(Arc::new(command)))
    }

    /// A client of the Streamable HTTP endpoint at `url` (`https://host/mcp`,
    /// or `http://` on a private network). Set its options, then `.await`
    /// it. TLS is rustls's, trusting the platform's roots unless told
    /// otherwise ([`roots`](Connect::roots),
    /// [`root_certificate_pem`](Connect::root_certificate_pem)); a
    /// certificate it does not trust fails as `permission`, reason
    /// `TLS_CERTIFICATE`, before anything is sent. Redirects are not
    /// followed, so credentials go to this origin only. On 2025-11-25, an event stream that ends before the answer
    /// is resumed at most every 100 ms, and not after 10 resumptions in a
    /// row that brought nothing (SECURITY.md); on 2026-07-28 it is not
    /// resumed: the call ends as a lost connection (`CONNECTION_LOST`), and
    /// the one retry decision says whether it may be sent again.
    ///
    /// # Errors
    ///
    /// Awaited, a classified envelope if the server cannot be reached or
    /// refuses the handshake; a `transient` one, reason `TIMEOUT`, if it does
    /// not complete it within the timeout.
    pub fn connect(url: impl Into<String>) -> Connect {
        Connect::new(Endpoint::Http(url.into().into()))
    }

    /// How many `tools/call` requests this client has sent, over every
    /// connection it made.
    pub fn sent(&self) -> u64 {
        self.link.sent_calls()
    }

    /// How many connections this client has made: 1, plus one each time it
    /// found the last one broken and made another (a child restarted). A
    /// session rmcp opens again by itself on the same connection, as after
    /// an HTTP server's restart, is not counted.
    pub fn connections(&self) -> u64 {
        self.link.connections()
    }

    /// The MCP revision the live connection speaks, as negotiated
    /// (`2026-07-28`, `2025-11-25`): connecting first if there is none.
    /// Why a negotiating client fell back to 2025-11-25 is in
    /// [`negotiation`](Self::negotiation), and logged.
    ///
    /// # Errors
    ///
    /// A classified envelope if the server cannot be reached.
    pub async fn protocol_version(&self) -> Result<String, ErrorEnvelope> {
        Ok(self.negotiation().await?.revision)
    }

    /// How the live connection's revision was chosen: the revision, and,
    /// when the client negotiated and the server refused 2026-07-28, why it
    /// speaks 2025-11-25 instead.
    ///
    /// # Errors
    ///
    /// A classified envelope if the server cannot be reached.
    pub async fn negotiation(&self) -> Result<Negotiation, ErrorEnvelope> {
        let connection = self.link.connection().await?;
        Ok(Negotiation {
            revision: connection.protocol_version().unwrap_or_default(),
            fell_back: connection.fell_back().map(str::to_owned),
        })
    }

    /// The server's tools (`tools/list`), listed once per connection
    /// within the client's timeout. A server that pages on without end is
    /// listed as far as a repeated cursor, a cursor over 4 KiB, 100 pages,
    /// 10,000 tools or 16 MiB of tools.
    ///
    /// # Errors
    ///
    /// A classified envelope if the server cannot be reached or does not
    /// list its tools in time.
    pub async fn tools(&self) -> Result<Vec<RemoteTool>, ErrorEnvelope> {
        let connection = self.link.connection().await?;
        let tools = (self.link.catalog(&connection).await)
            .map_err(|envelope| self.link.sent.hide_credentials(envelope))?;
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
        let connection = self.link.connection().await?;
        let tools = (self.link.catalog(&connection).await)
            .map_err(|envelope| self.link.sent.hide_credentials(envelope))?;
        Ok(tools.get(name).map(|tool| (**tool).clone()))
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
        Ok(call::call(&self.link, name, arguments, None).await?.value)
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
        Ok(
            call::call(&self.link, name, arguments, Some(Arc::new(on_progress)))
                .await?
                .value,
        )
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
        let call::Called { value, tool } =
            call::call(&self.link, name, arguments.clone(), None).await?;
        let unwrapped = match &value {
            Value::Object(members) if members.len() == 1 => members.get("result").cloned(),
            _ => None,
        };
        let error = match serde_json::from_value::<T>(value) {
            Ok(decoded) => return Ok(decoded),
            Err(error) => error,
        };
        if let Some(decoded) = unwrapped.and_then(|inner| serde_json::from_value::<T>(inner).ok()) {
            return Ok(decoded);
        }
        let envelope = ErrorEnvelope::other(format!(
            "the result of `{name}` is not a {}: {error}",
            std::any::type_name::<T>()
        ))
        .with_reason(reasons::UNEXPECTED_REPLY);
        let arguments = match arguments {
            Value::Object(arguments) => arguments,
            _ => serde_json::Map::new(),
        };
        let credentials = self.link.sent.credentials();
        let query = Query::Arguments(&arguments, call::mask(tool.as_deref(), &credentials));
        Err(call::finish(envelope, name, query, tool.as_deref(), true))
    }
}

/// How a connection's MCP revision was chosen
/// ([`McpClient::negotiation`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Negotiation {
    /// The revision spoken: `2026-07-28`, `2025-11-25`.
    pub revision: String,
    /// Why a negotiating client speaks 2025-11-25: what the server answered
    /// `server/discover` with. `None` when it speaks what it asked for.
    pub fell_back: Option<String>,
}

/// A client to be made: its options set, then `.await`ed
/// ([`McpClient::spawn`], [`McpClient::connect`]).
#[derive(Debug)]
#[must_use = "a client is made when it is awaited"]
pub struct Connect {
    endpoint: Endpoint,
    options: Options,
}

impl Connect {
    fn new(endpoint: Endpoint) -> Self {
        Connect {
            endpoint,
            options: Options::default(),
        }
    }

    /// How long one call may take (60 s unless set), from the moment it is
    /// made: reaching the server (the handshake, when the connection is
    /// new), listing its tools (once per connection) and the call itself;
    /// then it is cancelled (the server is told, if the call went out) and
    /// fails as `transient`, reason `TIMEOUT`. Making the client, its
    /// handshake and its listing get as long each. A server that does not
    /// list its tools in time is called without their annotations and
    /// schemas — no call of it is safe to repeat, and none of its arguments
    /// is shown — and is not asked again on that connection.
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
    /// login's, the values of [`header`](Self::header) — go over plain
    /// `http://` to a host that is not loopback. Without it such a client
    /// fails when it is made, as `other`, reason `CLIENT_MISCONFIGURED`:
    /// anyone on the path would read the token. For a private network you
    /// trust.
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
