//! The request a served tool was called by: progress, log messages to the
//! client, cancellation, and the client itself.

use std::fmt;
#[cfg(feature = "rmcp")]
use std::sync::Arc;

use serde::Serialize;
#[cfg(feature = "rmcp")]
use serde_json::Value;

use crate::caller::Caller;
#[cfg(feature = "rmcp")]
use crate::mcp::ask::{Elicitation, Question};

pub use crate::mcp::log::{DEFAULT_LOG_LEVEL, LogLevel};

/// What a served tool can reach of the request that called it: progress
/// notifications, log messages, the cancellation signal, and (with the
/// `rmcp` feature) the client, to ask it — a form for its user
/// ([`elicit`](Self::elicit)), its model ([`sample`](Self::sample)), its
/// roots — the same way on MCP 2025-11-25 and 2026-07-28 ([`crate::mcp::ask`]).
///
/// A `#[tool]` takes it as a parameter of type `ToolContext`. It is never
/// captured in `attempted_query` and never appears in `inputSchema`: the
/// tool set passes the context of each `tools/call`. Called from Rust, the
/// tool takes a [`ToolContext::detached`] one, which sends nothing and is
/// never cancelled.
///
/// Nothing is sent once the request is cancelled. Progress only goes
/// forward: a value not above the last one sent for the request is not sent
/// (MCP requires it to increase), and while a tool set retries a call
/// locally each retry is reported as one step, with the attempt, the
/// category, the reason and the delay in its message.
///
/// ```
/// use tool_envelope::{tool, ErrorEnvelope};
/// use tool_envelope::mcp::ToolContext;
///
/// /// Export every order of a customer, reporting progress.
/// #[tool(read_only)]
/// async fn export_orders(context: ToolContext, customer_id: String) -> Result<u32, ErrorEnvelope> {
///     let pages = 4;
///     for page in 1..=pages {
///         if context.is_cancelled() {
///             return Err(ErrorEnvelope::business("The export was cancelled."));
///         }
///         context.progress(f64::from(page), Some(f64::from(pages)), Some("exporting")).await;
///     }
///     context.info(format!("exported {pages} pages for {customer_id}")).await;
///     Ok(pages)
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// // Called from Rust: a detached context, which sends nothing.
/// assert_eq!(export_orders(ToolContext::detached(), "C-1".into()).await.unwrap(), 4);
/// # }
/// ```
#[derive(Clone, Default)]
pub struct ToolContext {
    #[cfg(feature = "rmcp")]
    live: Option<Arc<crate::mcp::live::LiveRequest>>,
    /// Who called, as a token validator said.
    caller: Option<std::sync::Arc<Caller>>,
}

impl ToolContext {
    /// A context of no request: it sends nothing and is never cancelled.
    pub fn detached() -> Self {
        ToolContext::default()
    }

    /// Whether the context belongs to a request from an MCP client.
    pub fn is_detached(&self) -> bool {
        #[cfg(feature = "rmcp")]
        return self.live.is_none();
        #[cfg(not(feature = "rmcp"))]
        return true;
    }

    /// Whether the client cancelled the request. A tool that checks between
    /// steps stops at the next one; one that awaits is stopped at its next
    /// `.await` by the tool set in any case.
    pub fn is_cancelled(&self) -> bool {
        #[cfg(feature = "rmcp")]
        return self
            .live
            .as_ref()
            .is_some_and(|live| live.cancel.is_cancelled());
        #[cfg(not(feature = "rmcp"))]
        return false;
    }

    /// Completes when the client cancels the request; never, for a detached
    /// context.
    pub async fn cancelled(&self) {
        #[cfg(feature = "rmcp")]
        if let Some(live) = &self.live {
            return live.cancel.cancelled().await;
        }
        std::future::pending::<()>().await;
    }

    /// Whether the client asked for progress (sent a `progressToken`).
    pub fn wants_progress(&self) -> bool {
        #[cfg(feature = "rmcp")]
        return self
            .live
            .as_ref()
            .is_some_and(|live| live.progress_token.is_some());
        #[cfg(not(feature = "rmcp"))]
        return false;
    }

