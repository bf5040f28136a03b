//! Calls run as tasks (MCP's tasks extension, SEP-2663) for a client that
//! declares it: the call answers with a task at once, its retries, guards
//! and questions run in the background, and `tasks/get` reads the result.
//! rmcp's own client, in the same process, on 2026-07-28; the clock is
//! tokio's paused one, so the polling below waits no real time.
#![cfg(feature = "rmcp")]

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    ErrorCode, GetTaskParams, Implementation, ProtocolVersion, UpdateTaskParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use tool_envelope::mcp::{Elicitation, TaskSupport, ToolContext, ToolSet};
use tool_envelope::retry::RetryPolicy;
use tool_envelope::{ErrorEnvelope, tool};

static FLAKY: AtomicU32 = AtomicU32::new(0);

/// Fails once with a transient fault, then answers: recovered inside the task.
#[tool(read_only)]
async fn flaky_report(quarter: String) -> Result<String, ErrorEnvelope> {
    if FLAKY.fetch_add(1, Ordering::SeqCst) == 0 {
        return Err(ErrorEnvelope::transient("the warehouse is busy").with_reason("BUSY"));
    }
    Ok(format!("report for {quarter}"))
}

/// Asks for a confirmation, then answers.
#[tool(read_only)]
async fn confirmed(context: ToolContext) -> Result<String, ErrorEnvelope> {
    let form =
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
    match context.elicit_form("ok", "Go ahead?", form).await? {
        Elicitation::Accepted(answer) => Ok(format!("confirmed: {}", answer["ok"])),
        _ => Ok("not confirmed".to_owned()),
    }
}

/// Takes a long time: long enough to be cancelled.
#[tool(read_only)]
async fn long_job() -> Result<String, ErrorEnvelope> {
    tokio::time::sleep(Duration::from_secs(3600)).await;
    Ok("done".to_owned())
}

/// Whether the work `watched_job` handed on heard its task cancelled,
/// and what the context said then.
static WATCHER_HEARD: tokio::sync::Notify = tokio::sync::Notify::const_new();
static WATCHER_SAW_CANCELLED: AtomicBool = AtomicBool::new(false);
/// Told when `watched_job` has handed its work on.
static WATCHED_BEGAN: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Hands work to a task of its own, which stops when the call is
/// cancelled, and takes a long time itself.
#[tool(read_only)]
async fn watched_job(context: ToolContext) -> Result<String, ErrorEnvelope> {
    let watching = context.clone();
    tokio::spawn(async move {
        watching.cancelled().await;
        WATCHER_SAW_CANCELLED.store(watching.is_cancelled(), Ordering::SeqCst);
        WATCHER_HEARD.notify_one();
    });
    WATCHED_BEGAN.notify_one();
    tokio::time::sleep(Duration::from_secs(3600)).await;
    Ok("done".to_owned())
}

/// Answers in the request, always.
#[tool(read_only)]
fn quick() -> Result<String, ErrorEnvelope> {
    Ok("quick".to_owned())
}

fn tools() -> ToolSet {
    ToolSet::new()
        .tool::<flaky_report>()
        .tool::<confirmed>()
        .tool::<long_job>()
        .tool::<watched_job>()
        .tool::<quick>()
        .retry(
            RetryPolicy::default()
                .max_attempts(3)
                .constant(Duration::from_secs(30)),
        )
        .tasks(|tool| match tool.name.as_str() {
            "quick" => TaskSupport::Never,
            "long_job" => TaskSupport::Required,
            _ => TaskSupport::Optional,
        })
}

/// A client that declares the tasks extension, or not, and elicitation.
#[derive(Clone)]
struct Client {
    tasks: bool,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let builder = ClientCapabilities::builder().enable_elicitation();
        let capabilities = match self.tasks {
            true => builder.enable_tasks().build(),
            false => builder.build(),
        };
        ClientConfig::new(capabilities, Implementation::new("tasks-test", "1"))
    }
}

async fn connect(tasks: bool) -> RunningService<RoleClient, Client> {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = tools().serve(server_io).await.expect("the server starts");
        let _ = running.waiting().await;
    });
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    Client { tasks }
        .serve_with_lifecycle(client_io, lifecycle)
        .await
        .expect("the client connects")
}

/// The task a call made.
async fn task_of(
    client: &RunningService<RoleClient, Client>,
    params: CallToolRequestParams,
) -> String {
    match client.call_tool_once(params).await.expect("an answer") {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("expected a task, got {other:?}"),
    }
}

/// `tasks/get`, as JSON.
async fn get(client: &RunningService<RoleClient, Client>, task: &str) -> Value {
    let detailed = client
        .get_task(GetTaskParams::new(task))
        .await
        .expect("tasks/get");
    serde_json::to_value(detailed).unwrap()
}

/// Polls the task (on the paused clock) until its status is not `working`.
async fn settled(client: &RunningService<RoleClient, Client>, task: &str) -> Value {
    for _ in 0..1_000 {
        let state = get(client, task).await;
        if state["status"] != "working" {
            return state;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    panic!("the task never settled");
}

#[tokio::test(start_paused = true)]
async fn a_call_that_waits_out_a_retry_runs_as_a_task_and_its_result_is_read_later() {
    let client = connect(true).await;
    let arguments = json!({"quarter": "Q3"}).as_object().unwrap().clone();
    let task = task_of(
        &client,
        CallToolRequestParams::new("flaky_report").with_arguments(arguments),
    )
    .await;
    // The request was answered with the task; the call waits out its retry's
    // 30 s in the background.
    let done = settled(&client, &task).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"result": "report for Q3"})
    );
    assert!(FLAKY.load(Ordering::SeqCst) >= 2, "retried inside the task");
}

