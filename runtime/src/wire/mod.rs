//! An envelope as it leaves the process: bounded by the [`EnvelopeLimits`]
//! and valid against `schema/error-envelope.schema.json` whatever the tool
//! put in it.
//!
//! A tool can write anything into an envelope: an empty message, a number as
//! the attempted query, a ten-megabyte error text. Serialization never fails
//! on any of it and never emits an envelope a caller's validator would
//! reject. The keys are spelled as [`crate::keys`] says, in its order:
//!
//! - an empty `message` reads "The tool failed without a message.";
//! - an `attempted_query` that is neither an object nor a string is sent as
//!   its JSON text, and a `null` one is left out;
//! - `partial_results` that are neither an array nor an object are sent as a
//!   one-item array (`null` as `[]`);
//! - a `reason` is `UPPER_SNAKE_CASE` already: it was normalized where it was
//!   set ([`crate::reasons`]); one longer than the text limit is cut;
//! - an `attempted_query` or `partial_results` nested deeper than
//!   [`MAX_DEPTH`] is sent as a marker saying so;
//! - everything that grows is trimmed to its limit with a marker.

mod read;

use std::borrow::Cow;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::Value;

use crate::category::ErrorCategory;
use crate::envelope::EscalatedWire;
use crate::envelope::{Attempted, AttemptedText, ErrorEnvelope, NO_MESSAGE, Violation};
use crate::json::depth::{MAX_DEPTH, deeper_than, too_deep_marker};
use crate::json::text::JsonText;
use crate::keys;
use crate::limits::{EnvelopeLimits, partial_for_wire, query_for_wire, text_for_wire};

/// Serializes to the wire format under the default [`EnvelopeLimits`]:
/// oversized values go out trimmed with a marker, and whatever the fields
/// hold, the JSON is valid against the envelope's schema (an empty message
/// or a number as the attempted query are each sent in a valid form).
/// [`to_wire`](ErrorEnvelope::to_wire) takes other limits.
impl Serialize for ErrorEnvelope {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Outgoing::new(self, &EnvelopeLimits::default()).serialize(serializer)
    }
}

impl ErrorEnvelope {
    /// The envelope as sent under `limits`, as JSON: what
    /// `serde_json::to_value(&envelope)` gives under the defaults.
    ///
    /// ```
    /// use tool_envelope::{EnvelopeLimits, ErrorEnvelope};
    ///
    /// let envelope = ErrorEnvelope::transient("x".repeat(10_000));
    /// let sent = envelope.to_wire(&EnvelopeLimits::default().with_text_bytes(100));
    /// assert!(sent["message"].as_str().unwrap().len() <= 100);
    /// assert_eq!(envelope.message().len(), 10_000, "the envelope keeps everything");
    /// ```
    pub fn to_wire(&self, limits: &EnvelopeLimits) -> Value {
        serde_json::to_value(Outgoing::new(self, limits)).expect("an outgoing envelope serializes")
    }

    /// [`to_wire`](Self::to_wire) as compact JSON text, its keys in the
    /// order of the wire format (`isError`, `errorCategory`, `isRetryable`,
    /// `message`, …) — a `Value` would sort them.
    pub(crate) fn to_wire_text(&self, limits: &EnvelopeLimits) -> String {
        serde_json::to_string(&Outgoing::new(self, limits))
            .expect("an outgoing envelope serializes")
    }
}

impl Serialize for Outgoing<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        self.write(&mut map)?;
        map.end()
    }
}

/// A value as sent: itself, or a marker when it nests too deep to walk.
fn shallow(value: &Value) -> Cow<'_, Value> {
    if deeper_than(value, MAX_DEPTH) {
        Cow::Owned(too_deep_marker())
    } else {
        Cow::Borrowed(value)
    }
}

/// `attempted_query` as it is sent.
enum Query<'a> {
    /// Captured arguments, as captured.
    Text(AttemptedText<'a>),
    /// A value, bounded.
    Value(Cow<'a, Value>),
}

impl Query<'_> {
    fn into_owned(self) -> Attempted {
        match self {
            Query::Text(AttemptedText(text)) => Attempted::text(JsonText::new(text)),
            Query::Value(value) => Attempted::value(value.into_owned()),
        }
    }
}

impl Serialize for Query<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Query::Text(text) => text.serialize(serializer),
            Query::Value(value) => value.serialize(serializer),
        }
    }
}

