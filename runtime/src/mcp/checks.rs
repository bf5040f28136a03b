//! What a tool set checks a call's arguments with, built once per tool.

use serde_json::{Map, Value};

use crate::redact::schema::SecretPaths;

/// What a tool set knows of a tool's arguments, built once with its
/// definition: where secrets are, and the schema that lists violations.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ArgumentChecks {
    pub(crate) secrets: SecretPaths,
    pub(crate) input_schema: Map<String, Value>,
}

impl ArgumentChecks {
    pub(crate) fn new(input_schema: &Map<String, Value>, redacted: &[&str]) -> Self {
        ArgumentChecks {
            secrets: SecretPaths::from_schema(input_schema, redacted),
            input_schema: input_schema.clone(),
        }
    }
}
