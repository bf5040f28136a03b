//! How a tool set speaks MCP through rmcp: the key its rounds' states are
//! sealed with, the cache hints of its listing, the tasks it runs, and the
//! revisions it serves. Only with the `rmcp` feature.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rmcp::model::{CacheScope, ProtocolVersion, Tool};

use super::ToolSet;
use crate::mcp::definition::ToolDefinition;
use crate::mcp::log::LogThreshold;
use crate::mcp::server::sealed::Seal;
use crate::mcp::server::tasks::{
    DEFAULT_MAX_TASKS, DEFAULT_MAX_TASKS_PER_CALLER, TaskSupport, Tasks,
};
use crate::store::Store;

/// How long a client may cache a tool set's `tools/list` by default: the
/// tools of a set do not change while it serves.
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
pub const DEFAULT_LIST_TTL: Duration = Duration::from_secs(10 * 60);

/// How long a question a tool asks the client in the request (MCP
/// 2025-11-25 and before: a form, the client's model, its roots) waits for
/// its answer by default ([`ToolSet::ask_timeout`]).
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
pub const DEFAULT_ASK_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// What a tool set keeps to speak MCP through rmcp.
#[derive(Clone)]
pub(super) struct Protocol {
    /// The definitions in rmcp's shape, made once.
    rmcp_tools: OnceLock<Vec<Tool>>,
    /// What `requestState` is sealed with.
    seal: Arc<Seal>,
    /// How long clients may cache `tools/list`, and who may.
    list_cache: (Duration, CacheScope),
    /// The tasks this set runs, and which of its tools run as tasks.
    tasks: Option<Tasks>,
    /// How many tasks may run at once: in all, and per caller.
    task_bounds: (usize, usize),
    /// The MCP revisions served; `None`: every one rmcp knows.
    revisions: Option<Vec<ProtocolVersion>>,
    /// How long a question asked of the client in a request waits.
    ask_timeout: Duration,
    /// Where what must outlive a call is kept; `None`: in the tool set.
    pub(super) store: Option<Arc<dyn Store>>,
    /// How the approvals that wait in the store are run.
    pub(super) approving: Arc<super::tickets::Approving>,
    /// Where notices of new approvals are posted.
    #[cfg(feature = "inbox")]
    pub(super) webhook: Option<Arc<crate::mcp::server::webhook::Webhook>>,
}

impl Default for Protocol {
    fn default() -> Self {
        Protocol {
            rmcp_tools: OnceLock::new(),
            seal: Arc::default(),
            list_cache: (DEFAULT_LIST_TTL, CacheScope::Public),
            tasks: None,
            task_bounds: (DEFAULT_MAX_TASKS, DEFAULT_MAX_TASKS_PER_CALLER),
            revisions: None,
            ask_timeout: DEFAULT_ASK_TIMEOUT,
            store: None,
            approving: Arc::default(),
            #[cfg(feature = "inbox")]
            webhook: None,
        }
    }
}

impl Protocol {
    /// Forgets the listing made in rmcp's shape: the set's tools changed.
    pub(super) fn forget_listing(&mut self) {
        self.rmcp_tools = OnceLock::new();
    }

    /// Its tasks, none of them shared with the set it was cloned from: the
    /// set now names another service, whose tasks are its own.
    pub(super) fn own_tasks(&mut self) {
        self.tasks = self.tasks.as_ref().map(Tasks::renewed);
    }
}

impl ToolSet {
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
    /// already, and its token's scopes as keyed digests, which tell it
    /// nothing. It is bound to the tool, its arguments and the caller the
    /// bearer token check found; a state that carries a person's approval
    /// opens once in the tool set that sealed it. Without a
    /// [`store`](Self::store), a round that brings a yes opens only there —
    /// not after a restart, nor on another replica, nor in a tool set built
    /// apart (build the set once and serve its clones): give replicas a
    /// store for approvals (SECURITY.md).
    ///
    /// # Panics
    ///
    /// If `key` is shorter than 32 bytes.
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    #[must_use]
    pub fn request_state_key(mut self, key: impl AsRef<[u8]>, ttl: std::time::Duration) -> Self {
        let mut seal = Seal::new(key.as_ref(), ttl)
            .unwrap_or_else(|error| panic!("a request-state key: {error}"));
        let protocol = &mut self.inner_mut().protocol;
        if let Some(store) = &protocol.store {
            seal = seal.sharing(Arc::clone(store));
        }
        protocol.seal = Arc::new(seal);
        self
    }

