//! The `escalation` object on the wire: why a failure went upward, after how
//! many attempts and how long. Written by an [`Escalation`](crate::Escalation);
//! read back, and kept, by an envelope that crossed the wire escalated.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::keys::escalation as keys;

/// Why a failure went upward. Every trigger is objective: nothing here is a
/// sentiment or a self-reported confidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum EscalationReason {
    /// The error said repeating the call would not help (`isRetryable: false`),
    /// or the tool is not safe to repeat.
    NonRetryable,
    /// Every attempt the policy allows failed.
    RetriesExhausted,
    /// The overall deadline would be crossed.
    DeadlineExceeded,
    /// Consecutive attempts gathered nothing new.
    NoProgress,
    /// The shared retry budget is spent: the dependency looks down.
    RetryBudgetExhausted,
    /// A deterministic guard blocked the call before it ran.
    BlockedByGuard,
    /// Someone explicitly asked for a human.
    HumanRequested,
    /// No rule covers the case.
    PolicyGap,
    /// A person was asked to approve the call, and declined.
    HumanDeclined,
    /// The call waits for an approver the caller cannot stand in for; its
    /// [`Ticket`] says whom, and how the outcome is read.
    AwaitingApproval,
    /// An approval expired unrun: nobody decided it in time, or its
    /// approved call was not run within a time to live of the yes.
    ApprovalExpired,
}

impl EscalationReason {
    /// Every reason, for the schema's list.
    pub(crate) const ALL: [EscalationReason; 11] = [
        EscalationReason::NonRetryable,
        EscalationReason::RetriesExhausted,
        EscalationReason::DeadlineExceeded,
        EscalationReason::NoProgress,
        EscalationReason::RetryBudgetExhausted,
        EscalationReason::BlockedByGuard,
        EscalationReason::HumanRequested,
        EscalationReason::PolicyGap,
        EscalationReason::HumanDeclined,
        EscalationReason::AwaitingApproval,
        EscalationReason::ApprovalExpired,
    ];

    /// The `snake_case` wire name (`"retries_exhausted"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            EscalationReason::NonRetryable => "non_retryable",
            EscalationReason::RetriesExhausted => "retries_exhausted",
            EscalationReason::DeadlineExceeded => "deadline_exceeded",
            EscalationReason::NoProgress => "no_progress",
            EscalationReason::RetryBudgetExhausted => "retry_budget_exhausted",
            EscalationReason::BlockedByGuard => "blocked_by_guard",
            EscalationReason::HumanRequested => "human_requested",
            EscalationReason::PolicyGap => "policy_gap",
            EscalationReason::HumanDeclined => "human_declined",
            EscalationReason::AwaitingApproval => "awaiting_approval",
            EscalationReason::ApprovalExpired => "approval_expired",
        }
    }
}

impl fmt::Display for EscalationReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the layer that sent an envelope escalated it: the `escalation`
/// object of an envelope read from the wire, kept by
/// [`ErrorEnvelope::escalation`](crate::ErrorEnvelope::escalation).
///
/// An escalation is the end of a loop: whoever escalated has retried what
/// it could, so an envelope that carries one is never retryable, whatever
/// its `isRetryable` says, and it is sent on with its `escalation` object.
///
/// ```
/// use tool_envelope::{ErrorEnvelope, EscalationReason};
///
/// let envelope: ErrorEnvelope = serde_json::from_value(serde_json::json!({
///     "isError": true, "errorCategory": "transient", "isRetryable": true,
///     "message": "orders DB down",
///     "escalation": {"reason": "retries_exhausted", "attempts": 3, "elapsedMs": 900}
/// })).unwrap();
/// let escalated = envelope.escalation().unwrap();
/// assert_eq!(escalated.reason, EscalationReason::RetriesExhausted);
/// assert_eq!(escalated.attempts, 3);
/// assert!(!envelope.is_retryable());
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Escalated {
    /// Why it went upward; [`NonRetryable`](EscalationReason::NonRetryable)
    /// when the sender named no reason this crate knows.
    pub reason: EscalationReason,
    /// How many times the tool ran, as the sender counted.
    pub attempts: u32,
    /// How long the sender tried.
    pub elapsed: Duration,
    /// The sender's sentence on the decision.
    pub detail: Option<String>,
    /// The ticket of a call that waits for an approver.
    pub ticket: Option<Ticket>,
    /// The [ledger](crate::store::Store::ledger) of the store the
    /// escalation was kept in already, on its way up (a loop with
    /// [`keep_escalations`](crate::retry::RetryPolicy::keep_escalations)
    /// inside a tool): a tool set that sends it keeps it there no more.
    /// Never on the wire, and not compared.
    pub(crate) kept_in: Option<String>,
}

