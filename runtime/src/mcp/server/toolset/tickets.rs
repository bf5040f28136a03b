//! A tool set's approvals that wait in its store
//! ([`Approvers::scope`](crate::guard::Approvers::scope)): a blocked call
//! opens or reads its ticket, an approver decides it
//! ([`ToolSet::decide`]), and a runner in every replica that shares the
//! store runs each approved call once ([`ToolSet::run_approved`]).

use std::fmt;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use serde_json::{Map, Value};

use super::dispatch::Outcome;
use super::entry::Entry;
use super::failure::Failure;
use super::{Inner, ToolSet};
use crate::caller::Caller;
use crate::envelope::ErrorEnvelope;
use crate::escalation::Escalation;
use crate::mcp::context::ToolContext;
use crate::mcp::server::held;
use crate::mcp::server::state::CallState;
use crate::mcp::server::ticket::{self, DEFAULT_APPROVAL_TTL, Ticketed, Waiting};
use crate::reasons;
use crate::store::{
    ApprovalRecord, ApprovalState, AuditEntry, Decision, EscalationRecord, Store, StoreError,
    TaskState, TaskUpdate, now_ms,
};

/// How often a replica looks for approved calls it did not see decided.
const POLL: Duration = Duration::from_secs(1);

/// How long a replica holds an approved call it runs before another may
/// take it over.
const LEASE: Duration = Duration::from_secs(10 * 60);

/// How many approved calls one batch of the runner takes on.
const BATCH: u32 = 16;

/// How many batches one pass takes on at most.
const MAX_BATCHES: usize = 64;

/// What a tool set keeps to run the approved calls of its store.
pub(super) struct Approving {
    /// How long an approval waits for a decision.
    pub(super) ttl: Duration,
    /// Whether a runner in the background runs approved calls.
    background: bool,
    /// This process's name as a holder of leases: random, one per tool set.
    holder: String,
    /// Whether the background runner was started.
    started: OnceLock<()>,
    /// Wakes the runner: an approval was decided here.
    wake: tokio::sync::Notify,
}

impl Default for Approving {
    fn default() -> Self {
        Approving {
            ttl: DEFAULT_APPROVAL_TTL,
            background: true,
            holder: crate::store::new_id(),
            started: OnceLock::new(),
            wake: tokio::sync::Notify::new(),
        }
    }
}

/// Why an approver's decision was not taken
/// ([`ToolSet::decide`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum DecisionError {
    /// The tool set has no store ([`ToolSet::store`]).
    NoStore,
    /// No approval has this id.
    UnknownTicket,
    /// The approver's token does not grant the scope the approval needs.
    NotAnApprover {
        /// The scope it needs.
        scope: String,
    },
    /// The approver is the caller whose call waits: nobody approves their
    /// own call.
    OwnCall,
    /// It was decided already, or expired: where it is.
    NotPending(ApprovalState),
    /// The store failed.
    Store(StoreError),
}

impl fmt::Display for DecisionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecisionError::NoStore => {
                f.write_str("this tool set keeps no approvals: it has no store")
            }
            DecisionError::UnknownTicket => f.write_str("no approval has this id"),
            DecisionError::NotAnApprover { scope } => {
                write!(f, "deciding this approval needs the scope `{scope}`")
            }
            DecisionError::OwnCall => f.write_str("nobody decides the approval of their own call"),
            DecisionError::NotPending(state) => {
                write!(f, "the approval is {} already", state.as_str())
            }
            DecisionError::Store(error) => write!(f, "the store failed: {error}"),
        }
    }
}

impl std::error::Error for DecisionError {}

impl From<StoreError> for DecisionError {
    fn from(error: StoreError) -> Self {
        DecisionError::Store(error)
    }
}