/// The fields of an envelope, as they are sent.
pub(crate) struct Outgoing<'a> {
    category: ErrorCategory,
    /// `isRetryable` as sent.
    retryable: bool,
    message: Cow<'a, str>,
    attempted_query: Option<Query<'a>>,
    partial_results: Option<Cow<'a, Value>>,
    alternatives: Cow<'a, [String]>,
    reason: Option<Cow<'a, str>>,
    violations: Cow<'a, [Violation]>,
    tool: Option<Cow<'a, str>>,
    retry_after_ms: Option<u64>,
    escalation: Option<EscalatedWire<'a>>,
    /// The text limit the fields were bounded by.
    text_bytes: usize,
}

impl<'a> Outgoing<'a> {
    /// `envelope` as it is sent under `limits`; borrowed wherever nothing changes.
    pub(crate) fn new(envelope: &'a ErrorEnvelope, limits: &EnvelopeLimits) -> Self {
        let limits = &limits.floored();
        let text = |text: &'a str| text_for_wire(text, limits.text_bytes);
        let message = if envelope.message().trim().is_empty() {
            Cow::Borrowed(NO_MESSAGE)
        } else {
            text(envelope.message())
        };
        let cap = limits.attempted_query_bytes;
        let attempted_query = match envelope.attempted_query_text() {
            // Captured arguments, an object within depth: sent as captured.
            Some(text) if text.len() <= cap => Some(Query::Text(AttemptedText(text))),
            _ => envelope
                .attempted_query()
                .and_then(|query| match shallow(query) {
                    Cow::Borrowed(Value::Null) => None,
                    Cow::Borrowed(query @ (Value::Object(_) | Value::String(_))) => {
                        Some(query_for_wire(query, cap))
                    }
                    Cow::Owned(marker) => Some(Cow::Owned(marker)),
                    query => Some(Cow::Owned(
                        query_for_wire(&Value::String(query.to_string()), cap).into_owned(),
                    )),
                })
                .map(Query::Value),
        };
        let cap = limits.partial_results_bytes;
        let partial_results = envelope
            .partial_results()
            .map(|partial| match shallow(partial) {
                Cow::Borrowed(partial @ (Value::Array(_) | Value::Object(_))) => {
                    partial_for_wire(partial, cap)
                }
                Cow::Borrowed(Value::Null) => Cow::Owned(Value::Array(Vec::new())),
                other => Cow::Owned(
                    partial_for_wire(&Value::Array(vec![other.into_owned()]), cap).into_owned(),
                ),
            });
        let short = |text: &str| crate::limits::escaped_len(text) <= limits.text_bytes;
        let alternatives = bounded(
            envelope.alternatives(),
            limits.list_items,
            |alternative| short(alternative),
            |alternative| text(alternative).into_owned(),
            |more| format!("… and {more} more alternatives"),
        );
        let violations = bounded(
            envelope.violations(),
            limits.list_items,
            |violation| short(&violation.field) && short(&violation.description),
            |violation| Violation::new(text(&violation.field), text(&violation.description)),
            |more| Violation::new("_truncated", format!("{more} more violations were dropped")),
        );
        let reason = envelope.reason().map(|code| {
            if code.len() <= limits.text_bytes {
                return Cow::Borrowed(code);
            }
            // A code is ASCII, so it can be cut anywhere; it must not end on `_`.
            let mut code = code[..limits.text_bytes.max(1)].to_owned();
            while code.ends_with('_') {
                code.pop();
            }
            Cow::Owned(code)
        });
        let tool = envelope.tool().map(text);
        let escalation = envelope.escalation().map(|escalated| EscalatedWire {
            reason: escalated.reason,
            attempts: escalated.attempts,
            elapsed_ms: crate::json::millis::duration_to_ms(escalated.elapsed),
            detail: escalated.detail.as_deref().map(text),
            ticket: escalated.ticket.as_ref(),
        });
        Outgoing {
            category: envelope.category(),
            retryable: envelope.is_retryable(),
            message,
            attempted_query,
            partial_results,
            alternatives,
            reason,
            violations,
            tool,
            retry_after_ms: envelope
                .retry_after()
                .map(crate::json::millis::duration_to_ms),
            escalation,
            text_bytes: limits.text_bytes,
        }
    }

