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
//! - `roundtrip`: one call, guarded, timed and settled, its rounds answered;
//! - `failure`, `sdk_errors`: what a failure that is not an envelope is;
//! - `paced`: rmcp's HTTP client, resuming event streams with care;
//! - `address`, `http`, `tls`, `credentials`, `token`, `oauth`: how an HTTP
//!   client reaches its server, whom it trusts, and the credentials it shows.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::envelope::ErrorEnvelope;
use crate::query::Query;
use crate::reasons;
use crate::scope::Scope;

mod address;
mod answers;
mod causes;
mod connect;
mod connection;
mod credentials;
mod failure;
mod handler;
mod http;
#[cfg(feature = "oauth")]
mod oauth;
mod options;
mod paced;
mod reply;
mod roundtrip;
mod sdk_errors;
mod secrets;
mod task;
mod tls;
mod token;
mod tools;

pub use connect::Connect;
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
/// | a new connection not open in half the timeout (at most 10 s; at least 3 s, or ¾ of a timeout under 4 s) | `transient`, reason `NOT_APPLIED` |
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
    /// followed, so credentials go to this origin only. What the URL
    /// carries beyond its place is taken for credentials, like a
    /// [`header`](Connect::header)'s value: a user and password
    /// (`https://user:password@host/mcp`) are sent as HTTP Basic
    /// authentication, not in the URL, and the values of its query that
    /// are credentials — under a key that names one (`api_key`, `token`,
    /// `secret`, `pass`, `auth`, `sig`, `session`…), or 8 characters long
    /// or more (a bare `?sk_live_…` too) — in the URL as given; neither is ever quoted by a text that
    /// comes back, and no query value is printed (the client's `Debug`, its
    /// log lines). A key in the URL's path (`https://host/s/<key>/mcp`)
    /// cannot be told from a place: no failure's text quotes the URL (the
    /// caller knows where it called), but the client's `Debug` shows the
    /// path, and plain `http://` to another machine is not refused for it —
    /// give such a key in the query or a header where the server takes one.
    /// A URL that is not `http://` or `https://` fails the client
    /// when it is made, as `other`, reason `CLIENT_MISCONFIGURED`. On 2025-11-25, an event stream that ends before the answer
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
    /// connection it made — each round of a 2026-07-28 call once. A call
    /// rmcp sends again by itself, on the new session it opens when the
    /// server answers 404 (it forgot the session), is not counted again.
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

    /// The server's tools (`tools/list`), listed once per session (again
    /// when rmcp opens a new one: the server restarted) within the client's
    /// timeout. A server that pages on without end is
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
        Ok(roundtrip::call(&self.link, name, arguments, None)
            .await?
            .value)
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
            roundtrip::call(&self.link, name, arguments, Some(Arc::new(on_progress)))
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
        let roundtrip::Called { value, tool } =
            roundtrip::call(&self.link, name, arguments.clone(), None).await?;
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
        let query = Query::Arguments(
            &arguments,
            Scope::masked(roundtrip::mask(tool.as_deref(), &credentials)),
        );
        Err(roundtrip::finish(
            envelope,
            name,
            query,
            tool.as_deref(),
            true,
        ))
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