#[tokio::test(start_paused = true)]
async fn a_task_that_asks_waits_for_tasks_update() {
    let client = connect(true).await;
    let task = task_of(&client, CallToolRequestParams::new("confirmed")).await;
    let waiting = settled(&client, &task).await;
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    assert_eq!(
        waiting["inputRequests"]["ok"]["method"],
        "elicitation/create"
    );
    let answer = json!({"action": "accept", "content": {"ok": true}});
    client
        .update_task(UpdateTaskParams::new(
            &task,
            [("ok".to_owned(), answer)].into(),
        ))
        .await
        .expect("tasks/update");
    let done = settled(&client, &task).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"result": "confirmed: true"})
    );
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_task_stops() {
    let client = connect(true).await;
    let task = task_of(&client, CallToolRequestParams::new("long_job")).await;
    client
        .cancel_task(CancelTaskParams::new(&task))
        .await
        .expect("tasks/cancel");
    let done = settled(&client, &task).await;
    assert_eq!(done["status"], "cancelled", "{done}");
}

/// A task's cancellation is the call's, as its tool sees it: work the tool
/// handed to a task of its own, waiting on `ToolContext::cancelled`, stops
/// with it, and `is_cancelled` says so.
#[tokio::test(start_paused = true)]
async fn a_cancelled_tasks_tool_hears_it_in_its_context() {
    let client = connect(true).await;
    let task = task_of(&client, CallToolRequestParams::new("watched_job")).await;
    WATCHED_BEGAN.notified().await;
    client
        .cancel_task(CancelTaskParams::new(&task))
        .await
        .expect("tasks/cancel");
    // On the paused clock: a watcher never told times out at once.
    tokio::time::timeout(Duration::from_secs(60), WATCHER_HEARD.notified())
        .await
        .expect("the work the tool handed on heard the cancellation");
    assert!(WATCHER_SAW_CANCELLED.load(Ordering::SeqCst));
    let done = settled(&client, &task).await;
    assert_eq!(done["status"], "cancelled", "{done}");
}

#[tokio::test(start_paused = true)]
async fn without_the_extension_a_call_is_answered_in_the_request_or_refused_if_it_must_be_a_task() {
    let client = connect(false).await;
    let answered = client
        .call_tool(CallToolRequestParams::new("confirmed"))
        .await;
    // Answered in the request (the client declared elicitation, not tasks):
    // its question went to the client as a round, which rmcp's client
    // answers with its default handler.
    assert!(answered.is_ok(), "{answered:?}");
    let refused = client
        .call_tool_once(CallToolRequestParams::new("long_job"))
        .await
        .expect_err("a tool that only runs as a task");
    let rmcp::ServiceError::McpError(data) = &refused else {
        panic!("expected a protocol error, got {refused}");
    };
    assert_eq!(data.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);

    // A client that declared tasks gets `quick` in the request all the same.
    let tasks = connect(true).await;
    match tasks
        .call_tool_once(CallToolRequestParams::new("quick"))
        .await
        .unwrap()
    {
        CallToolResponse::Complete(result) => {
            assert_eq!(result.structured_content, Some(json!({"result": "quick"})));
        }
        other => panic!("expected a result in the request, got {other:?}"),
    }
}

/// This crate's client, calling a tool set that runs tasks over HTTP.
#[cfg(feature = "client")]
mod client {
    use super::*;
    use tool_envelope::mcp::HttpOptions;
    use tool_envelope::mcp::client::{ElicitResult, ElicitationAction, McpClient};
    use tool_envelope::{ErrorCategory, reasons};

    async fn serve() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(async move {
            HttpOptions::new()
                .stateless()
                .serve(listener, tools())
                .await
        });
        url
    }

    #[tokio::test]
    async fn a_tool_that_must_run_as_a_task_names_the_extension_to_declare() {
        let url = serve().await;
        let client = McpClient::connect(&url).await.unwrap();
        let refused = client.call("long_job", json!({})).await.unwrap_err();
        assert_eq!(refused.category(), ErrorCategory::Business);
        assert_eq!(refused.reason(), Some(reasons::CLIENT_CANNOT_ANSWER));
        assert!(
            refused.message().contains("io.modelcontextprotocol/tasks"),
            "{}",
            refused.message()
        );
        assert!(
            refused
                .alternatives()
                .iter()
                .any(|next| next.contains("Connect::tasks")),
            "{:?}",
            refused.alternatives()
        );
        assert!(!refused.is_retryable());
    }

    #[tokio::test]
    async fn a_client_that_declares_tasks_follows_one_to_its_result_and_answers_its_questions() {
        let url = serve().await;
        let client = McpClient::connect(&url)
            .tasks()
            .on_elicitation(|_| async {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"ok": true}))
            })
            .await
            .unwrap();
        let answer = client.call("confirmed", json!({})).await.unwrap();
        assert_eq!(answer, json!({"result": "confirmed: true"}));
        // A tool that never runs as a task answers in the request, as before.
        assert_eq!(
            client.call("quick", json!({})).await.unwrap(),
            json!({"result": "quick"})
        );
    }

    #[tokio::test]
    async fn a_task_that_outlasts_the_calls_timeout_is_cancelled() {
        let url = serve().await;
        let client = McpClient::connect(&url)
            .tasks()
            .timeout(Duration::from_secs(4))
            .await
            .unwrap();
        let late = client.call("long_job", json!({})).await.unwrap_err();
        assert_eq!(late.reason(), Some(reasons::TIMEOUT), "{late:?}");
        assert!(late.message().contains("cancelled"), "{}", late.message());
    }
}
