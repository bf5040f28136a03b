//! A tool set: the registry that lists tools and dispatches `tools/call`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::call::{Query, ToolInfo, complete, panicked};
use crate::category::ErrorCategory;
use crate::envelope::{ErrorEnvelope, ToolResult, Violation};
use crate::escalation::Escalation;
use crate::guard::Guards;
use crate::json::depth::{MAX_DEPTH, deeper_than, dismantle, too_deep_marker};
use crate::limits::EnvelopeLimits;
use crate::mcp::arguments::Success;
use crate::mcp::arguments::invalid_arguments;
use crate::mcp::context::ToolContext;
use crate::mcp::definition::ToolDefinition;
use crate::mcp::log::{LogLevel, LogThreshold};
use crate::mcp::reply::{ProtocolError, ToolReply};
use crate::mcp::state::{BoxFuture, CallState};
use crate::mcp::violations::kind;
use crate::panic::catch_unwind_future;
use crate::reasons;
use crate::redact::arguments::ArgumentMask;
use crate::redact::text::scrub;
use crate::redact::values::SecretValues;
#[cfg(feature = "tokio")]
use crate::retry::{RetryNotice, RetryPolicy, TokioSleeper};
use futures_util::future::{Either, select};
use std::pin::pin;

/// One attempt of a free tool: the JSON arguments in, the success value as
/// JSON (or the envelope) out.
pub type FreeCall =
    for<'a> fn(&'a Map<String, Value>, &'a CallState) -> BoxFuture<'a, ToolResult<Success>>;

/// One attempt of a method tool on the shared state `S`.
pub type MethodCall<S> =
    for<'a> fn(Arc<S>, &'a Map<String, Value>, &'a CallState) -> BoxFuture<'a, ToolResult<Success>>;

/// What `#[tool]` generates to serve a free function.
#[derive(Clone, Copy)]
pub struct FreeTool {
    /// The tool's MCP definition.
    pub definition: fn() -> ToolDefinition,
    /// One attempt.
    pub call: FreeCall,
}

impl fmt::Debug for FreeTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FreeTool").finish_non_exhaustive()
    }
}

/// What `#[tool]` generates to serve a method of a `#[tools]` block.
pub struct MethodTool<S> {
    /// The tool's MCP definition.
    pub definition: fn() -> ToolDefinition,
    /// One attempt, holding its own handle on the state.
    pub call: MethodCall<S>,
}

impl<S> fmt::Debug for MethodTool<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MethodTool").finish_non_exhaustive()
    }
}

/// A free `#[tool]` function a [`ToolSet`] can serve: `#[tool]` implements it
/// for a hidden companion type named like the function, so that
/// `ToolSet::new().tool::<lookup_orders>()` registers `fn lookup_orders`.
/// Its contents are generated; there is nothing to call on it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be served over MCP",
    label = "not a servable tool",
    note = "a served tool takes only owned, `Deserialize + JsonSchema` arguments that a client can send: no generics, no references, no skipped parameters, and no `self`, and it is not `#[tool(local)]`",
    note = "serve methods that share state through a `#[tools]` impl block"
)]
pub trait ServableTool: 'static {
    #[doc(hidden)]
    const TOOL: FreeTool;
}

/// A type whose methods are tools: `#[tools]` on its `impl` block implements
/// it. The tools share the value through `&self`, such as a connection pool.
/// Its contents are generated; there is nothing to call on it.
pub trait ToolProvider: Send + Sync + 'static {
    #[doc(hidden)]
    fn __tools() -> Vec<MethodTool<Self>>
    where
        Self: Sized;
}

/// One attempt of a tool of a `#[tools]` block, its state bound.
type SharedCall = dyn for<'a> Fn(&'a Map<String, Value>, &'a CallState) -> BoxFuture<'a, ToolResult<Success>>
    + Send
    + Sync;

struct Entry {
    definition: ToolDefinition,
    info: ToolInfo,
    call: Dispatch,
}

/// How an entry runs a call: a free function's `call` as a plain function
/// pointer (nothing instantiated per tool to store it), or a closure over the
/// shared state of a `#[tools]` block.
enum Dispatch {
    Free(FreeCall),
    Shared(Arc<SharedCall>),
}

