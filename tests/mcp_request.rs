//! What a tool sees of the request that called it, through rmcp's own client
//! in the same process: progress (its own, and one step per local retry),
//! log messages under `logging/setLevel`, cancellation, sampling and elicitation through the
//! client peer, rich content, and a tool set composed into an rmcp server
//! next to rmcp's own `#[tool]`s.
#![cfg(feature = "rmcp")]
#![allow(deprecated)] // MCP logging and sampling: deprecated by rmcp, current in 2025-11-25.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, Role, SamplingMessage,
    SetLevelRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RunningService};
use rmcp::{ClientHandler, ErrorData, ServerHandler, ServiceExt, tool_handler, tool_router};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tool_envelope::mcp::{Contents, ToolContext, ToolSet, admit_envelopes};
use tool_envelope::retry::RetryPolicy;
use tool_envelope::{ErrorEnvelope, Found, tool};

use common::call;

/// Reports `steps` steps of progress, then says how many were sent.
#[tool(read_only)]
async fn steps(context: ToolContext, steps: u32) -> Result<u32, ErrorEnvelope> {
    let mut sent = 0;
    for step in 1..=steps {
        sent += u32::from(
            context
                .progress(f64::from(step), Some(f64::from(steps)), Some("working"))
                .await,
        );
    }
    // Not above the last value: not sent.
    sent += u32::from(context.progress(1.0, None, None).await);
    Ok(sent)
}

/// Logs at three levels; says which were sent.
#[tool(read_only)]
async fn chatty(context: ToolContext) -> Result<Vec<bool>, ErrorEnvelope> {
    Ok(vec![
        context.debug("debug detail").await,
        context.info("started").await,
        context.warning("slow upstream").await,
    ])
}

static FLAKY_CALLS: AtomicU32 = AtomicU32::new(0);

/// Fails twice with a rate limit, then succeeds.
#[tool(read_only)]
async fn flaky() -> Result<&'static str, ErrorEnvelope> {
    match FLAKY_CALLS.fetch_add(1, Ordering::SeqCst) {
        0 | 1 => Err(ErrorEnvelope::transient("rate limited").with_reason("RATE_LIMITED")),
        _ => Ok("done"),
    }
}

static STARTED: Notify = Notify::const_new();
static STOPPED: AtomicBool = AtomicBool::new(false);

/// Sets `STOPPED` when dropped.
struct StopFlag;

impl Drop for StopFlag {
    fn drop(&mut self) {
        STOPPED.store(true, Ordering::SeqCst);
    }
}

