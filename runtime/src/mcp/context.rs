//! The request a served tool was called by: progress, log messages to the
//! client, cancellation, and who called. The live side — a request of an
//! rmcp session — is behind one trait object ([`LiveSide`]), which the
//! serving side implements; with the `rmcp` feature it also adds the ways
//! to ask the client (`mcp/server/asking.rs`).

use std::any::Any;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::caller::Caller;

pub use crate::mcp::log::{DEFAULT_LOG_LEVEL, LogLevel};

/// A boxed future, as the live side answers.
pub(crate) type Boxed<'a, T> = Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// The live side of a [`ToolContext`]: one request of an MCP client, as the
/// serving side holds it.
pub(crate) trait LiveSide: Send + Sync {
    /// Whether the client cancelled the request.
    fn is_cancelled(&self) -> bool;
    /// Completes when the client cancels the request.
    fn cancelled(&self) -> Boxed<'_, ()>;
    /// Completes when the tool set stops the call: the request cancelled.
    /// Never for a call run as a task, which its task stops
    /// (`rmcp/handler.rs`) once the approval it waits for is withdrawn.
    fn stops(&self) -> Boxed<'_, ()>;
    /// Whether the client asked for progress.
    fn wants_progress(&self) -> bool;
    /// Sends a progress notification; whether it was sent.
    fn progress<'a>(
        &'a self,
        progress: f64,
        total: Option<f64>,
        message: Option<&'a str>,
    ) -> Boxed<'a, bool>;
    /// Sends a log message; whether it was sent.
    fn log(&self, level: LogLevel, data: Value) -> Boxed<'_, bool>;
    /// Reports a local retry as one progress step.
    #[cfg(feature = "tokio")]
    fn retrying<'a>(&'a self, notice: &'a crate::retry::RetryNotice) -> Boxed<'a, ()>;
    /// The live side as itself, for the serving side's own methods (with
    /// `rmcp`, the only side that makes requests).
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    fn as_any(&self) -> &dyn Any;
}

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
    /// The request, when the context belongs to one.
    live: Option<Arc<dyn LiveSide>>,
    /// Who called, as a token validator said.
    caller: Option<Arc<Caller>>,
    /// The key that names this run of the call to the systems it changes.
    idempotency_key: Option<Arc<str>>,
}

impl ToolContext {
    /// A context of no request: it sends nothing and is never cancelled.
    pub fn detached() -> Self {
        ToolContext::default()
    }

    /// The context of the request `live`, made by `caller`: what the
    /// serving side (with `rmcp`) hands a tool.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn of_request(live: Arc<dyn LiveSide>, caller: Option<Arc<Caller>>) -> Self {
        ToolContext {
            live: Some(live),
            caller,
            idempotency_key: None,
        }
    }

    /// The live side, if the context belongs to a request.
    pub(crate) fn live_side(&self) -> Option<&dyn LiveSide> {
        self.live.as_deref()
    }

    /// Whether the context belongs to a request from an MCP client.
    pub fn is_detached(&self) -> bool {
        self.live_side().is_none()
    }

    /// Whether the client cancelled the request — for a call run as a task,
    /// the task (`tasks/cancel`). A tool that checks between steps stops at
    /// the next one; one that awaits is stopped at its next `.await` by the
    /// tool set in any case.
    pub fn is_cancelled(&self) -> bool {
        self.live.as_ref().is_some_and(|live| live.is_cancelled())
    }

    /// Completes when the client cancels the request — for a call run as a
    /// task, the task (and never, once the task ended and was let go, 5
    /// minutes later, uncancelled); never, for a detached context. Work a
    /// tool hands to a task of its own can stop with it. A tool that
    /// returns when it hears a task's cancellation ends the task with what
    /// it returns (SEP-2663: a cancelled task may still complete); one that
    /// does not is stopped at its next `.await`, and the task ends
    /// `cancelled` — `failed`, saying so, if an approval it waited for
    /// could not be withdrawn.
    pub async fn cancelled(&self) {
        match &self.live {
            Some(live) => live.cancelled().await,
            None => std::future::pending::<()>().await,
        }
    }

    /// Completes when the tool set stops the call at its next `.await`;
    /// never, for a detached context.
    pub(crate) async fn stopped(&self) {
        match &self.live {
            Some(live) => live.stops().await,
            None => std::future::pending::<()>().await,
        }
    }

    /// Whether the client asked for progress (sent a `progressToken`).
    pub fn wants_progress(&self) -> bool {
        self.live.as_ref().is_some_and(|live| live.wants_progress())
    }

    /// Sends a progress notification: `progress` so far, of `total` if
    /// known, with an optional `message`. Returns whether it was sent: not
    /// when the client asked for no progress, when the request was
    /// cancelled, when `progress` is not finite or not above the last value
    /// sent, or when the transport failed.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        match &self.live {
            Some(live) => live.progress(progress, total, message).await,
            None => false,
        }
    }

    /// Sends `data` (any JSON: a string, an object of fields) to the client
    /// as a `notifications/message` at `level`, from a logger named after
    /// the tool. Returns whether it was sent: not below the level the
    /// client set with `logging/setLevel` ([`DEFAULT_LOG_LEVEL`] until it
    /// does) — on MCP 2026-07-28, the level in the request's `_meta`, and
    /// nothing without one — after cancellation, when `data` does not
    /// serialize, or when the transport failed.
    pub async fn log(&self, level: LogLevel, data: impl Serialize) -> bool {
        let Some(live) = &self.live else {
            return false;
        };
        let Ok(data) = crate::json::strict::to_value(&data) else {
            return false;
        };
        live.log(level, data).await
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
        self.caller = Some(Arc::new(caller));
        self
    }

    /// The key that names this call to the systems it changes, for them to
    /// apply it once: an approved call that waited in the store runs with
    /// its ticket's id ([`Ticket`](crate::Ticket)), the same on whichever
    /// replica runs it and however often that is tried. Pass it on as the
    /// payment provider's `Idempotency-Key`, say. `None` for a call run
    /// straight away.
    pub fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    /// The same context, with `key` as its
    /// [`idempotency_key`](Self::idempotency_key).
    #[must_use]
    pub fn with_idempotency_key(mut self, key: impl Into<Arc<str>>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// Reports a local retry as one progress step.
    #[cfg(feature = "tokio")]
    pub(crate) async fn retrying(&self, notice: &crate::retry::RetryNotice) {
        if let Some(live) = &self.live {
            live.retrying(notice).await;
        }
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("detached", &self.is_detached())
            .field("cancelled", &self.is_cancelled())
            .field("wants_progress", &self.wants_progress())
            .field("caller", &self.caller)
            .field("idempotency_key", &self.idempotency_key)
            .finish()
    }
}
