//! What the memory store holds, under its one lock, and what it counts
//! against a caller's bounds: their tasks in flight, their approvals
//! waiting, their escalations open.

use std::collections::{HashMap, HashSet};

use crate::store::{
    ApprovalRecord, ApprovalState, AuditEntry, EscalationRecord, EscalationState, TaskRecord,
};

/// The name of a memory store's record of used nonces
/// ([`Store::ledger`](crate::store::Store::ledger)): its own, random — a new
/// store (a restart) never shares the record of the one before.
#[derive(Debug)]
pub(super) struct Ledger(pub(super) String);

impl Default for Ledger {
    fn default() -> Self {
        Ledger(crate::store::new_id())
    }
}

/// Everything the store keeps.
#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) tasks: HashMap<String, TaskRecord>,
    /// The ids of the tasks not finished: what a count of running tasks
    /// and the look for abandoned ones walk, rather than every task kept
    /// until its time to live ends.
    pub(super) running: HashSet<String>,
    pub(super) approvals: HashMap<String, ApprovalRecord>,
    pub(super) redeemed: HashMap<String, i64>,
    pub(super) escalations: HashMap<String, EscalationRecord>,
    pub(super) audit: Vec<AuditEntry>,
}

impl State {
    /// Forgets what is past its time at `now_ms` ([`Store::sweep`](crate::store::Store::sweep)).
    pub(super) fn sweep(&mut self, now_ms: i64) {
        let State { tasks, running, .. } = self;
        tasks.retain(|id, task| {
            // One cancelled and unfinished waits a week for its service.
            let waits = task.cancel_requested && !task.state.is_finished();
            let until = task.updated_ms.saturating_add(task.ttl_ms);
            let kept = until > now_ms
                || (waits && until.saturating_add(crate::store::KEEP_CANCELLED_TASK_MS) > now_ms);
            if !kept {
                running.remove(id);
            }
            kept
        });
        self.redeemed.retain(|_, until| *until > now_ms);
        self.approvals.retain(|_, approval| {
            matches!(
                approval.state,
                ApprovalState::Pending | ApprovalState::Approved | ApprovalState::Running
            ) || approval
                .expires_ms
                .saturating_add(crate::store::KEEP_DECIDED_MS)
                > now_ms
        });
    }

    /// Keeps `task`, and notes whether it runs.
    pub(super) fn keep_task(&mut self, task: TaskRecord) {
        if task.state.is_finished() {
            self.running.remove(&task.id);
        } else {
            self.running.insert(task.id.clone());
        }
        self.tasks.insert(task.id.clone(), task);
    }

    /// The approval `id`, if its call runs held by `holder`.
    pub(super) fn running_approval(
        &mut self,
        id: &str,
        holder: &str,
    ) -> Option<&mut ApprovalRecord> {
        (self.approvals.get_mut(id)).filter(|approval| {
            approval.state == ApprovalState::Running && approval.holder.as_deref() == Some(holder)
        })
    }

    /// How many tasks of `service` are in flight (not finished), and how
    /// many are `caller`'s.
    pub(super) fn in_flight(&self, service: &str, caller: Option<&str>) -> (u64, u64) {
        let running = (self.running.iter())
            .filter_map(|id| self.tasks.get(id))
            .filter(|task| task.service == service);
        let mine = |task: &TaskRecord| u64::from(task.caller.as_deref() == caller);
        running.fold((0, 0), |(all, theirs), task| (all + 1, theirs + mine(task)))
    }

    /// How many approvals of `service` and `caller` wait for a decision at
    /// `now_ms`.
    pub(super) fn waiting(&self, service: &str, caller: Option<&str>, now_ms: i64) -> u64 {
        // Withdrawn ones too, until they expire: a caller who opens and
        // takes back approval after approval is still bounded.
        let waits = |approval: &&ApprovalRecord| {
            matches!(
                approval.state,
                ApprovalState::Pending | ApprovalState::Withdrawn
            ) && approval.expires_ms > now_ms
        };
        let theirs = (self.approvals.values())
            .filter(|approval| approval.service == service && approval.caller.as_deref() == caller);
        u64::try_from(theirs.filter(waits).count()).unwrap_or(u64::MAX)
    }