impl Dispatch {
    fn call<'a>(
        &self,
        arguments: &'a Map<String, Value>,
        context: &'a CallState,
    ) -> BoxFuture<'a, ToolResult<Success>> {
        match self {
            Dispatch::Free(call) => call(arguments, context),
            Dispatch::Shared(call) => call(arguments, context),
        }
    }
}

struct Inner {
    entries: Vec<Entry>,
    definitions: Vec<ToolDefinition>,
    index: HashMap<String, usize>,
    guards: Arc<Guards>,
    #[cfg(feature = "tokio")]
    retry: Option<RetryPolicy>,
    name: Option<Cow<'static, str>>,
    version: Option<Cow<'static, str>>,
    mask_internal: Option<Cow<'static, str>>,
    max_result_bytes: usize,
    limits: EnvelopeLimits,
    /// The definitions in rmcp's shape, made once.
    #[cfg(feature = "rmcp")]
    rmcp_tools: std::sync::OnceLock<Vec<rmcp::model::Tool>>,
}

/// The default cap on a result's JSON, its text copy included: well under
/// the 16 MiB line that MCP clients read.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 4 * 1024 * 1024;

/// The smallest cap on a result: room for a trimmed envelope and its copy.
const MIN_RESULT_BYTES: usize = 16 * 1024;

impl Default for Inner {
    fn default() -> Self {
        Inner {
            entries: Vec::new(),
            definitions: Vec::new(),
            index: HashMap::new(),
            guards: Arc::new(Guards::default()),
            #[cfg(feature = "tokio")]
            retry: None,
            name: None,
            version: None,
            mask_internal: None,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            limits: EnvelopeLimits::default(),
            #[cfg(feature = "rmcp")]
            rmcp_tools: std::sync::OnceLock::new(),
        }
    }
}

/// A registry of tools that lists their MCP definitions and dispatches
/// `tools/call` to them. Cheap to clone: clones share the tools.
///
/// ```
/// use serde_json::json;
/// use tool_envelope::{tool, ErrorEnvelope, Found};
/// use tool_envelope::mcp::ToolSet;
///
/// /// Look up a customer's orders.
/// #[tool(read_only)]
/// fn lookup_orders(
///     /// The customer, as `C-NNNN`.
///     customer_id: String,
/// ) -> Result<Found<String>, ErrorEnvelope> {
///     let _ = customer_id;
///     Ok(Found::none())
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let tools = ToolSet::new().tool::<lookup_orders>();
/// assert_eq!(tools.list()[0].name, "lookup_orders");
///
/// let result = tools.call("lookup_orders", json!({"customer_id": "C-0000"})).await.unwrap();
/// assert!(!result.is_error);
/// assert_eq!(result.structured_content, Some(json!({"isError": false, "empty": true, "matches": 0})));
///
/// let result = tools.call("lookup_orders", json!({"customer_id": 42})).await.unwrap();
/// assert!(result.is_error, "bad arguments are a tool error the model can correct");
/// assert_eq!(result.envelope().unwrap().violations()[0].field, "customer_id");
///
/// assert_eq!(tools.call("nope", json!({})).await.unwrap_err().code, -32602);
/// # }
/// ```
#[derive(Clone, Default)]
pub struct ToolSet {
    inner: Arc<Inner>,
    /// The least severe log level the session's client asked for; clones
    /// share it, [`ToolSet::for_session`] makes a new one.
    log_threshold: Arc<LogThreshold>,
}

impl ToolSet {
    /// An empty tool set.
    pub fn new() -> Self {
        ToolSet::default()
    }

    fn inner_mut(&mut self) -> &mut Inner {
        Arc::get_mut(&mut self.inner).expect("a tool set is built before it is shared")
    }

    fn add(mut self, definition: ToolDefinition, call: Dispatch) -> Self {
        let inner = self.inner_mut();
        assert!(
            !inner.index.contains_key(&definition.name),
            "a tool named `{}` is already in this tool set",
            definition.name
        );
        #[cfg(feature = "rmcp")]
        {
            inner.rmcp_tools = std::sync::OnceLock::new();
        }
        inner
            .index
            .insert(definition.name.clone(), inner.entries.len());
        inner.definitions.push(definition.clone());
        let info = ToolInfo::served(
            definition.name.clone(),
            definition.annotations.idempotent_hint,
        );
        inner.entries.push(Entry {
            definition,
            info,
            call,
        });
        self
    }

