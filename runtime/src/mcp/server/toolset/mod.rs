//! A tool set: the registry that lists tools and dispatches `tools/call`.
//!
//! - `mod.rs`: the set, how it is built, and what it lists;
//! - `entry`: what it holds for each tool;
//! - `dispatch`: a call, from its JSON arguments to its reply;
//! - `asked`: a call's attempts, and the people asked about its blocks —
//!   the client's user first, then approvers at the server;
//! - `failure`: how a failed call is shaped to be sent;
//! - `kept` (with `tokio`): the escalations it keeps for a person;
//! - `protocol` (with `rmcp`): how the set speaks MCP — its sealed rounds,
//!   its cache hints, its tasks, the revisions it serves, its store;
//! - `tickets` (with `rmcp`): calls that wait in the store for an approver;
//! - `decide` (with `rmcp`): the approvers' decisions;
//! - `withdraw` (with `rmcp`): a cancelled task takes back the approval it
//!   waits for;
//! - `runner` (with `rmcp`): what every replica runs in the background —
//!   approved calls, once; expiries; the tasks of a replica that stopped;
//! - `recover` (with `rmcp`): the tasks of a stopped replica, taken over;
//! - `unrun` (with `rmcp`): what the runner ends without running it;
//! - `claim` (with `rmcp`): the runner's claim of an approved call.

mod asked;
#[cfg(feature = "rmcp")]
mod claim;
#[cfg(feature = "rmcp")]
mod decide;
mod dispatch;
mod entry;
mod failure;
#[cfg(feature = "tokio")]
mod kept;
#[cfg(feature = "rmcp")]
mod protocol;
#[cfg(feature = "rmcp")]
mod recover;
#[cfg(feature = "rmcp")]
mod runner;
#[cfg(feature = "rmcp")]
mod tickets;
#[cfg(feature = "rmcp")]
mod unrun;
#[cfg(feature = "rmcp")]
mod withdraw;

#[cfg(feature = "rmcp")]
pub use decide::DecisionError;
pub use entry::{FreeTool, MethodTool, ServableTool, ToolProvider};
#[cfg(feature = "tokio")]
pub use kept::DEFAULT_MAX_OPEN_ESCALATIONS;
#[cfg(feature = "rmcp")]
pub use protocol::{DEFAULT_ASK_TIMEOUT, DEFAULT_LIST_TTL};

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
    /// How many open escalations of one caller it keeps.
    #[cfg(feature = "tokio")]
    most_open_escalations: usize,
    /// A caller's turn, held while an escalation of theirs is counted and
    /// kept: one at a time for each caller.
    #[cfg(feature = "tokio")]
    keeping: Arc<crate::mcp::server::turns::Turns>,
    name: Option<Cow<'static, str>>,
    version: Option<Cow<'static, str>>,
    mask_internal: Option<Cow<'static, str>>,
    max_result_bytes: usize,
    limits: EnvelopeLimits,
    /// How long after its resolution an escalation is kept in the store;
    /// `None`: for good.
    #[cfg(feature = "rmcp")]
    forget_resolved_after: Option<std::time::Duration>,
    /// How the set speaks MCP through rmcp.
    #[cfg(feature = "rmcp")]
    protocol: protocol::Protocol,
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
            #[cfg(feature = "tokio")]
            most_open_escalations: kept::DEFAULT_MAX_OPEN_ESCALATIONS,
            #[cfg(feature = "tokio")]
            keeping: Arc::default(),
            name: None,
            version: None,
            mask_internal: None,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            limits: EnvelopeLimits::default(),
            #[cfg(feature = "rmcp")]
            forget_resolved_after: None,
            #[cfg(feature = "rmcp")]
            protocol: protocol::Protocol::default(),
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
        inner.protocol.forget_listing();
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
        // The name is the service its approved calls are run for, and its
        // tasks are: a runner started, or tasks made, under another name
        // (by the set this one was cloned from) are not this set's.
        #[cfg(feature = "rmcp")]
        {
            inner.protocol.own_tasks();
            self.set_approving(|_| {});
        }
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

    /// The service this set is in a store: its name, empty when it has
    /// none. Its tasks and approvals are kept as this service's, and only
    /// a set of the same name takes them over or runs them.
    #[cfg(feature = "tokio")]
    pub(crate) fn service(&self) -> &str {
        self.name().unwrap_or_default()
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
        #[cfg(feature = "rmcp")]
        self.start_runner();
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
