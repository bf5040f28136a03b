//! The store a tool set serves from, each of its answers bounded in time: a
//! database out of reach (its host gone from the network, a query's reply
//! lost) ends a store operation with an error after
//! [`STORE_ANSWERS_WITHIN`], instead of leaving the call, the task, the
//! approvals runner or the inbox page that waits for it hanging until TCP
//! gives up (a quarter of an hour on Linux, or never for a lost reply:
//! the drivers set no keepalive).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::store::{
    ApprovalRecord, ApprovalState, AuditEntry, Decision, Escalate, EscalationRecord,
    EscalationState, Store, StoreError, StoreFuture, TaskRecord, TaskUpdate,
};

/// How long a tool set waits for any one answer of its store. Longer than
/// the waits the stores make on purpose — 10 seconds for another
/// replica's lock (Postgres's `lock_timeout`, SQLite's busy timeout) —
/// so that only a store that does not answer at all is cut off.
pub(crate) const STORE_ANSWERS_WITHIN: Duration = Duration::from_secs(20);

/// `inner`, each of its operations ended with a [`StoreError`] after
/// `within` without an answer. What such an error means is what any
/// failure of the store means where it is met: a call that could not be
/// checked is refused unrun, a runner's pass ends and the next tries
/// again, an inbox page says the store cannot be reached.
pub(crate) struct Bounded {
    inner: Arc<dyn Store>,
    within: Duration,
}

/// `inner`, each of its answers bounded by [`STORE_ANSWERS_WITHIN`].
pub(crate) fn bounded(inner: Arc<dyn Store>) -> Arc<dyn Store> {
    Arc::new(Bounded {
        inner,
        within: STORE_ANSWERS_WITHIN,
    })
}

impl Bounded {
    /// `operation`, ended with an error if it has not answered within the
    /// bound. Driven without a tokio runtime (`ToolSet::call` may be), it
    /// has no timer to be bounded by, and is waited for whole.
    fn bound<'a, T: Send + 'a>(&self, operation: StoreFuture<'a, T>) -> StoreFuture<'a, T> {
        let within = self.within;
        Box::pin(async move {
            if tokio::runtime::Handle::try_current().is_err() {
                return operation.await;
            }
            match tokio::time::timeout(within, operation).await {
                Ok(answer) => answer,
                Err(_) => Err(StoreError::new(format!(
                    "no answer within {} s",
                    within.as_secs()
                ))),
            }
        })
    }
}

impl fmt::Debug for Bounded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The store it bounds, as that store shows itself.
        self.inner.fmt(f)
    }
}

/// Every operation, passed on to the store bounded — those the trait
/// gives a body of its own too, so that a store's own versions of them
/// are the ones used.
macro_rules! bounded {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        $(fn $name<'a>(&'a self, $($arg: $ty),*) -> StoreFuture<'a, $out> {
            self.bound(self.inner.$name($($arg),*))
        })*
    };
}

impl Store for Bounded {
    bounded! {
        create_task(task: &'a TaskRecord, most_running: u64) -> bool;
        task(id: &'a str) -> Option<TaskRecord>;
        update_task(id: &'a str, holder: &'a str, update: &'a TaskUpdate) -> bool;
        answer_task(id: &'a str, responses: &'a Value) -> bool;
        cancel_task(id: &'a str) -> bool;
        running_tasks(service: &'a str, caller: Option<&'a str>) -> (u64, u64);
        claim_abandoned_tasks(service: &'a str, tools: Option<&'a [&'a str]>, holder: &'a str, now_ms: i64, lease_until_ms: i64, limit: u32) -> Vec<TaskRecord>;
        open_approval(approval: &'a ApprovalRecord, most_waiting: u64) -> Option<ApprovalRecord>;
        call_approvals(digest: &'a str, now_ms: i64) -> Vec<ApprovalRecord>;
        waiting_approvals(service: &'a str, caller: Option<&'a str>, now_ms: i64) -> u64;
        approval(id: &'a str) -> Option<ApprovalRecord>;
        approvals(service: &'a str, approvers: Option<&'a [&'a str]>, states: &'a [ApprovalState], limit: u32) -> Vec<ApprovalRecord>;
        oldest_approvals(service: &'a str, approvers: Option<&'a [&'a str]>, states: &'a [ApprovalState], limit: u32) -> Vec<ApprovalRecord>;
        decide(id: &'a str, decision: &'a Decision) -> bool;
        claim_approval(id: &'a str, holder: &'a str, now_ms: i64, lease_until_ms: i64) -> Option<ApprovalRecord>;
        renew_approval(id: &'a str, holder: &'a str, lease_until_ms: i64) -> bool;
        approvals_to_run(service: &'a str, now_ms: i64, limit: u32) -> Vec<String>;
        finish_approval(id: &'a str, holder: &'a str, result: &'a Value, at_ms: i64) -> bool;
        expire_approvals(service: &'a str, now_ms: i64, escalate: &'a Escalate<'a>) -> Vec<ApprovalRecord>;
        claim_due_notices(service: &'a str, now_ms: i64, wait_ms: i64, limit: u32) -> Vec<ApprovalRecord>;
        notice_sent(id: &'a str) -> ();
        redeem(nonce: &'a str, until_ms: i64) -> bool;
        redeemed(nonce: &'a str) -> bool;
        record_escalation(escalation: &'a EscalationRecord, most_open: u64) -> bool;
        escalations(service: &'a str, approvers: Option<&'a [&'a str]>, state: EscalationState, limit: u32) -> Vec<EscalationRecord>;
        escalation(id: &'a str) -> Option<EscalationRecord>;
        open_escalations(service: Option<&'a str>, caller: Option<&'a str>) -> u64;
        resolve_escalation(id: &'a str, by: &'a str, note: &'a str, at_ms: i64) -> bool;
        forget_resolved_escalations(service: &'a str, resolved_before_ms: i64) -> u64;
        audit(entry: &'a AuditEntry) -> ();
        audit_log(limit: u32) -> Vec<AuditEntry>;
        sweep(now_ms: i64) -> ();
    }

    fn ledger(&self) -> &str {
        self.inner.ledger()
    }
}
