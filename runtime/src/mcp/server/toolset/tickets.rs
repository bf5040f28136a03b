//! A tool set's approvals that wait in its store
//! ([`Approvers::scope`](crate::guard::Approvers::scope)): a blocked call
//! opens or reads its ticket (a task waits in it), and an approver decides
//! it ([`ToolSet::decide`]); the runner (`runner.rs`) then runs it once.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{Map, Value};

use super::ToolSet;
use super::dispatch::Outcome;
use super::entry::Entry;
use super::failure::Failure;
use super::withdraw::{InTask, InTasks, Opening};
use crate::envelope::ErrorEnvelope;
use crate::escalation::Escalation;
use crate::mcp::server::state::CallState;
use crate::mcp::server::ticket::{
    self, DEFAULT_APPROVAL_TTL, DEFAULT_MAX_WAITING_APPROVALS, Ticketed, Waiting,
};
use crate::mcp::server::turns::Turns;
use crate::store::{Store, StoreError};

/// What a tool set keeps to run the approved calls of its store.
pub(super) struct Approving {
    /// How long an approval waits for a decision.
    pub(super) ttl: Duration,
    /// Whether a runner in the background runs approved calls.
    pub(super) background: bool,
    /// How many approvals of one caller may wait at once.
    pub(super) most_waiting: usize,
    /// A caller's turn, held while a new approval of theirs is counted and
    /// opened: on this replica, one at a time for each caller, so that
    /// their calls in flight together cannot all pass the count.
    pub(super) opening: Turns,
    /// This process's name as a holder of leases: random, one per tool set.
    pub(super) holder: String,
    /// Whether the background runner was started.
    pub(super) started: OnceLock<()>,
    /// Wakes the runner: an approval was decided here.
    pub(super) wake: tokio::sync::Notify,
    /// When the runner last swept the store (ms since the epoch; 0: never).
    pub(super) swept_ms: std::sync::atomic::AtomicI64,
    /// The calls run as tasks that wait for an approver here: by task id,
    /// the ticket each opened or read, and its block — what a
    /// cancellation of the task withdraws.
    pub(super) in_tasks: InTasks,
}

impl Default for Approving {
    fn default() -> Self {
        Approving {
            ttl: DEFAULT_APPROVAL_TTL,
            background: true,
            most_waiting: DEFAULT_MAX_WAITING_APPROVALS,
            opening: Turns::default(),
            holder: crate::store::new_id(),
            started: OnceLock::new(),
            wake: tokio::sync::Notify::new(),
            swept_ms: std::sync::atomic::AtomicI64::new(0),
            in_tasks: InTasks::default(),
        }
    }
}

impl ToolSet {
    /// How long an approval that waits in the store
    /// ([`Approvers::scope`](crate::guard::Approvers::scope)) may wait for
    /// a decision, and how long its outcome (declined, or the call's
    /// result) is then given to the same call made again, counted from the
    /// decision and again from the run:
    /// [`DEFAULT_APPROVAL_TTL`] (a day)
    /// unless set, a hundred years at most. Past it, a pending approval
    /// expires, which is kept as an escalation of its own
    /// (`approval_expired`); so does an approved call no runner claimed
    /// within one time to live of the decision (every runner was down):
    /// a yes is not run late, with its caller's scopes of then.
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    #[must_use]
    pub fn approval_ttl(mut self, ttl: Duration) -> Self {
        self.set_approving(|approving| approving.ttl = ttl);
        self
    }

    /// How many approvals of one caller (a bearer token's subject; on a
    /// server that checks none, every client together) may wait for a
    /// decision at once:
    /// [`DEFAULT_MAX_WAITING_APPROVALS`]
    /// unless set, at least 1. Past it, a blocked call of theirs that would
    /// open another ends with a `business` envelope, reason
    /// `TOO_MANY_APPROVALS`, and nothing runs — so that one caller cannot
    /// bury the approvers' inbox and webhook under blocked calls. The
    /// same call made again once some are decided (or expired) opens its
    /// approval — approvals the caller withdrew (by cancelling the task
    /// that waited) count until they expire; calls that wait
    /// already are read as before, and a call
    /// run for an approver's yes that meets another block opens that
    /// block's approval whatever is waiting. Counted and opened in one
    /// step in the store ([`Store::open_approval`]), so the bound holds
    /// exactly across the replicas sharing it, however many open one at
    /// the same moment. Only this service's approvals count (its
    /// [`server_info`](Self::server_info) name): another service sharing
    /// the store bounds its callers itself.
    ///
    /// [`Store::open_approval`]: crate::store::Store::open_approval
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
    #[must_use]
    pub fn max_waiting_approvals(mut self, per_caller: usize) -> Self {
        self.set_approving(|approving| approving.most_waiting = per_caller.max(1));
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
        self.set_approving(|approving| approving.background = background);
        self
    }