    /// Sends the failure as escalated by `escalation`, in place of any
    /// escalation the envelope came with: not retryable.
    pub(crate) fn escalate(&mut self, mut escalation: EscalatedWire<'a>) {
        let cap = self.text_bytes;
        escalation.detail = escalation.detail.map(|detail| match detail {
            Cow::Borrowed(detail) => text_for_wire(detail, cap),
            Cow::Owned(detail) => Cow::Owned(text_for_wire(&detail, cap).into_owned()),
        });
        self.escalation = Some(escalation);
        self.retryable = false;
    }

    /// How many keys [`write`](Self::write) writes.
    pub(crate) fn len(&self) -> usize {
        4 + usize::from(self.attempted_query.is_some())
            + usize::from(self.partial_results.is_some())
            + usize::from(!self.alternatives.is_empty())
            + usize::from(self.reason.is_some())
            + usize::from(self.retry_after_ms.is_some())
            + usize::from(!self.violations.is_empty())
            + usize::from(self.tool.is_some())
            + usize::from(self.escalation.is_some())
    }

    /// Writes the keys, in the order of the wire format.
    pub(crate) fn write<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        map.serialize_entry(keys::IS_ERROR, &true)?;
        map.serialize_entry(keys::ERROR_CATEGORY, &self.category)?;
        map.serialize_entry(keys::IS_RETRYABLE, &self.retryable)?;
        map.serialize_entry(keys::MESSAGE, &self.message)?;
        if let Some(query) = &self.attempted_query {
            map.serialize_entry(keys::ATTEMPTED_QUERY, query)?;
        }
        if let Some(partial) = &self.partial_results {
            map.serialize_entry(keys::PARTIAL_RESULTS, partial)?;
        }
        if !self.alternatives.is_empty() {
            map.serialize_entry(keys::ALTERNATIVES, &self.alternatives)?;
        }
        if let Some(reason) = &self.reason {
            map.serialize_entry(keys::REASON, reason)?;
        }
        if let Some(delay) = &self.retry_after_ms {
            map.serialize_entry(keys::RETRY_AFTER_MS, delay)?;
        }
        if !self.violations.is_empty() {
            map.serialize_entry(keys::VIOLATIONS, &self.violations)?;
        }
        if let Some(tool) = &self.tool {
            map.serialize_entry(keys::TOOL, tool)?;
        }
        if let Some(escalation) = &self.escalation {
            map.serialize_entry(keys::ESCALATION, escalation)?;
        }
        Ok(())
    }

    /// The fields as sent, owned, to put into an envelope's parts.
    fn into_owned(self) -> impl FnOnce(&mut crate::envelope::Parts) + use<> {
        let message = self.message.into_owned();
        let attempted_query = self.attempted_query.map(Query::into_owned);
        let partial_results = self.partial_results.map(Cow::into_owned);
        let alternatives = self.alternatives.into_owned();
        let reason = self.reason.map(|reason| Cow::Owned(reason.into_owned()));
        let violations = self.violations.into_owned();
        let tool = self.tool.map(|tool| Cow::Owned(tool.into_owned()));
        move |parts| {
            parts.message = message;
            parts.attempted_query = attempted_query;
            parts.partial_results = partial_results;
            parts.alternatives = alternatives;
            parts.set_reason(reason);
            parts.violations = violations;
            parts.tool = tool;
        }
    }
}

impl EnvelopeLimits {
    /// Makes `envelope` what it would be on the wire under these limits, in
    /// place: trimmed to them, and valid against the schema whatever its
    /// fields held (an empty message…). Serializing an envelope applies
    /// limits without changing it.
    pub fn apply(&self, envelope: &mut ErrorEnvelope) {
        let sent = Outgoing::new(envelope, self).into_owned();
        envelope.remake(sent);
    }
}

/// `items`, each through `each`; over `cap` entries, the first `cap - 1` and
/// one made by `more` saying how many were dropped. Borrowed when every entry
/// `fits` and none is dropped.
fn bounded<'a, T: Clone>(
    items: &'a [T],
    cap: usize,
    fits: impl Fn(&T) -> bool,
    each: impl Fn(&'a T) -> T,
    more: impl FnOnce(usize) -> T,
) -> Cow<'a, [T]> {
    if items.len() <= cap && items.iter().all(fits) {
        return Cow::Borrowed(items);
    }
    if items.len() <= cap {
        return Cow::Owned(items.iter().map(each).collect());
    }
    // The marker takes the last place, so the list sent is at most `cap` long.
    let keep = cap.saturating_sub(1);
    let mut kept: Vec<T> = items[..keep].iter().map(each).collect();
    kept.push(more(items.len() - keep));
    Cow::Owned(kept)
}
