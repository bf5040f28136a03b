//! The calling side: `McpClient` against this crate's example server (a
//! child process on stdio) and against an rmcp server in this process (over
//! Streamable HTTP) whose tools return what other servers send — retryable
//! failures of tools that are not safe to repeat, human requests, progress.
#![cfg(all(feature = "rmcp", feature = "client"))]

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{ElicitResult, ElicitationAction};
use rmcp::{ServerHandler, tool_handler, tool_router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_envelope::coordinator::Coordinator;
use tool_envelope::guard::{Blocked, Guards, ToolCall};
use tool_envelope::mcp::client::{McpClient, Progress};
use tool_envelope::mcp::{HttpOptions, ToolContext, ToolSet, admit_envelopes};
use tool_envelope::retry::{RetryBudget, RetryPolicy};
use tool_envelope::{ErrorCategory, ErrorEnvelope, EscalationReason, Found, reasons, tool};

use common::server_binary;

/// The example server, over stdio.
async fn example() -> McpClient {
    let binary = server_binary().clone();
    McpClient::spawn(move || tokio::process::Command::new(&binary))
        .await
        .expect("the example server starts")
}

fn quick() -> RetryPolicy {
    RetryPolicy::default().constant(Duration::from_millis(1))
}

#[derive(Debug, Deserialize, Serialize, PartialEq)]
struct Order {
    id: String,
    status: String,
    total: u64,
}

#[tokio::test]
async fn a_remote_tool_returns_its_value_or_its_envelope() {
    let client = example().await;
    let tools = client.tools().await.unwrap();
    let lookup = tools
        .iter()
        .find(|tool| tool.name == "lookup_orders")
        .unwrap();
    assert!(lookup.annotations.read_only_hint && lookup.is_safe_to_repeat());
    assert!(
        lookup.failure_modes.is_some(),
        "the server publishes how it can fail"
    );
    let refund = tools
        .iter()
        .find(|tool| tool.name == "process_refund")
        .unwrap();
    assert!(!refund.is_safe_to_repeat());

    // A value, typed.
    let found: Found<Order> = client
        .call_as("lookup_orders", json!({"customer_id": "C-1001"}))
        .await
        .unwrap();
    assert_eq!(found.matches(), 2);
    // An empty answer is an answer.
    let none: Found<Order> = client
        .call_as("lookup_orders", json!({"customer_id": "C-0000"}))
        .await
        .unwrap();
    assert!(none.is_empty());
    // A wrapped value that is not an object.
    let stock: u32 = client
        .call_as("stock_level", json!({"sku": "SKU-1"}))
        .await
        .unwrap();
    assert_eq!(stock, 35);

    // The server's envelope, typed.
    let denied = client
        .call("read_payroll", json!({"dept": "ENG"}))
        .await
        .unwrap_err();
    assert_eq!(denied.category(), ErrorCategory::Permission);
    assert!(!denied.is_retryable());
    assert_eq!(denied.tool(), Some("read_payroll"));
    assert_eq!(denied.attempted_query(), Some(&json!({"dept": "ENG"})));
    assert_eq!(denied.alternatives().len(), 2);
    // Partial results come back with the failure.
    let research = client
        .call("research", json!({"topic": "EU AI Act"}))
        .await
        .unwrap_err();
    assert_eq!(
        research
            .partial_results()
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        6
    );

    // Bad arguments: the server's validation envelope. An unknown tool: -32602, validation.
    let invalid = client
        .call("lookup_orders", json!({"customer_id": 42}))
        .await
        .unwrap_err();
    assert_eq!(invalid.category(), ErrorCategory::Validation);
    assert_eq!(invalid.violations()[0].field, "customer_id");
    let unknown = client.call("nope", json!({"x": 1})).await.unwrap_err();
    assert_eq!(unknown.category(), ErrorCategory::Validation);
    assert_eq!(unknown.tool(), Some("nope"));
    // No schema says where its secrets are: none of its arguments is shown.
    assert_eq!(unknown.attempted_query(), Some(&json!({"x": "[redacted]"})));
}

/// Blocks refunds over $500 in the agent, before anything is sent.
fn refund_cap(call: &ToolCall) -> Result<(), Blocked> {
    let amount: u64 = call.require("amount")?;
    if amount > 500 {
        return Err(Blocked::new(format!("Refund of ${amount} needs a human"))
            .with_reason("AGENT_REFUND_CAP"));
    }
    Ok(())
}

#[tokio::test]
async fn client_side_guards_block_before_anything_is_sent() {
    let binary = server_binary().clone();
    let client = McpClient::spawn(move || tokio::process::Command::new(&binary))
        .guards(Guards::new().for_tool("process_refund", refund_cap))
        .await
        .unwrap();
    let sent = client.sent();
    let blocked = client
        .call("process_refund", json!({"order": "O-77", "amount": 900}))
        .await
        .unwrap_err();
    assert_eq!(blocked.category(), ErrorCategory::Business);
    assert_eq!(blocked.reason(), Some("AGENT_REFUND_CAP"));
    assert_eq!(client.sent(), sent, "nothing left the process");
    let refunded = client
        .call("process_refund", json!({"order": "O-78", "amount": 40}))
        .await
        .unwrap();
    assert_eq!(refunded, json!({"result": "Refunded $40 on O-78"}));
    assert_eq!(client.sent(), sent + 1);
}

#[tokio::test]
async fn a_dead_child_is_restarted_before_the_retry_of_a_safe_call() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let client = example_with_pid(&pid_file).await.unwrap();
    assert_eq!(client.connections(), 1);
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_owned();
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .unwrap();
    assert!(killed.success());

    // The first attempt finds the connection dead; the retry of this
    // read-only call runs on a new child.
    let outcome = quick()
        .retry(|| client.call("lookup_orders", json!({"customer_id": "C-1001"})))
        .await;
    let value = outcome.result.expect("recovered locally");
    assert_eq!(value["matches"], 2);
    assert_eq!(client.connections(), 2);
    assert!(outcome.stats.attempts >= 1);
    std::fs::remove_dir_all(&dir).ok();
}

