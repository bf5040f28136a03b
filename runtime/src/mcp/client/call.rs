//! One `tools/call` through the client: the arguments checked and guarded
//! before anything is sent, the request on the live connection within the
//! timeout, the reply read, and every failure settled.

use std::borrow::Cow;

use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, ServerResult};
use rmcp::service::PeerRequestOptions;
use serde_json::{Map, Value};

use crate::classify::ToolError;
use crate::envelope::{ErrorEnvelope, Refusal};
use crate::limits::text_for_wire;
use crate::mcp::client::connection::{Link, ProgressCallback};
use crate::mcp::client::failure;
use crate::mcp::client::tools::RemoteTool;
use crate::query::Query;
use crate::reasons;
use crate::redact::arguments::ArgumentMask;
use crate::redact::schema::SecretPaths;
use crate::settle::{Facts, Source, settle};

/// Calls the tool `name` with `arguments` over `link`: its value, or its
/// failure settled.
pub(crate) async fn call(
    link: &Link,
    name: &str,
    arguments: Value,
    on_progress: Option<ProgressCallback>,
) -> Result<Value, ErrorEnvelope> {
    let arguments = match arguments {
        Value::Object(arguments) => arguments,
        Value::Null => Map::new(),
        other => {
            let envelope = ErrorEnvelope::validation(format!(
                "the arguments of `{name}` must be a JSON object, not {}",
                crate::mcp::violations::kind(&other)
            ))
            .with_reason(reasons::INVALID_ARGUMENTS);
            return Err(finish(envelope, name, &Map::new(), None, false));
        }
    };
    if let Err(blocked) = link.options.guards.check(name, &arguments) {
        let mut envelope = blocked.into_envelope();
        envelope.set_refused(Refusal::Blocked);
        return Err(finish(envelope, name, &arguments, None, false));
    }
    let connection = match link.connection().await {
        Ok(connection) => connection,
        Err(envelope) => return Err(finish(envelope, name, &arguments, None, false)),
    };
    let tool = link.known_tool(&connection, name).await;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new(name.to_owned()).with_arguments(arguments.clone()),
    ));
    let options = PeerRequestOptions::with_timeout(link.options.timeout);
    let handle = match connection
        .peer()
        .send_cancellable_request(request, options)
        .await
    {
        Ok(handle) => handle,
        Err(error) => {
            let envelope = failure::classify_error(&error, true);
            return Err(finish(envelope, name, &arguments, tool.as_deref(), false));
        }
    };
    link.count_sent();
    let token = handle.progress_token.clone();
    let response = link
        .routing(&token, on_progress, handle.await_response())
        .await;
    let outcome = match response {
        Ok(ServerResult::CallToolResult(result)) => failure::read_result(result, name),
        Ok(other) => Err(ErrorEnvelope::other(format!(
            "the MCP server answered `tools/call` of `{name}` with a result of another kind: {}",
            text_for_wire(&format!("{other:?}"), 256)
        ))
        .with_reason(reasons::UNEXPECTED_REPLY)),
        Err(error) => Err(failure::classify_error(&error, false)),
    };
    outcome.map_err(|envelope| finish(envelope, name, &arguments, tool.as_deref(), true))
}

/// Settles a failure of the call of `name` with `arguments` (see
/// [`settle`]): whatever the server said, it names the tool that was
/// called, shows the arguments (the server's account of them, or the
/// arguments sent) with every secret the tool's schema marks and every
/// value of an undeclared key masked, quotes no secret value that was
/// sent, and carries the one retry decision — safe to repeat by the
/// tool's annotations, or because nothing was `sent`.
pub(crate) fn finish(
    envelope: ErrorEnvelope,
    name: &str,
    arguments: &Map<String, Value>,
    tool: Option<&RemoteTool>,
    sent: bool,
) -> ErrorEnvelope {
    let facts = Facts {
        tool: Cow::Owned(name.to_owned()),
        safe_to_repeat: tool.is_some_and(RemoteTool::is_safe_to_repeat),
        sent,
        source: Source::Remote,
    };
    static UNKNOWN: SecretPaths = SecretPaths::OPEN;
    let secrets = tool.map_or(&UNKNOWN, RemoteTool::secrets);
    let query = Query::Arguments(arguments, ArgumentMask::new(secrets, &[]));
    settle(envelope, &facts, query, &|| None)
}