impl ToolSet {
    /// How long an approval that waits in the store
    /// ([`Approvers::scope`](crate::guard::Approvers::scope)) may wait for
    /// a decision, and how long its outcome is then given to the same call
    /// made again: [`DEFAULT_APPROVAL_TTL`](crate::mcp::DEFAULT_APPROVAL_TTL)
    /// (a day) unless set. Past it, a pending approval expires, which is
    /// kept as an escalation of its own (`approval_expired`).
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    #[must_use]
    pub fn approval_ttl(mut self, ttl: Duration) -> Self {
        let background = self.inner.protocol.approving.background;
        self.inner_mut().protocol.approving = Arc::new(Approving {
            ttl,
            background,
            ..Approving::default()
        });
        self
    }

    /// Whether a runner in the background of this process runs the
    /// approved calls of the store ([`run_approved`](Self::run_approved),
    /// every second and at once after a decision made here): yes unless
    /// set. Turn it off for a process that only serves, or a host that
    /// runs approved calls on a schedule of its own.
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    #[must_use]
    pub fn approvals_in_background(mut self, background: bool) -> Self {
        let ttl = self.inner.protocol.approving.ttl;
        self.inner_mut().protocol.approving = Arc::new(Approving {
            ttl,
            background,
            ..Approving::default()
        });
        self
    }

    /// Posts a notice to `webhook` for each new approval this set opens
    /// (Slack-compatible: its `text` says what waits, for whom, and where
    /// to decide), in the background, retried while the receiver is down.
    /// Of the replicas that share a store, the one that opened the approval
    /// sends it, once.
    #[cfg(feature = "inbox")]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "inbox")))]
    #[must_use]
    pub fn approval_webhook(mut self, webhook: crate::mcp::server::webhook::Webhook) -> Self {
        self.inner_mut().protocol.webhook = Some(Arc::new(webhook));
        self
    }

    /// Decides the approval `ticket` (the id of a
    /// [`Ticket`](crate::Ticket)) as `approver`, with `note`: approved, the
    /// call runs once, soon, on whichever replica sharing the store claims
    /// it; declined, the caller reads `HUMAN_DECLINED`. The decision is one
    /// conditional update of a pending approval, so that of two decisions
    /// only one is taken, and it is kept in the store's audit (who, when,
    /// note).
    ///
    /// # Errors
    ///
    /// No store, no such approval, an approver whose token lacks the scope
    /// the approval names, the approval's own caller, an approval decided
    /// already or expired, or a store that fails.
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    pub async fn decide(
        &self,
        ticket: &str,
        approver: &Caller,
        approve: bool,
        note: &str,
    ) -> Result<ApprovalRecord, DecisionError> {
        let store = self.store_ref().ok_or(DecisionError::NoStore)?;
        let approval = store
            .approval(ticket)
            .await?
            .ok_or(DecisionError::UnknownTicket)?;
        if !approver.has_scope(&approval.approvers) {
            return Err(DecisionError::NotAnApprover {
                scope: approval.approvers,
            });
        }
        if approval.caller.as_deref() == Some(approver.subject()) {
            return Err(DecisionError::OwnCall);
        }
        let note = crate::limits::text_for_wire(note, 1024);
        let decision = Decision::new(approve, approver.subject(), note.as_ref());
        if !store.decide(ticket, &decision).await? {
            let state = store
                .approval(ticket)
                .await?
                .map_or(ApprovalState::Expired, |approval| approval.state);
            return Err(DecisionError::NotPending(state));
        }
        let what = if approve { "approve" } else { "decline" };
        store
            .audit(&AuditEntry::new(
                approver.subject(),
                what,
                ticket,
                note.as_ref(),
            ))
            .await?;
        if approve {
            self.start_runner();
            self.inner.protocol.approving.wake.notify_one();
        }
        let decided = store.approval(ticket).await?;
        Ok(decided.unwrap_or(approval))
    }