    /// A new way of running approvals, the settings so far changed by
    /// `change`: set while the set is built, before any runner starts.
    pub(super) fn set_approving(&mut self, change: impl FnOnce(&mut Approving)) {
        let now = &self.inner.protocol.approving;
        let mut approving = Approving {
            ttl: now.ttl,
            background: now.background,
            most_waiting: now.most_waiting,
            ..Approving::default()
        };
        change(&mut approving);
        self.inner_mut().protocol.approving = Arc::new(approving);
    }

    /// Posts a notice to `webhook` for each new approval this set opens
    /// (Slack-compatible: its `text` says what waits, for whom, and where
    /// to decide), in the background, retried while the receiver is down.
    /// Of the replicas that share a store, the one that opened the approval
    /// posts it; if that post does not get through, the runner of any
    /// replica with a webhook posts it again once it is due
    /// ([`Webhook::resend_after`](crate::mcp::Webhook::resend_after)).
    #[cfg(feature = "inbox")]
    #[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "inbox")))]
    #[must_use]
    pub fn approval_webhook(mut self, webhook: crate::mcp::server::webhook::Webhook) -> Self {
        self.inner_mut().protocol.webhook = Some(Arc::new(webhook));
        self
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
        // The block as approvers see it, made only when an approval may be
        // opened (none lives, the caller is below the bound).
        let shown = || self.shown(entry, failure.envelope());
        let mut waiting = self.waiting((entry, arguments, state), key, scope);
        waiting.waived = state.approved().by_client();
        waiting.client_answers = state.audit();
        let ttl = self.inner.protocol.approving.ttl;
        // A task's cancellation waits while the approval is opened.
        let in_tasks = &self.inner.protocol.approving.in_tasks;
        let task = state
            .context_ref()
            .task_context()
            .map(|(task, _)| task.task_id());
        let _opening = task.map(|task| Opening::new(in_tasks, task));
        let standing = ticket::wait(store.as_ref(), &waiting, failure.envelope(), shown, ttl)
            .await
            .map(|(standing, opened)| {
                #[cfg(feature = "inbox")]
                if let (Some(opened), Some(webhook)) = (opened, &self.inner.protocol.webhook) {
                    let (webhook, store) = (Arc::clone(webhook), Arc::clone(store));
                    tokio::spawn(async move { webhook.deliver(store.as_ref(), &opened).await });
                }
                #[cfg(not(feature = "inbox"))]
                let _ = opened;
                standing
            });
        let call = (entry, arguments, state);
        self.stand(store.as_ref(), call, failure, standing).await
    }

    /// What a call blocked for the approvers of `scope` (`blocked`, its
    /// block's key `key`) would end with instead of waiting, were it
    /// ticketed now ([`ticket::would_end`]): asked before its client's
    /// user is asked about it. `None` when it would wait, the set has no
    /// store, or the store cannot be read now (ticketing the call says so).
    pub(super) async fn would_end(
        &self,
        call: (&Entry, &Map<String, Value>, &CallState),
        blocked: &ErrorEnvelope,
        key: &str,
        scope: &str,
    ) -> Option<ErrorEnvelope> {
        let store = self.store_ref()?;
        let waiting = self.waiting(call, key, scope);
        let shown = || self.shown(call.0, blocked);
        match ticket::would_end(store.as_ref(), &waiting, blocked, shown).await {
            Ok(refused) => refused,
            Err(error) => {
                tracing::warn!(%error, tool = %call.0.facts.tool, "reading whether a call may wait for approvers: the store failed");
                None
            }
        }
    }