/// Waits until cancelled, reporting progress now and then.
#[tool(read_only)]
async fn waits(context: ToolContext) -> Result<(), ErrorEnvelope> {
    let _flag = StopFlag;
    STARTED.notify_one();
    let mut step = 0.0;
    loop {
        step += 1.0;
        context.progress(step, None, None).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Asks the client's model a question.
#[tool(read_only)]
async fn ask(context: ToolContext, question: String) -> Result<String, ErrorEnvelope> {
    let peer = context
        .peer()
        .ok_or_else(|| ErrorEnvelope::business("no client to ask"))?;
    let request =
        CreateMessageRequestParams::new(vec![SamplingMessage::new(Role::User, question)], 100);
    let answer = peer
        .create_message(request)
        .await
        .map_err(|error| ErrorEnvelope::transient(format!("sampling failed: {error}")))?;
    Ok(answer
        .message
        .content
        .first()
        .and_then(|content| content.as_text())
        .map(|text| text.text.clone())
        .unwrap_or_default())
}

/// Asks the client's user for a name (elicitation).
#[tool(read_only)]
async fn ask_name(context: ToolContext) -> Result<String, ErrorEnvelope> {
    let peer = context
        .peer()
        .ok_or_else(|| ErrorEnvelope::business("no client to ask"))?;
    let request: ElicitRequestParams = serde_json::from_value(json!({
        "mode": "form",
        "message": "Who is asking?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
    }))
    .unwrap();
    let answer = peer
        .create_elicitation(request)
        .await
        .map_err(|error| ErrorEnvelope::transient(format!("elicitation failed: {error}")))?;
    match answer.action {
        ElicitationAction::Accept => Ok(answer.content.unwrap_or_default()["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned()),
        _ => Err(ErrorEnvelope::business("the user declined to answer")
            .with_reason(tool_envelope::reasons::HUMAN_REQUESTED)),
    }
}

/// A chart: text, an image and a link.
#[tool(read_only)]
fn chart(customer_id: String) -> Result<Contents, ErrorEnvelope> {
    Ok(Contents::new()
        .text(format!("orders of {customer_id}"))
        .image([0x89, b'P', b'N', b'G'], "image/png")
        .resource_link("orders://C-1", "orders")
        .meta("source", "test"))
}

/// A client that records what the server sends.
#[derive(Clone, Default)]
struct Recorder {
    events: Arc<Mutex<Vec<Event>>>,
}

#[derive(Debug, Clone)]
enum Event {
    Progress(ProgressNotificationParam),
    Log(LoggingMessageNotificationParam),
}

impl Recorder {
    fn progress(&self) -> Vec<ProgressNotificationParam> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|event| match event {
                Event::Progress(progress) => Some(progress.clone()),
                Event::Log(_) => None,
            })
            .collect()
    }

    fn logs(&self) -> Vec<LoggingMessageNotificationParam> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|event| match event {
                Event::Log(log) => Some(log.clone()),
                Event::Progress(_) => None,
            })
            .collect()
    }
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.events.lock().unwrap().push(Event::Progress(params));
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.events.lock().unwrap().push(Event::Log(params));
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let question = params.messages[0]
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.clone());
        Ok(CreateMessageResult::new(
            SamplingMessage::new(Role::Assistant, format!("42, to {question:?}")),
            "test-model".to_owned(),
        ))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        match request {
            ElicitRequestParams::FormElicitationParams { message, .. }
                if message == "Who is asking?" =>
            {
                Ok(ElicitResult::new(ElicitationAction::Accept)
                    .with_content(json!({"name": "Ada"})))
            }
            _ => Ok(ElicitResult::new(ElicitationAction::Decline)),
        }
    }
}

/// A client connected in-process to `server`.
async fn connect<S: ServerHandler>(server: S) -> (RunningService<RoleClient, Recorder>, Recorder) {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = server
            .serve(server_io)
            .await
            .expect("the server initializes");
        let _ = running.waiting().await;
    });
    let recorder = Recorder::default();
    let client = recorder
        .clone()
        .serve(client_io)
        .await
        .expect("the client initializes");
    (client, recorder)
}

fn structured(result: &CallToolResult) -> Value {
    result
        .structured_content
        .clone()
        .expect("structured content")
}

fn tools() -> ToolSet {
    ToolSet::new()
        .tool::<steps>()
        .tool::<chatty>()
        .tool::<waits>()
        .tool::<ask>()
        .tool::<ask_name>()
        .tool::<chart>()
}

#[tokio::test]
async fn the_context_is_not_an_argument() {
    let set = tools();
    let definition = set.get("steps").unwrap();
    assert_eq!(
        definition.input_schema["properties"],
        json!({"steps": {"type": "integer", "format": "uint32", "minimum": 0}})
    );
    assert!(
        set.get("chatty").unwrap().input_schema["properties"]
            .as_object()
            .unwrap()
            .is_empty()
    );
    // An undeclared `context` key is refused like any other, never taken for the context.
    let reply = set
        .call("chatty", json!({"context": "hunter2"}))
        .await
        .unwrap();
    let envelope = reply.envelope().unwrap();
    assert_eq!(envelope.violations()[0].field, "context");
    assert!(!reply.text().unwrap().contains("hunter2"));
    // Called from Rust, a detached context sends nothing.
    assert_eq!(steps(ToolContext::detached(), 3).await.unwrap(), 0);
}

#[tokio::test]
async fn progress_reaches_the_client_and_only_goes_forward() {
    let (client, recorder) = connect(tools()).await;
    let result = call(&client, "steps", json!({"steps": 3})).await;
    assert_eq!(
        structured(&result),
        json!({"result": 3}),
        "three sent, the step back not"
    );
    let progress = recorder.progress();
    let values: Vec<(f64, Option<f64>)> = progress.iter().map(|p| (p.progress, p.total)).collect();
    assert_eq!(
        values,
        [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]
    );
    assert_eq!(progress[0].message.as_deref(), Some("working"));
}

