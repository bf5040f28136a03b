//! The store in the process: for tests, and for one server that may forget
//! its tasks and approvals when it restarts. Every "decide once" method is
//! one change under one lock.

use std::sync::{Mutex, MutexGuard, PoisonError};

use serde_json::Value;

use self::state::{Ledger, Scopes, State, is_live, newest};
use super::{
    ApprovalRecord, ApprovalState, AuditEntry, Decision, Escalate, EscalationRecord,
    EscalationState, Store, StoreFuture, TaskRecord, TaskUpdate,
};

/// The store in the process ([`Store`]): nothing outlives it.
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<State>,
    ledger: Ledger,
}

impl MemoryStore {
    /// An empty store, its [ledger](Store::ledger) its own.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// An answer, ready.
fn ready<'a, T: Send + 'a>(value: T) -> StoreFuture<'a, T> {
    Box::pin(std::future::ready(Ok(value)))
}

impl Store for MemoryStore {
    fn create_task<'a>(&'a self, task: &'a TaskRecord, most_running: u64) -> StoreFuture<'a, bool> {
        let mut state = self.lock();
        if most_running != u64::MAX
            && state.in_flight(&task.service, task.caller.as_deref()).1 >= most_running
        {
            return ready(false);
        }
        state.keep_task(task.clone());
        ready(true)
    }

