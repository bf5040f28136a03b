//! Where a waiting call stands, read off its approval as the store keeps
//! it: waiting (the escalation that carries its ticket), ended (declined,
//! withdrawn, expired), or run (its kept reply).

use std::time::Duration;

use super::Ticketed;
use crate::envelope::{ErrorEnvelope, Refusal, Ticket};
use crate::escalation::{Escalation, EscalationReason};
use crate::mcp::reply::ToolReply;
use crate::mcp::server::approval;
use crate::reasons;
use crate::store::{ApprovalRecord, ApprovalState};

/// Where the call of `approval` stands, `blocked` being its guard's block.
pub(super) fn standing(approval: &ApprovalRecord, blocked: &ErrorEnvelope, now: i64) -> Ticketed {
    // As the store has it: one truth, whatever each replica's clock says.
    match approval.state {
        ApprovalState::Done => match approval
            .result
            .clone()
            .and_then(|result| serde_json::from_value::<ToolReply>(result).ok())
        {
            Some(reply) => Ticketed::Ran(reply),
            None => Ticketed::Ended(
                ErrorEnvelope::other("the approved call ran, but its result could not be read")
                    .with_reason(reasons::MAY_HAVE_TAKEN_EFFECT),
            ),
        },
        ApprovalState::Declined | ApprovalState::Withdrawn => {
            Ticketed::Ended(declined(blocked, approval))
        }
        ApprovalState::Expired => Ticketed::Ended(approval::expired(blocked, approval)),
        ApprovalState::Pending | ApprovalState::Approved | ApprovalState::Running => {
            Ticketed::Awaiting(awaiting(blocked, approval, now))
        }
    }
}

/// The escalation of a call that waits for `approval`.
fn awaiting(blocked: &ErrorEnvelope, approval: &ApprovalRecord, now: i64) -> Escalation {
    let read = format!(
        "Call `{}` again with the same arguments: until the ticket expires, it answers with this ticket while it waits, then with the call's result once it ran",
        approval.tool
    );
    let ticket = Ticket::new(
        approval.id.clone(),
        approval.state.as_str(),
        approval.approvers.clone(),
        u64::try_from(approval.expires_ms).unwrap_or(0),
        read,
    );
    // Where it stands, in words: an agent relays this message, and
    // "waiting for an approver" would be false once one said yes.
    let by = approval.decided_by.as_deref().unwrap_or("an approver");
    let (stands, next) = match approval.state {
        ApprovalState::Approved => (
            format!("approved by {by}; the call runs shortly"),
            "Wait for the approved call to run, then call again with the same arguments to read its result",
        ),
        ApprovalState::Running => (
            format!("approved by {by}; the call is running now"),
            "Wait for the approved call to finish, then call again with the same arguments to read its result",
        ),
        _ => (
            format!("waiting for an approver with `{}`", approval.approvers),
            "Wait for the approver's decision, then call again with the same arguments to read the outcome",
        ),
    };
    let message = format!(
        "{} — {stands} (ticket {})",
        blocked.message().trim_end(),
        approval.id
    );
    let envelope = ErrorEnvelope::business(message)
        .with_reason(reasons::AWAITING_APPROVAL)
        .with_alternatives(blocked.alternatives().iter().cloned())
        .with_alternative(next)
        .remade(|parts| parts.refused = Some(Refusal::Blocked));
    let elapsed = Duration::from_millis(u64::try_from(now - approval.created_ms).unwrap_or(0));
    Escalation::new(EscalationReason::AwaitingApproval, envelope, 0, elapsed)
        .with_detail(format!(
            "Kept as approval {}, which only a person whose token grants `{}` can decide, never the caller",
            approval.id, approval.approvers
        ))
        .with_ticket(ticket)
}

/// The envelope of a call an approver declined, or its caller withdrew:
/// who, and their note.
fn declined(blocked: &ErrorEnvelope, approval: &ApprovalRecord) -> ErrorEnvelope {
    let by = approval.decided_by.as_deref().unwrap_or("an approver");
    let note = approval.note.as_deref().filter(|note| !note.is_empty());
    let who = note.map_or_else(|| by.to_owned(), |note| format!("{by} ({note})"));
    let withdrawn = approval.state == ApprovalState::Withdrawn;
    approval::declined(blocked, &who, withdrawn)
}
