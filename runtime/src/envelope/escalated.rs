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
}

impl EscalationReason {
    /// Every reason, for the schema's list.
    pub(crate) const ALL: [EscalationReason; 9] = [
        EscalationReason::NonRetryable,
        EscalationReason::RetriesExhausted,
        EscalationReason::DeadlineExceeded,
        EscalationReason::NoProgress,
        EscalationReason::RetryBudgetExhausted,
        EscalationReason::BlockedByGuard,
        EscalationReason::HumanRequested,
        EscalationReason::PolicyGap,
        EscalationReason::HumanDeclined,
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
#[derive(Debug, Clone, PartialEq, Eq)]
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
        Ok(Escalated {
            reason: reason.unwrap_or(EscalationReason::NonRetryable),
            attempts: attempts.map_or(0, |attempts| u32::try_from(attempts).unwrap_or(u32::MAX)),
            elapsed: Duration::from_millis(elapsed.unwrap_or(0)),
            detail,
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
            None if strict => Err(format!("invalid `{key}`: {found}")),
            read => Ok(read),
        },
    }
}

/// The `escalation` object as it is written, for an [`Escalated`] record
/// and an [`Escalation`](super::Escalation) alike.
pub(crate) struct Wire<'a> {
    pub(crate) reason: EscalationReason,
    pub(crate) attempts: u32,
    pub(crate) elapsed_ms: u64,
    pub(crate) detail: Option<Cow<'a, str>>,
}

impl Serialize for Wire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3 + usize::from(self.detail.is_some())))?;
        map.serialize_entry(keys::REASON, &self.reason)?;
        map.serialize_entry(keys::ATTEMPTS, &self.attempts)?;
        map.serialize_entry(keys::ELAPSED_MS, &self.elapsed_ms)?;
        if let Some(detail) = &self.detail {
            map.serialize_entry(keys::DETAIL, detail)?;
        }
        map.end()
    }
}
