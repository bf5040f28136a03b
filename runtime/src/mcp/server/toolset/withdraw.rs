//! A call run as a task that waits for an approver
//! ([`tickets`](super::tickets)) is its caller's to take back: cancelling
//! the task withdraws the approval, so that no approver's later yes runs a
//! call its caller no longer wants — on the replica that runs the task, or
//! on the one that takes it over after its replica stopped.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;

use super::ToolSet;
use crate::envelope::ErrorEnvelope;
use crate::mcp::server::ticket::{self, ANONYMOUS, Ticketed};
use crate::store::{
    ApprovalRecord, ApprovalState, Decision, Store, StoreError, TaskRecord, TaskState, TaskUpdate,
    now_ms,
};

/// The calls run as tasks that open or wait for an approval, by task id:
/// what a cancellation of the task withdraws.
#[derive(Default)]
pub(super) struct InTasks {
    waiting: Mutex<HashMap<String, Waits>>,
    /// Told each time a call stops opening its approval.
    settled: Notify,
}

/// Where a task's call stands with its approval.
enum Waits {
    /// Opening or reading it in the store: not known yet.
    Opening,
    /// Waiting for the ticket it opened or read, blocked by its block.
    For(String, ErrorEnvelope),
}

impl InTasks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waits>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the call of `task` is opening its approval.
    fn opening(&self, task: &str) -> bool {
        matches!(self.lock().get(task), Some(Waits::Opening))
    }

    /// Until the call of `task` is not opening its approval any more.
    async fn settled(&self, task: &str) {
        loop {
            let told = self.settled.notified();
            let mut told = std::pin::pin!(told);
            told.as_mut().enable();
            if !self.opening(task) {
                return;
            }
            told.await;
        }
    }
}

/// The note a withdrawal leaves on the approval and in the audit.
const NOTE: &str = "withdrawn by its caller: the task that waited for it was cancelled";

impl ToolSet {
    /// Until the call of the task `task` is not in the middle of opening
    /// its approval: a cancellation waits for it, so that what the store
    /// kept is there to withdraw, rather than dropping the call while the
    /// approval is being written (the store may keep it all the same).
    /// A store that does not answer in [`WITHDRAW_WITHIN`] is not waited
    /// for longer: the withdrawal then says the approval may stand.
    pub(crate) async fn settled_in_task(&self, task: &str) {
        let settled = self.inner.protocol.approving.in_tasks.settled(task);
        let _ = tokio::time::timeout(WITHDRAW_WITHIN, settled).await;
    }

    /// Withdraws the approval the task `task` waits for, as its caller
    /// `by` (`None`: an anonymous one), who cancelled the task: a pending
    /// approval, or an approved one whose call no replica has claimed to
    /// run yet, becomes [`Withdrawn`](ApprovalState::Withdrawn), so that
    /// no approver's yes runs a call its caller took back. One running or
    /// ended stands: its run is not stopped. Nothing, for a task that
    /// waits for no approver here.
    ///
    /// # Errors
    ///
    /// What to tell the caller when the store failed, or did not answer in
    /// time: the approval may still stand.
    pub(crate) async fn withdraw_in_task(
        &self,
        task: &str,
        by: Option<&str>,
    ) -> Result<(), String> {
        let waiting = self.inner.protocol.approving.in_tasks.lock().remove(task);
        if matches!(waiting, Some(Waits::Opening)) {
            tracing::warn!(
                task,
                "withdrawing a cancelled task's approval: the store did not answer in time"
            );
            return Err(MAY_STAND.to_owned());
        }
        let (Some(Waits::For(first, blocked)), Some(store)) = (waiting, self.store_ref()) else {
            return Ok(());
        };
        let withdraw = async {
            // The approval the call waits for now: the first one's run may
            // have met the next guard's block, whose approval it opened.
            let Ticketed::Awaiting(standing) =
                ticket::follow(store.as_ref(), &first, &blocked).await?
            else {
                return Ok(());
            };
            let Some(ticket) = standing.ticket else {
                return Ok(());
            };
            withdraw(store.as_ref(), &ticket.id, by).await
        };
        match tokio::time::timeout(WITHDRAW_WITHIN, withdraw).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => {
                tracing::warn!(%error, task, "withdrawing a cancelled task's approval: the store failed");
                Err(MAY_STAND.to_owned())
            }
            Err(_) => {
                tracing::warn!(
                    task,
                    "withdrawing a cancelled task's approval: the store did not answer in time"
                );
                Err(MAY_STAND.to_owned())
            }
        }
    }

    /// Withdraws the pending approvals of the call the cancelled task
    /// `task` made, whose replica stopped before it could: the same call —
    /// tool, arguments, caller — waits for them; not one opened by a token
    /// of its caller that granted more than the task's (the task's caller
    /// neither reads nor takes it, as a call made again does not). The task's end: cancelled;
    /// or, when the store fails, failed, saying the approval may stand (a
    /// store that keeps failing would otherwise keep the task for ever).
    pub(super) async fn withdraw_for_task(
        &self,
        store: &dyn Store,
        task: &TaskRecord,
    ) -> TaskUpdate {
        let digest = super::recover::call_digest(task);
        let withdrawn = async {
            for approval in store.call_approvals(&digest, now_ms()).await? {
                if matches!(
                    approval.state,
                    ApprovalState::Pending | ApprovalState::Approved | ApprovalState::Running
                ) && reached_by(&approval, &task.caller_scopes)
                {
                    withdraw(store, &approval.id, task.caller.as_deref()).await?;
                }
            }
            Ok::<_, StoreError>(())
        };
        match withdrawn.await {
            Ok(()) => TaskUpdate::finish(TaskState::Cancelled, None),
            Err(error) => {
                tracing::warn!(%error, task = %task.id, "withdrawing a cancelled task's approval: the store failed");
                let error = rmcp::ErrorData::internal_error(MAY_STAND, None);
                TaskUpdate::finish(TaskState::Failed, serde_json::to_value(error).ok())
            }
        }
    }
}

