//! A person in the loop: a guard's block that a person may approve
//! ([`Blocked::unless_approved`](crate::guard::Blocked::unless_approved))
//! becomes a question to the client's user, on either revision.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use crate::envelope::{ErrorEnvelope, Refusal};
use crate::mcp::ask::{APPROVAL_KEY_PREFIX, Elicitation};
use crate::mcp::context::ToolContext;
use crate::reasons;
use crate::store::ApprovalRecord;

/// The key of the result's `_meta` that keeps, for audit, every approval a
/// call asked for: the question, who answered — the name the person typed
/// (`approver`), their `note`, the `client` as it named itself, and the
/// `caller` the server's token validator authenticated, when there is one —
/// what they answered (`action`), and when (`answeredAtMs`, milliseconds
/// since the Unix epoch). `approver` and `note` are what the client sent:
/// only `caller` is vouched for by the server.
pub const APPROVAL_META_KEY: &str = "tool-envelope/approvals";

/// Where a question put to the client's user turns from the block to what
/// it asks: a blank line, then "Approve", the tool and its query.
const APPROVE: &str = "\n\nApprove `";

/// The block a question of [`ask`] put to the client's user, as its
/// record keeps the question: what they approved.
#[cfg_attr(not(feature = "inbox"), allow(dead_code))]
pub(crate) fn block_asked(question: &str) -> &str {
    question
        .rsplit_once(APPROVE)
        .map_or(question, |(block, _)| block)
}

/// The most approvals one call asks for: one per block a person may approve.
pub(crate) const MAX_APPROVALS: usize = 4;

/// What became of a block a person may approve.
pub(crate) enum Approval {
    /// Approved: run the call again, past the block.
    Approved,
    /// Declined or dismissed: the envelope that says so.
    Declined(ErrorEnvelope),
    /// Nobody could be asked: the block stands.
    NotAsked,
}

/// Whether the client of `context` said it can put a question to its
/// user (elicitation): otherwise [`ask`] asks nobody.
pub(crate) fn can_ask(context: &ToolContext) -> bool {
    context
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.elicitation.is_some())
}

/// Whether the client's user would be asked about the block whose key is
/// `key` now: they can be ([`can_ask`]), and have not answered it in an
/// earlier round of the call (2026-07-28), whose answer [`ask`] takes. An
/// answer to the key's question in other words (the server changed
/// between the rounds) counts as one here, though [`ask`] asks afresh:
/// the store is read again when the call is ticketed.
pub(crate) fn would_ask(context: &ToolContext, key: &str) -> bool {
    can_ask(context) && !context.answered(&format!("{APPROVAL_KEY_PREFIX}{key}"))
}

/// Asks the client's user to approve the call `blocked` refused — the
/// block whose key is `key`; the answer's record goes to `audit`.
pub(crate) async fn ask(
    context: &ToolContext,
    key: &str,
    blocked: &ErrorEnvelope,
    audit: &mut Vec<Value>,
) -> Approval {
    if !can_ask(context) {
        return Approval::NotAsked;
    }
    let key = format!("{APPROVAL_KEY_PREFIX}{key}");
    let tool = blocked.tool().unwrap_or("the tool");
    let query = blocked
        .attempted_query()
        .map_or_else(String::new, |query| format!(" with {query}"));
    let question = format!("{}{APPROVE}{tool}`{query}?", blocked.message().trim_end());
    let form = json!({
        "type": "object",
        "properties": {
            "approver": {"type": "string", "title": "Your name", "description": "Who approves, for the audit log", "maxLength": 256},
            "note": {"type": "string", "title": "Note", "description": "Why, for the audit log", "maxLength": 1024}
        }
    });
    // A client that could not answer: nobody was asked.
    let Ok(answer) = context.ask_for_approval(&key, question.clone(), form).await else {
        return Approval::NotAsked;
    };
    let mut record = Map::new();
    record.insert("question".into(), Value::String(question));
    record.insert("action".into(), Value::String(answer.action().into()));
    // As the client named itself, cut as the fields it types are: the
    // record is kept with an approval that waits, and shown to approvers.
    if let Some(client) = context.client_name() {
        let client = crate::limits::text_for_wire(&client, 256).into_owned();
        record.insert("client".into(), Value::String(client));
    }
    if let Some(caller) = context.caller() {
        record.insert("caller".into(), Value::String(caller.subject().to_owned()));
    }
    let at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis());
    record.insert("answeredAtMs".into(), json!(at));
    let approved = match answer {
        Elicitation::Accepted(fields) => {
            for (field, cap) in [("approver", 256), ("note", 1024)] {
                if let Some(Value::String(text)) = fields.get(field) {
                    let text = crate::limits::text_for_wire(text, cap);
                    record.insert(field.into(), Value::String(text.into_owned()));
                }
            }
            true
        }
        Elicitation::Declined | Elicitation::Cancelled => false,
    };
    audit.push(Value::Object(record));
    match approved {
        true => Approval::Approved,
        false => Approval::Declined(declined(blocked, "A person", false)),
    }
}

