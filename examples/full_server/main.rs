//! A complete MCP server that composes this crate's tools with rmcp's own:
//! CI runs the MCP conformance suite against it (`scripts/test-conformance.sh`).
//!
//! - **This crate's tools** are free `#[tool]` functions in a [`ToolSet`]: the
//!   suite's fixtures (text, an error, image, audio, embedded resources, mixed
//!   content, logging, progress, sampling, elicitation, a JSON Schema 2020-12
//!   input), and `slow_count` / `stopped_early`, with which a client checks
//!   that a cancelled call stops. Their failures are error envelopes; the
//!   request reaches them as a [`ToolContext`], through which they ask the
//!   client on either revision. `rounds.rs` holds the suite's 2026-07-28
//!   fixtures (questions in `InputRequiredResult` rounds), `tasks.rs` those
//!   of the tasks extension.
//! - **rmcp's own tools** live in a `#[tool_router]` block on [`Server`]:
//!   `lookup_order` returns `Result<Json<Order>, ErrorEnvelope>`, and
//!   [`admit_envelopes`] lets the envelope into its output schema. The two
//!   routers are merged into one.
//! - **Prompts** come from rmcp's `#[prompt_router]`; **resources**,
//!   **completion**, **logging**, resource **subscriptions** (2026-07-28's
//!   `subscriptions/listen`, and `resources/subscribe` before it) and the
//!   `tasks/*` methods (the tool set's) are `ServerHandler` methods written
//!   here. `logging/setLevel` is forwarded to the tool set, whose tools send
//!   the logs.
//!
//! Every session gets a fresh [`Server`] with its own log level and
//! subscriptions. Over stdio by default; over Streamable HTTP at `/mcp`, with
//! sessions, with `--http HOST:PORT` (port 0 picks one; the address is printed
//! on stderr).
//!
//! ```sh
//! cargo run --example full_server --features rmcp -- --http 127.0.0.1:3001
//! ```

use std::collections::HashSet;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{
    CancelTaskParams, CompleteRequestParams, CompleteResult, CompletionInfo, ContentBlock,
    GetPromptRequestParams, GetPromptResponse, GetTaskParams, GetTaskResult, Implementation,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    Prompt, PromptMessage, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Reference, Resource, ResourceContents, ResourceTemplate, Role, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
    UpdateTaskParams,
};
// Sampling and logging are deprecated in rmcp (SEP-2577), not in 2025-11-25,
// the version clients negotiate: they are served here.
use rmcp::handler::server::prompt::PromptContext;
#[allow(deprecated)]
use rmcp::model::{CreateMessageRequestParams, SamplingMessage, SetLevelRequestParams};
use rmcp::service::RequestContext;
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt, prompt, prompt_router, tool_handler,
    tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_envelope::mcp::{Contents, HttpOptions, ToolContext, ToolSet, admit_envelopes};
use tool_envelope::{ErrorEnvelope, tool};

mod rounds;
mod tasks;

/// A 1×1 red PNG.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\xdac\xfc\xcf\xc0\xf0\x1f\0\x05\x05\x02\0_\xc8\xf1\xd2\0\0\0\0IEND\xaeB`\x82";
/// The same PNG, base64-encoded, for rmcp's resource blobs, which take text.
const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A tiny WAV file: 8 kHz, 16-bit mono.
const WAV: &[u8] =
    b"RIFF&\0\0\0WAVEfmt \x10\0\0\0\x01\0\x01\0@\x1f\0\0\0}\0\0\x02\0\x10\0data\x02\0\0\0";
/// The pause between the steps of the logging and progress tools.
const STEP: Duration = Duration::from_millis(50);

// ---------------------------------------------------------------------------
// This crate's tools: the conformance fixtures.

/// Returns a simple text response.
#[tool(read_only)]
fn test_simple_text() -> Result<Contents, ErrorEnvelope> {
    Ok(Contents::new().text("This is a simple text response for testing."))
}

/// Always fails: the error comes back as an `isError` result the model can read.
#[tool(read_only)]
fn test_error_handling() -> Result<Contents, ErrorEnvelope> {
    Err(
        ErrorEnvelope::business("This tool intentionally returns an error for testing")
            .with_reason("INTENTIONAL_ERROR"),
    )
}

