//! Escalation: what goes upward when a failure cannot be recovered locally.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::envelope::{ErrorEnvelope, duration_to_ms};
use crate::guard::Blocked;
use crate::limits::{EnvelopeLimits, text_for_wire};
use crate::wire::Outgoing;

/// Well-known `reason` codes that turn a failure into a specific escalation.
pub mod reasons {
    /// The user explicitly asked for a human: escalate with
    /// [`EscalationReason::HumanRequested`](super::EscalationReason::HumanRequested).
    pub const HUMAN_REQUESTED: &str = "HUMAN_REQUESTED";
    /// No rule covers the case: escalate with
    /// [`EscalationReason::PolicyGap`](super::EscalationReason::PolicyGap).
    pub const POLICY_GAP: &str = "POLICY_GAP";
    /// A guard blocked the call before it ran.
    pub const BLOCKED_BY_GUARD: &str = "BLOCKED_BY_GUARD";
}

/// Why a failure went upward. Every trigger is objective: nothing here is a
/// sentiment or a self-reported confidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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
}

impl EscalationReason {
    /// The snake_case wire name (`"retries_exhausted"`).
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
        }
    }

    /// The reason a failure that cannot be retried escalates with: blocked by a
    /// guard, a human request or a policy gap when the envelope says so,
    /// otherwise [`NonRetryable`](Self::NonRetryable).
    pub fn of_final(envelope: &ErrorEnvelope) -> Self {
        if envelope.downcast_ref::<Blocked>().is_some() {
            return EscalationReason::BlockedByGuard;
        }
        match envelope.reason.as_deref() {
            Some(reasons::HUMAN_REQUESTED) => EscalationReason::HumanRequested,
            Some(reasons::POLICY_GAP) => EscalationReason::PolicyGap,
            Some(reasons::BLOCKED_BY_GUARD) => EscalationReason::BlockedByGuard,
            _ => EscalationReason::NonRetryable,
        }
    }
}

impl fmt::Display for EscalationReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure sent upward with everything the caller needs to act without
/// re-running the tool: the last envelope with its four pillars, every partial
/// result gathered across attempts, why it escalated, and after how many
/// attempts and how long.
///
/// Its JSON is an envelope — it validates against the envelope schema — with
/// an `escalation` object added:
///
/// ```
/// use std::time::Duration;
/// use tool_envelope::{ErrorEnvelope, Escalation, EscalationReason};
///
/// let envelope = ErrorEnvelope::permission("Access denied to payroll table")
///     .with_alternative("Escalate to data-owner for approval");
/// let escalation = Escalation::new(EscalationReason::NonRetryable, envelope, 1, Duration::from_millis(12));
/// let json = serde_json::to_value(&escalation).unwrap();
/// assert_eq!(json["errorCategory"], "permission");
/// assert_eq!(json["escalation"]["reason"], "non_retryable");
/// assert_eq!(json["escalation"]["attempts"], 1);
/// ```
#[derive(Debug, Clone)]
pub struct Escalation {
    /// Why it went upward.
    pub reason: EscalationReason,
    /// The last envelope; its `partial_results` hold everything gathered across
    /// all attempts.
    pub envelope: ErrorEnvelope,
    /// How many times the tool ran (0 when a guard blocked it).
    pub attempts: u32,
    /// Time from the first attempt to the decision.
    pub elapsed: Duration,
    /// A sentence on the decision, such as why a transient failure was not retried.
    pub detail: Option<String>,
}

impl Escalation {
    /// An escalation of `envelope` for `reason`.
    pub fn new(
        reason: EscalationReason,
        envelope: ErrorEnvelope,
        attempts: u32,
        elapsed: Duration,
    ) -> Self {
        Escalation {
            reason,
            envelope,
            attempts,
            elapsed,
            detail: None,
        }
    }

    /// Adds a sentence explaining the decision.
    #[must_use]
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// The escalation of a single call that failed with `envelope`, with the
    /// reason the envelope implies: retries exhausted if it was retryable (it
    /// was tried once and not again), otherwise what [`EscalationReason::of_final`] says.
    pub fn from_envelope(envelope: ErrorEnvelope) -> Self {
        let reason = if envelope.retryable {
            EscalationReason::RetriesExhausted
        } else {
            EscalationReason::of_final(&envelope)
        };
        let attempts = u32::from(reason != EscalationReason::BlockedByGuard);
        Escalation::new(reason, envelope, attempts, Duration::ZERO)
    }

    /// An explicit request for a human, carrying what was done so far.
    pub fn human_requested(envelope: ErrorEnvelope) -> Self {
        Escalation::new(
            EscalationReason::HumanRequested,
            envelope,
            0,
            Duration::ZERO,
        )
    }

    /// A case no rule covers, carrying what was done so far.
    pub fn policy_gap(envelope: ErrorEnvelope) -> Self {
        Escalation::new(EscalationReason::PolicyGap, envelope, 0, Duration::ZERO)
    }

    /// The captured arguments of the failed call.
    pub fn attempted_query(&self) -> Option<&Value> {
        self.envelope.attempted_query.as_ref()
    }

    /// Everything gathered before the failure.
    pub fn partial_results(&self) -> Option<&Value> {
        self.envelope.partial_results.as_ref()
    }

    /// The next moves the tool suggested.
    pub fn alternatives(&self) -> &[String] {
        &self.envelope.alternatives
    }
}

impl fmt::Display for Escalation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}", self.envelope.message, self.reason)?;
        if self.attempts > 1 {
            write!(f, " after {} attempts", self.attempts)?;
        }
        f.write_str(")")
    }
}

impl std::error::Error for Escalation {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.envelope)
    }
}

/// The `escalation` object on the wire.
#[derive(Serialize)]
struct Wire<'a> {
    reason: EscalationReason,
    attempts: u32,
    #[serde(rename = "elapsedMs")]
    elapsed_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<Cow<'a, str>>,
}

impl Serialize for Escalation {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let limits = EnvelopeLimits::current();
        let outgoing = Outgoing::new(&self.envelope, &limits);
        let mut map = serializer.serialize_map(Some(outgoing.len() + 1))?;
        outgoing.write(&mut map)?;
        map.serialize_entry(
            "escalation",
            &Wire {
                reason: self.reason,
                attempts: self.attempts,
                elapsed_ms: duration_to_ms(self.elapsed),
                detail: self
                    .detail
                    .as_deref()
                    .map(|detail| text_for_wire(detail, limits.text_bytes)),
            },
        )?;
        map.end()
    }
}

/// Reads an escalation back: the envelope's keys and its `escalation` object.
impl<'de> Deserialize<'de> for Escalation {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Info {
            reason: EscalationReason,
            attempts: u32,
            #[serde(rename = "elapsedMs")]
            elapsed_ms: u64,
            #[serde(default)]
            detail: Option<String>,
        }
        let value = Value::deserialize(deserializer)?;
        let info = value
            .get("escalation")
            .ok_or_else(|| serde::de::Error::missing_field("escalation"))?;
        let info = Info::deserialize(info).map_err(serde::de::Error::custom)?;
        let envelope = ErrorEnvelope::deserialize(value).map_err(serde::de::Error::custom)?;
        Ok(Escalation {
            reason: info.reason,
            envelope,
            attempts: info.attempts,
            elapsed: Duration::from_millis(info.elapsed_ms),
            detail: info.detail,
        })
    }
}
