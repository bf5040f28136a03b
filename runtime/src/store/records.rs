//! What a store keeps of tasks and approvals, as rows every backend reads
//! and writes the same way (escalations: `escalations.rs`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskState {
    /// Running.
    Working,
    /// Waiting for its client's answers (`tasks/update`).
    InputRequired,
    /// Finished with a result (which may be a tool error).
    Completed,
    /// Finished with a protocol error.
    Failed,
    /// Stopped at its client's request.
    Cancelled,
}

impl TaskState {
    /// The name kept in the store and sent on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Working => "working",
            TaskState::InputRequired => "input_required",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
        }
    }

    /// The state named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "working" => TaskState::Working,
            "input_required" => TaskState::InputRequired,
            "completed" => TaskState::Completed,
            "failed" => TaskState::Failed,
            "cancelled" => TaskState::Cancelled,
            _ => return None,
        })
    }

    /// Whether the task has ended.
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Cancelled
        )
    }
}

/// A task: a call run in the background, read by `tasks/get` on any
/// replica.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct TaskRecord {
    /// Its id: unguessable.
    pub id: String,
    /// The service that keeps it: the name of the tool set that made it
    /// ([`ToolSet::server_info`](crate::mcp::ToolSet::server_info); empty
    /// without one). Only a set of that name reads it or takes it over: in
    /// another, a tool of the same name may do something else.
    pub service: String,
    /// The tool called.
    pub tool: String,
    /// The arguments, as the client sent them (kept to run the call again
    /// when it may be repeated).
    pub arguments: Value,
    /// The subject of the caller that made it, on a protected server.
    pub caller: Option<String>,
    /// The scopes the caller's token granted: a task run again runs with
    /// them, as it would have.
    pub caller_scopes: Vec<String>,
    /// Where it is.
    pub state: TaskState,
    /// What it is doing, for people and models.
    pub status_message: Option<String>,
    /// When it was made, and last changed (ms since the epoch).
    pub created_ms: i64,
    /// When it last changed.
    pub updated_ms: i64,
    /// How long it is kept after it was made (ms).
    pub ttl_ms: i64,
    /// The replica running it, and until when its lease holds.
    pub holder: Option<String>,
    /// Until when the holder's lease holds.
    pub lease_until_ms: i64,
    /// Whether the call may be run again from the start: the tool is
    /// read-only or idempotent.
    pub safe_to_repeat: bool,
    /// How many times a replica took the task over (claimed it when the
    /// one holding it stopped renewing its lease): 0 while the replica that
    /// made it holds it. A task taken over twice is not run again.
    pub runs: u32,
    /// The questions waiting for the client (`inputRequests`).
    pub input_requests: Option<Value>,
    /// The answers the client gave (`inputResponses`, merged).
    pub input_responses: Option<Value>,
    /// Whether the client asked it to stop.
    pub cancel_requested: bool,
    /// Its result, once completed (a `CallToolResult`).
    pub result: Option<Value>,
    /// Its protocol error, once failed.
    pub error: Option<Value>,
}

/// A change to a running task, by the replica that holds it.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct TaskUpdate {
    /// Its new state.
    pub state: Option<TaskState>,
    /// A new status message (`Some(None)` clears it).
    pub status_message: Option<Option<String>>,
    /// The holder's lease, renewed.
    pub lease_until_ms: Option<i64>,
    /// The questions now waiting (`Some(None)` clears them).
    pub input_requests: Option<Option<Value>>,
    /// Its result.
    pub result: Option<Value>,
    /// Its protocol error.
    pub error: Option<Value>,
    /// When the change was made.
    pub at_ms: i64,
}

impl TaskRecord {
    /// Whether its time to live ran out by `now_ms` (one time to live
    /// after its last change): it is then unknown to its caller, and is
    /// not run again.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn lapsed_at(&self, now_ms: i64) -> bool {
        self.updated_ms.saturating_add(self.ttl_ms) <= now_ms
    }

    /// A new task of `tool` with `arguments`, working, made now by `caller`
    /// and kept `ttl_ms` after that, not yet held by any replica.
    pub fn new(
        tool: impl Into<String>,
        arguments: Value,
        caller: Option<String>,
        ttl_ms: i64,
    ) -> Self {
        let now = super::now_ms();
        TaskRecord {
            id: super::new_id(),
            service: String::new(),
            tool: tool.into(),
            arguments,
            caller,
            caller_scopes: Vec::new(),
            state: TaskState::Working,
            status_message: None,
            created_ms: now,
            updated_ms: now,
            ttl_ms,
            holder: None,
            lease_until_ms: 0,
            safe_to_repeat: false,
            runs: 0,
            input_requests: None,
            input_responses: None,
            cancel_requested: false,
            result: None,
            error: None,
        }
    }

    /// The same task, kept as `service`'s ([`service`](Self::service)).
    #[must_use]
    pub fn for_service(mut self, service: impl Into<String>) -> Self {
        self.service = service.into();
        self
    }

    /// The same task held by `holder` until `lease_until_ms`.
    #[must_use]
    pub fn held_by(mut self, holder: impl Into<String>, lease_until_ms: i64) -> Self {
        self.holder = Some(holder.into());
        self.lease_until_ms = lease_until_ms;
        self
    }

    /// The same task, marked safe to run again from the start (its tool is
    /// read-only or idempotent).
    #[must_use]
    pub fn safe_to_repeat(mut self, safe: bool) -> Self {
        self.safe_to_repeat = safe;
        self
    }
}

