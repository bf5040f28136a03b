//! MCP tool definitions, generated from `#[tool]` at compile time and
//! assembled once when a tool set is built.

use schemars::generate::SchemaSettings;
use schemars::{Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use std::sync::Arc;

use crate::body::ToolInfo;
use crate::catalog::{FailureMode, summary};
use crate::envelope::ErrorEnvelope;
use crate::keys;
use crate::mcp::argument::Arg;
use crate::mcp::checks::ArgumentChecks;

/// The JSON Schema dialect of every schema here.
pub(crate) const JSON_SCHEMA_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// The `_meta` key under which a tool publishes how it can fail.
pub const FAILURE_MODES_META_KEY: &str = "tool-envelope/failureModes";

/// An MCP `Tool`, as `tools/list` returns it.
///
/// Beyond any MCP SDK, its `_meta` tells the model in advance how the tool can
/// fail (`tool-envelope/failureModes`: categories, retry flags, reasons and
/// alternatives), and its `outputSchema` accepts the error envelope as well as
/// the success value, so a client that validates `structuredContent` even on
/// errors never rejects one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolDefinition {
    /// The tool's name: 1 to 64 of `[A-Za-z0-9_.-]`.
    pub name: String,
    /// A human-friendly title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, from its doc comment.
    pub description: String,
    /// JSON Schema (2020-12) of the arguments; root `type: "object"`.
    pub input_schema: Map<String, Value>,
    /// JSON Schema (2020-12) of `structuredContent`: the success value or an
    /// error envelope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Map<String, Value>>,
    /// Hints about the tool's behaviour. Clients must not trust them blindly.
    pub annotations: ToolHints,
    /// Extra metadata: the tool's failure modes.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Whether a success value is wrapped as `{"result": value}` in
    /// `structuredContent` (MCP requires an object there).
    #[serde(skip)]
    pub(crate) wrap_result: Option<bool>,
    /// What a call's arguments are checked and masked with.
    #[serde(skip)]
    pub(crate) checks: Arc<ArgumentChecks>,
    /// Whether the tool has a guard of its own, which may block it for
    /// approvers.
    #[serde(skip)]
    pub(crate) guarded: bool,
}

/// A tool's hints, which MCP calls its `annotations`: what it does to its
/// environment, as the tool says. Hints only — a client must not trust them
/// blindly — though this crate's client decides by them what is safe to
/// repeat. (Named apart from rmcp's `ToolAnnotations`, which holds the same
/// hints as options.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolHints {
    /// The tool does not modify its environment.
    pub read_only_hint: bool,
    /// The tool may perform destructive updates (meaningful when not read-only).
    pub destructive_hint: bool,
    /// Repeating the call with the same arguments has no further effect.
    pub idempotent_hint: bool,
    /// The tool interacts with an open world of external entities.
    pub open_world_hint: bool,
}

impl ToolDefinition {
    /// The failure modes published in `_meta`, if any.
    pub fn failure_modes(&self) -> Option<&Value> {
        self.meta.as_ref()?.get(FAILURE_MODES_META_KEY)
    }

    /// `value` as `structuredContent`: itself if it is an object — the
    /// tool's success type is an object, or may be one (a
    /// `serde_json::Value`) and this value is — otherwise `{"result": value}`.
    pub(crate) fn structured(&self, value: Value) -> Value {
        let wrap = self.wrap_result.unwrap_or(!value.is_object());
        if wrap {
            json!({ "result": value })
        } else {
            value
        }
    }
}

/// One parameter of a served tool.
#[derive(Debug)]
pub struct ParamSpec {
    /// The argument's key.
    name: &'static str,
    /// The parameter's doc comment ("" when it has none).
    description: &'static str,
    /// The schema of its type.
    schema: fn(&mut SchemaGenerator) -> Schema,
    /// Whether a client must send it (not an `Option`).
    required: fn() -> bool,
}

/// The parameter `name` of type `T`, described by `description`.
pub fn param<T: Arg>(name: &'static str, description: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        description,
        schema: T::schema,
        required: T::required,
    }
}