/// What goes on the wire: where it was kept is not.
impl PartialEq for Escalated {
    fn eq(&self, other: &Self) -> bool {
        self.reason == other.reason
            && self.attempts == other.attempts
            && self.elapsed == other.elapsed
            && self.detail == other.detail
            && self.ticket == other.ticket
    }
}

impl Eq for Escalated {}

/// The ticket of a call that waits for a person the caller cannot stand in
/// for ([`EscalationReason::AwaitingApproval`]): which approval it is, who
/// may decide it, until when, and how the caller reads the outcome. Its id
/// reaches the tool, once it runs, as an idempotency key
/// ([`ToolContext::idempotency_key`](crate::mcp::ToolContext::idempotency_key)).
///
/// ```
/// use tool_envelope::ErrorEnvelope;
///
/// let envelope: ErrorEnvelope = serde_json::from_value(serde_json::json!({
///     "isError": true, "errorCategory": "business", "isRetryable": false,
///     "message": "Refund exceeds the $500 cap", "reason": "AWAITING_APPROVAL",
///     "escalation": {"reason": "awaiting_approval", "attempts": 0, "elapsedMs": 0,
///         "ticket": {"id": "q3T0", "status": "pending", "approvers": "refunds:approve",
///                    "expiresAtMs": 1767225600000_u64, "read": "Call again with the same arguments"}}
/// })).unwrap();
/// let ticket = envelope.escalation().unwrap().ticket.as_ref().unwrap();
/// assert_eq!(ticket.approvers, "refunds:approve");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Ticket {
    /// The approval's id: unguessable.
    pub id: String,
    /// Where it is: `pending`, `approved`, `running`.
    pub status: String,
    /// Who may decide: the scope an approver's token must grant.
    pub approvers: String,
    /// When it expires if nobody decides (ms since the Unix epoch).
    pub expires_at_ms: u64,
    /// How the caller reads the outcome.
    pub read: String,
}

/// The most bytes of a ticket's id: an approval's id is short, and one
/// cut to length would name none.
const MOST_TICKET_ID: usize = 256;

/// The most bytes of each of a ticket's texts, escaped as JSON writes them.
const MOST_TICKET_TEXT: usize = 1024;

/// How many bytes `text` takes written in a JSON string.
fn escaped_len(text: &str) -> usize {
    let escaped = |c: char| match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if c < ' ' => 6,
        c => c.len_utf8(),
    };
    text.chars().map(escaped).sum()
}

impl Ticket {
    /// The ticket as it is read and sent: none without an id, or with one
    /// too long to be an approval's; each text longer than the bound (a
    /// server may send megabytes) cut to it when `cut` — as it is sent,
    /// masked already — or, as it is read, not kept at all: a text cut
    /// before it is masked could keep the beginning of a secret.
    pub(crate) fn bounded(&self, cut: bool) -> Option<Cow<'_, Ticket>> {
        if self.id.is_empty() || self.id.len() > MOST_TICKET_ID {
            return None;
        }
        let long = |text: &str| escaped_len(text) > MOST_TICKET_TEXT;
        if ![&self.status, &self.approvers, &self.read]
            .iter()
            .any(|text| long(text))
        {
            return Some(Cow::Borrowed(self));
        }
        let cut = |text: &str| {
            if !long(text) {
                return text.to_owned();
            }
            if !cut {
                return format!("[{} bytes not kept]", text.len());
            }
            // Where a character begins, short enough however it escapes,
            // and said to be cut.
            let mut end = 0;
            let mut used = 0;
            for (at, c) in text.char_indices() {
                used += escaped_len(c.encode_utf8(&mut [0; 4]));
                if used > MOST_TICKET_TEXT - 3 {
                    break;
                }
                end = at + c.len_utf8();
            }
            format!("{}…", &text[..end])
        };
        Some(Cow::Owned(Ticket {
            id: self.id.clone(),
            status: cut(&self.status),
            approvers: cut(&self.approvers),
            expires_at_ms: self.expires_at_ms,
            read: cut(&self.read),
        }))
    }

    /// The ticket `id`, `status`, decided by a holder of `approvers` until
    /// `expires_at_ms`, read as `read` says.
    pub fn new(
        id: impl Into<String>,
        status: impl Into<String>,
        approvers: impl Into<String>,
        expires_at_ms: u64,
        read: impl Into<String>,
    ) -> Self {
        Ticket {
            id: id.into(),
            status: status.into(),
            approvers: approvers.into(),
            expires_at_ms,
            read: read.into(),
        }
    }
}