    /// A blocked call as it would wait for the approvers of `scope` at
    /// its block `key` — without what its client's user approved, which
    /// only an approval it opens keeps.
    fn waiting<'a>(
        &'a self,
        (entry, arguments, state): (&'a Entry, &'a Map<String, Value>, &'a CallState),
        key: &'a str,
        scope: &'a str,
    ) -> Waiting<'a> {
        Waiting {
            service: self.service(),
            tool: &entry.definition.name,
            arguments,
            caller: state.context_ref().caller(),
            block: key,
            waived: Vec::new(),
            client_answers: Vec::new(),
            approvers: scope,
            safe_to_repeat: entry.facts.safe_to_repeat,
            // An approver's yes that meets the next block opens its
            // approval whatever the caller has waiting: approvers, not
            // the caller, made it.
            most_waiting: match state.is_for_approval() {
                true => usize::MAX,
                false => self.inner.protocol.approving.most_waiting,
            },
            opening: &self.inner.protocol.approving.opening,
            handing_on: state.run_of(),
            #[cfg(feature = "inbox")]
            notice_after_ms: (self.inner.protocol.webhook.as_ref())
                .map(|hook| hook.resend_after_ms()),
            #[cfg(not(feature = "inbox"))]
            notice_after_ms: None,
        }
    }

    /// Posts again, in the background, the notices of this service's
    /// approvals that are due ([`Webhook::resend_after`](crate::mcp::Webhook::resend_after)):
    /// claimed in the store, so that one replica posts each.
    #[cfg(feature = "inbox")]
    pub(super) async fn resend_notices(&self, store: &Arc<dyn Store>) -> Result<(), StoreError> {
        let Some(webhook) = &self.inner.protocol.webhook else {
            return Ok(());
        };
        // Claimed only as many as may be posted now, their room taken
        // first: the others wait in the store, due, for a later pass or
        // another replica.
        let Some(mut room) = webhook.room(super::runner::BATCH as usize) else {
            return Ok(());
        };
        let most = u32::try_from(room.num_permits()).unwrap_or(super::runner::BATCH);
        let now = crate::store::now_ms();
        let due = store
            .claim_due_notices(self.service(), now, webhook.claim_ms(), most)
            .await?;
        for approval in due {
            // As many claimed as there is room for: never short.
            let Some(one) = room.split(1) else { break };
            let (webhook, store) = (Arc::clone(webhook), Arc::clone(store));
            tokio::spawn(async move { webhook.deliver_in(one, store.as_ref(), &approval).await });
        }
        // The room not used is given back as it drops.
        Ok(())
    }

    /// A block as approvers see it: masked, sized as sent.
    fn shown(&self, entry: &Entry, blocked: &ErrorEnvelope) -> Value {
        self.failure(entry, Failure::Envelope(blocked.clone()))
            .structured_content
            .unwrap_or_default()
    }

    /// The store [`made_again`](Self::made_again) reads, where a call may
    /// be one made again: only a guarded tool was ever blocked for
    /// approvers, and an approved run is not made again. The others' calls
    /// never read the store (nor make its future).
    pub(super) fn may_be_made_again(
        &self,
        entry: &Entry,
        state: &CallState,
    ) -> Option<&Arc<dyn Store>> {
        let store = self.store_ref()?;
        let guarded =
            entry.definition.guarded || self.inner.guards.apply_to(&entry.definition.name);
        (guarded && !state.is_for_approval()).then_some(store)
    }

    /// The same call made again while an approval of it lives (not an
    /// approved run of it): where that approval stands, whatever the guards
    /// say of the call now; `None` when none lives in `store`, the one
    /// [`may_be_made_again`](Self::may_be_made_again) found. A store that
    /// cannot be read runs nothing, but a tool safe to run twice
    /// (read-only, idempotent).
    pub(super) async fn made_again(
        &self,
        (entry, arguments, state): (&Entry, &Map<String, Value>, &CallState),
        store: &Arc<dyn Store>,
    ) -> Option<Outcome> {
        let name = entry.definition.name.as_str();
        let call = (self.service(), name, arguments);
        let caller = state.context_ref().caller();
        let (standing, blocked) = match ticket::made_again(store.as_ref(), call, caller).await {
            Ok(found) => found?,
            // A tool safe to run twice runs as its guards say.
            Err(error) if entry.facts.safe_to_repeat => {
                tracing::warn!(%error, tool = %entry.facts.tool, "reading a call's approvals: the store failed; the call runs as its guards say");
                return None;
            }
            Err(error) => {
                tracing::warn!(%error, tool = %entry.facts.tool, "reading a call's approvals: the store failed; the call was not run");
                let envelope = ErrorEnvelope::transient(
                    "the approvals of this call could not be read, so it was not run",
                )
                .with_not_applied(true);
                // Not decoded, its `Secret`s' values are not known: the
                // arguments are not shown.
                let shown = Value::String("[arguments not shown: the call was not decoded]".into());
                let query = crate::query::Query::Described(shown);
                let envelope = crate::settle::settle(envelope, &entry.facts, query, &|| None);
                return Some(Outcome::Ran(Err(Failure::Envelope(envelope))));
            }
        };
        self.start_runner();
        // Not decoded, masked by its schema alone: a `Secret` whose schema
        // lost its mark never waits for an approval (HIDDEN_FROM_APPROVERS).
        let failure = Failure::Envelope(blocked);
        let call = (entry, arguments, state);
        Some(
            self.stand(store.as_ref(), call, failure, Ok(standing))
                .await,
        )
    }

    /// The outcome of `call`, which waits for an approval, as `standing`
    /// says, `failure` its block. A store that failed runs nothing: the
    /// call is answered transient and not applied, to be made again, which
    /// finds the approval if it was kept (the block alone would read as
    /// final, while a yes could still run the call) — but an approved run
    /// keeps its block, which calls made again read as its approval's.
    async fn stand(
        &self,
        store: &dyn Store,
        call: (&Entry, &Map<String, Value>, &CallState),
        failure: Failure,
        standing: Result<Ticketed, StoreError>,
    ) -> Outcome {
        let (entry, arguments, state) = call;
        let settle = |envelope| super::dispatch::settle_here(envelope, entry, arguments, state);
        // A call run as a task waits in its task for the outcome, its
        // status saying for whom, until shortly before the task would expire.
        let standing = match (standing, state.context_ref().task_context()) {
            (Ok(Ticketed::Awaiting(escalation)), Some((task, ends))) => {
                let bound = ends.checked_sub(BEFORE_EXPIRY).unwrap_or(ends);
                let blocked = failure.envelope();
                self.await_in_task(store, task, bound, escalation, blocked)
                    .await
            }
            (standing, _) => standing,
        };
        match standing {
            Ok(Ticketed::Awaiting(escalation)) => {
                let escalation = Escalation {
                    envelope: settle(escalation.envelope),
                    ..escalation
                };
                Outcome::Ran(Err(Failure::Escalated(escalation)))
            }
            Ok(Ticketed::Ended(envelope)) => Outcome::Ran(Err(Failure::Envelope(settle(envelope)))),
            Ok(Ticketed::Ran(reply)) => Outcome::Stored(reply),
            // An approved run that meets its next block: its reply is kept
            // as the approval's, read by every call made again — the block,
            // not a "call again" those calls would only read again.
            Err(error) if state.is_for_approval() => {
                tracing::warn!(%error, tool = %entry.facts.tool, "opening the next approval of an approved run: the store failed; the block stands");
                Outcome::Ran(Err(failure))
            }
            Err(error) => {
                tracing::warn!(%error, tool = %entry.facts.tool, "keeping or reading a call's approval: the store failed; the call was not run");
                let envelope = ErrorEnvelope::transient(
                    "the approval this call needs could not be kept or read, so it was not run; call again with the same arguments",
                )
                .with_not_applied(true);
                Outcome::Ran(Err(Failure::Envelope(settle(envelope))))
            }
        }
    }
}