    /// Adds a free `#[tool]` function: `.tool::<lookup_orders>()`.
    ///
    /// # Panics
    ///
    /// If a tool of the same name is already in the set, or the set is already shared.
    #[must_use]
    pub fn tool<T: ServableTool>(self) -> Self {
        self.add((T::TOOL.definition)(), Dispatch::Free(T::TOOL.call))
    }

    /// Adds every tool of a `#[tools]` impl block, sharing `state` through `&self`.
    ///
    /// # Panics
    ///
    /// If a tool of the same name is already in the set, or the set is already shared.
    #[must_use]
    pub fn provider<S: ToolProvider>(self, state: S) -> Self {
        self.provider_arc(Arc::new(state))
    }

    /// [`provider`](Self::provider), with a value the caller keeps a handle on.
    ///
    /// # Panics
    ///
    /// If a tool of the same name is already in the set, or the set is already shared.
    #[must_use]
    pub fn provider_arc<S: ToolProvider>(mut self, state: Arc<S>) -> Self {
        for spec in S::__tools() {
            let state = Arc::clone(&state);
            let call = spec.call;
            let call: Arc<SharedCall> =
                Arc::new(move |arguments, context| call(Arc::clone(&state), arguments, context));
            self = self.add((spec.definition)(), Dispatch::Shared(call));
        }
        self
    }

    /// Guards checked before every call, once its arguments have decoded,
    /// on the arguments as received with their secrets masked. A blocked
    /// call never reaches the tool.
    #[must_use]
    pub fn guards(mut self, guards: Guards) -> Self {
        self.inner_mut().guards = Arc::new(guards);
        self
    }