/// Returns an image: a 1×1 red PNG.
#[tool(read_only)]
fn test_image_content() -> Result<Contents, ErrorEnvelope> {
    Ok(Contents::new().image(PNG, "image/png"))
}

/// Returns a short WAV clip.
#[tool(read_only)]
fn test_audio_content() -> Result<Contents, ErrorEnvelope> {
    Ok(Contents::new().audio(WAV, "audio/wav"))
}

/// Returns an embedded text resource.
#[tool(read_only)]
fn test_embedded_resource() -> Result<Contents, ErrorEnvelope> {
    Ok(Contents::new().resource_text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    ))
}

/// Returns text, an image and an embedded resource together.
#[tool(read_only)]
fn test_multiple_content_types() -> Result<Contents, ErrorEnvelope> {
    Ok(Contents::new()
        .text("Multiple content types test:")
        .image(PNG, "image/png")
        .resource_text(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#,
        ))
}

/// Sends three log messages to the client while it runs.
#[tool(read_only)]
async fn test_tool_with_logging(context: ToolContext) -> Result<Contents, ErrorEnvelope> {
    context.info("Tool execution started").await;
    tokio::time::sleep(STEP).await;
    context.info("Tool processing data").await;
    tokio::time::sleep(STEP).await;
    context.info("Tool execution completed").await;
    Ok(Contents::new().text("Tool with logging executed successfully"))
}

/// Reports progress 0, 50 and 100 of 100 while it runs.
#[tool(read_only)]
async fn test_tool_with_progress(context: ToolContext) -> Result<Contents, ErrorEnvelope> {
    for (step, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if step > 0 {
            tokio::time::sleep(STEP).await;
        }
        let message = format!("Completed step {step} of 2");
        context
            .progress(progress, Some(100.0), Some(&message))
            .await;
    }
    Ok(Contents::new().text("Tool with progress executed successfully"))
}

/// Asks the client's model to answer a prompt (sampling) and returns the answer.
#[tool(read_only)]
async fn test_sampling(
    context: ToolContext,
    /// What to ask the model.
    prompt: String,
) -> Result<Contents, ErrorEnvelope> {
    // Sampling is deprecated in rmcp (SEP-2577), not in 2025-11-25, which clients negotiate.
    #[allow(deprecated)]
    let text: String = {
        let request =
            CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 100);
        let reply = context.sample("sampling", request).await?;
        (reply.message.content.into_vec().iter())
            .filter_map(|block| block.as_text().map(|text| text.text.as_str()))
            .collect()
    };
    Ok(Contents::new().text(format!("LLM response: {text}")))
}

/// Asks the user for a username and an email address (elicitation).
#[tool(read_only)]
async fn test_elicitation(
    context: ToolContext,
    /// What to tell the user.
    message: String,
) -> Result<Contents, ErrorEnvelope> {
    let schema = json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}
        },
        "required": ["username", "email"]
    });
    let answer = elicit(&context, &message, schema).await?;
    Ok(Contents::new().text(format!("User response: {answer}")))
}

/// Asks the user to review a form whose fields have defaults (SEP-1034).
#[tool(read_only)]
async fn test_elicitation_sep1034_defaults(
    context: ToolContext,
) -> Result<Contents, ErrorEnvelope> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string", "description": "User status",
                "enum": ["active", "inactive", "pending"], "default": "active"
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": true}
        },
        "required": []
    });
    let message = "Please review and update the form fields with defaults";
    let answer = elicit(&context, message, schema).await?;
    Ok(Contents::new().text(format!("Elicitation completed: {answer}")))
}

