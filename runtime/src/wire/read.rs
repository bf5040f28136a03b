//! An envelope as it arrives: the wire format read back, its keys spelled as
//! [`crate::keys`] says.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer};
use serde_json::Value;

use crate::category::ErrorCategory;
use crate::envelope::{ErrorEnvelope, Violation};
use crate::escalation::record::Escalated;
use crate::keys;

/// Reads the wire format, its keys spelled as [`crate::keys`] says; keys it
/// does not know are ignored, and a key given twice is refused. A success
/// payload (`isError: false`) is not an envelope.
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
        let mut alternatives: Option<Option<Vec<String>>> = None;
        let mut reason: Option<Option<String>> = None;
        let mut retry_after_ms: Option<Option<u64>> = None;
        let mut violations: Option<Option<Vec<Violation>>> = None;
        let mut tool: Option<Option<String>> = None;
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
        let mut envelope = ErrorEnvelope::new(category, message)
            .with_retryable(retryable.ok_or_else(|| missing(keys::IS_RETRYABLE))?);
        envelope.set_alternatives(alternatives.flatten().unwrap_or_default());
        envelope.set_violations(violations.flatten().unwrap_or_default());
        envelope.set_attempted_query(attempted_query.flatten());
        envelope.set_partial_results(partial_results.flatten());
        envelope.set_retry_after(retry_after_ms.flatten().map(Duration::from_millis));
        if let Some(tool) = tool.flatten() {
            envelope.set_tool(Cow::Owned(tool));
        }
        if let Some(escalation) = escalation.flatten() {
            envelope.set_escalated(Escalated::read(&escalation));
        }
        envelope.set_reason(reason.flatten().map(Cow::Owned));
        Ok(envelope)
    }
}