    /// Retries the transient failures of every tool locally, under `policy`;
    /// what cannot be recovered comes back as an escalation.
    #[cfg(feature = "tokio")]
    #[must_use]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "tokio")))]
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.inner_mut().retry = Some(policy);
        self
    }

    /// The name and version this set reports to MCP clients.
    #[must_use]
    pub fn server_info(
        mut self,
        name: impl Into<Cow<'static, str>>,
        version: impl Into<Cow<'static, str>>,
    ) -> Self {
        let inner = self.inner_mut();
        inner.name = Some(name.into());
        inner.version = Some(version.into());
        self
    }

    /// Masks what an internal error may say from clients: a failure of the
    /// `other` category, and a failure whose message was written by a type
    /// this crate does not know (a standard library error, an `anyhow`
    /// chain, a panic) whatever its category, is sent with `text` as its
    /// message; and in every failure, credentials in the text (the password
    /// of a URL, the value after `password=`, `token:`, `Authorization:
    /// Bearer`…) are replaced by `[redacted]`. The category, the retry flag,
    /// the reason and the alternatives stay. With the `tracing` feature, the
    /// full message — its credentials masked — is logged at `ERROR`.
    #[must_use]
    pub fn mask_internal_errors(mut self, text: impl Into<Cow<'static, str>>) -> Self {
        self.inner_mut().mask_internal = Some(text.into());
        self
    }

    /// The largest result a call may return, as JSON — the structured
    /// content and its text copy together (4 MiB by default, at least
    /// 16 KiB). A larger success is not truncated — partial data is never
    /// presented as complete — but replaced by an `other` envelope that says
    /// how large it was and suggests a narrower call. A failure is trimmed
    /// until it fits: the pillars stay, shorter.
    #[must_use]
    pub fn max_result_bytes(mut self, bytes: usize) -> Self {
        self.inner_mut().max_result_bytes = bytes.max(MIN_RESULT_BYTES);
        self
    }

    /// The limits the set's envelopes are sent with ([`EnvelopeLimits::default`] unless set).
    #[must_use]
    pub fn limits(mut self, limits: EnvelopeLimits) -> Self {
        self.inner_mut().limits = limits;
        self
    }

    /// The name this set reports, if set.
    pub fn name(&self) -> Option<&str> {
        self.inner.name.as_deref()
    }

    /// The version this set reports, if set.
    pub fn version(&self) -> Option<&str> {
        self.inner.version.as_deref()
    }

    /// The MCP definitions of the tools, in the order they were added.
    pub fn list(&self) -> &[ToolDefinition] {
        &self.inner.definitions
    }

    /// The definition of the tool called `name`.
    pub fn get(&self, name: &str) -> Option<&ToolDefinition> {
        self.inner
            .index
            .get(name)
            .map(|&i| &self.inner.definitions[i])
    }

    /// This set with a log level of its own: what a server serving many
    /// sessions from one set gives each session, so that one client's
    /// `logging/setLevel` does not change another's. `http_service` does it
    /// for every session.
    #[must_use]
    pub fn for_session(&self) -> Self {
        ToolSet {
            inner: Arc::clone(&self.inner),
            log_threshold: Arc::default(),
        }
    }

    /// Sets the least severe level of the log messages tools send to the
    /// client ([`DEFAULT_LOG_LEVEL`](crate::mcp::DEFAULT_LOG_LEVEL) until
    /// set): what a server answers `logging/setLevel` with. The tool set
    /// does it itself when it is the server; a server that composes it
    /// forwards the request here.
    pub fn set_log_level(&self, level: LogLevel) {
        self.log_threshold.set(level);
    }

    /// The least severe level of the log messages sent to the client.
    pub fn log_level(&self) -> LogLevel {
        self.log_threshold.get()
    }

    /// The definitions in rmcp's shape, made on first use.
    #[cfg(feature = "rmcp")]
    pub(crate) fn rmcp_tools(
        &self,
        convert: impl FnOnce(&[ToolDefinition]) -> Vec<rmcp::model::Tool>,
    ) -> &[rmcp::model::Tool] {
        self.inner
            .rmcp_tools
            .get_or_init(|| convert(&self.inner.definitions))
    }

    #[cfg(feature = "rmcp")]
    pub(crate) fn log_threshold(&self) -> &Arc<LogThreshold> {
        &self.log_threshold
    }

    /// Calls the tool `name` with `arguments` (a JSON object, or `null` for
    /// none) and returns MCP's `ToolReply`; the tool gets a detached
    /// [`ToolContext`]. See [`call_with`](Self::call_with).
    ///
    /// - success: the value as `structuredContent` and its JSON as text; a
    ///   valid empty look-up stays a success;
    /// - failure: `isError: true` and the envelope (or, under a retry policy,
    ///   the escalation) as `structuredContent` and text;
    /// - arguments that do not decode, that are not an object, or that nest
    ///   deeper than [`MAX_DEPTH`]: a `validation` envelope naming each
    ///   offending field, with the arguments as received — secrets and keys
    ///   the tool does not declare masked;
    /// - a blocked call: the guard's `business` envelope; the tool never runs;
    /// - a panic anywhere in the call: an `other` envelope that keeps the
    ///   arguments and the partial results gathered;
    /// - an unknown tool: `Err`, a JSON-RPC `-32602` protocol error.
    pub async fn call(&self, name: &str, arguments: Value) -> Result<ToolReply, ProtocolError> {
        self.call_with(name, arguments, ToolContext::detached())
            .await
    }

    /// [`call`](Self::call), in the request `context`: the tool gets it if
    /// it takes a [`ToolContext`], local retries are reported to it as
    /// progress, and once it is cancelled the call stops at its next
    /// `.await` — no retry follows, and the answer is `Err`, a
    /// [`ProtocolError::REQUEST_CANCELLED`] that is never sent (a cancelled
    /// MCP request gets no reply).
    pub async fn call_with(
        &self,
        name: &str,
        arguments: Value,
        context: ToolContext,
    ) -> Result<ToolReply, ProtocolError> {
        let Some(&index) = self.inner.index.get(name) else {
            dismantle(arguments);
            return Err(ProtocolError::unknown_tool(
                name,
                self.inner.definitions.iter().map(|d| d.name.clone()),
            ));
        };
        let entry = &self.inner.entries[index];
        let definition = &entry.definition;
        // Before decoding, no `Secret` has been sent: the schema says it all.
        let mask = ArgumentMask::new(&definition.checks.secrets, &[]);
        if deeper_than(&arguments, MAX_DEPTH) {
            let envelope = too_deep(entry, arguments);
            return Ok(self.failure(entry, Failure::refused(envelope)));
        }
        let arguments = match arguments {
            Value::Object(arguments) => arguments,
            Value::Null => Map::new(),
            other => {
                // Not an object: what it was, never its content.
                let violation = Violation::new(
                    "arguments",
                    format!("expected a JSON object, got {}", kind(&other)),
                );
                let mut envelope = invalid_arguments(
                    &entry.info,
                    vec![violation],
                    Query::Arguments(&Map::new(), mask),
                );
                envelope.fields.attempted_query = Some(Value::String(format!(
                    "[arguments sent as {}, not an object: not shown]",
                    kind(&other)
                )));
                return Ok(self.failure(entry, Failure::refused(envelope)));
            }
        };
        let state = CallState::new(&definition.checks, &self.inner.guards, context);
        // Whatever panics — the decoding, a `Serialize`, the set itself —
        // answers with an envelope that keeps what the call knows: a request
        // is never left without a reply.
        let work = catch_unwind_future(self.attempts(entry, &arguments, &state));
        let finished = match state.context_ref().is_detached() {
            true => work.await,
            false => {
                let cancelled = state.context_ref().cancelled();
                match select(pin!(work), pin!(cancelled)).await {
                    Either::Left((finished, _)) => finished,
                    Either::Right(((), _)) => return Err(ProtocolError::cancelled(name)),
                }
            }
        };
        let outcome = match finished {
            Ok(outcome) => outcome,
            Err(panic) => {
                let mut envelope = panicked(&entry.info.name, panic.as_ref());
                fill(&mut envelope, entry, &arguments, &state);
                Err(Failure::Envelope(envelope))
            }
        };
        Ok(match outcome {
            Ok(success) => self.success(entry, success, &arguments, &state),
            Err(mut failure) => {
                failure.mask_values(&state.mask().values(&arguments));
                self.failure(entry, failure)
            }
        })
    }

    /// A success: the value as `structuredContent` and its JSON as text, or
    /// the content blocks as they are; when that is over
    /// `max_result_bytes`, the envelope that says so.
    fn success(
        &self,
        entry: &Entry,
        success: Success,
        arguments: &Map<String, Value>,
        state: &CallState,
    ) -> ToolReply {
        let (reply, size) = match success {
            Success::Json(value) => {
                let structured = entry.definition.structured(value);
                let text = structured.to_string();
                let size = reply_size(&text);
                (ToolReply::structured(structured, text, false), size)
            }
            Success::Contents(contents) => {
                let reply = ToolReply::contents(contents);
                let size = serde_json::to_vec(&reply).map_or(usize::MAX, |json| json.len());
                (reply, size)
            }
        };
        if size > self.inner.max_result_bytes {
            let query = state.query(arguments);
            let envelope = too_large(entry, size, self.inner.max_result_bytes, query);
            return self.failure(entry, Failure::Envelope(envelope));
        }
        reply
    }

    #[cfg(feature = "tokio")]
    async fn attempts(
        &self,
        entry: &Entry,
        arguments: &Map<String, Value>,
        context: &CallState,
    ) -> Result<Success, Failure> {
        let Some(policy) = &self.inner.retry else {
            return self.attempt(entry, arguments, context).await;
        };
        let report = |notice: RetryNotice| {
            let context = context.context_ref();
            async move { context.retrying(&notice).await }
        };
        let mut escalation = match policy
            .retry_observed(
                &TokioSleeper,
                || entry.call.call(arguments, context),
                report,
            )
            .await
            .result
        {
            Ok(value) => return Ok(value),
            Err(escalation) => escalation,
        };
        fill(&mut escalation.envelope, entry, arguments, context);
        Err(Failure::Escalated(escalation))
    }

    #[cfg(not(feature = "tokio"))]
    async fn attempts(
        &self,
        entry: &Entry,
        arguments: &Map<String, Value>,
        context: &CallState,
    ) -> Result<Success, Failure> {
        self.attempt(entry, arguments, context).await
    }

    /// One attempt, its failure as an envelope.
    async fn attempt(
        &self,
        entry: &Entry,
        arguments: &Map<String, Value>,
        context: &CallState,
    ) -> Result<Success, Failure> {
        entry
            .call
            .call(arguments, context)
            .await
            .map_err(|mut envelope| {
                fill(&mut envelope, entry, arguments, context);
                Failure::Envelope(envelope)
            })
    }

    /// The failed result: masked if the set says so, and sent within the
    /// set's limits and within `max_result_bytes`, its text copy included.
    fn failure(&self, entry: &Entry, failure: Failure) -> ToolReply {
        // Under a retry policy every failure is an escalation, even one that
        // never reached the tool.
        #[cfg(feature = "tokio")]
        let failure = match self.inner.retry.is_some() {
            true => failure.escalated(),
            false => failure,
        };
        let failure = match &self.inner.mask_internal {
            Some(text) => failure.masked(&entry.definition.name, text),
            None => failure,
        };
        // The result carries the JSON twice: as structured content and as text.
        let cap = self.inner.max_result_bytes;
        let mut limits = self.inner.limits;
        let mut structured = failure.to_wire(&limits);
        let mut text = failure.to_wire_text(&limits);
        // The first round lowers each cap to the size of its part, so that
        // a large part under a generous cap shrinks too; each round then
        // shrinks the caps in proportion. At the floors an envelope is a few
        // KB, well within the smallest cap: they are the last resort.
        for round in 0..8 {
            let size = reply_size(&text);
            if size <= cap {
                return ToolReply::structured(structured, text, true);
            }
            if round == 0 {
                limits = limits.fitted_to(&failure.envelope().fields);
            }
            limits = limits.scaled(cap, size.saturating_add(size / 8));
            structured = failure.to_wire(&limits);
            text = failure.to_wire_text(&limits);
        }
        if reply_size(&text) > cap {
            structured = failure.to_wire(&EnvelopeLimits::floors());
            text = failure.to_wire_text(&EnvelopeLimits::floors());
        }
        ToolReply::structured(structured, text, true)
    }
}

