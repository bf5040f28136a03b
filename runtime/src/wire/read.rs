//! An envelope as it arrives: the wire format read back, its keys spelled as
//! [`crate::keys`] says.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer};
use serde_json::Value;

use crate::category::ErrorCategory;
use crate::envelope::Escalated;
use crate::envelope::{Attempted, ErrorEnvelope};
use crate::keys;

/// Reads the wire format, its keys spelled as [`crate::keys`] says; keys it
/// does not know are ignored, and a key given twice is refused. The four
/// required keys must be what the format says; an optional key that is not
/// (`"retryAfterMs": "soon"`, `"alternatives": "x"`) is read as absent, and
/// an odd entry of a list is left out, so that one odd field of a server's
/// envelope does not lose the rest of it.
/// A whole number of milliseconds written as a float (`1500.0`) is read as
/// that number. A success payload (`isError: false`) is not an envelope.
impl<'de> Deserialize<'de> for ErrorEnvelope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(EnvelopeVisitor)
    }
}

/// A key of the wire format, or one to skip.
enum Key {
    IsError,
    Category,
    Retryable,
    Message,
    AttemptedQuery,
    PartialResults,
    Alternatives,
    Reason,
    RetryAfterMs,
    Violations,
    Tool,
    Escalation,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl de::Visitor<'_> for KeyVisitor {
            type Value = Key;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key of an error envelope")
            }

            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
                Ok(match key {
                    keys::IS_ERROR => Key::IsError,
                    keys::ERROR_CATEGORY => Key::Category,
                    keys::IS_RETRYABLE => Key::Retryable,
                    keys::MESSAGE => Key::Message,
                    keys::ATTEMPTED_QUERY => Key::AttemptedQuery,
                    keys::PARTIAL_RESULTS => Key::PartialResults,
                    keys::ALTERNATIVES => Key::Alternatives,
                    keys::REASON => Key::Reason,
                    keys::RETRY_AFTER_MS => Key::RetryAfterMs,
                    keys::VIOLATIONS => Key::Violations,
                    keys::TOOL => Key::Tool,
                    keys::ESCALATION => Key::Escalation,
                    _ => Key::Other,
                })
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

struct EnvelopeVisitor;

impl<'de> de::Visitor<'de> for EnvelopeVisitor {
    type Value = ErrorEnvelope;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "an error envelope: an object with isError, errorCategory, isRetryable and message",
        )
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<ErrorEnvelope, A::Error> {
        /// Takes the value of `key` into `slot`, once.
        fn once<'de, A: de::MapAccess<'de>, T: Deserialize<'de>>(
            map: &mut A,
            slot: &mut Option<T>,
            key: &'static str,
        ) -> Result<(), A::Error> {
            if slot.is_some() {
                return Err(de::Error::duplicate_field(key));
            }
            *slot = Some(map.next_value()?);
            Ok(())
        }
        // Each key once; an optional one may be `null`, which reads as absent.
        let mut is_error: Option<bool> = None;
        let mut category: Option<ErrorCategory> = None;
        let mut retryable: Option<bool> = None;
        let mut message: Option<String> = None;
        let mut attempted_query: Option<Option<Value>> = None;
        let mut partial_results: Option<Option<Value>> = None;
        let mut alternatives: Option<Value> = None;
        let mut reason: Option<Value> = None;
        let mut retry_after_ms: Option<Value> = None;
        let mut violations: Option<Value> = None;
        let mut tool: Option<Value> = None;
        let mut escalation: Option<Option<Value>> = None;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::IsError => once(&mut map, &mut is_error, keys::IS_ERROR)?,
                Key::Category => once(&mut map, &mut category, keys::ERROR_CATEGORY)?,
                Key::Retryable => once(&mut map, &mut retryable, keys::IS_RETRYABLE)?,
                Key::Message => once(&mut map, &mut message, keys::MESSAGE)?,
                Key::AttemptedQuery => once(&mut map, &mut attempted_query, keys::ATTEMPTED_QUERY)?,
                Key::PartialResults => once(&mut map, &mut partial_results, keys::PARTIAL_RESULTS)?,
                Key::Alternatives => once(&mut map, &mut alternatives, keys::ALTERNATIVES)?,
                Key::Reason => once(&mut map, &mut reason, keys::REASON)?,
                Key::RetryAfterMs => once(&mut map, &mut retry_after_ms, keys::RETRY_AFTER_MS)?,
                Key::Violations => once(&mut map, &mut violations, keys::VIOLATIONS)?,
                Key::Tool => once(&mut map, &mut tool, keys::TOOL)?,
                Key::Escalation => once(&mut map, &mut escalation, keys::ESCALATION)?,
                Key::Other => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        let missing = de::Error::missing_field;
        if !is_error.ok_or_else(|| missing(keys::IS_ERROR))? {
            return Err(de::Error::custom(
                "`isError` is false: this is a success payload, not an error envelope",
            ));
        }
        let category = category.ok_or_else(|| missing(keys::ERROR_CATEGORY))?;
        let message = message.ok_or_else(|| missing(keys::MESSAGE))?;
        let retryable = retryable.ok_or_else(|| missing(keys::IS_RETRYABLE))?;
        let envelope = ErrorEnvelope::new(category, message).with_retryable(retryable);
        Ok(envelope.remade(|parts| {
            parts.alternatives = items(alternatives);
            parts.violations = items(violations);
            parts.attempted_query = attempted_query.flatten().map(Attempted::value);
            parts.partial_results = partial_results.flatten();
            parts.retry_after = retry_after_ms.as_ref().and_then(millis);
            parts.tool = optional::<String>(tool).map(Cow::Owned);
            parts.escalated = escalation
                .flatten()
                .map(|escalation| Box::new(Escalated::read(&escalation)));
            if let Some(reason) = optional::<String>(reason) {
                parts.set_reason(Some(Cow::Owned(reason)));
            }
        }))
    }
}

/// A list's entries that are what the format says: one odd entry
/// (`["Retry later", null]`) does not lose the others.
fn items<T: serde::de::DeserializeOwned>(value: Option<Value>) -> Vec<T> {
    match value {
        Some(Value::Array(entries)) => entries
            .into_iter()
            .filter_map(|entry| serde_json::from_value(entry).ok())
            .collect(),
        _ => Vec::new(),
    }
}

/// An optional key's value, if it is what the format says.
fn optional<T: serde::de::DeserializeOwned>(value: Option<Value>) -> Option<T> {
    serde_json::from_value(value?).ok()
}

/// `retryAfterMs`: a whole number of milliseconds, as an integer or a float.
fn millis(value: &Value) -> Option<Duration> {
    if let Some(ms) = value.as_u64() {
        return Some(Duration::from_millis(ms));
    }
    let ms = value.as_f64()?;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    (ms.is_finite() && ms >= 0.0 && ms.fract() == 0.0 && ms <= u64::MAX as f64)
        .then(|| Duration::from_millis(ms as u64))
}
