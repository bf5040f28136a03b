//! Escalation: what goes upward when a failure cannot be recovered locally.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::envelope::{Escalated, EscalationReason, Ticket};

use crate::envelope::{ErrorEnvelope, EscalatedWire};
use crate::json::millis::duration_to_ms;
use crate::keys;
use crate::limits::EnvelopeLimits;
use crate::reasons;
use crate::wire::Outgoing;

impl EscalationReason {
    /// The reason a failure that is not retried escalates with: blocked by a
    /// guard, a human request or a policy gap when the envelope says so, the
    /// sender's own reason when it arrived [escalated](ErrorEnvelope::escalation),
    /// otherwise [`NonRetryable`](Self::NonRetryable).
    pub fn of_final(envelope: &ErrorEnvelope) -> Self {
        if envelope.was_blocked() {
            return EscalationReason::BlockedByGuard;
        }
        if let Some(escalated) = envelope.escalation() {
            return escalated.reason;
        }
        match envelope.reason() {
            Some(reasons::HUMAN_REQUESTED) => EscalationReason::HumanRequested,
            Some(reasons::POLICY_GAP) => EscalationReason::PolicyGap,
            Some(reasons::HUMAN_DECLINED) => EscalationReason::HumanDeclined,
            Some(reasons::AWAITING_APPROVAL) => EscalationReason::AwaitingApproval,
            Some(reasons::APPROVAL_EXPIRED) => EscalationReason::ApprovalExpired,
            Some(reasons::BLOCKED_BY_GUARD) => EscalationReason::BlockedByGuard,
            _ => EscalationReason::NonRetryable,
        }
    }
}

/// A failure sent upward with everything the caller needs to act without
/// re-running the tool: the last envelope with its four pillars, every partial
/// result gathered across attempts, why it escalated, and after how many
/// attempts and how long.
///
/// Its JSON is an envelope — it validates against the envelope schema — with
/// an `escalation` object added, and `isRetryable: false`: the layer that
/// escalated has already retried what it could, so a caller that retries
/// while `isRetryable` does not repeat the whole loop (`retryAfterMs`, when
/// the envelope has it, still says when a later attempt makes sense):
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
#[non_exhaustive]
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
    /// The ticket of a call that waits for an approver
    /// ([`EscalationReason::AwaitingApproval`]).
    pub ticket: Option<Box<Ticket>>,
    /// Whether it was kept in a store already, on its way up.
    pub(crate) kept: bool,
    /// The id it was sent to a store under, if it was: sent again under
    /// it, so that a store that kept it and then failed to say so (the
    /// connection lost after the commit) keeps it once.
    pub(crate) kept_as: Option<String>,
    /// The [ledger](crate::store::Store::ledger) of the store it was kept
    /// in, once it was.
    pub(crate) kept_in: Option<String>,
}

impl Escalation {
    /// An escalation of `envelope` for `reason`.
    pub fn new(
        reason: EscalationReason,
        envelope: ErrorEnvelope,
        attempts: u32,
        elapsed: Duration,
    ) -> Self {
        // The ticket of a call that waits for an approver travels up with
        // it, whoever escalates it next; and where a loop below kept it, so
        // that it is not kept there again.
        let ticket = envelope
            .escalation()
            .and_then(|escalated| escalated.ticket.clone())
            .map(Box::new);
        let kept_in = (envelope.escalation()).and_then(|escalated| escalated.kept_in.clone());
        Escalation {
            reason,
            envelope,
            attempts,
            elapsed,
            detail: None,
            ticket,
            kept: false,
            kept_as: None,
            kept_in,
        }
    }

    /// Adds a sentence explaining the decision.
    #[must_use]
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// Adds the ticket of a call that waits for an approver.
    #[must_use]
    pub fn with_ticket(mut self, ticket: Ticket) -> Self {
        self.ticket = Some(Box::new(ticket));
        self
    }

    /// The escalation of a single call that failed with `envelope`, with the
    /// reason the envelope implies: a human request or a policy gap at once;
    /// retries exhausted if it was retryable (it was tried once and not
    /// again); otherwise what [`EscalationReason::of_final`] says. The
    /// attempts are 1, or 0 when the call was refused before the tool ran.
    pub fn from_envelope(envelope: ErrorEnvelope) -> Self {
        let reason = match EscalationReason::of_final(&envelope) {
            EscalationReason::NonRetryable if envelope.is_retryable() => {
                EscalationReason::RetriesExhausted
            }
            reason => reason,
        };
        let attempts = u32::from(!envelope.was_refused());
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
        self.envelope.attempted_query()
    }

    /// Everything gathered before the failure.
    pub fn partial_results(&self) -> Option<&Value> {
        self.envelope.partial_results()
    }

    /// The next moves the tool suggested.
    pub fn alternatives(&self) -> &[String] {
        self.envelope.alternatives()
    }
}

