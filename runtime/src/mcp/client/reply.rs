//! A tool's reply, read: its value, the server's envelope — known as a
//! refusal when it says the tool never ran — or, for a failure told in
//! plain text, what the common SDKs' texts say or the text itself.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use crate::envelope::{ErrorEnvelope, EscalationReason, Refusal};
use crate::limits::text_for_wire;
use crate::mcp::client::failure::MAX_MESSAGE_BYTES;
use crate::mcp::client::sdk_errors;
use crate::reasons;

/// A tool's reply: its value, or its failure as an envelope.
pub(crate) fn read_result(result: CallToolResult, name: &str) -> Result<Value, ErrorEnvelope> {
    let text_block = result.content.iter().find_map(|block| match block {
        ContentBlock::Text(text) => Some(text.text.as_str()),
        _ => None,
    });
    if result.is_error != Some(true) {
        if let Some(structured) = result.structured_content {
            return Ok(structured);
        }
        return Ok(match (text_block, result.content.len()) {
            (Some(text), 1) => {
                serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
            }
            _ => serde_json::to_value(&result.content).unwrap_or(Value::Null),
        });
    }
    // An envelope, in the structured content or as a JSON text block.
    let envelope = result
        .structured_content
        .as_ref()
        .and_then(read_envelope)
        .or_else(|| {
            text_block
                .and_then(|text| serde_json::from_str::<Value>(text).ok())
                .as_ref()
                .and_then(read_envelope)
        });
    if let Some(envelope) = envelope {
        return Err(envelope);
    }
    let message = match text_block {
        Some(text) if !text.trim().is_empty() => text,
        _ => {
            return Err(foreign(format!(
                "the tool `{name}` failed without saying why"
            )));
        }
    };
    // The argument errors of the common SDKs, in the text they send them
    // as: read from the text as it is kept.
    let message = text_for_wire(message, MAX_MESSAGE_BYTES);
    if let Some(envelope) = sdk_errors::recognize(&message, name) {
        return Err(envelope);
    }
    Err(foreign(message.into_owned()))
}

/// A failure told in a server's own words, `message` bounded already:
/// `other`, not retryable.
fn foreign(message: String) -> ErrorEnvelope {
    crate::classify::foreign(ErrorEnvelope::other(message))
}

/// An envelope, if `value` is one; one that says the server refused the
/// call before its tool ran — escalated after 0 attempts, blocked by a
/// guard, declined by a person, its arguments unusable — is known as such,
/// so that a loop around the call counts no run.
fn read_envelope(value: &Value) -> Option<ErrorEnvelope> {
    let envelope = <ErrorEnvelope as serde::Deserialize>::deserialize(value).ok()?;
    let escalated = envelope
        .escalation()
        .map(|escalated| (escalated.reason, escalated.attempts));
    let refusal = match (envelope.reason(), escalated) {
        (Some(reasons::HUMAN_DECLINED), _) | (_, Some((EscalationReason::HumanDeclined, _))) => {
            Some(Refusal::Declined)
        }
        (Some(reason), _) if reasons::BLOCKED.contains(&reason) => Some(Refusal::Blocked),
        (_, Some((EscalationReason::BlockedByGuard, _))) => Some(Refusal::Blocked),
        (Some(reason), _) if reasons::UNUSABLE.contains(&reason) => Some(Refusal::Unusable),
        (_, Some((_, 0))) => Some(Refusal::Unusable),
        _ => None,
    };
    match refusal {
        Some(refusal) => Some(envelope.remade(|parts| parts.refused = Some(refusal))),
        None => Some(envelope),
    }
}