impl TaskUpdate {
    /// A change made now that changes nothing yet: set the fields that
    /// change.
    pub fn now() -> Self {
        TaskUpdate {
            at_ms: super::now_ms(),
            ..TaskUpdate::default()
        }
    }

    /// The change that ends the task `state` (completed, failed,
    /// cancelled) with `outcome`: its result when completed, its protocol
    /// error when failed.
    pub fn finish(state: TaskState, outcome: Option<Value>) -> Self {
        let mut update = TaskUpdate::now();
        update.state = Some(state);
        match state {
            TaskState::Failed => update.error = outcome,
            _ => update.result = outcome,
        }
        update
    }

    /// This change, made to `task`: what every store's `update_task` does
    /// once it holds the task.
    pub(super) fn apply_to(&self, task: &mut TaskRecord) {
        if let Some(state) = self.state {
            task.state = state;
        }
        if let Some(message) = &self.status_message {
            task.status_message.clone_from(message);
        }
        if let Some(lease) = self.lease_until_ms {
            task.lease_until_ms = lease;
        }
        if let Some(requests) = &self.input_requests {
            task.input_requests.clone_from(requests);
        }
        if let Some(result) = &self.result {
            task.result = Some(result.clone());
        }
        if let Some(error) = &self.error {
            task.error = Some(error.clone());
        }
        task.updated_ms = self.at_ms;
    }
}

/// Where an approval is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ApprovalState {
    /// Waiting for a person who may approve it.
    Pending,
    /// Approved: waiting to be run.
    Approved,
    /// Declined.
    Declined,
    /// Taken back by its caller before anyone decided, or before its
    /// approved call was claimed to run (the task that waited for it was
    /// cancelled): the same call made again reads it as
    /// declined, and it counts against its caller's waiting approvals,
    /// until its expiry (which the withdrawal does not move).
    Withdrawn,
    /// Its time ran out before anyone decided.
    Expired,
    /// Its call is running, on the replica that claimed it.
    Running,
    /// Its call ran; the result is kept.
    Done,
}

impl ApprovalState {
    /// The name kept in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalState::Pending => "pending",
            ApprovalState::Approved => "approved",
            ApprovalState::Declined => "declined",
            ApprovalState::Withdrawn => "withdrawn",
            ApprovalState::Expired => "expired",
            ApprovalState::Running => "running",
            ApprovalState::Done => "done",
        }
    }

    /// The state named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "pending" => ApprovalState::Pending,
            "approved" => ApprovalState::Approved,
            "declined" => ApprovalState::Declined,
            "withdrawn" => ApprovalState::Withdrawn,
            "expired" => ApprovalState::Expired,
            "running" => ApprovalState::Running,
            "done" => ApprovalState::Done,
            _ => return None,
        })
    }
}