impl ToolSet {
    /// Waits, in the task `task`, for the outcome of the approval
    /// `escalation`'s ticket names: the task's status message says whom it
    /// waits for, and the task ends with the call's kept reply, or with the
    /// refusal, once an approver decided and the call ran — or, still
    /// waiting at `bound`, with where the ticket stands then, as a call not
    /// run as a task is answered: the approval outlives the task, and the
    /// call made again reads its outcome. (Past its time to live, rmcp
    /// would fail the task, saying only that it expired.) Meanwhile a
    /// cancellation of the task withdraws the approval
    /// ([`withdraw_in_task`](Self::withdraw_in_task)).
    async fn await_in_task(
        &self,
        store: &dyn Store,
        task: &rmcp::task_manager::TaskContext,
        bound: tokio::time::Instant,
        escalation: Escalation,
        blocked: &ErrorEnvelope,
    ) -> Result<Ticketed, StoreError> {
        let Some(ticket) = escalation.ticket.as_deref() else {
            return Ok(Ticketed::Awaiting(escalation));
        };
        task.set_status_message(ticket::waiting_status(&ticket.approvers, &ticket.id));
        let id = ticket.id.clone();
        let in_tasks = &self.inner.protocol.approving.in_tasks;
        let _waits = InTask::new(in_tasks, task.task_id(), id.clone(), blocked.clone());
        let mut last = escalation;
        let mut warned = false;
        loop {
            // A store that stalls at the bound does not keep the task past
            // it: the task ends with where the ticket stood last.
            let read = ticket::follow(store, &id, blocked);
            match tokio::time::timeout_at(bound, read).await {
                Ok(Ok(Ticketed::Awaiting(standing))) => last = standing,
                Ok(Ok(ended)) => return Ok(ended),
                // The approval lives on whatever one read says: the task
                // reads it again, and still withdraws it if cancelled.
                Ok(Err(error)) if !std::mem::replace(&mut warned, true) => {
                    tracing::warn!(%error, ticket = %id, "following an approval: the store failed; read again");
                }
                Ok(Err(_)) => {}
                Err(_) => return Ok(Ticketed::Awaiting(last)),
            }
            let now = tokio::time::Instant::now();
            if now >= bound {
                return Ok(Ticketed::Awaiting(last));
            }
            tokio::time::sleep_until((now + FOLLOW).min(bound)).await;
        }
    }
}

/// How often a task that waits for an approver reads its ticket.
const FOLLOW: Duration = Duration::from_secs(1);

/// How long before its task would expire a call that waits for an approver
/// in it ends with its ticket: time for the reply to be kept and read.
const BEFORE_EXPIRY: Duration = Duration::from_secs(10);