    /// Sends a progress notification: `progress` so far, of `total` if
    /// known, with an optional `message`. Returns whether it was sent: not
    /// when the client asked for no progress, when the request was
    /// cancelled, when `progress` is not finite or not above the last value
    /// sent, or when the transport failed.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        #[cfg(feature = "rmcp")]
        if let Some(live) = &self.live {
            return live.progress(progress, total, message).await;
        }
        let _ = (progress, total, message);
        false
    }

    /// Sends `data` (any JSON: a string, an object of fields) to the client
    /// as a `notifications/message` at `level`, from a logger named after
    /// the tool. Returns whether it was sent: not below the level the
    /// client set with `logging/setLevel` ([`DEFAULT_LOG_LEVEL`] until it
    /// does) — on MCP 2026-07-28, the level in the request's `_meta`, and
    /// nothing without one — after cancellation, when `data` does not
    /// serialize, or when the transport failed.
    pub async fn log(&self, level: LogLevel, data: impl Serialize) -> bool {
        #[cfg(feature = "rmcp")]
        if let Some(live) = &self.live {
            return live.log(level, &data).await;
        }
        let _ = (level, data);
        false
    }

    /// [`log`](Self::log) at `debug`, with a text message.
    pub async fn debug(&self, message: impl fmt::Display) -> bool {
        self.log(LogLevel::Debug, message.to_string()).await
    }

    /// [`log`](Self::log) at `info`, with a text message.
    pub async fn info(&self, message: impl fmt::Display) -> bool {
        self.log(LogLevel::Info, message.to_string()).await
    }

    /// [`log`](Self::log) at `warning`, with a text message.
    pub async fn warning(&self, message: impl fmt::Display) -> bool {
        self.log(LogLevel::Warning, message.to_string()).await
    }

    /// [`log`](Self::log) at `error`, with a text message.
    pub async fn error(&self, message: impl fmt::Display) -> bool {
        self.log(LogLevel::Error, message.to_string()).await
    }

    /// The client, as rmcp's peer; `None` for a detached context. On MCP
    /// 2026-07-28 rmcp refuses requests to the client: ask through
    /// [`ask`](Self::ask) and its kin, which work on both revisions.
    #[cfg(feature = "rmcp")]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    pub fn peer(&self) -> Option<&rmcp::Peer<rmcp::RoleServer>> {
        self.live.as_ref().map(|live| &live.peer)
    }

    /// What the client declared it can answer: `elicitation`, `sampling`,
    /// `roots` (on 2026-07-28, from the request's own `_meta`); `None` for a
    /// detached context, or a client that declared nothing.
    #[cfg(feature = "rmcp")]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    pub fn client_capabilities(&self) -> Option<&rmcp::model::ClientCapabilities> {
        self.live.as_ref()?.asking.capabilities()
    }

    /// The client's name and version, as it gave them.
    #[cfg(feature = "rmcp")]
    pub(crate) fn client_name(&self) -> Option<String> {
        Some(self.live.as_ref()?.asking.client()?.to_owned())
    }

    /// Asks the client `question` and returns its answer as JSON: an
    /// `ElicitResult`, a `CreateMessageResult` or a `ListRootsResult`. On
    /// 2026-07-28 a question without an answer yet ends this round of the
    /// call: see [`crate::mcp::ask`] for how the tool resumes.
    ///
    /// # Errors
    ///
    /// A `business` envelope, with reason `CLIENT_CANNOT_ANSWER`, for a
    /// detached context or a question the client did not declare it can
    /// answer; with reason `CLIENT_REQUEST_FAILED`, when the client's answer
    /// failed.
    #[cfg(feature = "rmcp")]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    pub async fn ask(&self, question: Question) -> Result<Value, crate::ErrorEnvelope> {
        let mut answers = self.ask_all(vec![question]).await?;
        Ok(answers.pop().expect("one answer per question"))
    }

    /// Asks the client every question at once — on 2026-07-28, in one
    /// round — and returns the answers in order.
    ///
    /// # Errors
    ///
    /// As [`ask`](Self::ask).
    #[cfg(feature = "rmcp")]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    pub async fn ask_all(
        &self,
        questions: Vec<Question>,
    ) -> Result<Vec<Value>, crate::ErrorEnvelope> {
        if let Some(reserved) = (questions.iter()).find(|question| {
            question
                .key()
                .starts_with(crate::mcp::ask::RESERVED_KEY_PREFIX)
        }) {
            return Err(crate::mcp::ask::reserved_key(reserved.key()));
        }
        let Some(live) = &self.live else {
            return Err(crate::mcp::ask::no_client());
        };
        live.asking.ask_all(&live.peer, &questions).await
    }

    /// Asks the client's user to approve a block, under `key` — one of the
    /// keys kept for this crate's own questions, which a tool cannot ask
    /// under — with the form `schema`.
    #[cfg(feature = "rmcp")]
    pub(crate) async fn ask_for_approval(
        &self,
        key: &str,
        message: String,
        schema: Value,
    ) -> Result<Elicitation<serde_json::Map<String, Value>>, crate::ErrorEnvelope> {
        let Some(live) = &self.live else {
            return Err(crate::mcp::ask::no_client());
        };
        let question = Question::form(key, message, schema)?;
        let mut answers = live.asking.ask_all(&live.peer, &[question]).await?;
        crate::mcp::ask::elicitation(answers.pop().expect("one answer per question"))
    }

    /// Asks the user to fill in a form with the fields of `T` (from its
    /// `JsonSchema`), under `key`, and decodes the answer.
    ///
    /// # Errors
    ///
    /// As [`ask`](Self::ask); a `validation` envelope when `T` is not a form
    /// MCP allows, or when the answer does not decode into `T`.
    #[cfg(feature = "rmcp")]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    pub async fn elicit<T: serde::de::DeserializeOwned + schemars::JsonSchema>(
        &self,
        key: &str,
        message: impl Into<String>,
    ) -> Result<Elicitation<T>, crate::ErrorEnvelope> {
        let answer = self.ask(Question::elicit::<T>(key, message)?).await?;
        crate::mcp::ask::elicitation(answer)
    }

    /// Asks the user to fill in the form `schema` (a JSON Schema object of
    /// flat properties), under `key`; the answer is its fields.
    ///
    /// # Errors
    ///
    /// As [`elicit`](Self::elicit).
    #[cfg(feature = "rmcp")]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    pub async fn elicit_form(
        &self,
        key: &str,
        message: impl Into<String>,
        schema: Value,
    ) -> Result<Elicitation<serde_json::Map<String, Value>>, crate::ErrorEnvelope> {
        let answer = self.ask(Question::form(key, message, schema)?).await?;
        crate::mcp::ask::elicitation(answer)
    }

    /// Asks the client's model for a completion, under `key`.
    ///
    /// # Errors
    ///
    /// As [`ask`](Self::ask).
    #[cfg(feature = "rmcp")]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    #[allow(deprecated)] // SEP-2577 deprecates sampling; both revisions define it.
    pub async fn sample(
        &self,
        key: &str,
        params: rmcp::model::CreateMessageRequestParams,
    ) -> Result<rmcp::model::CreateMessageResult, crate::ErrorEnvelope> {
        let answer = self.ask(Question::sample(key, params)).await?;
        crate::mcp::ask::decoded(answer)
    }

    /// The client's roots, under `key`.
    ///
    /// # Errors
    ///
    /// As [`ask`](Self::ask).
    #[cfg(feature = "rmcp")]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    #[allow(deprecated)] // SEP-2577 deprecates roots; both revisions define them.
    pub async fn roots(&self, key: &str) -> Result<Vec<rmcp::model::Root>, crate::ErrorEnvelope> {
        let answer = self.ask(Question::roots(key)).await?;
        let roots: rmcp::model::ListRootsResult = crate::mcp::ask::decoded(answer)?;
        Ok(roots.roots)
    }

    /// The `progressToken` the client sent, if it asked for progress.
    #[cfg(feature = "rmcp")]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    pub fn progress_token(&self) -> Option<&rmcp::model::ProgressToken> {
        self.live.as_ref()?.progress_token.as_ref()
    }

    /// The context of a request.
    #[cfg(feature = "rmcp")]
    pub(crate) fn live(live: Arc<crate::mcp::live::LiveRequest>) -> Self {
        ToolContext {
            caller: live.caller.clone(),
            live: Some(live),
        }
    }

    /// Who called: the identity and scopes of the bearer token the tool
    /// set's validator accepted ([`BearerAuth`](crate::mcp::BearerAuth)).
    /// `None` over stdio, from a server that checks no token, and for a
    /// detached context not given one. The tool set's guards see the same
    /// ([`ToolCall::caller`](crate::guard::ToolCall::caller)).
    pub fn caller(&self) -> Option<&Caller> {
        self.caller.as_deref()
    }

    /// The same context, called by `caller`: for a tool called from Rust
    /// (or a test) on someone's behalf.
    #[must_use]
    pub fn with_caller(mut self, caller: Caller) -> Self {
        self.caller = Some(std::sync::Arc::new(caller));
        self
    }

    /// Reports a local retry as one progress step.
    #[cfg(feature = "tokio")]
    pub(crate) async fn retrying(&self, notice: &crate::retry::RetryNotice) {
        #[cfg(feature = "rmcp")]
        if let Some(live) = &self.live {
            live.retrying(notice).await;
        }
        #[cfg(not(feature = "rmcp"))]
        let _ = notice;
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("detached", &self.is_detached())
            .field("cancelled", &self.is_cancelled())
            .field("wants_progress", &self.wants_progress())
            .field("caller", &self.caller)
            .finish()
    }
}