    /// Runs, once each, the approved calls that wait in the store, expires
    /// the approvals nobody decided in time, and takes over the tasks of a
    /// replica that stopped (see below): what the background
    /// runner does every second on every replica (started when the set
    /// first serves), for a host that drives it itself. Each call is
    /// claimed under a lease, so that of the replicas sharing the store
    /// exactly one runs it; its reply is kept for the caller to read. A
    /// call whose runner died while it ran is run again only if its tool is
    /// read-only or idempotent; else it ends `MAY_HAVE_TAKEN_EFFECT`. A task
    /// whose replica stopped renewing its lease is taken over the same way:
    /// run again here if that is safe, else ended `MAY_HAVE_TAKEN_EFFECT`
    /// (cancelled, if its caller asked). The number of approved calls run.
    ///
    /// # Errors
    ///
    /// When the store fails.
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    pub async fn run_approved(&self) -> Result<usize, StoreError> {
        let Some(store) = self.store_ref() else {
            return Ok(0);
        };
        for expired in store.expire_approvals(now_ms()).await? {
            let envelope = expired_escalation(&expired);
            let json = serde_json::to_value(&envelope).unwrap_or_default();
            store
                .record_escalation(&EscalationRecord::new(json, expired.caller.clone()))
                .await?;
            store
                .audit(&AuditEntry::new("tool-envelope", "expire", &expired.id, ""))
                .await?;
        }
        self.recover_tasks(store.as_ref()).await?;
        let mut ran = 0;
        // Batch after batch, until one is not full: what another replica
        // claimed meanwhile is not listed again.
        for _ in 0..MAX_BATCHES {
            let ids = store.approvals_to_run(now_ms(), BATCH).await?;
            for id in &ids {
                ran += self.run_one(store.as_ref(), id).await?;
            }
            if ids.len() < BATCH as usize {
                break;
            }
        }
        Ok(ran)
    }

    /// Claims the approved call `id` and runs it: 1 if it ran here, 0 if
    /// another replica has it or it may not run again.
    async fn run_one(&self, store: &dyn Store, id: &str) -> Result<usize, StoreError> {
        let holder = &self.inner.protocol.approving.holder;
        let Some(before) = store.approval(id).await? else {
            return Ok(0);
        };
        let now = now_ms();
        let lease = now.saturating_add(i64::try_from(LEASE.as_millis()).unwrap_or(i64::MAX));
        let Some(claimed) = store.claim_approval(id, holder, now, lease).await? else {
            return Ok(0);
        };
        let abandoned = before.state == ApprovalState::Running;
        let (reply, ran) = match abandoned && !claimed.safe_to_repeat {
            true => (
                self.may_have_taken_effect(&claimed.tool, &claimed.arguments),
                0,
            ),
            false => (self.run_claimed(&claimed).await, 1),
        };
        let reply = serde_json::to_value(&reply).unwrap_or_default();
        store.finish_approval(id, holder, &reply, now_ms()).await?;
        Ok(ran)
    }

    /// The call of `approval`, run past its block, as its caller, with its
    /// ticket as the idempotency key.
    async fn run_claimed(&self, approval: &ApprovalRecord) -> crate::mcp::reply::ToolReply {
        let mut context = ToolContext::detached().with_idempotency_key(approval.id.as_str());
        if let Some(subject) = &approval.caller {
            context = context.with_caller(Caller::new(subject.as_str(), &approval.caller_scopes));
        }
        let arguments = approval.arguments.clone();
        match self
            .call_approved(&approval.tool, arguments, context, &approval.block)
            .await
        {
            Ok(reply) => reply,
            Err(error) => {
                let envelope = ErrorEnvelope::other(format!(
                    "the approved call could not run: {}",
                    error.message
                ));
                self.failed(&approval.tool, approval.arguments.clone(), envelope)
            }
        }
    }

    /// The reply of a call of `tool` with `arguments` whose replica died
    /// while it ran, and which may not run again.
    fn may_have_taken_effect(&self, tool: &str, arguments: &Value) -> crate::mcp::reply::ToolReply {
        let envelope = ErrorEnvelope::other(format!(
            "the replica running `{tool}` stopped before it finished; the tool is neither read-only nor idempotent, so it was not run again"
        ))
        .with_reason(reasons::MAY_HAVE_TAKEN_EFFECT)
        .with_alternative("Check the system the tool changes before calling it again");
        self.failed(tool, arguments.clone(), envelope)
    }