fn generator() -> SchemaGenerator {
    SchemaGenerator::new(SchemaSettings::draft2020_12())
}

/// Assembles a definition from what `#[tool]` generated.
pub fn definition(
    meta: &ToolInfo,
    params: &[ParamSpec],
    output: Option<fn(&mut SchemaGenerator) -> Schema>,
    failures: Option<Vec<FailureMode>>,
) -> ToolDefinition {
    // Published as a call of this tool would send them: a mode is retryable
    // only if its failure would leave the call retryable.
    let failures = failures.map(|modes| {
        let safe_to_repeat = meta.facts().safe_to_repeat;
        modes
            .into_iter()
            .map(|mut mode| {
                // A reason set in the field, not by `with_reason`, is
                // normalized here: every rule reads one form.
                mode.reason = mode.reason.take().and_then(crate::reasons::normalize);
                let retryable = crate::settle::leaves_retryable(
                    mode.retryable,
                    mode.reason.as_deref(),
                    safe_to_repeat,
                );
                mode.with_retryable(retryable)
            })
            .collect::<Vec<_>>()
    });
    let mut description = meta.description.trim().to_owned();
    if meta.describe_failures
        && let Some(modes) = failures.as_deref().filter(|modes| !modes.is_empty())
    {
        if !description.is_empty() {
            description.push_str("\n\n");
        }
        description.push_str(&summary(modes));
    }
    let (output_schema, wrap_result) = match output {
        Some(schema) => {
            let (schema, wrap) = output_schema(schema);
            (Some(schema), wrap)
        }
        None => (None, None),
    };
    let meta_object = failures.map(|modes| {
        let mut object = Map::new();
        object.insert(
            FAILURE_MODES_META_KEY.to_owned(),
            serde_json::to_value(modes).expect("failure modes serialize"),
        );
        object
    });
    let input_schema = input_schema(params);
    let checks = Arc::new(ArgumentChecks::new(&input_schema, meta.redacted));
    ToolDefinition {
        name: meta.name.clone().into_owned(),
        title: meta.title.map(str::to_owned),
        description,
        input_schema,
        output_schema,
        annotations: ToolHints {
            read_only_hint: meta.read_only,
            destructive_hint: meta.destructive && !meta.read_only,
            idempotent_hint: meta.idempotent,
            open_world_hint: meta.open_world,
        },
        meta: meta_object,
        wrap_result,
        checks,
        guarded: meta.guarded,
    }
}