/// The size of a result carrying `text` — the compact JSON of its structured
/// content — as sent: the structured content, the text copy, escaped inside
/// its JSON string, and the keys around them.
fn reply_size(text: &str) -> usize {
    /// `{"content":[{"type":"text","text":""}],"structuredContent":,"isError":false}` and room.
    const AROUND: usize = 128;
    text.len()
        .saturating_add(crate::limits::escaped_len(text))
        .saturating_add(AROUND)
}

/// How a call failed, kept typed until it is sent.
#[cfg_attr(not(feature = "tokio"), allow(dead_code))]
enum Failure {
    Envelope(ErrorEnvelope),
    Escalated(Escalation),
}

impl Failure {
    /// A failure before the tool ran.
    fn refused(mut envelope: ErrorEnvelope) -> Self {
        envelope.set_refused();
        Failure::Envelope(envelope)
    }

    /// As an escalation.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    fn escalated(self) -> Self {
        match self {
            Failure::Envelope(envelope) => Failure::Escalated(Escalation::from_envelope(envelope)),
            escalated => escalated,
        }
    }

    /// With the call's secret values masked wherever they turn up: a
    /// message or violation that quotes one, an attempted query, partial
    /// results, the escalation's detail.
    fn mask_values(&mut self, values: &SecretValues) {
        let Some(masker) = values.masker() else {
            return;
        };
        if let Failure::Escalated(escalation) = self
            && let Some(detail) = &mut escalation.detail
            && let Cow::Owned(masked) = masker.text(detail)
        {
            *detail = masked;
        }
        self.envelope_mut().mask_values(&masker);
    }

    fn envelope(&self) -> &ErrorEnvelope {
        match self {
            Failure::Envelope(envelope) => envelope,
            Failure::Escalated(escalation) => &escalation.envelope,
        }
    }

    fn envelope_mut(&mut self) -> &mut ErrorEnvelope {
        match self {
            Failure::Envelope(envelope) => envelope,
            Failure::Escalated(escalation) => &mut escalation.envelope,
        }
    }

    /// With what an internal error may say masked; see
    /// [`ToolSet::mask_internal_errors`].
    fn masked(mut self, tool: &str, text: &str) -> Self {
        if let Failure::Escalated(escalation) = &mut self
            && let Some(detail) = &mut escalation.detail
            && let Cow::Owned(scrubbed) = scrub(detail)
        {
            *detail = scrubbed;
        }
        let envelope = self.envelope_mut();
        let internal = envelope.fields.category == ErrorCategory::Other || envelope.is_foreign();
        if let Cow::Owned(scrubbed) = scrub(&envelope.fields.message) {
            envelope.fields.message = scrubbed;
        }
        if internal {
            #[cfg(feature = "tracing")]
            tracing::error!(
                tool,
                message = envelope.fields.message.as_str(),
                "internal tool error, masked in the result"
            );
            #[cfg(not(feature = "tracing"))]
            let _ = tool;
            envelope.fields.message = text.to_owned();
        }
        for alternative in &mut envelope.fields.alternatives {
            if let Cow::Owned(scrubbed) = scrub(alternative) {
                *alternative = scrubbed;
            }
        }
        let foreign = envelope.is_foreign();
        for violation in &mut envelope.fields.violations {
            if foreign {
                // A foreign error's violations are its own text.
                violation.description = text.to_owned();
            } else if let Cow::Owned(scrubbed) = scrub(&violation.description) {
                violation.description = scrubbed;
            }
        }
        self
    }

    fn to_wire(&self, limits: &EnvelopeLimits) -> Value {
        match self {
            Failure::Envelope(envelope) => envelope.to_wire(limits),
            Failure::Escalated(escalation) => escalation.to_wire(limits),
        }
    }

    /// The JSON text of the failure, keys in the wire format's order.
    fn to_wire_text(&self, limits: &EnvelopeLimits) -> String {
        match self {
            Failure::Envelope(envelope) => envelope.to_wire_text(limits),
            Failure::Escalated(escalation) => escalation.to_wire_text(limits),
        }
    }
}