/// A guard's block that waits for a person to decide, and what followed:
/// bound to the call (a digest of its service, the tool, its canonical
/// arguments and the caller), decided once, run once.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct ApprovalRecord {
    /// Its id, the ticket: unguessable. The tool gets it as an
    /// idempotency key.
    pub id: String,
    /// The service that opened it, as [`TaskRecord::service`]: only a set
    /// of that name lists it, decides it, and runs its call once approved.
    pub service: String,
    /// The digest of the call: service, tool, canonical arguments, caller.
    pub digest: String,
    /// The block's key among the approvable blocks of the call.
    pub block: String,
    /// The keys of the blocks of the call that its client's user approved
    /// before it waited here (a guard before or after this one whose block
    /// the client may approve): its approved run passes them too, as it
    /// passes this block. Empty for most.
    pub waived: Vec<String>,
    /// The records of the answers its client's user gave to those blocks'
    /// questions — as the result's `_meta` keeps them
    /// ([`APPROVAL_META_KEY`](crate::mcp::APPROVAL_META_KEY)): the reply of
    /// its approved run carries them, as a call approved at once does.
    pub client_answers: Vec<Value>,
    /// The tool called.
    pub tool: String,
    /// The arguments, as the client sent them: what the call runs with
    /// once approved. Never shown.
    pub arguments: Value,
    /// The block's envelope as a person sees it: secrets masked.
    pub shown: Value,
    /// The subject of the caller that made the call.
    pub caller: Option<String>,
    /// The scopes the caller's token granted: the call runs with them once
    /// approved, as it would have.
    pub caller_scopes: Vec<String>,
    /// Who may decide: the scope an approver's token must grant.
    pub approvers: String,
    /// Where it is.
    pub state: ApprovalState,
    /// When it was opened (ms since the epoch).
    pub created_ms: i64,
    /// When it expires if nobody decides, and when its outcome is no
    /// longer given for a call made again: a decision, and the call's run,
    /// each move it to one time to live (`expires_ms - created_ms` as
    /// opened) after them, so that an outcome reached late is still read
    /// for as long as one reached early.
    pub expires_ms: i64,
    /// Who decided, when, and their note.
    pub decided_by: Option<String>,
    /// When it was decided.
    pub decided_ms: Option<i64>,
    /// The note of whoever decided.
    pub note: Option<String>,
    /// The replica running its call, and until when its lease holds.
    pub holder: Option<String>,
    /// Until when the holder's lease holds.
    pub lease_until_ms: i64,
    /// Whether the call may be run again from the start after its runner
    /// died (read-only or idempotent).
    pub safe_to_repeat: bool,
    /// The reply of its call, once it ran (a `CallToolResult`).
    pub result: Option<Value>,
    /// When a notice of it is due
    /// (`ToolSet::approval_webhook`, feature `inbox`):
    /// posted then, by any replica with a webhook, unless it was
    /// [delivered](super::Store::notice_sent) first, and for as long as it
    /// waits for a decision; `None`, none is due (delivered, or no webhook
    /// asked for one).
    pub notice_due_ms: Option<i64>,
}

impl ApprovalRecord {
    /// Where it stands at `now_ms`: expired once its time ran out while it
    /// was pending, or approved and not yet claimed to run, though no
    /// runner has swept it yet ([`Store::expire_approvals`](super::Store::expire_approvals)).
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn state_at(&self, now_ms: i64) -> ApprovalState {
        match self.state {
            ApprovalState::Pending | ApprovalState::Approved if self.expires_ms <= now_ms => {
                ApprovalState::Expired
            }
            state => state,
        }
    }

    /// When its outcome, reached at `at_ms`, stops being given for a call
    /// made again: one time to live after `at_ms`, or `expires_ms` if that
    /// is later. The time to live is the one `expires_ms` was last set
    /// with: from the decision ([`decided_ms`](Self::decided_ms)), once
    /// there is one, else from the approval's making. What every store's
    /// `decide` (but for a withdrawal) and `finish_approval` set.
    pub fn readable_until(&self, at_ms: i64) -> i64 {
        let since = self.decided_ms.unwrap_or(self.created_ms);
        let late = at_ms.saturating_sub(since).max(0);
        self.expires_ms.saturating_add(late)
    }

    /// A pending approval of the block `block` of the call `digest`
    /// (`tool` with `arguments`, by `caller`), shown to people as `shown`,
    /// which a person granted the scope `approvers` may decide until
    /// `expires_ms`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        digest: impl Into<String>,
        block: impl Into<String>,
        tool: impl Into<String>,
        arguments: Value,
        shown: Value,
        caller: Option<String>,
        approvers: impl Into<String>,
        expires_ms: i64,
    ) -> Self {
        ApprovalRecord {
            id: super::new_id(),
            service: String::new(),
            digest: digest.into(),
            block: block.into(),
            waived: Vec::new(),
            client_answers: Vec::new(),
            tool: tool.into(),
            arguments,
            shown,
            caller,
            caller_scopes: Vec::new(),
            approvers: approvers.into(),
            state: ApprovalState::Pending,
            created_ms: super::now_ms(),
            expires_ms,
            decided_by: None,
            decided_ms: None,
            note: None,
            holder: None,
            lease_until_ms: 0,
            safe_to_repeat: false,
            result: None,
            notice_due_ms: None,
        }
    }

    /// The same approval, kept as `service`'s ([`service`](Self::service)).
    #[must_use]
    pub fn for_service(mut self, service: impl Into<String>) -> Self {
        self.service = service.into();
        self
    }
}