/// The escalation as an envelope that carries it
/// ([`ErrorEnvelope::escalation`]): its reason, attempts, time, detail and
/// ticket, and so never retryable, and sent on with its `escalation`
/// object (one a loop kept in a store already is not kept in that store
/// again by the tool set that sends it). How a tool, or a loop, returns what a loop inside it escalated:
/// with `?` on [`Outcome::into_result`](crate::retry::Outcome::into_result)
/// in a tool that returns an [`ErrorEnvelope`] — no loop above it, here or
/// across the wire, runs the whole loop again. (The bare
/// [`envelope`](Escalation::envelope) is the last attempt's failure as it
/// was: still retryable, if it was.)
///
/// ```
/// use std::time::Duration;
/// use tool_envelope::{ErrorEnvelope, Escalation, EscalationReason};
///
/// let failure = ErrorEnvelope::transient("orders DB down");
/// let escalation = Escalation::new(EscalationReason::RetriesExhausted, failure, 3, Duration::from_millis(900));
/// let envelope = ErrorEnvelope::from(escalation);
/// assert!(!envelope.is_retryable());
/// assert_eq!(envelope.escalation().unwrap().attempts, 3);
/// let json = serde_json::to_value(&envelope).unwrap();
/// assert_eq!(json["isRetryable"], false);
/// assert_eq!(json["escalation"]["reason"], "retries_exhausted");
/// ```
impl From<Escalation> for ErrorEnvelope {
    fn from(escalation: Escalation) -> Self {
        let Escalation {
            reason,
            envelope,
            attempts,
            elapsed,
            detail,
            ticket,
            kept_in,
            ..
        } = escalation;
        let escalated = crate::envelope::Escalated {
            reason,
            attempts,
            elapsed,
            detail,
            ticket: ticket.map(|ticket| *ticket),
            kept_in,
        };
        envelope.remade(|parts| parts.escalated = Some(Box::new(escalated)))
    }
}

impl fmt::Display for Escalation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}", self.envelope.message(), self.reason)?;
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

/// Under the default [`EnvelopeLimits`]; [`to_wire`](Escalation::to_wire) takes others.
impl Serialize for Escalation {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.wire(&EnvelopeLimits::default(), serializer)
    }
}

impl Escalation {
    /// With what is recognisably a credential in its texts — its detail
    /// and its envelope's texts — masked ([`scrub`](crate::redact::text::scrub)).
    pub(crate) fn scrub_credentials(&mut self) {
        use crate::redact::text::scrub_in_place;
        if let Some(detail) = &mut self.detail {
            scrub_in_place(detail);
        }
        self.envelope.visit_texts(&mut scrub_in_place);
    }

    /// The escalation as sent under `limits`, as JSON.
    pub fn to_wire(&self, limits: &EnvelopeLimits) -> Value {
        self.wire(limits, serde_json::value::Serializer)
            .expect("an escalation serializes")
    }

    /// [`to_wire`](Self::to_wire) as compact JSON text, keys in the wire
    /// format's order.
    pub(crate) fn to_wire_text(&self, limits: &EnvelopeLimits) -> String {
        let mut text = Vec::new();
        self.wire(limits, &mut serde_json::Serializer::new(&mut text))
            .expect("an escalation serializes");
        String::from_utf8(text).expect("JSON is UTF-8")
    }

    fn wire<S: Serializer>(
        &self,
        limits: &EnvelopeLimits,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let limits = limits.floored();
        let mut outgoing = Outgoing::new(&self.envelope, &limits);
        // This escalation, in place of any the envelope arrived with: it is
        // the last word on the loop. Escalated, the failure is not retryable.
        outgoing.escalate(EscalatedWire {
            reason: self.reason,
            attempts: self.attempts,
            elapsed_ms: duration_to_ms(self.elapsed),
            detail: self.detail.as_deref().map(Cow::Borrowed),
            ticket: self.ticket.as_deref(),
        });
        let mut map = serializer.serialize_map(Some(outgoing.len()))?;
        outgoing.write(&mut map)?;
        map.end()
    }
}

/// Reads an escalation back: the envelope's keys and its `escalation` object,
/// whose `reason`, `attempts` and `elapsedMs` are required.
impl<'de> Deserialize<'de> for Escalation {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(deserializer)?;
        let info = value
            .get(keys::ESCALATION)
            .ok_or_else(|| D::Error::missing_field(keys::ESCALATION))?;
        let Escalated {
            reason,
            attempts,
            elapsed,
            detail,
            ticket,
            ..
        } = Escalated::read_strict(info).map_err(D::Error::custom)?;
        let envelope = ErrorEnvelope::deserialize(value).map_err(D::Error::custom)?;
        // The object is this escalation's own, not one its envelope came with.
        let envelope = envelope.remade(|parts| parts.escalated = None);
        Ok(Escalation {
            reason,
            envelope,
            attempts,
            elapsed,
            detail,
            ticket: ticket.map(Box::new),
            kept: false,
            kept_as: None,
            kept_in: None,
        })
    }
}
