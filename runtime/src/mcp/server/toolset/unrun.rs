//! How the runner ends, unrun, what it cannot run: an approval nobody
//! decided in time, a call whose replica stopped while it ran, a call the
//! store cannot read back.

use serde_json::{Map, Value};

use super::ToolSet;
use crate::envelope::ErrorEnvelope;
use crate::keys;
use crate::mcp::server::held;
use crate::reasons;
use crate::store::{ApprovalRecord, Store, StoreError, now_ms};

/// How long a replica holds an approved call it runs (or sets aside)
/// before another may take it over.
pub(super) const LEASE: std::time::Duration = std::time::Duration::from_secs(10 * 60);

impl ToolSet {
    /// Ends the approved call `id`, which the store cannot read back
    /// (`unread` says why), unrun: claimed (a claim keeps its lease though
    /// the row it answers cannot be read) and finished `done`, its kept
    /// reply an envelope that says so (`MAY_HAVE_TAKEN_EFFECT` when a
    /// replica that stopped was running it). Otherwise it would be listed
    /// first again on every pass, and end each pass there, holding back
    /// every approved call after it. Its row still cannot be read back:
    /// its caller's ticket and the inbox still fail on it. Nothing ran: 0.
    /// When the store did not keep the claim (another replica runs the
    /// call), 0 too; when it failed otherwise, or cannot finish the call,
    /// the pass ends at the call, as at any failure.
    pub(super) async fn set_aside(
        &self,
        store: &dyn Store,
        id: &str,
        unread: StoreError,
    ) -> Result<usize, StoreError> {
        let holder = self.holder();
        let now = now_ms();
        let lease = super::claim::claims_own(now.saturating_add(held::ms(LEASE)));
        // Approved first; then running, its lease run out: a replica that
        // stopped was running it, and it may have taken effect. Either way
        // it does not run here, so it cannot run twice.
        let mut abandoned = false;
        let mut claimed = store.claim_approval(id, holder, i64::MIN, lease).await;
        if matches!(claimed, Ok(None)) {
            abandoned = true;
            claimed = store.claim_approval(id, holder, now, lease).await;
        }
        let tool = match claimed {
            Ok(None) => return Ok(0),
            // Mended meanwhile, and listed though another service's (a
            // store of one's own): left to that service.
            Ok(Some(claimed)) if !self.owns(&claimed) => {
                tracing::warn!(ticket = %id, "another service's approved call was listed to run here: left claimed, unrun");
                return Ok(0);
            }
            // Mended meanwhile: still not run, since its blocks were not
            // read before the claim.
            Ok(Some(claimed)) => claimed.tool,
            Err(error) if error.is_unreadable() => String::new(),
            Err(error) => return Err(error),
        };
        tracing::warn!(ticket = %id, error = %unread, "an approved call could not be read back from the store: ended unrun");
        let envelope = match abandoned {
            true => ErrorEnvelope::other(format!(
                "the replica running the approved call stopped before it finished, and the call could not be read back from the store, so it was not run again: {unread}"
            ))
            .with_reason(reasons::MAY_HAVE_TAKEN_EFFECT)
            .with_alternative("Check the system the tool changes before calling it again"),
            false => ErrorEnvelope::other(format!(
                "the approved call could not be read back from the store when its run was due, so it was not run: {unread}"
            )),
        }
        .with_alternative("Have an operator look at the approval's row in the store");
        let reply = self.failed(&tool, Value::Null, envelope);
        let reply = serde_json::to_value(&reply).unwrap_or_default();
        match store.finish_approval(id, holder, &reply, now_ms()).await? {
            true => Ok(0),
            false => Err(unread),
        }
    }

    /// The reply of a call of `tool` with `arguments` whose replica died
    /// while it ran, and which may not run again.
    pub(super) fn may_have_taken_effect(
        &self,
        tool: &str,
        arguments: &Value,
    ) -> crate::mcp::reply::ToolReply {
        let why = match self.inner.index.contains_key(tool) {
            true => "the tool is neither read-only nor idempotent",
            false => "the replica that took it over does not have the tool",
        };
        let envelope = ErrorEnvelope::other(format!(
            "the replica running `{tool}` stopped before it finished; {why}, so it was not run again"
        ))
        .with_reason(reasons::MAY_HAVE_TAKEN_EFFECT)
        .with_alternative("Check the system the tool changes before calling it again");
        self.failed(tool, arguments.clone(), envelope)
    }

    /// The reply of a call of `tool` with `arguments` (a task's, an
    /// approved one) whose replica died while it ran, and whose time to
    /// live ran out before another took it over: not run again — its
    /// caller's scopes are of then, and a task's caller can no longer read
    /// or cancel it.
    pub(super) fn not_run_again_late(
        &self,
        tool: &str,
        arguments: &Value,
    ) -> crate::mcp::reply::ToolReply {
        let envelope = ErrorEnvelope::transient(format!(
            "the replica running `{tool}` stopped before it finished, and its time to live ran out before another took it over: it was not run again"
        ));
        self.failed(tool, arguments.clone(), envelope)
    }

    /// The reply of a task of `tool` with `arguments` that stopped each of
    /// the `runs` replicas that ran it: not run again, nor handed on to
    /// the next. Not retryable: the same call would stop the next one too.
    pub(super) fn not_run_again_stopping(
        &self,
        tool: &str,
        arguments: &Value,
        runs: u32,
    ) -> crate::mcp::reply::ToolReply {
        let envelope = ErrorEnvelope::other(format!(
            "`{tool}` was run {runs} times, and each replica that ran it stopped before it finished: it was not run again"
        ))
        .with_alternative("Ask the server's operator why the call stops the server before calling it again");
        self.failed(tool, arguments.clone(), envelope)
    }
}

/// The escalation of an approval that expired unrun — nobody decided it in
/// time, or its approved call was not claimed to run in time: the block
/// as approvers saw it, with reason `APPROVAL_EXPIRED`.
pub(super) fn expired_escalation(approval: &ApprovalRecord) -> Value {
    let mut shown = match &approval.shown {
        Value::Object(shown) => shown.clone(),
        _ => Map::new(),
    };
    shown.insert(
        keys::REASON.into(),
        Value::String(reasons::APPROVAL_EXPIRED.into()),
    );
    let detail = match &approval.decided_by {
        Some(by) => format!(
            "Approval {} was approved by {by}, but its call was not run within a time to live of the decision: it expired, and the call was not run",
            approval.id
        ),
        None => format!(
            "Nobody with `{}` decided approval {} before it expired",
            approval.approvers, approval.id
        ),
    };
    let mut escalation = Map::new();
    escalation.insert(
        keys::escalation::REASON.into(),
        Value::String(crate::EscalationReason::ApprovalExpired.as_str().into()),
    );
    escalation.insert(keys::escalation::ATTEMPTS.into(), Value::from(0));
    escalation.insert(
        keys::escalation::ELAPSED_MS.into(),
        Value::from((approval.expires_ms - approval.created_ms).max(0)),
    );
    escalation.insert(keys::escalation::DETAIL.into(), Value::String(detail));
    shown.insert(keys::ESCALATION.into(), Value::Object(escalation));
    shown.insert(keys::TOOL.into(), Value::String(approval.tool.clone()));
    Value::Object(shown)
}
