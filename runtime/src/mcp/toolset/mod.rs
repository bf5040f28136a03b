//! A tool set: the registry that lists tools and dispatches `tools/call`.
//!
//! - `mod.rs`: the set, how it is built, and what it lists;
//! - `entry`: what it holds for each tool;
//! - `dispatch`: a call, from its JSON arguments to its reply;
//! - `failure`: how a failed call is shaped to be sent.

mod dispatch;
mod entry;
mod failure;

pub use entry::{FreeTool, MethodTool, ServableTool, ToolProvider};

use entry::{Dispatch, Entry, SharedCall};

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::guard::Guards;
use crate::limits::EnvelopeLimits;
use crate::mcp::definition::ToolDefinition;
use crate::mcp::log::{LogLevel, LogThreshold};
#[cfg(feature = "tokio")]
use crate::retry::RetryPolicy;
use crate::settle::Facts;

#[derive(Clone)]
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
    /// What `requestState` is sealed with.
    #[cfg(feature = "rmcp")]
    seal: Arc<crate::mcp::rounds::Seal>,
    /// How long clients may cache `tools/list`, and who may.
    #[cfg(feature = "rmcp")]
    list_cache: (std::time::Duration, rmcp::model::CacheScope),
    /// The tasks this set runs, and which of its tools run as tasks.
    #[cfg(feature = "rmcp")]
    tasks: Option<crate::mcp::tasks::Tasks>,
    /// How many tasks may run at once: in all, and per caller.
    #[cfg(feature = "rmcp")]
    task_bounds: (usize, usize),
    /// The MCP revisions served; `None`: every one rmcp knows.
    #[cfg(feature = "rmcp")]
    revisions: Option<Vec<rmcp::model::ProtocolVersion>>,
}

