//! Envelopes in servers written with rmcp's own `#[tool]` macros: as
//! results, and in their output schemas.

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::model::{CallToolResponse, JsonObject};
use serde_json::{Map, Value};

use crate::envelope::ErrorEnvelope;
use crate::escalation::Escalation;
use crate::limits::EnvelopeLimits;
use crate::mcp::definition::{JSON_SCHEMA_2020_12, success_or_envelope};
use crate::mcp::server::rmcp::convert::failed_result;

#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
/// An envelope is a tool result in rmcp's own `#[tool]` methods: one may
/// return `Result<Json<T>, ErrorEnvelope>`, `Result<String, ErrorEnvelope>`
/// and the like, and a failure is sent as `isError` with the envelope (within
/// the default [`EnvelopeLimits`]) as `structuredContent` and as text. Clients
/// that check `structuredContent` against `outputSchema` even on errors need
/// the tool's schema to admit the envelope: see [`admit_envelopes`].
impl IntoCallToolResult for ErrorEnvelope {
    fn into_call_tool_result(self) -> Result<CallToolResponse, ErrorData> {
        let limits = EnvelopeLimits::default();
        failed_result(self.to_wire(&limits), self.to_wire_text(&limits))
    }
}

#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
/// An escalation is a tool result in rmcp's own `#[tool]` methods, like an
/// [`ErrorEnvelope`]: the envelope and why it escalated.
impl IntoCallToolResult for Escalation {
    fn into_call_tool_result(self) -> Result<CallToolResponse, ErrorData> {
        let limits = EnvelopeLimits::default();
        failed_result(self.to_wire(&limits), self.to_wire_text(&limits))
    }
}

/// Lets error envelopes into the output schemas of an rmcp router: each
/// tool's `outputSchema`, where it has one, becomes "the success value, or
/// an error envelope" (the envelope in a compact form, under 500 bytes).
/// rmcp derives a tool's output schema from its `Json<T>`, which an
/// envelope does not match, and some clients (the MCP Inspector, the
/// TypeScript SDK) check `structuredContent` against it even when `isError`
/// is true.
///
/// rmcp's `#[tool_handler]` serves `Self::tool_router()` unless told
/// otherwise: keep the fixed router in a field and serve that one, with
/// `#[tool_handler(router = self.tool_router)]`.
///
/// ```
/// use rmcp::handler::server::router::tool::ToolRouter;
/// use rmcp::handler::server::wrapper::{Json, Parameters};
/// use rmcp::{ServerHandler, tool, tool_handler, tool_router};
/// use tool_envelope::mcp::admit_envelopes;
/// use tool_envelope::{ErrorEnvelope, Found};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Lookup {
///     customer_id: String,
/// }
///
/// #[derive(Clone)]
/// struct Orders {
///     tool_router: ToolRouter<Self>,
/// }
///
/// #[tool_router]
/// impl Orders {
///     /// Look up a customer's orders.
///     #[tool]
///     async fn lookup_orders(&self, Parameters(lookup): Parameters<Lookup>) -> Result<Json<Found<String>>, ErrorEnvelope> {
///         let _ = lookup.customer_id;
///         Err(ErrorEnvelope::transient("The order service timed out."))
///     }
/// }
///
/// // Serve the router in the field, not a fresh `Self::tool_router()`.
/// #[tool_handler(router = self.tool_router)]
/// impl ServerHandler for Orders {}
///
/// let orders = Orders { tool_router: admit_envelopes(Orders::tool_router()) };
/// let schema = orders.tool_router.get("lookup_orders").unwrap().output_schema.clone().unwrap();
/// assert_eq!(schema["anyOf"][1]["title"], "ErrorEnvelope");
/// ```
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
pub fn admit_envelopes<S>(mut router: ToolRouter<S>) -> ToolRouter<S> {
    for route in router.map.values_mut() {
        if let Some(schema) = &route.attr.output_schema {
            route.attr.output_schema = Some(Arc::new(with_envelope(schema)));
        }
    }
    router
}

/// The output schema of a tool whose success is `T` (a type that
/// serializes as a JSON object, as rmcp's `Json<T>` requires) or an error
/// envelope: for rmcp's `#[tool(output_schema = output_schema::<T>())]`,
/// tool by tool, where [`admit_envelopes`] fixes a whole router.
#[cfg_attr(tool_envelope_docsrs, doc(cfg(feature = "rmcp")))]
pub fn output_schema<T: schemars::JsonSchema>() -> Arc<JsonObject> {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    let Value::Object(schema) = schema.to_value() else {
        unreachable!("a root schema is an object")
    };
    Arc::new(with_envelope(&schema))
}

/// `schema` or an envelope: its definitions (`$defs`, or draft 7's
/// `definitions`) move to the root, where its `$ref`s still find them.
fn with_envelope(schema: &Map<String, Value>) -> Map<String, Value> {
    if is_enveloped(schema) {
        return schema.clone();
    }
    let mut success = schema.clone();
    success.remove("$schema");
    let definitions = match success.remove("$defs") {
        Some(Value::Object(definitions)) => definitions,
        _ => Map::new(),
    };
    let legacy = success.remove("definitions");
    let mut combined = success_or_envelope(Value::Object(success), definitions);
    if let Some(legacy) = legacy {
        combined.insert("definitions".to_owned(), legacy);
    }
    combined.insert("$schema".to_owned(), JSON_SCHEMA_2020_12.into());
    combined
}

/// Whether `schema` already admits envelopes (made here, or by a tool set).
fn is_enveloped(schema: &Map<String, Value>) -> bool {
    schema
        .get("anyOf")
        .and_then(Value::as_array)
        .is_some_and(|branches| {
            branches
                .iter()
                .any(|branch| branch.get("title") == Some(&Value::from("ErrorEnvelope")))
        })
}