/// The example server, spawned through a shell that writes its pid to
/// `pid_file`, so that a test can kill it.
fn example_with_pid(pid_file: &std::path::Path) -> tool_envelope::mcp::client::Connect {
    let binary = server_binary().clone();
    let pid_path = pid_file.to_owned();
    McpClient::spawn(move || {
        let mut command = tokio::process::Command::new("sh");
        command.arg("-c").arg(format!(
            "echo $$ > '{}'; exec '{}'",
            pid_path.display(),
            binary.display()
        ));
        command
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refund_whose_server_died_while_it_was_asked_is_not_sent_again() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let reach: Arc<std::sync::OnceLock<McpClient>> = Arc::default();
    let asked = Arc::new(AtomicU32::new(0));
    let client = example_with_pid(&pid_file)
        .on_elicitation({
            let (reach, asked, pid_file) =
                (Arc::clone(&reach), Arc::clone(&asked), pid_file.clone());
            move |_| {
                let (reach, asked, pid_file) =
                    (Arc::clone(&reach), Arc::clone(&asked), pid_file.clone());
                async move {
                    asked.fetch_add(1, Ordering::SeqCst);
                    // The server dies while its question is answered...
                    let pid = std::fs::read_to_string(&pid_file).unwrap();
                    let killed = std::process::Command::new("kill")
                        .args(["-9", pid.trim()])
                        .status()
                        .unwrap();
                    assert!(killed.success());
                    // ...and the client has seen it (a new child made for
                    // the next use) before the answer is sent.
                    let client = reach.get().unwrap();
                    while client.connections() < 2 {
                        let _ = client.tools().await;
                        tokio::task::yield_now().await;
                    }
                    ElicitResult::new(ElicitationAction::Accept)
                        .with_content(json!({"approver": "agent"}))
                }
            }
        })
        .await
        .unwrap();
    let _ = reach.set(client.clone());
    assert_eq!(
        client.protocol_version().await.unwrap(),
        "2026-07-28",
        "the question is a round of the call"
    );
    let failed = tokio::time::timeout(
        Duration::from_secs(30),
        quick().retry(|| client.call("process_refund", json!({"order": "O-79", "amount": 900}))),
    )
    .await
    .expect("the call ends")
    .result
    .unwrap_err()
    .envelope;
    // The first round reached the server: the answer that could not be
    // sent does not make the refund one that was never applied.
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "asked once, not sent again"
    );
    assert!(!failed.is_retryable(), "{failed:?}");
    assert_eq!(failed.reason(), Some(reasons::MAY_HAVE_TAKEN_EFFECT));
    assert_eq!(failed.category(), ErrorCategory::Transient);
}

// ---------------------------------------------------------------------------
// An rmcp server in this process, sending what other servers send.

static CHARGES: AtomicU32 = AtomicU32::new(0);
static UNAPPLIED: AtomicU32 = AtomicU32::new(0);
static QUOTES: AtomicU32 = AtomicU32::new(0);
static TURNS: AtomicU32 = AtomicU32::new(0);
static ESCALATED: AtomicU32 = AtomicU32::new(0);
static THROTTLED: AtomicU32 = AtomicU32::new(0);
static PINGS: AtomicU32 = AtomicU32::new(0);
/// How many times a client resumed an event stream of the fake gateway.
static RESUMED: AtomicU32 = AtomicU32::new(0);

#[derive(Deserialize, schemars::JsonSchema)]
struct Amount {
    /// The amount, in dollars: never read, only charged.
    #[allow(dead_code)]
    amount: u64,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Receipt {
    id: String,
}

/// Reports three steps of progress.
#[tool(read_only)]
async fn export(context: ToolContext) -> Result<u32, ErrorEnvelope> {
    for step in 1..=3 {
        context
            .progress(f64::from(step), Some(3.0), Some("exporting"))
            .await;
    }
    Ok(3)
}

/// Reports progress naming the token it was given, as careless code does.
#[tool(read_only)]
async fn export_with(
    context: ToolContext,
    token: tool_envelope::Secret<String>,
) -> Result<u32, ErrorEnvelope> {
    let message = format!("exporting with {}", token.expose());
    context.progress(1.0, Some(1.0), Some(&message)).await;
    Ok(1)
}

/// Transfers money; the bank throttled the first two requests before doing
/// anything, and the author says so, with a reason of their own.
#[tool(destructive)]
async fn transfer(amount: u64) -> Result<String, ErrorEnvelope> {
    if THROTTLED.fetch_add(1, Ordering::SeqCst) < 2 {
        return Err(ErrorEnvelope::transient("the bank throttled the request")
            .with_reason("RATE_LIMITED")
            .with_not_applied(true));
    }
    Ok(format!("moved {amount}"))
}

#[derive(Clone)]
struct Remote {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Remote {
    /// Charges a card. Not idempotent; its gateway times out, and it says
    /// "retryable" as a naive server would.
    #[rmcp::tool]
    async fn charge(
        &self,
        Parameters(_): Parameters<Amount>,
    ) -> Result<Json<Receipt>, ErrorEnvelope> {
        CHARGES.fetch_add(1, Ordering::SeqCst);
        Err(ErrorEnvelope::transient("The payment gateway timed out"))
    }

    /// Charges a card; the gateway refused the connection, so nothing happened.
    #[rmcp::tool]
    async fn charge_refused(
        &self,
        Parameters(_): Parameters<Amount>,
    ) -> Result<Json<Receipt>, ErrorEnvelope> {
        if UNAPPLIED.fetch_add(1, Ordering::SeqCst) < 2 {
            return Err(
                ErrorEnvelope::transient("The gateway refused the connection")
                    .with_reason(reasons::NOT_APPLIED),
            );
        }
        Ok(Json(Receipt { id: "R-1".into() }))
    }

    /// Reads a quote: idempotent, and flaky.
    #[rmcp::tool(annotations(idempotent_hint = true))]
    async fn quote(&self) -> Result<Json<Receipt>, ErrorEnvelope> {
        QUOTES.fetch_add(1, Ordering::SeqCst);
        Err(ErrorEnvelope::transient("The quote service is down"))
    }

    /// Pings a dependency that is down: idempotent.
    #[rmcp::tool(annotations(idempotent_hint = true))]
    async fn ping(&self) -> Result<String, ErrorEnvelope> {
        PINGS.fetch_add(1, Ordering::SeqCst);
        Err(ErrorEnvelope::transient("The dependency is down"))
    }

    /// A read-only look-up whose database never answers.
    #[rmcp::tool(annotations(read_only_hint = true))]
    async fn stuck(&self) -> Result<String, ErrorEnvelope> {
        std::future::pending().await
    }

    /// A chat turn whose user asked for a human.
    #[rmcp::tool(annotations(read_only_hint = true))]
    async fn chat_turn(&self) -> Result<String, ErrorEnvelope> {
        TURNS.fetch_add(1, Ordering::SeqCst);
        Err(ErrorEnvelope::transient("CRM timed out").with_reason(reasons::HUMAN_REQUESTED))
    }

    /// A read-only look-up the server already retried to exhaustion.
    #[rmcp::tool(annotations(read_only_hint = true))]
    async fn retried(&self) -> Result<String, tool_envelope::Escalation> {
        ESCALATED.fetch_add(1, Ordering::SeqCst);
        Err(RetryPolicy::default()
            .constant(Duration::ZERO)
            .retry(|| async { Err::<(), _>(ErrorEnvelope::transient("down")) })
            .await
            .result
            .unwrap_err())
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Remote {}

/// The remote server, over stateless Streamable HTTP; its URL.
async fn remote() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let tools = ToolSet::new()
        .tool::<export>()
        .tool::<export_with>()
        .tool::<transfer>();
    tokio::spawn(async move {
        HttpOptions::new()
            .stateless()
            .serve(listener, move || Remote {
                tool_router: admit_envelopes(Remote::tool_router()) + tools.router(),
            })
            .await
    });
    url
}

#[tokio::test]
async fn a_naive_retryable_failure_of_an_unsafe_tool_is_not_repeated() {
    let client = McpClient::connect(remote().await).await.unwrap();
    let outcome = quick()
        .retry(|| client.call("charge", json!({"amount": 300})))
        .await;
    let escalation = outcome.result.unwrap_err();
    assert_eq!(
        CHARGES.load(Ordering::SeqCst),
        1,
        "a charge is never repeated"
    );
    assert_eq!(escalation.reason, EscalationReason::NonRetryable);
    assert!(!escalation.envelope.is_retryable());
    assert_eq!(
        escalation.envelope.reason(),
        Some(reasons::MAY_HAVE_TAKEN_EFFECT)
    );
    assert_eq!(
        escalation.envelope.attempted_query(),
        Some(&json!({"amount": 300}))
    );
}

#[tokio::test]
async fn a_failure_that_says_not_applied_is_repeated_even_for_an_unsafe_tool() {
    let client = McpClient::connect(remote().await).await.unwrap();
    let outcome = quick()
        .retry(|| client.call("charge_refused", json!({"amount": 300})))
        .await;
    assert_eq!(outcome.result.unwrap(), json!({"id": "R-1"}));
    assert_eq!(UNAPPLIED.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn both_ends_agree_that_a_call_not_applied_is_safe_to_repeat() {
    // The server's `#[tool]` says "not applied" with a reason of its own; the
    // wire carries NOT_APPLIED, which the client decides by.
    let client = McpClient::connect(remote().await).await.unwrap();
    let outcome = quick()
        .retry(|| client.call("transfer", json!({"amount": 300})))
        .await;
    assert_eq!(outcome.result.unwrap(), json!({"result": "moved 300"}));
    assert_eq!(THROTTLED.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_safe_tool_is_retried_to_the_cap() {
    let client = McpClient::connect(remote().await).await.unwrap();
    let outcome = quick().retry(|| client.call("quote", json!({}))).await;
    assert_eq!(
        outcome.result.unwrap_err().reason,
        EscalationReason::RetriesExhausted
    );
    assert_eq!(QUOTES.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_retry_budget_is_shared_by_remote_calls() {
    let client = McpClient::connect(remote().await).await.unwrap();
    let budget = RetryBudget::new(4.0);
    let policy = quick().max_attempts(5).budget(&budget);
    let mut reasons = Vec::new();
    for _ in 0..10 {
        let outcome = policy.retry(|| client.call("ping", json!({}))).await;
        reasons.push(outcome.result.unwrap_err().reason);
    }
    // Each failure takes a token; a retry needs more than half of the 4. The
    // first loop: 4 → 3, retried, 3 → 2, stopped. Each later loop: one call.
    assert_eq!(PINGS.load(Ordering::SeqCst), 2 + 9);
    assert!(
        reasons
            .iter()
            .all(|reason| *reason == EscalationReason::RetryBudgetExhausted),
        "{reasons:?}"
    );
}

#[tokio::test]
async fn a_human_request_and_a_server_escalation_are_not_retried() {
    let client = McpClient::connect(remote().await).await.unwrap();
    let outcome = quick().retry(|| client.call("chat_turn", json!({}))).await;
    assert_eq!(
        outcome.result.unwrap_err().reason,
        EscalationReason::HumanRequested
    );
    assert_eq!(TURNS.load(Ordering::SeqCst), 1);

    let outcome = quick().retry(|| client.call("retried", json!({}))).await;
    let escalation = outcome.result.unwrap_err();
    assert_eq!(
        ESCALATED.load(Ordering::SeqCst),
        1,
        "retries happen at one layer"
    );
    assert!(!escalation.envelope.is_retryable());
}

#[tokio::test]
async fn progress_reaches_the_callback() {
    let client = McpClient::connect(remote().await).await.unwrap();
    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let record = Arc::clone(&seen);
    let value = client
        .call_with_progress("export", json!({}), move |progress| {
            record.lock().unwrap().push(progress);
        })
        .await
        .unwrap();
    assert_eq!(value, json!({"result": 3}));
    // Notifications are handled in tasks of their own: wait for the three.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while seen.lock().unwrap().len() < 3 && tokio::time::Instant::now() < deadline {
        tokio::task::yield_now().await;
    }
    let mut steps: Vec<f64> = seen.lock().unwrap().iter().map(|p| p.progress).collect();
    steps.sort_by(f64::total_cmp);
    assert_eq!(steps, [1.0, 2.0, 3.0]);
}

/// A progress message the server writes reaches the callback quoting no
/// secret the call sent, as a question does not.
#[tokio::test]
async fn a_progress_message_quotes_no_secret_the_call_sent() {
    let client = McpClient::connect(remote().await).await.unwrap();
    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let record = Arc::clone(&seen);
    let token = "exp0rt-t0ken-93d1";
    client
        .call_with_progress("export_with", json!({"token": token}), move |progress| {
            record.lock().unwrap().push(progress);
        })
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while seen.lock().unwrap().is_empty() && tokio::time::Instant::now() < deadline {
        tokio::task::yield_now().await;
    }
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen[0].message.as_deref(),
        Some("exporting with [redacted]")
    );
}

#[tokio::test]
async fn unreachable_servers_and_timeouts_are_transient() {
    // Nothing listens there: the call was never sent.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let refused = McpClient::connect(url).await.unwrap_err();
    assert_eq!(refused.category(), ErrorCategory::Transient);
    assert_eq!(refused.reason(), Some(reasons::NOT_APPLIED));

    // A call that outlives the client's timeout (the tool list, which the
    // timeout bounds too, comes in time).
    let client = McpClient::connect(remote().await)
        .timeout(Duration::from_secs(3))
        .await
        .unwrap();
    let late = client.call("stuck", json!({})).await.unwrap_err();
    assert_eq!(late.category(), ErrorCategory::Transient);
    assert_eq!(late.reason(), Some(reasons::TIMEOUT));
    assert!(late.is_retryable(), "a read-only look-up is safe to repeat");

    // No timeout at all (`Duration::MAX`, past what the clock can count):
    // the call is made.
    let unbounded = McpClient::connect(remote().await)
        .timeout(Duration::MAX)
        .await
        .unwrap();
    unbounded.call("export", json!({})).await.unwrap();
}

#[tokio::test]
async fn one_coordinator_across_servers() {
    let example = example().await;
    let remote = McpClient::connect(remote().await).await.unwrap();
    let report = Coordinator::new()
        .branch(
            "orders",
            quick().retry(|| example.call("lookup_orders", json!({"customer_id": "C-1001"}))),
        )
        .branch(
            "payroll",
            quick().retry(|| example.call("read_payroll", json!({"dept": "ENG"}))),
        )
        .branch("export", quick().retry(|| remote.call("export", json!({}))))
        .run()
        .await;
    assert_eq!(report.completed.len(), 2);
    assert_eq!(report.gaps.len(), 1);
    assert_eq!(report.gaps[0].branch, "payroll");
    assert_eq!(
        report.gaps[0].envelope().attempted_query(),
        Some(&json!({"dept": "ENG"}))
    );
}

/// A server that speaks just enough MCP over HTTP to initialize and list one
/// read-only tool, and answers each call of it with the HTTP status its
/// `status` argument names: what proxies and gateways send.
async fn statuses() -> String {
    use axum::http::{HeaderMap, StatusCode, header};
    use axum::response::IntoResponse;

    async fn mcp(body: axum::Json<serde_json::Value>) -> axum::response::Response {
        let id = body.get("id").cloned();
        let method = body["method"].as_str().unwrap_or_default();
        let Some(id) = id else {
            return StatusCode::ACCEPTED.into_response();
        };
        let result = match method {
            "initialize" => json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "statuses", "version": "0"}
            }),
            "tools/list" => json!({"tools": [{
                "name": "lookup",
                "inputSchema": {"type": "object"},
                "annotations": {"readOnlyHint": true}
            }, {
                "name": "login",
                "inputSchema": {"type": "object", "properties": {
                    "user": {"type": "string"},
                    "token": {"type": "string", "writeOnly": true}
                }}
            }]}),
            _ if body["params"]["arguments"]["reply"].is_string() => {
                // A reply that is not a tool result.
                let reply = match body["params"]["arguments"]["reply"].as_str() {
                    Some("internal") => json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32603, "message": "internal error"}}),
                    Some("not_found") => json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32601, "message": "method not found"}}),
                    Some("long_text") => json!({"jsonrpc": "2.0", "id": id, "result": {
                        "isError": true,
                        "content": [{"type": "text", "text": "x".repeat(100_000)}]}}),
                    Some("deep") => {
                        // Deeper than the client walks, within serde_json's
                        // recursion limit (a deeper reply does not parse).
                        let mut deep = json!("bottom");
                        for _ in 0..120 {
                            deep = json!([deep]);
                        }
                        json!({"jsonrpc": "2.0", "id": id, "result": {
                            "isError": true,
                            "content": [{"type": "text", "text": "failed"}],
                            "structuredContent": {
                                "isError": true, "errorCategory": "transient",
                                "isRetryable": true, "message": "failed",
                                "partial_results": deep}}})
                    }
                    Some("broken_stream") => {
                        // An event stream that ends before the answer: the
                        // client resumes it with GET, a bounded number of times.
                        return (
                            [(header::CONTENT_TYPE, "text/event-stream")],
                            "id: e1\nretry: 0\ndata: \n\n",
                        )
                            .into_response();
                    }
                    _ => json!({"jsonrpc": "2.0", "id": id, "result": {"content": 42}}),
                };
                return axum::Json(reply).into_response();
            }
            _ if body["params"]["arguments"]["garbage"] == true => {
                return (
                    [(header::CONTENT_TYPE, "application/json")],
                    "{\"jsonrpc\": \"2.0\", \"id\": ",
                )
                    .into_response();
            }
            _ => {
                let status = body["params"]["arguments"]["status"]
                    .as_u64()
                    .unwrap_or(500) as u16;
                let mut headers = HeaderMap::new();
                if status == 429 {
                    headers.insert(header::RETRY_AFTER, "7".parse().unwrap());
                }
                if status == 502 {
                    headers.insert(
                        header::RETRY_AFTER,
                        "Sat, 01 Jan 2000 00:00:00 GMT".parse().unwrap(),
                    );
                }
                if status == 503 {
                    headers.insert(
                        header::RETRY_AFTER,
                        "Fri, 01 Jan 2100 00:00:00 GMT".parse().unwrap(),
                    );
                }
                if status == 401 {
                    headers.insert(
                        header::WWW_AUTHENTICATE,
                        "Bearer realm=\"tools\"".parse().unwrap(),
                    );
                }
                let status = StatusCode::from_u16(status).unwrap();
                return (status, headers, "the gateway says no").into_response();
            }
        };
        axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
    }

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(mcp).get(|| async {
            RESUMED.fetch_add(1, Ordering::SeqCst);
            (
                [(header::CONTENT_TYPE, "text/event-stream")],
                "id: e2\nretry: 0\ndata: \n\n",
            )
                .into_response()
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

#[tokio::test]
async fn http_statuses_are_classified() {
    let client = McpClient::connect(statuses().await).await.unwrap();
    let call = |status: u16| client.call("lookup", json!({"status": status}));

    let limited = call(429).await.unwrap_err();
    assert_eq!(limited.category(), ErrorCategory::Transient);
    assert_eq!(limited.reason(), Some("HTTP_429"));
    assert_eq!(limited.retry_after(), Some(Duration::from_secs(7)));
    assert!(limited.is_retryable());
    for status in [500, 502, 503] {
        let down = call(status).await.unwrap_err();
        assert_eq!(down.category(), ErrorCategory::Transient, "{status}");
        assert_eq!(down.reason(), Some(format!("HTTP_{status}").as_str()));
        assert!(down.is_retryable(), "a read-only call: safe to repeat");
        assert_eq!(down.attempted_query(), Some(&json!({"status": status})));
    }
    // `Retry-After` as an HTTP date: the time until then; once passed, no
    // hint (the policy's backoff).
    let until_2100 = std::time::UNIX_EPOCH + Duration::from_secs(4_102_444_800);
    let left = until_2100
        .duration_since(std::time::SystemTime::now())
        .unwrap();
    let unavailable = call(503).await.unwrap_err().retry_after().unwrap();
    assert!(
        unavailable <= left && unavailable > left - Duration::from_secs(3600),
        "{unavailable:?}, {left:?}"
    );
    assert_eq!(call(502).await.unwrap_err().retry_after(), None);
    assert_eq!(call(500).await.unwrap_err().retry_after(), None);
    for status in [401, 403] {
        let denied = call(status).await.unwrap_err();
        assert_eq!(denied.category(), ErrorCategory::Permission, "{status}");
        assert!(!denied.is_retryable());
    }
}

#[tokio::test]
async fn protocol_errors_and_unreadable_replies_are_other() {
    let client = McpClient::connect(statuses().await).await.unwrap();
    for (arguments, says) in [
        (json!({"reply": "internal"}), "error -32603: internal error"),
        (
            json!({"reply": "not_found"}),
            "error -32601: method not found",
        ),
        (json!({"reply": "not_a_result"}), "a result of another kind"),
        (json!({"garbage": true}), "reply could not be read"),
    ] {
        let failed = client.call("lookup", arguments.clone()).await.unwrap_err();
        assert_eq!(failed.category(), ErrorCategory::Other, "{arguments}");
        assert!(!failed.is_retryable(), "{arguments}");
        assert!(failed.message().contains(says), "{}", failed.message());
        assert_eq!(failed.tool(), Some("lookup"));
        assert_eq!(failed.attempted_query(), Some(&arguments));
    }
}

/// A server on a runtime of its own, so that stopping it really stops it:
/// its connections and sessions go with the runtime.
fn server_on_its_own_runtime(listener: std::net::TcpListener) -> tokio::runtime::Runtime {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.spawn(async move {
        listener.set_nonblocking(true).unwrap();
        let listener = tokio::net::TcpListener::from_std(listener).unwrap();
        let tools = ToolSet::new().tool::<export>();
        HttpOptions::new().serve(listener, tools).await
    });
    runtime
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_http_server_is_reached_again() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let first = server_on_its_own_runtime(listener);
    let client = McpClient::connect(format!("http://{address}/mcp"))
        .await
        .unwrap();
    assert_eq!(
        client.call("export", json!({})).await.unwrap(),
        json!({"result": 3})
    );

    // The server goes away, with its sessions, and comes back on the same port:
    // the session is initialized again (by rmcp's transport, on the 404 of the
    // unknown session: the request never ran, so repeating it is safe). The
    // first call may still meet the kept connection the old server closed,
    // if the client has not yet read its close: a `CONNECTION_LOST` that
    // this read-only call's policy sends again, once, on a new connection.
    let again = || {
        RetryPolicy::default()
            .max_attempts(3)
            .constant(Duration::from_millis(1))
    };
    tokio::task::spawn_blocking(move || first.shutdown_timeout(Duration::from_secs(10)))
        .await
        .unwrap();
    let second = server_on_its_own_runtime(std::net::TcpListener::bind(address).unwrap());
    let outcome = again().retry(|| client.call("export", json!({}))).await;
    assert_eq!(outcome.result.unwrap(), json!({"result": 3}));
    assert!(outcome.stats.attempts <= 2, "{:?}", outcome.stats);

    // While nothing listens, a call is a transient failure that was not sent;
    // once the server is back, the next attempt reaches it.
    tokio::task::spawn_blocking(move || second.shutdown_timeout(Duration::from_secs(10)))
        .await
        .unwrap();
    let down = client.call("export", json!({})).await.unwrap_err();
    assert_eq!(down.category(), ErrorCategory::Transient);
    assert!(down.is_retryable(), "{down}");
    let third = server_on_its_own_runtime(std::net::TcpListener::bind(address).unwrap());
    let outcome = again().retry(|| client.call("export", json!({}))).await;
    assert_eq!(outcome.result.unwrap(), json!({"result": 3}));
    assert!(outcome.stats.attempts <= 2, "{:?}", outcome.stats);
    tokio::task::spawn_blocking(move || third.shutdown_timeout(Duration::from_secs(10)))
        .await
        .unwrap();
}

#[tokio::test]
async fn what_a_server_sends_is_bounded() {
    // Ample: nothing here waits for it; a loaded machine's resumptions
    // (10, 100 ms apart) must still end as a lost connection, not a timeout.
    let client = McpClient::connect(statuses().await)
        .timeout(Duration::from_secs(10))
        .await
        .unwrap();
    // A plain-text failure keeps at most 4 KiB of its text as the message.
    let long = client
        .call("lookup", json!({"reply": "long_text"}))
        .await
        .unwrap_err();
    assert!(long.message().len() <= 4096, "{}", long.message().len());
    assert!(long.message().starts_with("xxxx"));
    // No value deeper than 100 levels is walked or kept.
    let deep = client
        .call("lookup", json!({"reply": "deep"}))
        .await
        .unwrap_err();
    fn depth(value: &Value) -> usize {
        match value {
            Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
            Value::Object(fields) => 1 + fields.values().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }
    let kept = deep.partial_results().unwrap();
    assert!(depth(kept) <= 101, "{}", depth(kept));
    // A stream that keeps ending before the answer, with `retry: 0`: SEP-1699
    // lets a graceful end be resumed without limit, at the server's pace.
    // The client spaces resumptions and gives up after 10 quiet ones, well
    // before the call's timeout; the next call is answered as usual.
    let broken = client
        .call("lookup", json!({"reply": "broken_stream"}))
        .await
        .unwrap_err();
    let resumed = RESUMED.load(Ordering::SeqCst);
    assert!((1..=10).contains(&resumed), "{resumed} resumptions");
    assert_eq!(broken.category(), ErrorCategory::Transient);
    assert_eq!(broken.reason(), Some(reasons::CONNECTION_LOST));
    let next = client
        .call("lookup", json!({"reply": "internal"}))
        .await
        .unwrap_err();
    assert!(next.message().contains("-32603"), "{}", next.message());
    // A failure the client describes itself (here an HTTP 500) shows the
    // arguments sent, masked where the tool's schema says `writeOnly` and
    // where a key is not declared.
    let login = client
        .call(
            "login",
            json!({"user": "ops", "token": "tok_SECRET", "apiKey": "sk_SECRET", "status": 500}),
        )
        .await
        .unwrap_err();
    assert_eq!(login.category(), ErrorCategory::Transient);
    let shown = login.attempted_query().unwrap();
    assert_eq!(shown["user"], "ops");
    assert!(!shown.to_string().contains("SECRET"), "{shown}");
    assert!(!format!("{login} {login:?}").contains("SECRET"));
}

/// A server of 2026-07-28 whose answer to every `tools/call` is an event
/// stream that ends before the answer, having given an event id: the 2025
/// way would resume it with a GET. Its URL, and how many GETs it got.
async fn modern_broken_stream() -> (String, Arc<AtomicU32>) {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;

    async fn mcp(body: axum::Json<Value>) -> axum::response::Response {
        let Some(id) = body.get("id").cloned() else {
            return StatusCode::ACCEPTED.into_response();
        };
        let result = match body["method"].as_str().unwrap_or_default() {
            "server/discover" => json!({
                "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "modern", "version": "0"}
            }),
            "tools/list" => {
                json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "tools": [
                    {"name": "lookup", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
                    {"name": "refund", "inputSchema": {"type": "object"}}
                ]})
            }
            "tools/call" => {
                return (
                    [(header::CONTENT_TYPE, "text/event-stream")],
                    "id: e1\nretry: 0\ndata: \n\n",
                )
                    .into_response();
            }
            _ => json!({"resultType": "complete"}),
        };
        axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
    }

    let resumed = Arc::new(AtomicU32::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let counted = Arc::clone(&resumed);
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(mcp).get(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            async { StatusCode::METHOD_NOT_ALLOWED.into_response() }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, resumed)
}

#[tokio::test]
async fn on_2026_07_28_a_broken_stream_is_not_resumed_and_the_retry_decision_says_what_follows() {
    let (url, resumed) = modern_broken_stream().await;
    let client = McpClient::connect(&url)
        .timeout(Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(client.protocol_version().await.unwrap(), "2026-07-28");
    // A read: lost, and safe to send again.
    let lookup = client.call("lookup", json!({})).await.unwrap_err();
    assert_eq!(lookup.category(), ErrorCategory::Transient, "{lookup:?}");
    assert_eq!(lookup.reason(), Some(reasons::CONNECTION_LOST));
    assert!(lookup.is_retryable());
    // A write: lost, and not safe to send again.
    let refund = client.call("refund", json!({})).await.unwrap_err();
    assert!(!refund.is_retryable(), "{refund:?}");
    assert_eq!(refund.reason(), Some(reasons::MAY_HAVE_TAKEN_EFFECT));
    // Nothing was resumed the 2025 way.
    assert_eq!(resumed.load(Ordering::SeqCst), 0);
}

/// A 2025-11-25 server that forgets its sessions — restarted behind the
/// client's back — while a refund is still being answered on the old one:
/// the refund's answer comes on an event stream that never ends, and any
/// other call on the first session gets 404. Its URL, a notice when a
/// refund arrived, and how many did.
async fn forgetful() -> (String, Arc<tokio::sync::Notify>, Arc<AtomicU32>) {
    use axum::http::{HeaderMap, StatusCode, header};
    use axum::response::IntoResponse;

    let refunding = Arc::new(tokio::sync::Notify::new());
    let refunds = Arc::new(AtomicU32::new(0));
    let sessions = Arc::new(AtomicU32::new(0));
    let mcp = {
        let refunding = Arc::clone(&refunding);
        let refunds = Arc::clone(&refunds);
        move |headers: HeaderMap, body: axum::Json<Value>| async move {
            let session = headers
                .get("mcp-session-id")
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
            let Some(id) = body.get("id").cloned() else {
                return StatusCode::ACCEPTED.into_response();
            };
            let answer =
                |result: Value| axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result}));
            match body["method"].as_str().unwrap_or_default() {
                "initialize" => {
                    let n = sessions.fetch_add(1, Ordering::SeqCst) + 1;
                    let result = answer(json!({
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "forgetful", "version": "0"}
                    }));
                    ([("mcp-session-id", format!("s{n}"))], result).into_response()
                }
                "tools/list" => answer(json!({"tools": [
                    {"name": "refund", "inputSchema": {"type": "object"},
                     "annotations": {"destructiveHint": true, "readOnlyHint": false}},
                    {"name": "ping", "inputSchema": {"type": "object"},
                     "annotations": {"readOnlyHint": true}}
                ]}))
                .into_response(),
                "tools/call" if body["params"]["name"] == "refund" => {
                    refunds.fetch_add(1, Ordering::SeqCst);
                    refunding.notify_one();
                    let never = futures_util::stream::pending::<Result<String, std::io::Error>>();
                    (
                        [(header::CONTENT_TYPE, "text/event-stream")],
                        axum::body::Body::from_stream(never),
                    )
                        .into_response()
                }
                "tools/call" if session.as_deref() == Some("s1") => {
                    StatusCode::NOT_FOUND.into_response()
                }
                "tools/call" => {
                    answer(json!({"content": [{"type": "text", "text": "pong"}]})).into_response()
                }
                _ => axum::Json(json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": "Method not found"}}))
                .into_response(),
            }
        }
    };
    (served_at_mcp(mcp).await, refunding, refunds)
}

/// `mcp` served on a loopback port at `/mcp`, answering POSTs only (no
/// standalone event stream, no session ended by DELETE): its URL.
async fn served_at_mcp<H, T>(mcp: H) -> String
where
    H: axum::handler::Handler<T, ()>,
    T: 'static,
{
    use axum::http::StatusCode;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(mcp)
            .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
            .delete(|| async { StatusCode::METHOD_NOT_ALLOWED }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// rmcp opens a new session when the server forgot the old one (HTTP 404)
/// and ends every call still waiting on the old one with its own JSON-RPC
/// error: a refund that was sent and may have been made. The caller hears
/// that it may have taken effect — not that the server answered an
/// internal error — and nothing sends it again.
#[tokio::test]
async fn a_refund_cut_off_when_its_session_was_renewed_may_have_taken_effect() {
    let (url, refunding, refunds) = forgetful().await;
    let client = McpClient::connect(&url).await.unwrap();
    let refund = tokio::spawn({
        let client = client.clone();
        async move {
            RetryPolicy::default()
                .constant(Duration::from_millis(1))
                .retry(|| client.call("refund", json!({"order": "O-1"})))
                .await
        }
    });
    refunding.notified().await;
    // Another call finds the session gone: rmcp opens a new one.
    client.call("ping", json!({})).await.unwrap();
    let escalation = refund.await.unwrap().result.unwrap_err();
    let failed = &escalation.envelope;
    assert_eq!(failed.category(), ErrorCategory::Transient, "{failed:?}");
    assert_eq!(failed.reason(), Some(reasons::MAY_HAVE_TAKEN_EFFECT));
    assert!(!failed.is_retryable(), "{failed:?}");
    assert!(!failed.message().contains("-32603"), "{}", failed.message());
    assert_eq!(refunds.load(Ordering::SeqCst), 1, "sent once");
}

/// A 2025-11-25 server redeployed behind the client's back: its first
/// session lists `charge` as idempotent, every later one as not; once
/// `restarted` is set it forgets the first session (HTTP 404). Every charge
/// fails with a transient, retryable envelope. Its URL and the flag.
async fn redeployed() -> (String, Arc<std::sync::atomic::AtomicBool>) {
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::IntoResponse;

    let restarted = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sessions = Arc::new(AtomicU32::new(0));
    let mcp = {
        let restarted = Arc::clone(&restarted);
        move |headers: HeaderMap, body: axum::Json<Value>| async move {
            let session = headers
                .get("mcp-session-id")
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
            let Some(id) = body.get("id").cloned() else {
                return StatusCode::ACCEPTED.into_response();
            };
            let answer =
                |result: Value| axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result}));
            let method = body["method"].as_str().unwrap_or_default();
            if method != "initialize"
                && session.as_deref() == Some("s1")
                && restarted.load(Ordering::SeqCst)
            {
                return StatusCode::NOT_FOUND.into_response();
            }
            match method {
                "initialize" => {
                    let n = sessions.fetch_add(1, Ordering::SeqCst) + 1;
                    let result = answer(json!({
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "redeployed", "version": "0"}
                    }));
                    ([("mcp-session-id", format!("s{n}"))], result).into_response()
                }
                "tools/list" => {
                    let idempotent = session.as_deref() == Some("s1");
                    answer(
                        json!({"tools": [{"name": "charge", "inputSchema": {"type": "object"},
                        "annotations": {"readOnlyHint": false, "destructiveHint": true,
                                        "idempotentHint": idempotent}}]}),
                    )
                    .into_response()
                }
                "tools/call" => answer(json!({"isError": true,
                    "content": [{"type": "text", "text": "the card network is busy"}],
                    "structuredContent": {"isError": true, "errorCategory": "transient",
                        "isRetryable": true, "message": "the card network is busy"}}))
                .into_response(),
                _ => axum::Json(json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": "Method not found"}}))
                .into_response(),
            }
        }
    };
    (served_at_mcp(mcp).await, restarted)
}