/// The envelope of a call `who` declined: `business`, never retried, with
/// the block's alternatives — whether the client's user declined it or an
/// approver at the server.
/// The envelope of an approved call's run that met another block after its
/// caller withdrew the call: the next approval is not asked for.
pub(crate) fn withdrawn_meanwhile(blocked: &ErrorEnvelope) -> ErrorEnvelope {
    ErrorEnvelope::business(format!(
        "Its caller withdrew the call while its approved run went on; the next approval is not asked for: {}",
        blocked.message()
    ))
    .with_reason(reasons::HUMAN_DECLINED)
    .with_alternatives(blocked.alternatives().iter().cloned())
    .remade(|parts| parts.refused = Some(Refusal::Declined))
}

pub(crate) fn declined(blocked: &ErrorEnvelope, who: &str, withdrawn: bool) -> ErrorEnvelope {
    let did = if withdrawn { "withdrew" } else { "declined" };
    ErrorEnvelope::business(format!("{who} {did} the call: {}", blocked.message()))
        .with_reason(reasons::HUMAN_DECLINED)
        .with_alternatives(blocked.alternatives().iter().cloned())
        .remade(|parts| parts.refused = Some(Refusal::Declined))
}

/// The envelope of a blocked call that opened no approval: its caller has
/// `waiting` waiting already, as many as they may. Nothing ran.
pub(crate) fn too_many(blocked: &ErrorEnvelope, waiting: u64) -> ErrorEnvelope {
    ErrorEnvelope::business(format!(
        "{} — not sent to the approvers: {waiting} approvals of this caller wait for a decision already (those withdrawn count until they expire), as many as may wait at once",
        blocked.message().trim_end()
    ))
    .with_reason(reasons::TOO_MANY_APPROVALS)
    .with_alternatives(blocked.alternatives().iter().cloned())
    .with_alternative(
        "Call again once approvers have decided the calls of yours that wait, or once they (or those you withdrew) expire",
    )
    .remade(|parts| parts.refused = Some(Refusal::Blocked))
}

/// The envelope of a call not put to approvers because they would not see
/// its arguments whole.
pub(crate) fn too_long(blocked: &ErrorEnvelope) -> ErrorEnvelope {
    ErrorEnvelope::validation(format!(
        "{} — not sent to the approvers: the call's arguments are longer than an approver is shown whole",
        blocked.message().trim_end()
    ))
    .with_reason(reasons::TOO_LONG_TO_APPROVE)
    .with_alternatives(blocked.alternatives().iter().cloned())
    .with_alternative("Make the call again with shorter arguments")
    .remade(|parts| parts.refused = Some(Refusal::Blocked))
}

/// The envelope of a call not put to a person because a part of its
/// arguments that is not secret would be shown to them masked.
pub(crate) fn hidden(blocked: &ErrorEnvelope) -> ErrorEnvelope {
    ErrorEnvelope::validation(format!(
        "{} — not put to a person: a part of the call's arguments that is not secret equals a value sent as a secret, and would be shown masked",
        blocked.message().trim_end()
    ))
    .with_reason(reasons::HIDDEN_FROM_APPROVERS)
    .with_alternatives(blocked.alternatives().iter().cloned())
    .with_alternative("Make the call again with secrets that no other argument repeats")
    .remade(|parts| parts.refused = Some(Refusal::Blocked))
}

/// The envelope of a call whose approval expired unrun: nobody decided it
/// in time, or its approved call was not claimed to run in time.
pub(crate) fn expired(blocked: &ErrorEnvelope, approval: &ApprovalRecord) -> ErrorEnvelope {
    let why = match &approval.decided_by {
        Some(by) => format!(
            "Approved by {by}, but the approval expired before the call could run; it was not run"
        ),
        None => format!("Nobody with `{}` decided in time", approval.approvers),
    };
    ErrorEnvelope::business(format!("{why}: {}", blocked.message()))
        .with_reason(reasons::APPROVAL_EXPIRED)
        .with_alternatives(blocked.alternatives().iter().cloned())
        .remade(|parts| parts.refused = Some(Refusal::Declined))
}
