//! Taking over the tasks of a replica that stopped: one at a time, each
//! held under a lease renewed while it runs again, so that no other
//! replica takes it over meanwhile and runs it a second time.

use std::pin::pin;

use futures_util::future::{Either, select};

use super::ToolSet;
use super::failure::Failure;
use super::runner::BATCH;
use crate::caller::Caller;
use crate::envelope::ErrorEnvelope;
use crate::mcp::context::ToolContext;
use crate::mcp::reply::ToolReply;
use crate::mcp::server::digest::digest;
use crate::mcp::server::held;
use crate::mcp::server::ticket::{self, Ticketed};
use crate::store::{Store, StoreError, TaskRecord, TaskState, TaskUpdate, now_ms};
use serde_json::{Map, Value};

/// How many times a task is run in all, taken over or not: a call that
/// stops every replica that runs it (it exhausts their memory, say) is not
/// handed on through the whole fleet.
const MOST_RUNS: u32 = 2;

/// The digest of `task`'s call — its service, tool, arguments and caller —
/// as its approvals were opened under.
pub(super) fn call_digest(task: &TaskRecord) -> String {
    let arguments = match &task.arguments {
        Value::Object(arguments) => arguments.clone(),
        _ => Map::new(),
    };
    let caller = (task.caller.as_deref()).map(|subject| Caller::new(subject, Vec::<String>::new()));
    digest(&task.service, &task.tool, &arguments, caller.as_ref())
}

impl ToolSet {
    /// Takes over the tasks whose replica stopped renewing its lease (it
    /// died, or was restarted), up to a batch a pass, claiming each only
    /// once the one before ended: a cancelled one ends cancelled; a
    /// read-only or idempotent one runs again, here, as its caller (unless
    /// its time to live ran out first: then it ends unrun, as its caller
    /// can no longer read it); one that waited for an approver ends with where its ticket stands (the
    /// approval lives on, as the ticket tells its caller, who withdraws it
    /// by making the same call as a task and cancelling that); any other
    /// ends with a `MAY_HAVE_TAKEN_EFFECT` envelope, never run twice.
    pub(super) async fn recover_tasks(&self, store: &dyn Store) -> Result<(), StoreError> {
        let holder = self.holder();
        // A task of a tool this set lacks (a release rolling out) is left
        // to a replica that has it, until its time to live runs out.
        let tools: Vec<&str> = self.inner.index.keys().map(String::as_str).collect();
        for _ in 0..BATCH {
            let now = now_ms();
            let lease = now.saturating_add(held::ms(held::LEASE));
            let claimed = store
                .claim_abandoned_tasks(self.service(), Some(&tools), holder, now, lease, 1)
                .await?;
            let Some(task) = claimed.into_iter().next() else {
                return Ok(());
            };
            // A task runs within one time to live from when it was made,
            // wherever it runs: as rmcp ends it on the replica that made it.
            let ends = task.created_ms.saturating_add(task.ttl_ms);
            let update = if task.cancel_requested {
                // Its caller took it back: so is an approval it waited for.
                self.withdraw_for_task(store, &task).await
            } else {
                let reply = match task.safe_to_repeat {
                    // Past its time to live (no replica took it over in
                    // time): the scopes it would run with are of then, and
                    // it would have ended where it was made. Not run again.
                    true if ends <= now || task.lapsed_at(now) => {
                        self.not_run_again_late(&task.tool, &task.arguments)
                    }
                    // It stopped each replica that ran it: not handed on.
                    true if task.runs >= MOST_RUNS => {
                        self.not_run_again_stopping(&task.tool, &task.arguments, task.runs)
                    }
                    true => {
                        let left = std::time::Duration::from_millis(
                            u64::try_from(ends.saturating_sub(now)).unwrap_or_default(),
                        );
                        let run = self.run_again_renewed(store, &task);
                        match tokio::time::timeout(left, run).await {
                            Ok(Some(reply)) => reply,
                            // Cancelled while it ran again: stopped, as the
                            // replica that made it would have stopped it.
                            Ok(None) => {
                                let update = self.withdraw_for_task(store, &task).await;
                                store.update_task(&task.id, holder, &update).await?;
                                continue;
                            }
                            // Its time to live ran out as it ran again:
                            // ended as rmcp ends such a task.
                            Err(_) => {
                                store
                                    .update_task(&task.id, holder, &held::expired())
                                    .await?;
                                continue;
                            }
                        }
                    }
                    false => match self.waited_for(store, &task).await {
                        Ok(Some(reply)) => reply,
                        Ok(None) => self.may_have_taken_effect(&task.tool, &task.arguments),
                        Err(error) => {
                            tracing::warn!(%error, task = %task.id, "a task taken over: the ticket it waited for could not be read");
                            self.may_have_taken_effect(&task.tool, &task.arguments)
                        }
                    },
                };
                TaskUpdate::finish(TaskState::Completed, serde_json::to_value(&reply).ok())
            };
            store.update_task(&task.id, holder, &update).await?;
        }
        Ok(())
    }