/// The schema of the arguments object: one property per parameter, the
/// parameter's doc comment as its description, `Option`s not required, and
/// nothing else allowed.
fn input_schema(params: &[ParamSpec]) -> Map<String, Value> {
    let mut generator = generator();
    let mut properties = Map::new();
    let mut required = Vec::new();
    for param in params {
        let mut schema = (param.schema)(&mut generator);
        if !param.description.is_empty() {
            schema
                .ensure_object()
                .insert("description".to_owned(), param.description.trim().into());
        }
        properties.insert(param.name.to_owned(), schema.to_value());
        if (param.required)() {
            required.push(Value::from(param.name));
        }
    }
    let mut schema = Map::new();
    schema.insert("$schema".to_owned(), JSON_SCHEMA_2020_12.into());
    schema.insert("type".to_owned(), "object".into());
    schema.insert("properties".to_owned(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".to_owned(), Value::Array(required));
    }
    schema.insert("additionalProperties".to_owned(), false.into());
    let definitions = generator.take_definitions(true);
    if !definitions.is_empty() {
        schema.insert("$defs".to_owned(), Value::Object(definitions));
    }
    schema
}

/// The schema of `structuredContent`: the success value — wrapped as
/// `{"result": ...}` unless it is always an object — or an error envelope.
fn output_schema(
    success: fn(&mut SchemaGenerator) -> Schema,
) -> (Map<String, Value>, Option<bool>) {
    let mut generator = generator();
    let success = success(&mut generator).to_value();
    let definitions = generator.take_definitions(true);
    let wrapped = |success: Value| {
        json!({
            "type": "object",
            "properties": { "result": success },
            "required": ["result"]
        })
    };
    let (success, wrap) = match shape(&success, &definitions) {
        Shape::Object => (success, Some(false)),
        Shape::NotObject => (wrapped(success), Some(true)),
        // An object is sent as it is, anything else wrapped.
        Shape::Either => (json!({"anyOf": [success.clone(), wrapped(success)]}), None),
    };
    (success_or_envelope(success, definitions), wrap)
}

/// The root of an output schema: `success` (whose `$ref`s point into
/// `definitions`) or the compact envelope.
pub(crate) fn success_or_envelope(
    success: Value,
    definitions: Map<String, Value>,
) -> Map<String, Value> {
    let mut schema = Map::new();
    schema.insert("$schema".to_owned(), JSON_SCHEMA_2020_12.into());
    schema.insert("type".to_owned(), "object".into());
    schema.insert(
        "anyOf".to_owned(),
        Value::Array(vec![success, compact_envelope_schema()]),
    );
    if !definitions.is_empty() {
        schema.insert("$defs".to_owned(), Value::Object(definitions));
    }
    schema
}

/// The error envelope as every tool's `outputSchema` carries it: what tells
/// a failure from a success and what to do next — `isError`,
/// `errorCategory`, `isRetryable`, `message` — with every other key allowed.
/// The whole schema is [`ErrorEnvelope::json_schema`], at
/// [`ErrorEnvelope::SCHEMA_ID`]; this is what fits in each tool of a
/// `tools/list` (about 330 bytes).
pub(crate) fn compact_envelope_schema() -> Value {
    let categories: Vec<&str> = crate::ErrorCategory::ALL
        .iter()
        .map(|category| category.as_str())
        .collect();
    json!({
        "title": "ErrorEnvelope",
        "$comment": ErrorEnvelope::SCHEMA_ID,
        "type": "object",
        "properties": {
            (keys::IS_ERROR): { "const": true },
            (keys::ERROR_CATEGORY): { "enum": categories },
            (keys::IS_RETRYABLE): { "type": "boolean" },
            (keys::MESSAGE): { "type": "string" }
        },
        "required": keys::REQUIRED
    })
}

/// Whether every value matching `schema` is a JSON object.
/// What a success schema admits: objects only, no object, or either.
#[derive(Debug, PartialEq, Eq)]
enum Shape {
    Object,
    NotObject,
    Either,
}

/// What `schema` (whose `$ref`s point into `definitions`) admits, as far as
/// its `type` says: a schema without one (a `serde_json::Value`'s) admits
/// objects and everything else.
fn shape(schema: &Value, definitions: &Map<String, Value>) -> Shape {
    let schema = match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => match reference
            .strip_prefix("#/$defs/")
            .and_then(|name| definitions.get(name))
        {
            Some(target) => target,
            None => return Shape::Either,
        },
        None => schema,
    };
    match schema.get("type") {
        Some(Value::String(kind)) if kind == "object" => Shape::Object,
        Some(Value::String(_)) => Shape::NotObject,
        Some(Value::Array(kinds)) if kinds.iter().any(|kind| kind == "object") => Shape::Either,
        Some(Value::Array(_)) => Shape::NotObject,
        _ if schema.as_bool() == Some(false) => Shape::NotObject,
        _ => Shape::Either,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_not_wrapped_and_the_rest_is() {
        let (schema, wrap) =
            output_schema(schemars::SchemaGenerator::subschema_for::<crate::Found<u32>>);
        assert_eq!(wrap, Some(false));
        assert_eq!(schema["type"], "object");
        let (schema, wrap) = output_schema(schemars::SchemaGenerator::subschema_for::<Vec<String>>);
        assert_eq!(wrap, Some(true));
        assert_eq!(schema["anyOf"][0]["required"], json!(["result"]));
        assert_eq!(schema["anyOf"][1]["title"], "ErrorEnvelope");
        assert!(
            compact_envelope_schema().to_string().len() <= 500,
            "{}",
            compact_envelope_schema().to_string().len()
        );
    }
}
