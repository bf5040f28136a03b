//! What a store keeps of escalations, as rows every backend reads and
//! writes the same way.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Whether an escalation still needs someone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum EscalationState {
    /// Nobody has taken it yet.
    Open,
    /// Someone took it, and said how.
    Resolved,
}

impl EscalationState {
    /// The name kept in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            EscalationState::Open => "open",
            EscalationState::Resolved => "resolved",
        }
    }
}

/// A failure that went upward, kept for a person: its whole envelope (the
/// escalation object included), the tool, the caller.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EscalationRecord {
    /// Its id.
    pub id: String,
    /// The tool that failed.
    pub tool: Option<String>,
    /// The subject of the caller, when known.
    pub caller: Option<String>,
    /// The escalation as sent: the envelope with its `escalation` object,
    /// secrets masked.
    pub envelope: Value,
    /// Whether it still needs someone.
    pub state: EscalationState,
    /// When it was kept (ms since the epoch).
    pub created_ms: i64,
    /// Who resolved it, when, and how.
    pub resolved_by: Option<String>,
    /// When it was resolved.
    pub resolved_ms: Option<i64>,
    /// The resolver's note.
    pub note: Option<String>,
    /// Who may see and resolve it: the scope a person's token must grant
    /// (an approval's escalation is its approvers'); `None`, anyone who
    /// may enter the inbox.
    pub approvers: Option<String>,
    /// The service whose call it is: a tool set's escalations are its
    /// service's ([`ApprovalRecord::service`](super::ApprovalRecord::service)), seen on that service's
    /// inbox alone; `None`, a calling agent's (kept by a
    /// [`RetryPolicy`](crate::retry::RetryPolicy) or a
    /// [`Coordinator`](crate::coordinator::Coordinator)), seen on every
    /// inbox sharing the store.
    pub service: Option<String>,
}

impl EscalationRecord {
    /// An open escalation of `envelope` (its JSON, as sent), now.
    pub fn new(envelope: Value, caller: Option<String>) -> Self {
        EscalationRecord {
            id: super::new_id(),
            tool: envelope
                .get(crate::keys::TOOL)
                .and_then(Value::as_str)
                .map(str::to_owned),
            caller,
            envelope,
            state: EscalationState::Open,
            created_ms: super::now_ms(),
            resolved_by: None,
            resolved_ms: None,
            note: None,
            approvers: None,
            service: None,
        }
    }

    /// Seen and resolved only by people whose token grants `scope`.
    #[must_use]
    pub fn for_approvers(mut self, scope: impl Into<String>) -> Self {
        self.approvers = Some(scope.into());
        self
    }

    /// Seen and resolved only on the inbox of `service`
    /// ([`service`](Self::service)).
    #[must_use]
    pub fn for_service(mut self, service: impl Into<String>) -> Self {
        self.service = Some(service.into());
        self
    }
}