    /// Keeps in `store` what must outlive one process, for every replica
    /// that shares it: the approving states already used, so that a
    /// person's yes opens one call (give the replicas the same
    /// [`request_state_key`](Self::request_state_key) too); the calls that
    /// wait for an approver ([`Approvers::scope`](crate::guard::Approvers::scope)),
    /// run once when approved; the [`tasks`](Self::tasks); and every
    /// escalation the set sends, for the [inbox](crate::mcp::HttpOptions).
    /// Without a store, each tool set keeps its own, and single use holds
    /// within it. Open one with [`store::open`](crate::store::open): a
    /// SQLite file for replicas on one host, Postgres for replicas anywhere.
    ///
    /// The set waits 20 seconds at most for any one answer of the store
    /// (longer than the 10 seconds a store waits for another replica's
    /// lock): a database out of reach — its host gone from the network,
    /// where a query would wait for TCP to give up — fails the call that
    /// needs it as any failure of the store does (a guarded call refused
    /// unrun, `transient`), and the approvals runner, the tasks and the
    /// inbox go on.
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    #[must_use]
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        let store = crate::mcp::server::bounded::bounded(store);
        let protocol = &mut self.inner_mut().protocol;
        protocol.seal = Arc::new(protocol.seal.sharing(Arc::clone(&store)));
        protocol.store = Some(store);
        self
    }

    /// How long clients may cache `tools/list` on MCP 2026-07-28, and who
    /// may: [`DEFAULT_LIST_TTL`] and `Public` unless set — the tools of a
    /// set are the same for every caller and do not change while it serves.
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    #[must_use]
    pub fn list_cache(mut self, ttl: std::time::Duration, scope: rmcp::model::CacheScope) -> Self {
        self.inner_mut().protocol.list_cache = (ttl, scope);
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
    /// [`TaskSupport::Required`], with
    /// the protocol's error, `-32021`. `.tasks(|_| TaskSupport::Optional)`
    /// runs every tool so.
    ///
    /// A task is its caller's: on a server that checks bearer tokens
    /// ([`HttpOptions::require_bearer`](crate::mcp::HttpOptions::require_bearer)),
    /// `tasks/get`, `tasks/update` and `tasks/cancel` from another subject
    /// are answered as for an unknown task. At most
    /// [`DEFAULT_MAX_TASKS`] run at once,
    /// [`DEFAULT_MAX_TASKS_PER_CALLER`]
    /// of them one caller's ([`max_tasks`](Self::max_tasks)); past that a
    /// call is answered with a `transient` envelope, reason
    /// `TOO_MANY_TASKS`, and nothing runs.
    ///
    /// With a [`store`](Self::store), every task is kept there as it goes
    /// (made, asking, finished), under a lease its replica renews: any
    /// replica that shares the store answers `tasks/get`, and passes
    /// `tasks/update` and `tasks/cancel` on to the replica that runs it; a
    /// task whose replica stopped (it died, it was restarted) is taken over
    /// by another — run again if its tool is read-only or idempotent, else
    /// ended with a `MAY_HAVE_TAKEN_EFFECT` envelope, never run twice.
    ///
    /// Without a store, tasks live in this process for their time to live
    /// (5 minutes, and as long again once finished): behind a load
    /// balancer, every request of a task must reach the replica that made
    /// it. The call that makes it and the `tasks/*` requests that follow
    /// carry different `Mcp-Name`s (the tool's name, then the task's id),
    /// so route on something the client keeps for all of them — its
    /// session, or a header of its own (`hash $http_x_client_id
    /// consistent;` in nginx) — never on `Mcp-Name`.
    ///
    /// A call a guard blocks until an approver with a scope decides
    /// ([`Approvers::scope`](crate::guard::Approvers::scope)) waits in its
    /// task, which says for whom, and ends with the call's result once it
    /// ran. A task lives 5 minutes; an approval, a day by default
    /// ([`approval_ttl`](Self::approval_ttl)): still
    /// waiting 10 seconds before its task would expire, the call ends it
    /// with the `AWAITING_APPROVAL` envelope and its ticket, as a call not
    /// run as a task is answered at once, and the call made again later
    /// reads the outcome.
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    #[must_use]
    pub fn tasks(
        mut self,
        support: impl Fn(&ToolDefinition) -> TaskSupport + Send + Sync + 'static,
    ) -> Self {
        let protocol = &mut self.inner_mut().protocol;
        let (max, per_caller) = protocol.task_bounds;
        protocol.tasks = Some(Tasks::new(support).bounded(max, per_caller));
        self
    }

    /// How many tasks may run at once ([`tasks`](Self::tasks)): `max` in
    /// all, `per_caller` of them one caller's — a bearer token's subject,
    /// or, on a server that checks none, every client together (at least 1
    /// each). `max` is each replica's own; with a [`store`](Self::store),
    /// `per_caller` counts the caller's tasks on every replica of this
    /// service sharing it (another service's are its own to bound), in
    /// one step with keeping the next there
    /// ([`Store::create_task`]), so that
    /// replicas starting one at the same moment do not pass it together
    /// (a task refused then never runs). A store that fails as a task is
    /// kept does not stop it: it runs, counted by this replica alone, and
    /// a warning is logged.
    ///
    /// A finished task is kept, its result with it, for a task's time to
    /// live (5 minutes, for `tasks/get`), and each replica keeps at most
    /// ten times as many as may run: `10 × max` in all and `10 ×
    /// per_caller` of one caller's, running or finished. A call past
    /// either bound is not started (`TOO_MANY_TASKS`, with the seconds
    /// until the first finished task is let go as its `retryAfterMs`), so
    /// that a caller starting quick tasks one after another cannot fill the
    /// server's memory. On a server that checks no token every client is
    /// one caller: one of them can fill these bounds for all
    /// ([`HttpOptions::require_bearer`](crate::mcp::HttpOptions::require_bearer)
    /// gives each their own).
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    #[must_use]
    pub fn max_tasks(mut self, max: usize, per_caller: usize) -> Self {
        let protocol = &mut self.inner_mut().protocol;
        protocol.task_bounds = (max, per_caller);
        protocol.tasks = protocol
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
        self.inner_mut().protocol.revisions = Some(served);
        self
    }

    /// How long a question a tool asks the client in the request waits for
    /// its answer ([`DEFAULT_ASK_TIMEOUT`], 10 minutes, unless set): on MCP
    /// 2025-11-25 and before, where the server asks the client while the
    /// call waits (a form, the client's model, its roots). Past it the
    /// question is not answered — the call goes on without it, and a form
    /// is withdrawn from the client (`notifications/cancelled`) — so a
    /// client that never answers holds no call, and no session, for ever.
    /// On 2026-07-28 nothing waits in the server (the question is a round's
    /// answer), and a task's questions wait as long as the task lives.
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    #[must_use]
    pub fn ask_timeout(mut self, wait: Duration) -> Self {
        self.inner_mut().protocol.ask_timeout = wait;
        self
    }

    /// How long a question asked of the client in the request waits.
    pub(crate) fn ask_timeout_of(&self) -> Duration {
        self.inner.protocol.ask_timeout
    }

    /// The definitions in rmcp's shape, made on first use.
    pub(crate) fn rmcp_tools(
        &self,
        convert: impl FnOnce(&[ToolDefinition]) -> Vec<rmcp::model::Tool>,
    ) -> &[rmcp::model::Tool] {
        self.inner
            .protocol
            .rmcp_tools
            .get_or_init(|| convert(&self.inner.definitions))
    }

    pub(crate) fn log_threshold(&self) -> &Arc<LogThreshold> {
        &self.log_threshold
    }

    pub(crate) fn seal(&self) -> &Seal {
        &self.inner.protocol.seal
    }

    pub(crate) fn task_runner(&self) -> Option<&crate::mcp::server::tasks::Tasks> {
        self.inner.protocol.tasks.as_ref()
    }

    /// The MCP revisions served.
    pub(crate) fn served_revisions(&self) -> Cow<'static, [rmcp::model::ProtocolVersion]> {
        match &self.inner.protocol.revisions {
            Some(served) => Cow::Owned(served.clone()),
            None => Cow::Borrowed(rmcp::model::ProtocolVersion::KNOWN_VERSIONS),
        }
    }

    pub(crate) fn list_cache_hint(&self) -> (std::time::Duration, rmcp::model::CacheScope) {
        self.inner.protocol.list_cache
    }
}