/// A server redeployed behind the client's back is judged by what it lists
/// now: the call rmcp sent again on the new session is settled as a tool
/// the server did not list (not safe to repeat), and the next call reads
/// the new listing — `charge` is no longer idempotent, so its transient
/// failure is not retryable.
#[tokio::test]
async fn a_redeployed_server_is_judged_by_what_it_lists_now() {
    let (url, restarted) = redeployed().await;
    let client = McpClient::connect(&url).await.unwrap();
    let before = client.call("charge", json!({})).await.unwrap_err();
    assert!(
        before.is_retryable(),
        "idempotent as first listed: {before:?}"
    );

    restarted.store(true, Ordering::SeqCst);
    let across = client.call("charge", json!({})).await.unwrap_err();
    assert!(
        !across.is_retryable(),
        "sent again on a new session: {across:?}"
    );
    let after = client.call("charge", json!({})).await.unwrap_err();
    assert!(
        !after.is_retryable(),
        "not idempotent as listed now: {after:?}"
    );
    assert_eq!(
        after.reason(),
        Some(tool_envelope::reasons::MAY_HAVE_TAKEN_EFFECT)
    );
}

/// A server whose `pay` is listed idempotent until it is reconfigured:
/// what it counted, and whether it was.
#[derive(Default)]
struct Changing {
    lists: AtomicU32,
    pays: AtomicU32,
    reconfigured: std::sync::atomic::AtomicBool,
}