    /// Takes over the tasks whose replica stopped renewing its lease (it
    /// died, or was restarted): a cancelled one ends cancelled; a read-only
    /// or idempotent one runs again, here, as its caller; any other ends
    /// with a `MAY_HAVE_TAKEN_EFFECT` envelope, never run twice.
    async fn recover_tasks(&self, store: &dyn Store) -> Result<(), StoreError> {
        let holder = self.holder();
        let now = now_ms();
        let lease = now.saturating_add(i64::try_from(held::LEASE.as_millis()).unwrap_or(i64::MAX));
        for task in store
            .claim_abandoned_tasks(holder, now, lease, BATCH)
            .await?
        {
            let update = if task.cancel_requested {
                TaskUpdate::finish(TaskState::Cancelled, None)
            } else {
                let reply = match task.safe_to_repeat {
                    true => {
                        let mut context = ToolContext::detached();
                        if let Some(subject) = &task.caller {
                            let caller = Caller::new(subject.as_str(), &task.caller_scopes);
                            context = context.with_caller(caller);
                        }
                        match self
                            .call_with(&task.tool, task.arguments.clone(), context)
                            .await
                        {
                            Ok(reply) => reply,
                            Err(error) => {
                                let envelope = ErrorEnvelope::other(format!(
                                    "the task could not run again: {}",
                                    error.message
                                ));
                                self.failed(&task.tool, task.arguments.clone(), envelope)
                            }
                        }
                    }
                    false => self.may_have_taken_effect(&task.tool, &task.arguments),
                };
                TaskUpdate::finish(TaskState::Completed, serde_json::to_value(&reply).ok())
            };
            store.update_task(&task.id, holder, &update).await?;
        }
        Ok(())
    }

    /// This tool set's name as a holder of leases in the store.
    pub(crate) fn holder(&self) -> &str {
        &self.inner.protocol.approving.holder
    }

    /// Whether the tool `name` may run again from the start: read-only or
    /// idempotent.
    pub(crate) fn safe_to_repeat(&self, name: &str) -> bool {
        self.inner
            .index
            .get(name)
            .is_some_and(|&index| self.inner.entries[index].facts.safe_to_repeat)
    }

    /// The store, when the set has one.
    pub(crate) fn store_ref(&self) -> Option<&Arc<dyn Store>> {
        self.inner.protocol.store.as_ref()
    }

    /// Starts the background runner of approved calls, once per tool set,
    /// when the set has a store and a tokio runtime runs. It holds the set
    /// weakly: it ends when the set is dropped.
    pub(crate) fn start_runner(&self) {
        if self.store_ref().is_none() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let approving = &self.inner.protocol.approving;
        if !approving.background || approving.started.set(()).is_err() {
            return;
        }
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let approving = Arc::clone(approving);
        tokio::spawn(async move {
            loop {
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                let tools = ToolSet {
                    inner,
                    log_threshold: Arc::default(),
                };
                if let Err(error) = tools.run_approved().await {
                    tracing::warn!(%error, "running approved calls: the store failed");
                }
                drop(tools);
                let _ = tokio::time::timeout(POLL, approving.wake.notified()).await;
            }
        });
    }