#[tokio::test]
async fn log_messages_follow_the_level_the_client_set() {
    let (client, recorder) = connect(tools()).await;
    let result = call(&client, "chatty", json!({})).await;
    assert_eq!(
        structured(&result),
        json!({"result": [false, true, true]}),
        "info and up by default"
    );

    client
        .peer()
        .set_level(SetLevelRequestParams::new(LoggingLevel::Warning))
        .await
        .unwrap();
    let result = call(&client, "chatty", json!({})).await;
    assert_eq!(structured(&result), json!({"result": [false, false, true]}));

    let logs = recorder.logs();
    let seen: Vec<(LoggingLevel, Value)> = logs
        .iter()
        .map(|log| (log.level, log.data.clone()))
        .collect();
    assert_eq!(
        seen,
        [
            (LoggingLevel::Info, json!("started")),
            (LoggingLevel::Warning, json!("slow upstream")),
            (LoggingLevel::Warning, json!("slow upstream")),
        ]
    );
    assert!(
        logs.iter()
            .all(|log| log.logger.as_deref() == Some("chatty"))
    );
}

#[tokio::test]
async fn each_local_retry_is_one_step_of_progress() {
    FLAKY_CALLS.store(0, Ordering::SeqCst);
    let set = ToolSet::new()
        .tool::<flaky>()
        .retry(RetryPolicy::default().constant(Duration::from_millis(1)));
    let (client, recorder) = connect(set).await;
    let result = call(&client, "flaky", json!({})).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let progress = recorder.progress();
    let steps: Vec<(f64, Option<String>)> = progress
        .iter()
        .map(|p| (p.progress, p.message.clone()))
        .collect();
    assert_eq!(
        steps,
        [
            (
                1.0,
                Some(
                    "attempt 1 of 3 failed (transient, RATE_LIMITED); retrying in 1 ms".to_owned()
                )
            ),
            (
                2.0,
                Some(
                    "attempt 2 of 3 failed (transient, RATE_LIMITED); retrying in 1 ms".to_owned()
                )
            ),
        ]
    );
}