/// Asks the user to pick from every kind of enum field (SEP-1330).
#[tool(read_only)]
async fn test_elicitation_sep1330_enums(context: ToolContext) -> Result<Contents, ErrorEnvelope> {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string", "description": "Select one option",
                "enum": ["option1", "option2", "option3"]
            },
            "titledSingle": {
                "type": "string", "description": "Select one option with titles",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"}
                ]
            },
            "legacyEnum": {
                "type": "string", "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": {
                "type": "array", "description": "Select multiple options",
                "minItems": 1, "maxItems": 3,
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
            },
            "titledMulti": {
                "type": "array", "description": "Select multiple options with titles",
                "minItems": 1, "maxItems": 3,
                "items": {"anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"}
                ]}
            }
        },
        "required": []
    });
    let message = "Please select options from the enum fields";
    let answer = elicit(&context, message, schema).await?;
    Ok(Contents::new().text(format!("Elicitation completed: {answer}")))
}

/// A postal address.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "address")]
struct Address {
    street: Option<String>,
    city: Option<String>,
}

/// Tool with JSON Schema 2020-12 features.
#[tool(read_only)]
fn json_schema_2020_12_tool(
    name: Option<String>,
    address: Option<Address>,
) -> Result<String, ErrorEnvelope> {
    Ok(format!("{name:?} at {address:?}"))
}

/// How many `slow_count` calls were stopped before they finished.
static STOPPED_EARLY: AtomicU64 = AtomicU64::new(0);

/// Counts `STOPPED_EARLY` up unless the count finished.
struct Unfinished(bool);

