//! The README's MCP examples, run as programs and driven by rmcp's own
//! client: `rmcp_native` over stdio, `composed` over Streamable HTTP.
#![cfg(feature = "rmcp")]
#![allow(deprecated)] // MCP logging: deprecated by rmcp, current in 2025-11-25.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, SetLevelRequestParams,
};
use rmcp::service::{NotificationContext, RoleClient};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use common::{call, example_binary};

#[tokio::test]
async fn the_rmcp_native_example_returns_envelopes_its_schema_admits() {
    let command = tokio::process::Command::new(example_binary("rmcp_native"));
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    let schema = Value::Object((**tools[0].output_schema.as_ref().unwrap()).clone());
    let validator = jsonschema::validator_for(&schema).unwrap();

    let failed = call(&client, "lookup_orders", json!({"customer_id": "C-4821"})).await;
    assert_eq!(failed.is_error, Some(true));
    let envelope = failed.structured_content.clone().unwrap();
    assert!(validator.is_valid(&envelope), "{envelope}");
    assert_eq!(envelope["errorCategory"], "transient");
    assert_eq!(envelope["isRetryable"], true, "read-only: safe to repeat");
    assert_eq!(envelope["tool"], "lookup_orders");
    assert_eq!(
        envelope["attempted_query"],
        json!({"customer_id": "C-4821"})
    );
    assert_eq!(envelope["alternatives"], json!(["Retry later"]));

    let empty = call(&client, "lookup_orders", json!({"customer_id": "C-0000"})).await;
    assert_eq!(empty.is_error, Some(false));
    assert_eq!(
        empty.structured_content,
        Some(json!({"isError": false, "empty": true, "matches": 0}))
    );
    assert!(validator.is_valid(empty.structured_content.as_ref().unwrap()));
    client.cancel().await.unwrap();
}

/// A client that keeps the progress and log messages it is sent.
#[derive(Clone, Default)]
struct Recorder {
    progress: Arc<Mutex<Vec<f64>>>,
    logs: Arc<Mutex<Vec<Value>>>,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params.progress);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.logs.lock().unwrap().push(params.data);
    }
}

#[tokio::test]
async fn the_composed_example_serves_both_worlds_over_http() {
    let mut server = tokio::process::Command::new(example_binary("composed"))
        .arg("127.0.0.1:0")
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(server.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("the server prints its address");
        if let Some(url) = line.strip_prefix("listening on ") {
            break url.to_owned();
        }
    };
    let recorder = Recorder::default();
    let client = recorder
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(url))
        .await
        .unwrap();

    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|tool| tool.name.into_owned())
        .collect();
    assert_eq!(names, ["export_orders", "version"]);

    let version = call(&client, "version", json!({})).await;
    assert_eq!(version.is_error, Some(false));

    let exported = call(&client, "export_orders", json!({"customer_id": "C-1"})).await;
    assert_eq!(exported.structured_content, Some(json!({"result": 3})));
    let bad = call(&client, "export_orders", json!({"customer": "C-1"})).await;
    assert_eq!(
        bad.structured_content.unwrap()["errorCategory"],
        "validation"
    );

    // Above the level the client sets, the tool's info message is not sent.
    client
        .peer()
        .set_level(SetLevelRequestParams::new(LoggingLevel::Error))
        .await
        .unwrap();
    call(&client, "export_orders", json!({"customer_id": "C-2"})).await;
    // Progress arrives on the call's own stream, before its result.
    assert_eq!(
        *recorder.progress.lock().unwrap(),
        [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]
    );
    // Log messages travel on the session's GET stream: by the time a further
    // round trip completes on it, the first call's message has arrived.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while recorder.logs.lock().unwrap().is_empty() && tokio::time::Instant::now() < deadline {
        call(&client, "version", json!({})).await;
    }
    assert_eq!(
        *recorder.logs.lock().unwrap(),
        [json!("exported 3 pages for C-1")],
        "the second export logged nothing: the level is error"
    );
    client.cancel().await.unwrap();
}

/// What `examples/agent.rs` prints against the example server, with `flag`;
/// it must succeed.
#[cfg(feature = "client")]
async fn run_agent(flag: Option<&str>) -> String {
    let mut agent = tokio::process::Command::new(example_binary("agent"));
    agent.arg(example_binary("mcp_server")).args(flag);
    let output = agent.output().await.unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[tokio::test]
#[cfg(feature = "client")]
async fn the_agent_example_routes_each_outcome() {
    let printed = run_agent(None).await;
    let line = |want: &str| {
        printed
            .lines()
            .find(|line| line.starts_with(want))
            .unwrap_or_else(|| panic!("no line for {want:?} in:\n{printed}"))
            .to_owned()
    };
    assert!(
        line("orders of a new customer").ends_with("an empty answer is an answer: nothing found")
    );
    assert!(line("orders of C-1001").ends_with("answered"));
    // The server leaves recovery to the agent: a read-only tool's transient
    // fault is retried here, to the cap, or until it recovers.
    assert!(
        line("orders while the DB is down")
            .contains("escalated (retries_exhausted) after 3 attempt(s): transient")
    );
    assert!(line("stock of SKU-1").ends_with("recovered locally after 2 attempts"));
    // The server blocked it before it ran: 0 attempts, on this side too.
    assert!(
        line("a $620 refund").contains("escalated (blocked_by_guard) after 0 attempt(s): business")
    );
    assert!(line("the ENG payroll").contains("permission — Access denied to payroll table"));
    assert!(line("research on the EU AI Act").contains("6 partial results kept"));
    assert!(printed.contains("  done  stock"), "{printed}");
    assert!(
        printed.contains("coordinator: 2 completed, 2 gaps"),
        "{printed}"
    );
    assert!(printed.contains("gap   payroll: Access denied to payroll table (non_retryable), tried {\"dept\":\"ENG\"}"), "{printed}");
    assert!(printed.starts_with("speaking MCP 2026-07-28"), "{printed}");
}

#[tokio::test]
#[cfg(feature = "client")]
async fn the_agent_example_answers_the_refund_approval_through_its_handler() {
    for (flag, outcome) in [
        ("--approve", "process_refund  → answered"),
        (
            "--decline",
            "process_refund  → escalated (human_declined) after 0 attempt(s): business — A person declined the call",
        ),
    ] {
        let printed = run_agent(Some(flag)).await;
        assert!(
            printed.contains("? Refund of $620 exceeds the $500 policy cap"),
            "{printed}"
        );
        assert!(printed.contains(outcome), "{flag}: {printed}");
    }
}