    /// Where a call a guard blocked until an approver of `scope` decides
    /// stands: its ticket opened or read in the store. Without a store, the
    /// block stands as it is.
    pub(super) async fn ticketed(
        &self,
        entry: &Entry,
        arguments: &Map<String, Value>,
        state: &CallState,
        failure: Failure,
        key: &str,
        scope: &str,
    ) -> Outcome {
        let Some(store) = self.store_ref() else {
            tracing::warn!(
                tool = %entry.facts.tool,
                "a block that approvers at the server may approve, in a tool set without a store: it stands"
            );
            return Outcome::Ran(Err(failure));
        };
        self.start_runner();
        let shown = self
            .failure(entry, Failure::Envelope(failure.envelope().clone()))
            .structured_content
            .unwrap_or_default();
        let waiting = Waiting {
            tool: &entry.definition.name,
            arguments,
            caller: state.context_ref().caller(),
            block: key,
            approvers: scope,
            safe_to_repeat: entry.facts.safe_to_repeat,
        };
        let ttl = self.inner.protocol.approving.ttl;
        let standing = ticket::wait(store.as_ref(), &waiting, failure.envelope(), shown, ttl)
            .await
            .map(|(standing, opened)| {
                #[cfg(feature = "inbox")]
                if let (Some(opened), Some(webhook)) = (opened, &self.inner.protocol.webhook) {
                    let webhook = Arc::clone(webhook);
                    tokio::spawn(async move { webhook.notify(&opened).await });
                }
                #[cfg(not(feature = "inbox"))]
                let _ = opened;
                standing
            });
        // A call run as a task waits in its task for the outcome, its
        // status saying for whom.
        let standing = match (standing, state.context_ref().task_context()) {
            (Ok(Ticketed::Awaiting(escalation)), Some(task)) => {
                Self::await_in_task(store.as_ref(), task, escalation, failure.envelope()).await
            }
            (standing, _) => standing,
        };
        match standing {
            Ok(Ticketed::Awaiting(escalation)) => {
                let escalation = Escalation {
                    envelope: super::dispatch::settle_here(
                        escalation.envelope,
                        entry,
                        arguments,
                        state,
                    ),
                    ..escalation
                };
                Outcome::Ran(Err(Failure::Escalated(escalation)))
            }
            Ok(Ticketed::Ended(envelope)) => {
                let envelope = super::dispatch::settle_here(envelope, entry, arguments, state);
                Outcome::Ran(Err(Failure::Envelope(envelope)))
            }
            Ok(Ticketed::Ran(reply)) => Outcome::Stored(reply),
            Err(error) => {
                tracing::warn!(%error, tool = %entry.facts.tool, "opening an approval: the store failed; the block stands");
                Outcome::Ran(Err(failure))
            }
        }
    }
}

impl ToolSet {
    /// Waits, in the task `task`, for the outcome of the approval
    /// `escalation`'s ticket names: the task's status message says whom it
    /// waits for, and the task ends with the call's kept reply, or with the
    /// refusal, once an approver decided and the call ran.
    async fn await_in_task(
        store: &dyn Store,
        task: &rmcp::task_manager::TaskContext,
        escalation: Escalation,
        blocked: &ErrorEnvelope,
    ) -> Result<Ticketed, StoreError> {
        let Some(ticket) = escalation.ticket.as_deref() else {
            return Ok(Ticketed::Awaiting(escalation));
        };
        task.set_status_message(format!(
            "Waiting for an approver with `{}` (ticket {})",
            ticket.approvers, ticket.id
        ));
        loop {
            if let Some(ended) = ticket::follow(store, &ticket.id, blocked).await? {
                return Ok(ended);
            }
            tokio::time::sleep(FOLLOW).await;
        }
    }
}

/// How often a task that waits for an approver reads its ticket.
const FOLLOW: Duration = Duration::from_secs(1);

/// The escalation of an approval nobody decided in time: the block as
/// approvers saw it, with reason `APPROVAL_EXPIRED`.
fn expired_escalation(approval: &ApprovalRecord) -> Value {
    let mut shown = match &approval.shown {
        Value::Object(shown) => shown.clone(),
        _ => Map::new(),
    };
    shown.insert(
        "reason".into(),
        Value::String(reasons::APPROVAL_EXPIRED.into()),
    );
    shown.insert(
        "escalation".into(),
        serde_json::json!({
            "reason": "approval_expired",
            "attempts": 0,
            "elapsedMs": (approval.expires_ms - approval.created_ms).max(0),
            "detail": format!("Nobody with `{}` decided approval {} before it expired", approval.approvers, approval.id),
        }),
    );
    shown.insert("tool".into(), Value::String(approval.tool.clone()));
    Value::Object(shown)
}