#[tokio::test]
async fn a_cancelled_call_stops_the_tool_and_sends_nothing_more() {
    let (client, recorder) = connect(tools()).await;
    let peer = client.peer().clone();
    let pending =
        tokio::spawn(async move { peer.call_tool(CallToolRequestParams::new("waits")).await });
    STARTED.notified().await;
    // Dropping rmcp's call cancels the request: `notifications/cancelled`.
    pending.abort();
    let _ = pending.await;
    // A round trip after the cancellation: the server has read it by then.
    let after = call(&client, "steps", json!({"steps": 1})).await;
    assert_eq!(after.is_error, Some(false));
    // The server stops the tool at its next `.await`.
    tokio::time::timeout(Duration::from_secs(10), async {
        while !STOPPED.load(Ordering::SeqCst) {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the cancelled tool was stopped");
    let count = |recorder: &Recorder| recorder.progress().len();
    let before = count(&recorder);
    let _ = call(&client, "chatty", json!({})).await;
    assert_eq!(
        count(&recorder),
        before,
        "no progress after the cancellation and the stop"
    );
}

#[tokio::test]
async fn the_peer_reaches_the_client_for_sampling() {
    let (client, _) = connect(tools()).await;
    let result = call(&client, "ask", json!({"question": "meaning of life?"})).await;
    assert_eq!(
        structured(&result),
        json!({"result": "42, to Some(\"meaning of life?\")"})
    );
    // Without a client, the tool says so in an envelope.
    let reply = tools().call("ask", json!({"question": "?"})).await.unwrap();
    assert_eq!(reply.envelope().unwrap().message(), "no client to ask");
}

#[tokio::test]
async fn the_peer_reaches_the_client_for_elicitation() {
    let (client, _) = connect(tools()).await;
    let result = call(&client, "ask_name", json!({})).await;
    assert_eq!(structured(&result), json!({"result": "Ada"}));
    // Without a client, the tool says so in an envelope.
    let reply = tools().call("ask_name", json!({})).await.unwrap();
    assert_eq!(reply.envelope().unwrap().message(), "no client to ask");
}

#[tokio::test]
async fn rich_content_is_sent_as_mcp_content_blocks() {
    let (client, _) = connect(tools()).await;
    let result = call(&client, "chart", json!({"customer_id": "C-1"})).await;
    assert_eq!(result.is_error, Some(false));
    let sent = serde_json::to_value(&result).unwrap();
    assert_eq!(
        sent["content"],
        json!([
            {"type": "text", "text": "orders of C-1"},
            {"type": "image", "data": "iVBORw==", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "orders://C-1", "name": "orders"}
        ])
    );
    assert_eq!(sent["_meta"], json!({"source": "test"}));
    assert!(result.structured_content.is_none());
}

/// The business function behind an rmcp-native tool.
#[tool(read_only)]
async fn find_orders(customer_id: String) -> Result<Found<String>, ErrorEnvelope> {
    match customer_id.as_str() {
        "C-1" => Ok(Found::new(vec!["O-1".to_owned()])),
        "C-0" => Ok(Found::none()),
        _ => Err(
            ErrorEnvelope::validation(format!("no customer `{customer_id}`"))
                .with_alternative("Customer ids look like C-1"),
        ),
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    customer_id: String,
}

/// A server of rmcp's own: its `#[tool]`s return envelopes, and a tool set
/// joins them.
#[derive(Clone)]
struct Composed {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Composed {
    /// Look up a customer's orders.
    #[rmcp::tool]
    async fn lookup_orders(
        &self,
        Parameters(lookup): Parameters<Lookup>,
    ) -> Result<Json<Found<String>>, ErrorEnvelope> {
        find_orders(lookup.customer_id).await.map(Json)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Composed {}

fn composed() -> Composed {
    Composed {
        tool_router: admit_envelopes(Composed::tool_router()) + tools().router(),
    }
}

#[tokio::test]
async fn a_tool_set_composes_with_rmcp_tools_that_return_envelopes() {
    let (client, recorder) = connect(composed()).await;
    let listed = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = listed.iter().map(|tool| tool.name.as_ref()).collect();
    for name in ["lookup_orders", "steps", "chatty", "waits", "ask", "chart"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }

    // rmcp's own tool: an envelope that its output schema admits.
    let lookup = listed
        .iter()
        .find(|tool| tool.name == "lookup_orders")
        .unwrap();
    let schema = Value::Object((**lookup.output_schema.as_ref().unwrap()).clone());
    let validator = jsonschema::validator_for(&schema).unwrap();
    let failed = call(&client, "lookup_orders", json!({"customer_id": "X"})).await;
    assert_eq!(failed.is_error, Some(true));
    let envelope = structured(&failed);
    assert!(validator.is_valid(&envelope), "{envelope}");
    assert_eq!(envelope["errorCategory"], "validation");
    assert_eq!(envelope["attempted_query"], json!({"customer_id": "X"}));
    assert_eq!(
        envelope["alternatives"],
        json!(["Customer ids look like C-1"])
    );
    let text = failed.content[0].as_text().unwrap().text.clone();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), envelope);
    // A valid empty result is a success, and matches the schema too.
    let empty = call(&client, "lookup_orders", json!({"customer_id": "C-0"})).await;
    assert_eq!(empty.is_error, Some(false));
    assert!(validator.is_valid(&structured(&empty)));

    // The tool set's tools keep their request context inside the composed server.
    let result = call(&client, "steps", json!({"steps": 2})).await;
    assert_eq!(structured(&result), json!({"result": 2}));
    assert_eq!(recorder.progress().len(), 2);
}

#[tokio::test]
async fn an_unknown_tool_in_a_composed_server_is_a_protocol_error() {
    let (client, _) = connect(composed()).await;
    match client.call_tool(CallToolRequestParams::new("nope")).await {
        Err(rmcp::ServiceError::McpError(error)) => assert_eq!(error.code.0, -32602),
        other => panic!("expected -32602, got {other:?}"),
    }
}

#[tokio::test]
async fn an_envelope_from_an_rmcp_tool_is_a_tool_error_result() {
    let envelope = ErrorEnvelope::permission("Access denied to payroll table");
    let result: Result<Json<Found<String>>, ErrorEnvelope> = Err(envelope);
    let response =
        rmcp::handler::server::tool::IntoCallToolResult::into_call_tool_result(result).unwrap();
    let rmcp::model::CallToolResponse::Complete(result) = response else {
        panic!("a complete result")
    };
    assert_eq!(result.is_error, Some(true));
    assert_eq!(structured(&result)["errorCategory"], "permission");
    assert_eq!(structured(&result)["isRetryable"], false);
}