impl Drop for Unfinished {
    fn drop(&mut self) {
        if self.0 {
            STOPPED_EARLY.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Counts to `to`, one step every 20 ms, reporting each step as progress.
/// Cancel it, and it stops at its next step.
#[tool(read_only)]
async fn slow_count(
    context: ToolContext,
    /// Where to stop.
    to: u32,
) -> Result<u32, ErrorEnvelope> {
    let mut unfinished = Unfinished(true);
    for step in 1..=to {
        context
            .progress(f64::from(step), Some(f64::from(to)), None)
            .await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    unfinished.0 = false;
    Ok(to)
}

/// How many `slow_count` calls this server stopped before they finished:
/// what a client that cancels one can check.
#[tool(read_only)]
fn stopped_early() -> Result<u64, ErrorEnvelope> {
    Ok(STOPPED_EARLY.load(Ordering::SeqCst))
}

/// Asks the client's user to fill in the form `schema` (a JSON Schema, written
/// as JSON to match the suite's fixtures key for key), and returns
/// `action=…, content=…`.
async fn elicit(
    context: &ToolContext,
    message: &str,
    schema: Value,
) -> Result<String, ErrorEnvelope> {
    let answer = context.elicit_form("elicitation", message, schema).await?;
    let action = answer.action();
    let content = answer.accepted().map(Value::Object);
    Ok(format!("action={action}, content={}", json!(content)))
}

/// The tool set: this crate's tools, shared by every session.
fn tools() -> ToolSet {
    let tools = ToolSet::new()
        .server_info("tool-envelope-full-server", env!("CARGO_PKG_VERSION"))
        .tool::<test_simple_text>()
        .tool::<test_error_handling>()
        .tool::<test_image_content>()
        .tool::<test_audio_content>()
        .tool::<test_embedded_resource>()
        .tool::<test_multiple_content_types>()
        .tool::<test_tool_with_logging>()
        .tool::<test_tool_with_progress>()
        .tool::<test_sampling>()
        .tool::<test_elicitation>()
        .tool::<test_elicitation_sep1034_defaults>()
        .tool::<test_elicitation_sep1330_enums>()
        .tool::<json_schema_2020_12_tool>()
        .tool::<slow_count>()
        .tool::<stopped_early>();
    tasks::add_to(rounds::add_to(tools))
}

// ---------------------------------------------------------------------------
// rmcp's own tools, prompts, resources, completion and logging.

/// An order of the demo store.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Order {
    /// The order number.
    id: String,
    /// `pending`, `shipped` or `delivered`.
    status: String,
    /// The total, in cents.
    total_cents: u64,
}

/// Which order to look up.
#[derive(Debug, Deserialize, JsonSchema)]
struct OrderQuery {
    /// The order number, such as `O-77`.
    order_id: String,
}

/// Finds an order by its number: the business logic behind rmcp's
/// `lookup_order`, named after it so that its envelopes name the tool the
/// client called, with the `order_id` it was called with.
#[tool(name = "lookup_order", read_only, local)]
fn find_order(order_id: String) -> Result<Order, ErrorEnvelope> {
    let (status, total_cents) = match order_id.as_str() {
        "O-77" => ("shipped", 62_000),
        "O-78" => ("pending", 4_000),
        id if !id.starts_with("O-") => {
            return Err(
                ErrorEnvelope::validation("An order number has the form O-NN.")
                    .with_reason("BAD_ORDER_ID")
                    .with_alternative("Ask the user for the order number on their receipt"),
            );
        }
        _ => {
            return Err(
                ErrorEnvelope::business("There is no order with this number.")
                    .with_reason("UNKNOWN_ORDER")
                    .with_alternative("Check the number with the user"),
            );
        }
    };
    Ok(Order {
        id: order_id,
        status: status.into(),
        total_cents,
    })
}

/// Arguments of `test_prompt_with_arguments`.
#[derive(Debug, Deserialize, JsonSchema)]
struct PromptArguments {
    /// First test argument.
    arg1: String,
    /// Second test argument.
    arg2: String,
}

/// Arguments of `test_prompt_with_embedded_resource`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct EmbeddedResourceArguments {
    /// URI of the resource to embed.
    resource_uri: String,
}

/// One session's server: the tool set's tools next to rmcp's, prompts,
/// resources, completion and logging.
struct Server {
    /// The session's tool set: `logging/setLevel` sets its log level.
    tools: ToolSet,
    tool_router: ToolRouter<Self>,
    prompt_router: PromptRouter<Self>,
    /// The URIs the client subscribed to.
    subscriptions: Mutex<HashSet<String>>,
}

impl Server {
    /// The server of a session; `tools` comes from [`ToolSet::for_session`].
    fn new(tools: ToolSet) -> Self {
        Server {
            tool_router: admit_envelopes(Self::tool_router()) + tools.router(),
            prompt_router: Self::prompt_router(),
            tools,
            subscriptions: Mutex::default(),
        }
    }

    /// The subscribed URIs (a panic elsewhere cannot leave the set half-written).
    fn subscriptions(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[tool_router]
impl Server {
    /// Look up an order of the demo store by its number.
    #[rmcp::tool(annotations(read_only_hint = true))]
    fn lookup_order(
        &self,
        Parameters(query): Parameters<OrderQuery>,
    ) -> Result<Json<Order>, ErrorEnvelope> {
        find_order(query.order_id).map(Json)
    }
}

#[prompt_router]
impl Server {
    /// A simple prompt without arguments.
    #[prompt]
    fn test_simple_prompt(&self) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            "This is a simple prompt for testing.",
        )]
    }

    /// A prompt with two required arguments.
    #[prompt]
    fn test_prompt_with_arguments(
        &self,
        Parameters(PromptArguments { arg1, arg2 }): Parameters<PromptArguments>,
    ) -> Vec<PromptMessage> {
        let text = format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'");
        vec![PromptMessage::new_text(Role::User, text)]
    }

    /// A prompt that embeds the resource at a given URI.
    #[prompt]
    fn test_prompt_with_embedded_resource(
        &self,
        Parameters(arguments): Parameters<EmbeddedResourceArguments>,
    ) -> Vec<PromptMessage> {
        let resource = ResourceContents::text(
            "Embedded resource content for testing.",
            arguments.resource_uri,
        );
        vec![
            PromptMessage::new(Role::User, ContentBlock::resource(resource)),
            PromptMessage::new_text(Role::User, "Please process the embedded resource above."),
        ]
    }

    /// A prompt with an image.
    #[prompt]
    fn test_prompt_with_image(&self) -> Vec<PromptMessage> {
        vec![
            PromptMessage::new_image(Role::User, PNG, "image/png", None, None),
            PromptMessage::new_text(Role::User, "Please analyze the image above."),
        ]
    }
}

/// The values `arg1` of `test_prompt_with_arguments` completes to.
const ARG1_VALUES: [&str; 3] = ["testValue1", "testValue2", "example"];

/// The `{id}` of a URI of the template `test://template/{id}/data`.
fn template_id(uri: &str) -> Option<&str> {
    let id = uri
        .strip_prefix("test://template/")?
        .strip_suffix("/data")?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        // Logging is deprecated in rmcp (SEP-2577), not in 2025-11-25, which clients negotiate.
        #[allow(deprecated)]
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_prompts()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_logging()
            .enable_completions()
            .enable_tasks()
            .build();
        let name = self.tools.name().unwrap_or(env!("CARGO_PKG_NAME"));
        let version = self.tools.version().unwrap_or(env!("CARGO_PKG_VERSION"));
        ServerConfig::new(capabilities).with_server_info(Implementation::new(name, version))
    }

