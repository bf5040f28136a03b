//! The JSON Schema of the error envelope: the contract a caller can enforce.
//!
//! Only what is always present is required — `isError`, `errorCategory`,
//! `isRetryable`, `message` — so that a model filling the schema never has to
//! invent partial results or alternatives. Unknown keys are allowed: readers
//! ignore what they do not know.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::Value;

use crate::category::ErrorCategory;
use crate::envelope::ErrorEnvelope;
use crate::envelope::EscalationReason;

/// The schema's body, shared by the root document and by [`JsonSchema`]:
/// its keys from [`crate::keys`], its enums from the types they name.
fn envelope_schema() -> Value {
    use crate::keys::{self, escalation, violation};
    let categories: Vec<&str> = ErrorCategory::ALL.iter().map(|c| c.as_str()).collect();
    let escalation_reasons: Vec<&str> = EscalationReason::ALL
        .iter()
        .map(|reason| reason.as_str())
        .collect();
    serde_json::json!({
        "title": "ErrorEnvelope",
        "description": "A structured tool failure: failure type (errorCategory, isRetryable), attempted query, partial results and alternatives.",
        "type": "object",
        "properties": {
            (keys::IS_ERROR): {
                "description": "Always true: marks a failure.",
                "const": true
            },
            (keys::ERROR_CATEGORY): {
                "description": "The failure type.",
                "enum": categories
            },
            (keys::IS_RETRYABLE): {
                "description": "Whether the same call may succeed if repeated.",
                "type": "boolean"
            },
            (keys::MESSAGE): {
                "description": "One human-readable sentence.",
                "type": "string",
                "minLength": 1
            },
            (keys::ATTEMPTED_QUERY): {
                "description": "What was tried: the captured arguments, or a query string.",
                "type": ["object", "string"]
            },
            (keys::PARTIAL_RESULTS): {
                "description": "What was gathered before the failure.",
                "type": ["array", "object"]
            },
            (keys::ALTERNATIVES): {
                "description": "Concrete next moves.",
                "type": "array",
                "items": { "type": "string" }
            },
            (keys::REASON): {
                "description": "A stable machine code in UPPER_SNAKE_CASE.",
                "type": "string",
                "pattern": "^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$"
            },
            (keys::RETRY_AFTER_MS): {
                "description": "The server's hint for the next attempt, in milliseconds.",
                "type": "integer",
                "minimum": 0
            },
            (keys::VIOLATIONS): {
                "description": "Field-level detail of a rejected input.",
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        (violation::FIELD): { "type": "string" },
                        (violation::DESCRIPTION): { "type": "string" }
                    },
                    "required": [violation::FIELD, violation::DESCRIPTION]
                }
            },
            (keys::TOOL): {
                "description": "The tool that failed.",
                "type": "string"
            },
            (keys::ESCALATION): {
                "description": "Present when the failure was escalated: why, after how many attempts and how long.",
                "type": "object",
                "properties": {
                    (escalation::REASON): { "enum": escalation_reasons },
                    (escalation::ATTEMPTS): { "type": "integer", "minimum": 0 },
                    (escalation::ELAPSED_MS): { "type": "integer", "minimum": 0 },
                    (escalation::DETAIL): { "type": "string" },
                    (escalation::TICKET): {
                        "description": "The ticket of a call that waits for an approver: which approval, who may decide, until when, and how to read the outcome.",
                        "type": "object",
                        "properties": {
                            "id": { "type": "string", "minLength": 1 },
                            "status": { "type": "string" },
                            "approvers": { "type": "string" },
                            "expiresAtMs": { "type": "integer", "minimum": 0 },
                            "read": { "type": "string" }
                        },
                        "required": ["id", "status", "approvers", "expiresAtMs", "read"]
                    }
                },
                "required": [escalation::REASON, escalation::ATTEMPTS, escalation::ELAPSED_MS]
            }
        },
        "required": keys::REQUIRED
    })
}

impl ErrorEnvelope {
    /// The `$id` of the envelope's JSON Schema, as committed in
    /// `schema/error-envelope.schema.json`.
    pub const SCHEMA_ID: &'static str = "https://github.com/tool-envelope/tool-envelope/blob/main/schema/error-envelope.schema.json";

    /// The JSON Schema (draft 2020-12) of the wire format, as committed in
    /// `schema/error-envelope.schema.json`.
    ///
    /// ```
    /// use tool_envelope::ErrorEnvelope;
    ///
    /// let schema = ErrorEnvelope::json_schema();
    /// assert_eq!(schema["required"], serde_json::json!(["isError", "errorCategory", "isRetryable", "message"]));
    /// ```
    pub fn json_schema() -> Value {
        let mut schema = serde_json::Map::new();
        schema.insert(
            "$schema".into(),
            "https://json-schema.org/draft/2020-12/schema".into(),
        );
        schema.insert("$id".into(), Self::SCHEMA_ID.into());
        let Value::Object(body) = envelope_schema() else {
            unreachable!("the envelope schema is an object")
        };
        schema.extend(body);
        Value::Object(schema)
    }
}

impl JsonSchema for ErrorEnvelope {
    fn schema_name() -> Cow<'static, str> {
        "ErrorEnvelope".into()
    }

    fn schema_id() -> Cow<'static, str> {
        "tool_envelope::ErrorEnvelope".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        Schema::try_from(envelope_schema()).expect("the envelope schema is an object")
    }
}
