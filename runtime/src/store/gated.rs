//! A store for tests that holds every count of running tasks at a gate,
//! and every task kept at another, until the test opens them: two starts
//! can then be seen at the same moment deterministically, with no timing
//! at all; and a store that never keeps an escalation, or never reads a
//! task back, when told to hang.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::Value;
use tokio::sync::Semaphore;

use super::{
    ApprovalRecord, ApprovalState, AuditEntry, Decision, Escalate, EscalationRecord,
    EscalationState, MemoryStore, Store, StoreFuture, TaskRecord, TaskUpdate,
};

/// A [`MemoryStore`] whose [`running_tasks`](Store::running_tasks) waits
/// at a gate, shut until [`open_counts`](Gated::open_counts), and whose
/// [`create_task`](Store::create_task) waits at another, shut until
/// [`open`](Gated::open) opens both.
#[derive(Debug)]
pub(crate) struct Gated {
    inner: MemoryStore,
    gate: Semaphore,
    keeping: Semaphore,
    entered: AtomicUsize,
    /// Whether keeping an escalation never ends.
    hanging: AtomicBool,
    /// Whether reading a task waits at `task_reads`.
    hanging_task_reads: AtomicBool,
    /// Where a task's reads wait, shut until
    /// [`release_task_reads`](Gated::release_task_reads).
    task_reads: Semaphore,
}

impl Gated {
    /// An empty store, its gate shut.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Gated {
            inner: MemoryStore::new(),
            gate: Semaphore::new(0),
            keeping: Semaphore::new(0),
            entered: AtomicUsize::new(0),
            hanging: AtomicBool::new(false),
            hanging_task_reads: AtomicBool::new(false),
            task_reads: Semaphore::new(0),
        })
    }

    /// From now on, keeping an escalation never ends: a database out of
    /// reach.
    pub(crate) fn hang_escalations(&self) {
        self.hanging.store(true, Ordering::SeqCst);
    }

    /// From now on, reading a task does not end (a database out of
    /// reach) until [`release_task_reads`](Self::release_task_reads).
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn hang_task_reads(&self) {
        self.hanging_task_reads.store(true, Ordering::SeqCst);
    }

    /// Every read of a task that waits, and every later one, passes.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn release_task_reads(&self) {
        self.task_reads.close();
    }

    /// The store under the gates, which holds nothing.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn inner(&self) -> &MemoryStore {
        &self.inner
    }

    /// How many counts of running tasks reached the gate so far.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn entered(&self) -> usize {
        self.entered.load(Ordering::SeqCst)
    }

    /// Opens both gates for good: every count and every task kept that
    /// waits passes, and every later one does not stop.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn open(&self) {
        self.gate.close();
        self.keeping.close();
    }

    /// Opens the gate of the counts for good; tasks kept still wait.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn open_counts(&self) {
        self.gate.close();
    }
}

/// The methods the gate does not hold, passed on to the memory store.
macro_rules! passed_on {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        $(fn $name<'a>(&'a self, $($arg: $ty),*) -> StoreFuture<'a, $out> {
            self.inner.$name($($arg),*)
        })*
    };
}

impl Store for Gated {
    fn running_tasks<'a>(
        &'a self,
        service: &'a str,
        caller: Option<&'a str>,
    ) -> StoreFuture<'a, (u64, u64)> {
        Box::pin(async move {
            self.entered.fetch_add(1, Ordering::SeqCst);
            // Shut: never a permit; opened: closed, so that it passes.
            let _ = self.gate.acquire().await;
            self.inner.running_tasks(service, caller).await
        })
    }

    fn create_task<'a>(&'a self, task: &'a TaskRecord, most_running: u64) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let _ = self.keeping.acquire().await;
            self.inner.create_task(task, most_running).await
        })
    }

    fn record_escalation<'a>(
        &'a self,
        escalation: &'a EscalationRecord,
        most_open: u64,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            if self.hanging.load(Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            self.inner.record_escalation(escalation, most_open).await
        })
    }

    fn task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move {
            if self.hanging_task_reads.load(Ordering::SeqCst) {
                // Shut: never a permit; released: closed, so that it passes.
                let _ = self.task_reads.acquire().await;
            }
            self.inner.task(id).await
        })
    }

    passed_on! {
        update_task(id: &'a str, holder: &'a str, update: &'a TaskUpdate) -> bool;
        answer_task(id: &'a str, responses: &'a Value) -> bool;
        cancel_task(id: &'a str) -> bool;
        claim_abandoned_tasks(service: &'a str, tools: Option<&'a [&'a str]>, holder: &'a str, now_ms: i64, lease_until_ms: i64, limit: u32) -> Vec<TaskRecord>;
        open_approval(approval: &'a ApprovalRecord, most_waiting: u64) -> Option<ApprovalRecord>;
        call_approvals(digest: &'a str, now_ms: i64) -> Vec<ApprovalRecord>;
        waiting_approvals(service: &'a str, caller: Option<&'a str>, now_ms: i64) -> u64;
        approval(id: &'a str) -> Option<ApprovalRecord>;
        approvals(service: &'a str, approvers: Option<&'a [&'a str]>, states: &'a [ApprovalState], limit: u32) -> Vec<ApprovalRecord>;
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
        escalations(service: &'a str, approvers: Option<&'a [&'a str]>, state: EscalationState, limit: u32) -> Vec<EscalationRecord>;
        escalation(id: &'a str) -> Option<EscalationRecord>;
        open_escalations(service: Option<&'a str>, caller: Option<&'a str>) -> u64;
        forget_resolved_escalations(service: &'a str, resolved_before_ms: i64) -> u64;
        resolve_escalation(id: &'a str, by: &'a str, note: &'a str, at_ms: i64) -> bool;
        audit(entry: &'a AuditEntry) -> ();
        audit_log(limit: u32) -> Vec<AuditEntry>;
        sweep(now_ms: i64) -> ();
    }

    fn ledger(&self) -> &str {
        self.inner.ledger()
    }
}