    fn task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        ready(self.lock().tasks.get(id).cloned())
    }

    fn update_task<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        update: &'a TaskUpdate,
    ) -> StoreFuture<'a, bool> {
        let mut state = self.lock();
        let State { tasks, running, .. } = &mut *state;
        let Some(task) = tasks.get_mut(id) else {
            return ready(false);
        };
        if task.holder.as_deref() != Some(holder) || task.state.is_finished() {
            return ready(false);
        }
        update.apply_to(task);
        if task.state.is_finished() {
            running.remove(id);
        }
        ready(true)
    }

    fn answer_task<'a>(&'a self, id: &'a str, responses: &'a Value) -> StoreFuture<'a, bool> {
        let mut state = self.lock();
        let Some(task) = state.tasks.get_mut(id) else {
            return ready(false);
        };
        if task.state.is_finished() {
            return ready(false);
        }
        let mut merged = match &task.input_responses {
            Some(Value::Object(known)) => known.clone(),
            _ => serde_json::Map::new(),
        };
        if crate::store::answers::merge(&mut merged, task.input_requests.as_ref(), responses) {
            task.input_responses = Some(Value::Object(merged));
        }
        ready(true)
    }

    fn cancel_task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        let mut state = self.lock();
        let Some(task) = state.tasks.get_mut(id) else {
            return ready(false);
        };
        if task.state.is_finished() {
            return ready(false);
        }
        task.cancel_requested = true;
        ready(true)
    }

    fn running_tasks<'a>(
        &'a self,
        service: &'a str,
        caller: Option<&'a str>,
    ) -> StoreFuture<'a, (u64, u64)> {
        ready(self.lock().in_flight(service, caller))
    }

    fn claim_abandoned_tasks<'a>(
        &'a self,
        service: &'a str,
        tools: Option<&'a [&'a str]>,
        holder: &'a str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<TaskRecord>> {
        let mut state = self.lock();
        let State { tasks, running, .. } = &mut *state;
        let mut abandoned: Vec<_> = (running.iter())
            .filter_map(|id| tasks.get(id))
            .filter(|task| {
                let ours = tools.is_none_or(|tools| tools.contains(&task.tool.as_str()))
                    || task.ttl_ms <= now_ms.saturating_sub(task.created_ms);
                task.service == service
                    && ours
                    && !task.state.is_finished()
                    && task.lease_until_ms < now_ms
            })
            .map(|task| (task.lease_until_ms, task.id.clone()))
            .collect();
        // The longest abandoned first, as the SQL stores claim them.
        abandoned.sort_unstable();
        abandoned.truncate(limit as usize);
        let claimed = (abandoned.into_iter())
            .filter_map(|(_, id)| {
                let task = tasks.get_mut(&id)?;
                task.holder = Some(holder.to_owned());
                task.lease_until_ms = lease_until_ms;
                task.runs += 1;
                Some(task.clone())
            })
            .collect();
        ready(claimed)
    }

    fn open_approval<'a>(
        &'a self,
        approval: &'a ApprovalRecord,
        most_waiting: u64,
    ) -> StoreFuture<'a, Option<ApprovalRecord>> {
        let mut state = self.lock();
        let now = approval.created_ms;
        let existing = state.approvals.values().find(|known| {
            known.digest == approval.digest && known.block == approval.block && is_live(known, now)
        });
        if let Some(existing) = existing {
            return ready(Some(existing.clone()));
        }
        // An id kept already is kept as it is, as a SQL store's key keeps it.
        let taken = state.approvals.contains_key(&approval.id);
        if taken
            || state.waiting(&approval.service, approval.caller.as_deref(), now) >= most_waiting
        {
            return ready(None);
        }
        state
            .approvals
            .insert(approval.id.clone(), approval.clone());
        ready(Some(approval.clone()))
    }

    fn call_approvals<'a>(
        &'a self,
        digest: &'a str,
        now_ms: i64,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        let state = self.lock();
        let found: Vec<ApprovalRecord> = (state.approvals.values())
            .filter(|approval| approval.digest == digest && is_live(approval, now_ms))
            .cloned()
            .collect();
        ready(newest(found, |approval| approval.created_ms, u32::MAX))
    }

    fn waiting_approvals<'a>(
        &'a self,
        service: &'a str,
        caller: Option<&'a str>,
        now_ms: i64,
    ) -> StoreFuture<'a, u64> {
        ready(self.lock().waiting(service, caller, now_ms))
    }

    fn approval<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<ApprovalRecord>> {
        ready(self.lock().approvals.get(id).cloned())
    }

    fn approvals<'a>(
        &'a self,
        service: &'a str,
        approvers: Option<&'a [&'a str]>,
        states: &'a [ApprovalState],
        limit: u32,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        let found = self.lock().listed(service, approvers, states);
        ready(newest(found, |approval| approval.created_ms, limit))
    }

    fn oldest_approvals<'a>(
        &'a self,
        service: &'a str,
        approvers: Option<&'a [&'a str]>,
        states: &'a [ApprovalState],
        limit: u32,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        let mut found = self.lock().listed(service, approvers, states);
        found.sort_by_key(|approval| approval.created_ms);
        found.truncate(limit as usize);
        ready(found)
    }

    fn decide<'a>(&'a self, id: &'a str, decision: &'a Decision) -> StoreFuture<'a, bool> {
        let mut state = self.lock();
        let Some(approval) = state.approvals.get_mut(id) else {
            return ready(false);
        };
        let open = match approval.state {
            ApprovalState::Pending => approval.expires_ms > decision.at_ms,
            // Taken back before any replica claimed it to run, whatever
            // its expiry: until it is expired, it may still be claimed.
            ApprovalState::Approved => decision.state() == ApprovalState::Withdrawn,
            _ => false,
        };
        if !open {
            return ready(false);
        }
        // Read before the decision is: one time to live after it.
        if decision.state() != ApprovalState::Withdrawn {
            approval.expires_ms = approval.readable_until(decision.at_ms);
        }
        approval.state = decision.state();
        approval.decided_by = Some(decision.by.clone());
        approval.decided_ms = Some(decision.at_ms);
        approval.note = Some(decision.note.clone());
        state.audit.push(decision.audit_entry(id));
        ready(true)
    }

    fn claim_approval<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        now_ms: i64,
        lease_until_ms: i64,
    ) -> StoreFuture<'a, Option<ApprovalRecord>> {
        let mut state = self.lock();
        let Some(approval) = state.approvals.get_mut(id) else {
            return ready(None);
        };
        let claimable = approval.state == ApprovalState::Approved
            || (approval.state == ApprovalState::Running && approval.lease_until_ms < now_ms);
        if !claimable {
            return ready(None);
        }
        approval.state = ApprovalState::Running;
        approval.holder = Some(holder.to_owned());
        approval.lease_until_ms = lease_until_ms;
        ready(Some(approval.clone()))
    }

    fn renew_approval<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        lease_until_ms: i64,
    ) -> StoreFuture<'a, bool> {
        let mut state = self.lock();
        let Some(approval) = state.running_approval(id, holder) else {
            return ready(false);
        };
        approval.lease_until_ms = lease_until_ms;
        ready(true)
    }

    fn approvals_to_run<'a>(
        &'a self,
        service: &'a str,
        now_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<String>> {
        let state = self.lock();
        let mut waiting: Vec<_> = (state.approvals.values())
            .filter(|approval| {
                approval.service == service
                    && (approval.state == ApprovalState::Approved
                        || (approval.state == ApprovalState::Running
                            && approval.lease_until_ms < now_ms))
            })
            .map(|approval| (approval.created_ms, &approval.id))
            .collect();
        // The oldest first, as the SQL stores list them.
        waiting.sort_unstable();
        let ids = waiting.into_iter().take(limit as usize);
        ready(ids.map(|(_, id)| id.clone()).collect())
    }

    fn finish_approval<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        result: &'a Value,
        at_ms: i64,
    ) -> StoreFuture<'a, bool> {
        let mut state = self.lock();
        let Some(approval) = state.running_approval(id, holder) else {
            return ready(false);
        };
        approval.state = ApprovalState::Done;
        approval.result = Some(result.clone());
        approval.expires_ms = approval.readable_until(at_ms);
        ready(true)
    }

    fn expire_approvals<'a>(
        &'a self,
        service: &'a str,
        now_ms: i64,
        escalate: &'a Escalate<'a>,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        let mut state = self.lock();
        let mut expired = Vec::new();
        for approval in state.approvals.values_mut() {
            let unrun = matches!(
                approval.state,
                ApprovalState::Pending | ApprovalState::Approved
            );
            if unrun && approval.expires_ms <= now_ms && approval.service == service {
                approval.state = ApprovalState::Expired;
                expired.push(approval.clone());
            }
        }
        for approval in &expired {
            let open = state.open_of(Some(&approval.service), approval.caller.as_deref());
            if let Some(escalation) = escalate(approval, open) {
                state.escalations.insert(escalation.id.clone(), escalation);
            }
            state.audit.push(AuditEntry::expired(&approval.id, now_ms));
        }
        ready(expired)
    }

    fn claim_due_notices<'a>(
        &'a self,
        service: &'a str,
        now_ms: i64,
        wait_ms: i64,
        limit: u32,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        ready((self.lock()).claim_due_notices(service, now_ms, wait_ms, limit))
    }

    fn notice_sent<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        if let Some(approval) = self.lock().approvals.get_mut(id) {
            approval.notice_due_ms = None;
        }
        ready(())
    }

    fn redeem<'a>(&'a self, nonce: &'a str, until_ms: i64) -> StoreFuture<'a, bool> {
        let mut state = self.lock();
        if state.redeemed.contains_key(nonce) {
            return ready(false);
        }
        state.redeemed.insert(nonce.to_owned(), until_ms);
        ready(true)
    }

    fn redeemed<'a>(&'a self, nonce: &'a str) -> StoreFuture<'a, bool> {
        ready(self.lock().redeemed.contains_key(nonce))
    }

    fn ledger(&self) -> &str {
        &self.ledger.0
    }

    fn record_escalation<'a>(
        &'a self,
        escalation: &'a EscalationRecord,
        most_open: u64,
    ) -> StoreFuture<'a, bool> {
        let mut state = self.lock();
        if state.escalations.contains_key(&escalation.id) {
            return ready(true);
        }
        if state.open_of(escalation.service.as_deref(), escalation.caller.as_deref()) >= most_open {
            return ready(false);
        }
        (state.escalations).insert(escalation.id.clone(), escalation.clone());
        ready(true)
    }

    fn escalations<'a>(
        &'a self,
        service: &'a str,
        approvers: Option<&'a [&'a str]>,
        wanted: EscalationState,
        limit: u32,
    ) -> StoreFuture<'a, Vec<EscalationRecord>> {
        let approvers = Scopes::new(approvers);
        let state = self.lock();
        let found: Vec<EscalationRecord> = (state.escalations.values())
            .filter(|escalation| {
                escalation.state == wanted
                    && (escalation.service.as_deref()).is_none_or(|theirs| theirs == service)
                    && (escalation.approvers.as_deref()).is_none_or(|scope| approvers.admit(scope))
            })
            .cloned()
            .collect();
        ready(newest(found, |escalation| escalation.created_ms, limit))
    }

    fn escalation<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<EscalationRecord>> {
        ready(self.lock().escalations.get(id).cloned())
    }

    fn open_escalations<'a>(
        &'a self,
        service: Option<&'a str>,
        caller: Option<&'a str>,
    ) -> StoreFuture<'a, u64> {
        ready(self.lock().open_of(service, caller))
    }

    fn forget_resolved_escalations<'a>(
        &'a self,
        service: &'a str,
        resolved_before_ms: i64,
    ) -> StoreFuture<'a, u64> {
        let mut state = self.lock();
        let before = state.escalations.len();
        state.escalations.retain(|_, escalation| {
            escalation.state != EscalationState::Resolved
                || (escalation.service.as_deref()).is_some_and(|theirs| theirs != service)
                || escalation
                    .resolved_ms
                    .is_none_or(|at| at >= resolved_before_ms)
        });
        ready(u64::try_from(before - state.escalations.len()).unwrap_or(u64::MAX))
    }

    fn resolve_escalation<'a>(
        &'a self,
        id: &'a str,
        by: &'a str,
        note: &'a str,
        at_ms: i64,
    ) -> StoreFuture<'a, bool> {
        let mut state = self.lock();
        let Some(escalation) = state.escalations.get_mut(id) else {
            return ready(false);
        };
        if escalation.state != EscalationState::Open {
            return ready(false);
        }
        escalation.state = EscalationState::Resolved;
        escalation.resolved_by = Some(by.to_owned());
        escalation.resolved_ms = Some(at_ms);
        escalation.note = Some(note.to_owned());
        state.audit.push(AuditEntry::resolved(by, id, note, at_ms));
        ready(true)
    }

    fn audit<'a>(&'a self, entry: &'a AuditEntry) -> StoreFuture<'a, ()> {
        self.lock().audit.push(entry.clone());
        ready(())
    }

    fn audit_log<'a>(&'a self, limit: u32) -> StoreFuture<'a, Vec<AuditEntry>> {
        // Newest first by time, as the SQL stores order it (ties: the later kept).
        let mut newest: Vec<AuditEntry> = self.lock().audit.iter().rev().cloned().collect();
        newest.sort_by_key(|entry| std::cmp::Reverse(entry.at_ms));
        newest.truncate(limit as usize);
        ready(newest)
    }

    fn sweep<'a>(&'a self, now_ms: i64) -> StoreFuture<'a, ()> {
        self.lock().sweep(now_ms);
        ready(())
    }
}

mod state;
#[cfg(test)]
mod tests;