/// Serves [`Changing`] (2025-11-25, no session) by hand: `reconfigure`
/// makes `pay` unsafe to repeat, and says so with
/// `notifications/tools/list_changed` on its reply's event stream when
/// `notify`; listings say they are fresh for `ttl_ms` when given.
async fn changing(notify: bool, ttl_ms: Option<u64>) -> (String, Arc<Changing>) {
    let state = Arc::new(Changing::default());
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post({
            let state = Arc::clone(&state);
            move |body: axum::Json<Value>| async move {
                use axum::response::IntoResponse;
                let id = body.get("id").cloned().unwrap_or(Value::Null);
                let reply = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
                let result = match body["method"].as_str().unwrap_or_default() {
                    "server/discover" => {
                        let error = json!({"code": -32601, "message": "Method not found"});
                        let refused = json!({"jsonrpc": "2.0", "id": id, "error": error});
                        return axum::Json(refused).into_response();
                    }
                    "initialize" => json!({
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {"listChanged": true}},
                        "serverInfo": {"name": "changing", "version": "0"}
                    }),
                    "tools/list" => {
                        state.lists.fetch_add(1, Ordering::SeqCst);
                        let safe = !state.reconfigured.load(Ordering::SeqCst);
                        let mut listed = json!({"tools": [
                            {"name": "pay", "inputSchema": {"type": "object"},
                             "annotations": {"idempotentHint": safe, "destructiveHint": !safe}},
                            {"name": "reconfigure", "inputSchema": {"type": "object"}}
                        ]});
                        if let Some(ttl) = ttl_ms {
                            listed["ttlMs"] = json!(ttl);
                        }
                        listed
                    }
                    "tools/call" if body["params"]["name"] == "reconfigure" => {
                        state.reconfigured.store(true, Ordering::SeqCst);
                        let done = reply(json!({"content": [{"type": "text", "text": "done"}]}));
                        if !notify {
                            return axum::Json(done).into_response();
                        }
                        let changed =
                            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
                        let stream = format!(
                            "event: message\ndata: {changed}\n\nevent: message\ndata: {done}\n\n"
                        );
                        return ([("content-type", "text/event-stream")], stream).into_response();
                    }
                    "tools/call" => {
                        state.pays.fetch_add(1, Ordering::SeqCst);
                        let envelope = json!({"isError": true, "errorCategory": "transient",
                            "isRetryable": true, "message": "The gateway timed out"});
                        json!({"isError": true, "structuredContent": envelope,
                            "content": [{"type": "text", "text": envelope.to_string()}]})
                    }
                    _ => return axum::http::StatusCode::ACCEPTED.into_response(),
                };
                axum::Json(reply(result)).into_response()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, state)
}

/// A server that says its tools changed (`notifications/tools/list_changed`)
/// has them listed again — a second after the listing before at the
/// soonest, so that a server cannot have them listed at every call. Until
/// then a call takes them for unknown: a tool no longer safe to repeat is
/// not retried on what the first listing said of it.
#[tokio::test(start_paused = true)]
async fn tools_the_server_says_changed_are_listed_again() {
    let (url, state) = changing(true, None).await;
    let client = McpClient::connect(url).await.unwrap();
    client.call("reconfigure", json!({})).await.unwrap();
    client.call("reconfigure", json!({})).await.unwrap();
    let outcome = quick().retry(|| client.call("pay", json!({}))).await;
    let escalation = outcome.result.unwrap_err();
    assert_eq!(state.pays.load(Ordering::SeqCst), 1, "a payment repeated");
    assert_eq!(escalation.reason, EscalationReason::NonRetryable);
    assert_eq!(
        state.lists.load(Ordering::SeqCst),
        1,
        "listed within a second"
    );
    // A second on, the change is listed.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let pay = client.tool("pay").await.unwrap().expect("listed");
    assert!(!pay.annotations.idempotent_hint, "{pay:?}");
    assert_eq!(state.lists.load(Ordering::SeqCst), 2);
}

/// A listing is kept for as long as the server says it is fresh
/// (`ttlMs`), then listed again: a tool changed meanwhile is settled as
/// the server now lists it.
#[tokio::test(start_paused = true)]
async fn tools_are_listed_again_once_their_listing_is_stale() {
    let (url, state) = changing(false, Some(60_000)).await;
    let client = McpClient::connect(url).await.unwrap();
    client.call("reconfigure", json!({})).await.unwrap();
    assert_eq!(state.lists.load(Ordering::SeqCst), 1);
    tokio::time::sleep(Duration::from_secs(61)).await;
    let outcome = quick().retry(|| client.call("pay", json!({}))).await;
    assert!(outcome.result.is_err());
    assert_eq!(state.pays.load(Ordering::SeqCst), 1, "a payment repeated");
    assert_eq!(state.lists.load(Ordering::SeqCst), 2, "listed again, once");
}