    // Tasks (SEP-2663): the tool set's own.
    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.tools.get_task(request, context).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tools.update_task(request, context).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tools.cancel_task(request, context).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let mut prompts = self.prompt_router.list_all();
        prompts.push(Prompt::new(
            rounds::PROMPT,
            Some("A prompt that asks the user for context first"),
            None,
        ));
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name == rounds::PROMPT {
            return rounds::get_prompt(request.input_responses);
        }
        let prompt = PromptContext::new(self, request.name, request.arguments, context);
        self.prompt_router.get_prompt(prompt).await
    }

    // Resource subscriptions on 2026-07-28: `subscriptions/listen`, for
    // whatever the client asks of what this server advertises; nothing here
    // changes, so the stream carries its acknowledgement.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new("test://static-text", "static-text")
                .with_description("A static text resource")
                .with_mime_type("text/plain"),
            Resource::new("test://static-binary", "static-binary")
                .with_description("A static binary resource: a 1×1 PNG")
                .with_mime_type("image/png"),
        ]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("test://template/{id}/data", "template-data")
                .with_description("JSON data about the item `id`")
                .with_mime_type("application/json"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let contents = match uri {
            "test://static-text" => {
                ResourceContents::text("This is the content of the static text resource.", uri)
            }
            "test://static-binary" => {
                ResourceContents::blob(PNG_BASE64, uri).with_mime_type("image/png")
            }
            _ => {
                let Some(id) = template_id(uri) else {
                    return Err(ErrorData::resource_not_found(
                        "No such resource: see resources/list and resources/templates/list.",
                        None,
                    ));
                };
                let data =
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                ResourceContents::text(data.to_string(), uri).with_mime_type("application/json")
            }
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    // Legacy-only in rmcp (2026-07-28 replaces it), current in 2025-11-25.
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions().insert(request.uri);
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions().remove(&request.uri);
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let argument = &request.argument;
        let values = match &request.r#ref {
            Reference::Prompt(prompt)
                if prompt.name == "test_prompt_with_arguments" && argument.name == "arg1" =>
            {
                (ARG1_VALUES.iter())
                    .filter(|value| value.starts_with(argument.value.as_str()))
                    .map(ToString::to_string)
                    .collect()
            }
            _ => Vec::new(),
        };
        let completion = CompletionInfo::with_all_values(values)
            .map_err(|error| ErrorData::internal_error(error, None))?;
        Ok(CompleteResult::new(completion))
    }

    // Logging is deprecated in rmcp (SEP-2577), not in 2025-11-25, which clients negotiate.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tools.set_log_level(request.level.into());
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Transports.

/// Serves one session over stdio, until the client closes it.
async fn serve_stdio(tools: ToolSet) -> io::Result<()> {
    let running = Server::new(tools.for_session())
        .serve(rmcp::transport::stdio())
        .await
        .map_err(io::Error::other)?;
    running.waiting().await.map_err(io::Error::other)?;
    Ok(())
}

/// Serves Streamable HTTP at `/mcp` on `address`, a fresh server per session.
async fn serve_http(tools: ToolSet, address: &str) -> io::Result<()> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    HttpOptions::default()
        .serve(listener, move || Server::new(tools.for_session()))
        .await
}

#[tokio::main]
async fn main() -> io::Result<()> {
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next()) {
        (None, _) => serve_stdio(tools()).await,
        (Some("--http"), Some(address)) => serve_http(tools(), &address).await,
        _ => {
            eprintln!("usage: full_server [--http HOST:PORT]");
            std::process::exit(2);
        }
    }
}