impl Escalated {
    /// The record in `value`, an `escalation` object as a sender wrote it:
    /// whatever it holds, an escalation (what a field does not say reads as
    /// nothing: no reason this crate knows, 0 attempts, no time).
    pub(crate) fn read(value: &Value) -> Self {
        Self::parse(value, false).unwrap_or_else(|_| unreachable!("a lenient read never fails"))
    }

    /// The record in `value`, which must say what the format requires:
    /// `reason`, `attempts` and `elapsedMs`, and a text as `detail` if any.
    pub(crate) fn read_strict(value: &Value) -> Result<Self, String> {
        Self::parse(value, true)
    }

    fn parse(value: &Value, strict: bool) -> Result<Self, String> {
        let reason = field(value, keys::REASON, true, strict, |found| {
            EscalationReason::deserialize(found).ok()
        })?;
        let attempts = field(value, keys::ATTEMPTS, true, strict, Value::as_u64)?;
        let elapsed = field(value, keys::ELAPSED_MS, true, strict, Value::as_u64)?;
        let detail = field(value, keys::DETAIL, false, strict, |found| {
            found.as_str().map(str::to_owned)
        })?;
        // A ticket without an id names no approval; its texts are bounded.
        let ticket = field(value, keys::TICKET, false, strict, |found| {
            let ticket = Ticket::deserialize(found).ok()?;
            ticket.bounded(false).map(Cow::into_owned)
        })?;
        Ok(Escalated {
            reason: reason.unwrap_or(EscalationReason::NonRetryable),
            attempts: attempts.map_or(0, |attempts| u32::try_from(attempts).unwrap_or(u32::MAX)),
            elapsed: Duration::from_millis(elapsed.unwrap_or(0)),
            detail,
            ticket,
            kept_in: None,
        })
    }
}

/// The field `key` of an `escalation` object, `read`; `None` when it is
/// absent (or `null`), or — read leniently — not what the format says.
fn field<T>(
    value: &Value,
    key: &'static str,
    required: bool,
    strict: bool,
    read: impl Fn(&Value) -> Option<T>,
) -> Result<Option<T>, String> {
    match value.get(key).filter(|found| !found.is_null()) {
        None if required && strict => Err(format!("missing field `{key}`")),
        None => Ok(None),
        Some(found) => match read(found) {
            None if strict => {
                // Quoted briefly: a server may send megabytes of it.
                let found = found.to_string();
                let shown = &found[..found.floor_char_boundary(256)];
                let more = if shown.len() < found.len() { "…" } else { "" };
                Err(format!("invalid `{key}`: {shown}{more}"))
            }
            read => Ok(read),
        },
    }
}

/// The `escalation` object as it is written, for an [`Escalated`] record
/// and an [`Escalation`](crate::Escalation) alike.
pub(crate) struct Wire<'a> {
    pub(crate) reason: EscalationReason,
    pub(crate) attempts: u32,
    pub(crate) elapsed_ms: u64,
    pub(crate) detail: Option<Cow<'a, str>>,
    pub(crate) ticket: Option<&'a Ticket>,
}

impl Serialize for Wire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // A ticket without an id names no approval: not sent; its texts
        // bounded.
        let ticket = self.ticket.and_then(|ticket| ticket.bounded(true));
        let fields = 3 + usize::from(self.detail.is_some()) + usize::from(ticket.is_some());
        let mut map = serializer.serialize_map(Some(fields))?;
        map.serialize_entry(keys::REASON, &self.reason)?;
        map.serialize_entry(keys::ATTEMPTS, &self.attempts)?;
        map.serialize_entry(keys::ELAPSED_MS, &self.elapsed_ms)?;
        if let Some(detail) = &self.detail {
            map.serialize_entry(keys::DETAIL, detail)?;
        }
        if let Some(ticket) = ticket {
            map.serialize_entry(keys::TICKET, &*ticket)?;
        }
        map.end()
    }
}