    /// Where the call of `task` stands, when it waited for an approver: the
    /// ticket its status names ([`ticket::waiting_status`]), if it is an
    /// approval of the same call (service, tool, arguments, caller),
    /// followed as the task would have followed it. `None` when its status
    /// names none — it waited for none, or stopped within the second before
    /// its status was kept — and the call may have run.
    async fn waited_for(
        &self,
        store: &dyn Store,
        task: &TaskRecord,
    ) -> Result<Option<ToolReply>, StoreError> {
        let Some(id) = (task.status_message.as_deref()).and_then(ticket::ticket_in_status) else {
            return Ok(None);
        };
        let Some(approval) = store.approval(id).await? else {
            return Ok(None);
        };
        if approval.digest != call_digest(task) {
            return Ok(None);
        }
        // The block as approvers were shown it.
        let blocked = serde_json::from_value::<ErrorEnvelope>(approval.shown.clone())
            .unwrap_or_else(|_| ErrorEnvelope::business("The call waits for an approver"));
        let failure = match ticket::follow(store, id, &blocked).await? {
            Ticketed::Ran(reply) => return Ok(Some(reply)),
            Ticketed::Ended(envelope) => Failure::Envelope(envelope),
            Ticketed::Awaiting(escalation) => Failure::Escalated(escalation),
        };
        Ok(Some(self.failed_as(
            &task.tool,
            task.arguments.clone(),
            failure,
        )))
    }

    /// Runs the call of `task` again, renewing its lease while it runs and
    /// looking for its caller's cancellation, as the replica that made it
    /// did: `None` when it was cancelled (the run is dropped, stopped at
    /// its next `.await`).
    async fn run_again_renewed(&self, store: &dyn Store, task: &TaskRecord) -> Option<ToolReply> {
        let holder = self.holder();
        let renew = move || async move {
            let mut update = TaskUpdate::now();
            update.lease_until_ms = Some(now_ms().saturating_add(held::ms(held::LEASE)));
            match store.update_task(&task.id, holder, &update).await {
                Ok(true) => {}
                Ok(false) => tracing::warn!(
                    task = %task.id,
                    "a task taken over was taken by another replica; this run's outcome will not be kept"
                ),
                Err(error) => tracing::warn!(
                    %error,
                    task = %task.id,
                    "a task taken over: its lease could not be renewed"
                ),
            }
        };
        let run = held::renewing(self.run_again(task), held::RENEW_EVERY, renew);
        let cancelled = held::cancel_asked(store, &task.id);
        match select(pin!(run), pin!(cancelled)).await {
            Either::Left((reply, _)) => Some(reply),
            Either::Right(((), _)) => None,
        }
    }

    /// The call of `task`, run again as its caller.
    async fn run_again(&self, task: &TaskRecord) -> ToolReply {
        let mut context = ToolContext::detached();
        if let Some(subject) = &task.caller {
            let caller = Caller::new(subject.as_str(), &task.caller_scopes);
            context = context.with_caller(caller);
        }
        match (self.call_with(&task.tool, task.arguments.clone(), context)).await {
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
}