/// How long a client may cache a tool set's `tools/list` by default: the
/// tools of a set do not change while it serves.
#[cfg(feature = "rmcp")]
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
pub const DEFAULT_LIST_TTL: std::time::Duration = std::time::Duration::from_secs(10 * 60);

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
            #[cfg(feature = "rmcp")]
            seal: Arc::default(),
            #[cfg(feature = "rmcp")]
            list_cache: (DEFAULT_LIST_TTL, rmcp::model::CacheScope::Public),
            #[cfg(feature = "rmcp")]
            tasks: None,
            #[cfg(feature = "rmcp")]
            task_bounds: (
                crate::mcp::DEFAULT_MAX_TASKS,
                crate::mcp::DEFAULT_MAX_TASKS_PER_CALLER,
            ),
            #[cfg(feature = "rmcp")]
            revisions: None,
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

    /// The set's own registry, to change: copied first if a clone shares
    /// it, so that building on a set never changes one already handed out.
    fn inner_mut(&mut self) -> &mut Inner {
        Arc::make_mut(&mut self.inner)
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
        let facts = Facts::local(
            Cow::Owned(definition.name.clone()),
            definition.annotations.idempotent_hint,
        );
        inner.entries.push(Entry {
            definition,
            facts,
            call,
        });
        self
    }

    /// Adds a free `#[tool]` function: `.tool::<lookup_orders>()`.
    ///
    /// # Panics
    ///
    /// If a tool of the same name is already in the set.
    #[must_use]
    pub fn tool<T: ServableTool>(self) -> Self {
        self.add((T::TOOL.definition)(), Dispatch::Free(T::TOOL.call))
    }

    /// Adds every tool of a `#[tools]` impl block, sharing `state` through
    /// `&self`: a value, or an `Arc` of it that the caller keeps a handle on
    /// (then name the type: `.provider::<Orders>(Arc::clone(&orders))`).
    ///
    /// # Panics
    ///
    /// If a tool of the same name is already in the set.
    #[must_use]
    pub fn provider<S: ToolProvider>(mut self, state: impl Into<Arc<S>>) -> Self {
        let state = state.into();
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

    /// The key `requestState` is sealed with (HMAC-SHA256, 32 bytes or
    /// more), and how long a state stays valid
    /// ([`DEFAULT_REQUEST_STATE_TTL`](crate::mcp::DEFAULT_REQUEST_STATE_TTL)
    /// is a good start). On MCP 2026-07-28, a tool that asks the client
    /// answers with its questions and a sealed state, and the client sends
    /// both back: give every replica the same key, from your configuration,
    /// and any of them resumes the call. Without one, each tool set makes a
    /// random key of its own when it is made, and only it (and its clones)
    /// can resume its calls: two tool sets built apart, even in one
    /// process, refuse each other's states. The state is signed, not
    /// encrypted: it carries the client's answers, which the client knows
    /// already. It is bound to the tool, its arguments and the caller the
    /// bearer token check found; a state that carries a person's approval
    /// opens once in the tool set that sealed it (SECURITY.md says what
    /// holds across replicas).
    ///
    /// # Panics
    ///
    /// If `key` is shorter than 32 bytes.
    #[cfg(feature = "rmcp")]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    #[must_use]
    pub fn request_state_key(mut self, key: impl AsRef<[u8]>, ttl: std::time::Duration) -> Self {
        let seal = crate::mcp::rounds::Seal::new(key.as_ref(), ttl)
            .unwrap_or_else(|error| panic!("a request-state key: {error}"));
        self.inner_mut().seal = Arc::new(seal);
        self
    }

    /// How long clients may cache `tools/list` on MCP 2026-07-28, and who
    /// may: [`DEFAULT_LIST_TTL`] and `Public` unless set — the tools of a
    /// set are the same for every caller and do not change while it serves.
    #[cfg(feature = "rmcp")]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    #[must_use]
    pub fn list_cache(mut self, ttl: std::time::Duration, scope: rmcp::model::CacheScope) -> Self {
        self.inner_mut().list_cache = (ttl, scope);
        self
    }

    /// Runs the tools `support` picks as tasks (MCP's tasks extension,
    /// `io.modelcontextprotocol/tasks`, SEP-2663) for the clients that
    /// declare it: the call answers at once with a task, runs in the
    /// background — its retries, guards and questions included — and the
    /// client reads its result with `tasks/get`; a question the tool asks
    /// waits in the task's `inputRequests` for `tasks/update`; `tasks/cancel`
    /// stops it. A client that did not declare the extension is answered
    /// as before, in the request — or, for a tool whose support is
    /// [`TaskSupport::Required`](crate::mcp::TaskSupport::Required), with
    /// the protocol's error, `-32021`. `.tasks(|_| TaskSupport::Optional)`
    /// runs every tool so.
    ///
    /// A task is its caller's: on a server that checks bearer tokens
    /// ([`HttpOptions::require_bearer`](crate::mcp::HttpOptions::require_bearer)),
    /// `tasks/get`, `tasks/update` and `tasks/cancel` from another subject
    /// are answered as for an unknown task. At most
    /// [`DEFAULT_MAX_TASKS`](crate::mcp::DEFAULT_MAX_TASKS) run at once,
    /// [`DEFAULT_MAX_TASKS_PER_CALLER`](crate::mcp::DEFAULT_MAX_TASKS_PER_CALLER)
    /// of them one caller's ([`max_tasks`](Self::max_tasks)); past that a
    /// call is answered with a `transient` envelope, reason
    /// `TOO_MANY_TASKS`, and nothing runs.
    ///
    /// Tasks live in this process for their time to live (5 minutes, and as
    /// long again once finished): behind a load balancer, every request of
    /// a task must reach the replica that made it. The call that makes it
    /// and the `tasks/*` requests that follow carry different `Mcp-Name`s
    /// (the tool's name, then the task's id), so route on something the
    /// client keeps for all of them — its session, or a header of its own
    /// (`hash $http_x_client_id consistent;` in nginx) — never on
    /// `Mcp-Name`.
    #[cfg(feature = "rmcp")]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    #[must_use]
    pub fn tasks(
        mut self,
        support: impl Fn(&ToolDefinition) -> crate::mcp::TaskSupport + Send + Sync + 'static,
    ) -> Self {
        let inner = self.inner_mut();
        let (max, per_caller) = inner.task_bounds;
        inner.tasks = Some(crate::mcp::tasks::Tasks::new(support).bounded(max, per_caller));
        self
    }

    /// How many tasks may run at once ([`tasks`](Self::tasks)): `max` in
    /// all, `per_caller` of them one caller's — a bearer token's subject,
    /// or, on a server that checks none, every client together (at least 1
    /// each).
    #[cfg(feature = "rmcp")]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    #[must_use]
    pub fn max_tasks(mut self, max: usize, per_caller: usize) -> Self {
        let inner = self.inner_mut();
        inner.task_bounds = (max, per_caller);
        inner.tasks = inner
            .tasks
            .take()
            .map(|tasks| tasks.bounded(max, per_caller));
        self
    }

    /// Serves only the MCP revisions `versions` (`"2026-07-28"`,
    /// `"2025-11-25"`, …; every revision rmcp knows unless set): a client
    /// that asks for another is refused with the protocol's error — on
    /// 2026-07-28, `-32022` listing the versions served; at `initialize`,
    /// the same when none served has an `initialize`. For a deployment that
    /// serves only the stateless revision, `.protocol_versions(["2026-07-28"])`.
    ///
    /// # Panics
    ///
    /// If a version is not one rmcp knows, or none is given.
    #[cfg(feature = "rmcp")]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    #[must_use]
    pub fn protocol_versions(
        mut self,
        versions: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> Self {
        let known = rmcp::model::ProtocolVersion::KNOWN_VERSIONS;
        let mut served: Vec<rmcp::model::ProtocolVersion> = Vec::new();
        for version in versions {
            let version = version.as_ref();
            let found = known.iter().find(|known| known.as_str() == version);
            let found = found.unwrap_or_else(|| {
                let names: Vec<&str> = known.iter().map(rmcp::model::ProtocolVersion::as_str).collect();
                panic!(
                    "ToolSet::protocol_versions: `{version}` is not an MCP revision this crate serves (one of {})",
                    names.join(", ")
                )
            });
            if !served.contains(found) {
                served.push(found.clone());
            }
        }
        assert!(
            !served.is_empty(),
            "ToolSet::protocol_versions: no revision given"
        );
        self.inner_mut().revisions = Some(served);
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
    /// `logging/setLevel` does not change another's. Serving over HTTP does it
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

    #[cfg(feature = "rmcp")]
    pub(crate) fn seal(&self) -> &crate::mcp::rounds::Seal {
        &self.inner.seal
    }

    #[cfg(feature = "rmcp")]
    pub(crate) fn task_runner(&self) -> Option<&crate::mcp::tasks::Tasks> {
        self.inner.tasks.as_ref()
    }

    /// The MCP revisions served.
    #[cfg(feature = "rmcp")]
    pub(crate) fn served_revisions(&self) -> Cow<'static, [rmcp::model::ProtocolVersion]> {
        match &self.inner.revisions {
            Some(served) => Cow::Owned(served.clone()),
            None => Cow::Borrowed(rmcp::model::ProtocolVersion::KNOWN_VERSIONS),
        }
    }

    #[cfg(feature = "rmcp")]
    pub(crate) fn list_cache_hint(&self) -> (std::time::Duration, rmcp::model::CacheScope) {
        self.inner.list_cache
    }
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