    /// How many escalations of `service` (`None`, of calling agents) and
    /// `caller` are open.
    pub(super) fn open_of(&self, service: Option<&str>, caller: Option<&str>) -> u64 {
        let open = (self.escalations.values())
            .filter(|escalation| {
                escalation.service.as_deref() == service
                    && escalation.caller.as_deref() == caller
                    && escalation.state == EscalationState::Open
            })
            .count();
        u64::try_from(open).unwrap_or(u64::MAX)
    }

    /// Claims up to `limit` approvals of `service` whose notice is due by
    /// `now_ms` and which still wait for a decision, the oldest due first,
    /// for `wait_ms` or their age, whichever is longer
    /// ([`Store::claim_due_notices`](crate::store::Store::claim_due_notices)).
    pub(super) fn claim_due_notices(
        &mut self,
        service: &str,
        now_ms: i64,
        wait_ms: i64,
        limit: u32,
    ) -> Vec<ApprovalRecord> {
        let mut due: Vec<(i64, String)> = (self.approvals.values())
            .filter(|approval| {
                approval.service == service
                    && approval.state == ApprovalState::Pending
                    && approval.expires_ms > now_ms
            })
            .filter_map(|approval| {
                let due = approval.notice_due_ms.filter(|due| *due <= now_ms)?;
                Some((due, approval.id.clone()))
            })
            .collect();
        due.sort_unstable();
        due.truncate(limit as usize);
        let mut claimed = Vec::with_capacity(due.len());
        for (_, id) in due {
            if let Some(approval) = self.approvals.get_mut(&id) {
                let age = now_ms.saturating_sub(approval.created_ms);
                approval.notice_due_ms = Some(now_ms.saturating_add(wait_ms.max(age)));
                claimed.push(approval.clone());
            }
        }
        claimed
    }
}

/// The scopes a list asks for, looked up rather than walked (a person may
/// have thousands); none: every scope.
pub(super) struct Scopes<'a>(Option<HashSet<&'a str>>);

impl<'a> Scopes<'a> {
    pub(super) fn new(scopes: Option<&[&'a str]>) -> Self {
        Scopes(scopes.map(|scopes| scopes.iter().copied().collect()))
    }

    /// Whether the list takes what `scope` may decide.
    pub(super) fn admit(&self, scope: &str) -> bool {
        (self.0.as_ref()).is_none_or(|scopes| scopes.contains(scope))
    }
}

/// Whether an approval in `state` stands for its call: a later call with
/// the same digest meets it rather than opening another.
pub(super) fn is_live(approval: &ApprovalRecord, now_ms: i64) -> bool {
    match approval.state {
        ApprovalState::Pending | ApprovalState::Approved | ApprovalState::Running => true,
        ApprovalState::Done | ApprovalState::Declined | ApprovalState::Withdrawn => {
            approval.expires_ms > now_ms
        }
        ApprovalState::Expired => false,
    }
}

/// Newest first, at most `limit`.
pub(super) fn newest<T>(mut items: Vec<T>, created: impl Fn(&T) -> i64, limit: u32) -> Vec<T> {
    items.sort_by_key(|item| std::cmp::Reverse(created(item)));
    items.truncate(limit as usize);
    items
}

impl State {
    /// The approvals of `service` in `states`, with `approvers` only
    /// theirs, in no order.
    pub(super) fn listed(
        &self,
        service: &str,
        approvers: Option<&[&str]>,
        states: &[ApprovalState],
    ) -> Vec<ApprovalRecord> {
        let approvers = Scopes::new(approvers);
        (self.approvals.values())
            .filter(|approval| {
                approval.service == service
                    && states.contains(&approval.state)
                    && approvers.admit(&approval.approvers)
            })
            .cloned()
            .collect()
    }
}