/// What a failure reported without — an attempt cut off by the deadline, a
/// result that would not serialize, a panic — comes from the call itself:
/// everything its collector gathered, which tool, and which arguments.
fn fill(
    envelope: &mut ErrorEnvelope,
    entry: &Entry,
    arguments: &Map<String, Value>,
    context: &CallState,
) {
    if envelope.fields.partial_results.is_none() {
        envelope.fields.partial_results = context.gathered();
    }
    if envelope.fields.tool.is_none() {
        envelope.fields.tool = Some(entry.info.name.clone());
    }
    if envelope.fields.attempted_query.is_none() {
        envelope.fields.attempted_query = Some(context.query(arguments).into_value());
    }
}

/// The envelope of a result too large to send: not retryable — the same call
/// gives the same result — and the way out is a narrower call.
fn too_large(entry: &Entry, size: usize, cap: usize, query: Query<'_>) -> ErrorEnvelope {
    let envelope = ErrorEnvelope::other(format!(
        "the result of `{}` is {size} bytes with its text copy, over the {cap}-byte limit of this server",
        entry.info.name
    ))
    .with_reason(reasons::RESULT_TOO_LARGE)
    .with_alternative(
        "Call again with narrower arguments: tighter filters, a lower limit, a smaller page",
    );
    complete(envelope, &entry.info, || query.into_value(), &())
}