/// Withdraws the approval `id` — pending, or approved and not claimed — as
/// its caller `by`. One whose run is under way is not stopped, but the
/// store is told that its caller took the call back
/// ([`ticket::withdrawn_mark`]): a next guard that run meets opens no
/// approval, and one it opened already is withdrawn — as when its run
/// ended handing on to one since the cancel read it. One that ended
/// otherwise stands.
async fn withdraw(store: &dyn Store, id: &str, by: Option<&str>) -> Result<(), StoreError> {
    let decision = Decision::withdrawn(by.unwrap_or(ANONYMOUS), NOTE);
    if store.decide(id, &decision).await? {
        tracing::info!(ticket = %id, "a cancelled task's approval was withdrawn");
        return Ok(());
    }
    match store.approval(id).await? {
        // Running, or its run ended handing on to the next guard's
        // approval since the cancel read it: the call goes on past it.
        Some(running)
            if running.state == ApprovalState::Running || ticket::waits_for(&running).is_some() =>
        {
            // Kept one time to live from now (at least the approval's own
            // expiry), however late the run was claimed (a claim does not
            // look at the expiry, which may have passed): a run that goes
            // on longer than that — a day by default — is not stopped at
            // its next guard.
            let mark = ticket::withdrawn_mark(&running.id);
            store
                .redeem(&mark, running.readable_until(now_ms()))
                .await?;
            // The run may have opened its next approval already, after it
            // looked for the mark (a run that opens one after this read
            // finds the mark then, and withdraws it itself): each of the
            // call's that waits, this caller's call's, is withdrawn too,
            // and each now running (its run handed on to, and claimed) is
            // marked as this one, read again until none is new.
            let mut marked = vec![running.id.clone()];
            for _ in 0..ticket::MOST_IN_TURN {
                let mut more = false;
                for next in store.call_approvals(&running.digest, now_ms()).await? {
                    // Another token's of the same caller, granted more, is
                    // not this one's to take back.
                    if !reached_by(&next, &running.caller_scopes) {
                        continue;
                    }
                    let claimed = match next.state {
                        ApprovalState::Pending | ApprovalState::Approved
                            if next.id != running.id =>
                        {
                            if store.decide(&next.id, &decision).await? {
                                tracing::info!(ticket = %next.id, "the next approval a cancelled task's run opened was withdrawn");
                                continue;
                            }
                            // Claimed (or ended) since it was read: read
                            // again, and the call's approvals once more.
                            more = true;
                            store.approval(&next.id).await?
                        }
                        ApprovalState::Running => Some(next),
                        _ => None,
                    };
                    if let Some(run) = claimed
                        && run.state == ApprovalState::Running
                        && !marked.contains(&run.id)
                    {
                        let mark = ticket::withdrawn_mark(&run.id);
                        store.redeem(&mark, run.readable_until(now_ms())).await?;
                        marked.push(run.id);
                        more = true;
                    }
                }
                if !more {
                    break;
                }
            }
            tracing::info!(ticket = %id, "a cancelled task's approved call was running: it opens no next approval");
        }
        _ => {
            tracing::info!(ticket = %id, "a cancelled task's approval had ended already: it stands");
        }
    }
    Ok(())
}

/// Whether a token that granted `scopes` reaches `approval`: it grants
/// each scope of the token that opened it, as a call made again must
/// (`ticket::lacking_scope`).
fn reached_by(approval: &ApprovalRecord, scopes: &[String]) -> bool {
    (approval.caller_scopes.iter()).all(|scope| scopes.contains(scope))
}

/// A task's call that opens or reads its approval, listed as opening
/// while it does.
pub(super) struct Opening<'a> {
    in_tasks: &'a InTasks,
    task: String,
}

impl<'a> Opening<'a> {
    pub(super) fn new(in_tasks: &'a InTasks, task: &str) -> Self {
        in_tasks.lock().insert(task.to_owned(), Waits::Opening);
        Opening {
            in_tasks,
            task: task.to_owned(),
        }
    }
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        let mut waiting = self.in_tasks.lock();
        if matches!(waiting.get(&self.task), Some(Waits::Opening)) {
            waiting.remove(&self.task);
        }
        drop(waiting);
        self.in_tasks.settled.notify_waiters();
    }
}

/// A task that waits for an approver, listed while it does.
pub(super) struct InTask<'a> {
    in_tasks: &'a InTasks,
    task: String,
}

impl<'a> InTask<'a> {
    pub(super) fn new(
        in_tasks: &'a InTasks,
        task: &str,
        ticket: String,
        blocked: ErrorEnvelope,
    ) -> Self {
        let waits = Waits::For(ticket, blocked);
        in_tasks.lock().insert(task.to_owned(), waits);
        in_tasks.settled.notify_waiters();
        InTask {
            in_tasks,
            task: task.to_owned(),
        }
    }
}

impl Drop for InTask<'_> {
    fn drop(&mut self) {
        self.in_tasks.lock().remove(&self.task);
        self.in_tasks.settled.notify_waiters();
    }
}

/// What a cancelled task whose approval could not be withdrawn ends with.
const MAY_STAND: &str = "the task was cancelled, but the approval it waited for could not be withdrawn (the store failed, or did not answer in time): an approver may still approve it; call again with the same arguments to read where it stands";

/// How long a cancelled task waits for the store to withdraw its approval
/// before it ends all the same.
const WITHDRAW_WITHIN: Duration = Duration::from_secs(10);