/// The validation envelope of arguments nested too deep: each offending
/// field named, and kept in `attempted_query` as a marker — the rest as sent,
/// secrets masked.
fn too_deep(entry: &Entry, arguments: Value) -> ErrorEnvelope {
    let description = format!("is nested more than {MAX_DEPTH} levels deep");
    let mut violations = Vec::new();
    let mut shown = Map::new();
    match &arguments {
        Value::Object(fields) => {
            for (key, value) in fields {
                if deeper_than(value, MAX_DEPTH - 1) {
                    violations.push(Violation::new(key.clone(), description.clone()));
                    shown.insert(key.clone(), too_deep_marker());
                } else {
                    shown.insert(key.clone(), value.clone());
                }
            }
        }
        _ => violations.push(Violation::new("arguments", description)),
    }
    let mask = ArgumentMask::new(&entry.definition.checks.secrets, &[]);
    let mut envelope = invalid_arguments(&entry.info, violations, Query::Arguments(&shown, mask));
    if !arguments.is_object() {
        envelope.fields.attempted_query = Some(too_deep_marker());
    }
    dismantle(arguments);
    envelope
}

impl fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolSet")
            .field(
                "tools",
                &self
                    .inner
                    .definitions
                    .iter()
                    .map(|d| &d.name)
                    .collect::<Vec<_>>(),
            )
            .field("guards", &self.inner.guards)
            .finish_non_exhaustive()
    }
}
