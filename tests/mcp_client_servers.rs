//! The client against servers nobody here wrote: a Python server on `FastMCP`,
//! one on the official Python SDK's `MCPServer`, one on the TypeScript SDK v2
//! and the reference server `@modelcontextprotocol/server-everything` (on the
//! TypeScript SDK v1), next to this crate's example server; one coordinator
//! across three with one server killed mid-run; and 1,000 calls through nginx
//! with a replica killed halfway.
//!
//! They need Python, Node and nginx, so they are ignored by `cargo test`;
//! `scripts/test-client-servers.sh` and `scripts/test-nginx.sh` install those
//! and run them, passing where things are through the environment:
//!
//! - `TOOL_ENVELOPE_FASTMCP`: a Python with `fastmcp` and `mcp` installed;
//! - `TOOL_ENVELOPE_TS_V2`: `ts_v2_server.mjs`, next to the `node_modules`
//!   that hold the TypeScript SDK v2;
//! - `TOOL_ENVELOPE_EVERYTHING`: server-everything's `dist/index.js`, and
//!   `TOOL_ENVELOPE_NODE`: the `node` to run it with;
//! - `TOOL_ENVELOPE_NGINX_URL` and `TOOL_ENVELOPE_REPLICA_PID`: the load
//!   balancer, and the replica to kill.
#![cfg(all(feature = "rmcp", feature = "client"))]

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tool_envelope::coordinator::Coordinator;
use tool_envelope::mcp::client::{McpClient, Revision};
use tool_envelope::retry::RetryPolicy;
use tool_envelope::{ErrorCategory, reasons};

use common::server_binary;

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run scripts/test-client-servers.sh or scripts/test-nginx.sh")
    })
}

fn fastmcp_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/fastmcp_server.py")
}

/// A command that writes the pid of the process it execs into `pid_file`.
fn with_pid_file(pid_file: &Path, program: &str, args: &[String]) -> tokio::process::Command {
    let mut line = format!("echo $$ > '{}'; exec '{program}'", pid_file.display());
    for arg in args {
        line.push_str(&format!(" '{arg}'"));
    }
    let mut command = tokio::process::Command::new("sh");
    command.arg("-c").arg(line);
    command
}

async fn fastmcp(timeout: Duration) -> McpClient {
    let python = env("TOOL_ENVELOPE_FASTMCP");
    let script = fastmcp_script();
    McpClient::spawn(move || {
        let mut command = tokio::process::Command::new(&python);
        // Its tracebacks of the failures the tests provoke, on purpose.
        command.arg(&script).stderr(std::process::Stdio::null());
        command
    })
    .timeout(timeout)
    .await
    .expect("the FastMCP server starts")
}

async fn everything() -> McpClient {
    everything_with(McpClient::spawn(everything_command())).await
}

fn everything_command() -> impl Fn() -> tokio::process::Command + Send + Sync + 'static {
    let node = env("TOOL_ENVELOPE_NODE");
    let server = env("TOOL_ENVELOPE_EVERYTHING");
    move || {
        let mut command = tokio::process::Command::new(&node);
        command.arg(&server).arg("stdio");
        command
    }
}

async fn everything_with(connect: tool_envelope::mcp::client::Connect) -> McpClient {
    connect.await.expect("server-everything starts")
}

/// An elicitation handler that answers `name` to a form asking for one, and
/// records each question.
fn answer_name(
    asked: &std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) -> impl Fn(rmcp::model::ElicitRequestParams) -> std::future::Ready<rmcp::model::ElicitResult>
+ Send
+ Sync
+ 'static {
    let asked = std::sync::Arc::clone(asked);
    move |request| {
        let request = serde_json::to_value(&request).unwrap();
        asked
            .lock()
            .unwrap()
            .push(request["message"].as_str().unwrap_or_default().to_owned());
        // FastMCP wraps a scalar answer in `value`; its 2026-07-28 form and
        // server-everything's have `name`.
        let content = json!({"value": "Ada", "name": "Ada"});
        std::future::ready(
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(content),
        )
    }
}

#[tokio::test]
#[ignore = "needs FastMCP: scripts/test-client-servers.sh"]
async fn a_fastmcp_tool_that_asks_is_answered_on_2026_07_28_and_on_2025_11_25() {
    for (revision, expected) in [
        (Revision::Negotiate, "2026-07-28"),
        (Revision::V2025_11_25, "2025-11-25"),
    ] {
        let python = env("TOOL_ENVELOPE_FASTMCP");
        let script = fastmcp_script();
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let client = McpClient::spawn(move || {
            let mut command = tokio::process::Command::new(&python);
            command.arg(&script).stderr(std::process::Stdio::null());
            command
        })
        .revision(revision)
        .on_elicitation(answer_name(&asked))
        .await
        .expect("the FastMCP server starts");
        assert_eq!(client.protocol_version().await.unwrap(), expected);
        let greeting = client.call("ask_name", json!({})).await.expect("answered");
        assert_eq!(greeting, json!("Hello, Ada!"), "{revision:?}");
        assert_eq!(
            *asked.lock().unwrap(),
            ["What is your name?"],
            "{revision:?}"
        );

        // Without a handler, the call ends with an envelope that names what was asked.
        let python = env("TOOL_ENVELOPE_FASTMCP");
        let script = fastmcp_script();
        let mute = McpClient::spawn(move || {
            let mut command = tokio::process::Command::new(&python);
            command.arg(&script).stderr(std::process::Stdio::null());
            command
        })
        .revision(revision)
        .await
        .unwrap();
        let unanswered = mute.call("ask_name", json!({})).await.unwrap_err();
        assert!(!unanswered.is_retryable(), "{revision:?}: {unanswered:?}");
        assert!(
            unanswered.message().to_lowercase().contains("elicitation"),
            "{revision:?}: {}",
            unanswered.message()
        );
    }
}

#[tokio::test]
#[ignore = "needs server-everything: scripts/test-client-servers.sh"]
async fn server_everything_asks_on_2025_11_25_and_the_handler_answers() {
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let client =
        everything_with(McpClient::spawn(everything_command()).on_elicitation(answer_name(&asked)))
            .await;
    // It speaks 2025-11-25 only: the client falls back to `initialize`.
    assert_eq!(client.protocol_version().await.unwrap(), "2025-11-25");
    let answered = client
        .call("trigger-elicitation-request", json!({}))
        .await
        .expect("the elicitation is answered");
    assert!(answered.to_string().contains("Ada"), "{answered}");
    assert_eq!(
        *asked.lock().unwrap(),
        ["Please provide inputs for the following fields:"]
    );
}

/// The fields a failure's violations name.
fn fields(envelope: &tool_envelope::ErrorEnvelope) -> Vec<&str> {
    envelope
        .violations()
        .iter()
        .map(|violation| violation.field.as_str())
        .collect()
}

fn quick() -> RetryPolicy {
    RetryPolicy::default().constant(Duration::from_millis(10))
}

#[tokio::test]
#[ignore = "needs FastMCP: scripts/test-client-servers.sh"]
async fn fastmcp_failures_are_classified() {
    // Long enough for Python to start on a loaded machine (the handshake
    // gets the same timeout), short enough that the slow calls below run
    // past it.
    let client = fastmcp(Duration::from_secs(10)).await;

    // A ToolError: plain text, so `other`, not retryable, its text the message.
    let refused = client
        .call("tool_error", json!({"reason": "no"}))
        .await
        .unwrap_err();
    assert_eq!(refused.category(), ErrorCategory::Other);
    assert!(!refused.is_retryable());
    assert_eq!(refused.message(), "tool refused: no");
    assert_eq!(refused.tool(), Some("tool_error"));
    assert_eq!(refused.attempted_query(), Some(&json!({"reason": "no"})));
    // An unexpected exception, and the server's own timeout: plain text too.
    let crashed = client
        .call("value_error", json!({"x": 7}))
        .await
        .unwrap_err();
    assert_eq!(crashed.category(), ErrorCategory::Other);
    assert!(crashed.message().contains("internal detail x=7"));
    let timed_out = client.call("slow_timeout", json!({})).await.unwrap_err();
    assert_eq!(timed_out.category(), ErrorCategory::Other);
    assert!(
        timed_out.message().contains("timed out"),
        "{}",
        timed_out.message()
    );
    // Our timeout: transient, and retryable since the tool is read-only.
    let late = client
        .call("slow", json!({"seconds": 30}))
        .await
        .unwrap_err();
    assert_eq!(late.category(), ErrorCategory::Transient);
    assert_eq!(late.reason(), Some(reasons::TIMEOUT));
    assert!(late.is_retryable());
    // The same on a tool that writes: not retryable.
    let late_write = client
        .call("slow_write", json!({"seconds": 30}))
        .await
        .unwrap_err();
    assert_eq!(late_write.category(), ErrorCategory::Transient);
    assert!(!late_write.is_retryable());
    assert_eq!(late_write.reason(), Some(reasons::MAY_HAVE_TAKEN_EFFECT));

    // An empty result is a result; a wrapped value reads as itself.
    let empty: Vec<String> = client.call_as("empty_list", json!({})).await.unwrap();
    assert!(empty.is_empty());
    let sum: i64 = client
        .call_as("add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(sum, 5);
    // FastMCP answers bad arguments and an unknown tool with isError texts,
    // not -32602: read as the validation failures they are.
    let unknown = client.call("nope", json!({})).await.unwrap_err();
    assert_eq!(unknown.category(), ErrorCategory::Validation);
    assert_eq!(unknown.reason(), Some(reasons::INVALID_ARGUMENTS));
    let invalid = client.call("add", json!({"a": "x"})).await.unwrap_err();
    assert_eq!(invalid.category(), ErrorCategory::Validation);
    assert_eq!(fields(&invalid), ["a", "b"], "{invalid:?}");
    assert!(!invalid.is_retryable());

    // Progress reaches the callback.
    let steps = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&steps);
    let done = client
        .call_with_progress("slow", json!({"seconds": 0.3}), move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
        })
        .await
        .unwrap();
    assert_eq!(done, json!({"result": "done"}));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while steps.load(Ordering::SeqCst) < 3 && tokio::time::Instant::now() < deadline {
        tokio::task::yield_now().await;
    }
    assert_eq!(steps.load(Ordering::SeqCst), 3);
}

#[tokio::test]
#[ignore = "needs server-everything: scripts/test-client-servers.sh"]
async fn server_everything_results_are_classified() {
    let client = everything().await;
    let tools = client.tools().await.unwrap();
    let sum = tools.iter().find(|tool| tool.name == "get-sum").unwrap();
    assert!(sum.is_safe_to_repeat());

    let text = client
        .call("get-sum", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(text, json!("The sum of 2 and 3 is 5."));
    let structured = client
        .call("get-structured-content", json!({"location": "Chicago"}))
        .await
        .unwrap();
    assert!(structured.is_object(), "{structured}");
    // Its argument errors are isError texts (`MCP error -32602: …`): read
    // as validation failures, a violation for each field named.
    let invalid = client.call("get-sum", json!({"a": "x"})).await.unwrap_err();
    assert_eq!(invalid.category(), ErrorCategory::Validation);
    assert_eq!(invalid.reason(), Some(reasons::INVALID_ARGUMENTS));
    assert_eq!(fields(&invalid), ["a", "b"], "{invalid:?}");
    assert_eq!(invalid.attempted_query(), Some(&json!({"a": "x"})));
    let unknown = client.call("nope", json!({})).await.unwrap_err();
    assert_eq!(unknown.category(), ErrorCategory::Validation);
    // Progress, one notification per step.
    let steps = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&steps);
    client
        .call_with_progress(
            "trigger-long-running-operation",
            json!({"duration": 0.3, "steps": 3}),
            move |progress| seen.lock().unwrap().push(progress.progress),
        )
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while steps.lock().unwrap().len() < 3 && tokio::time::Instant::now() < deadline {
        tokio::task::yield_now().await;
    }
    assert_eq!(steps.lock().unwrap().len(), 3);
}

#[tokio::test]
#[ignore = "needs the Python SDK: scripts/test-client-servers.sh"]
async fn python_sdk_failures_are_classified_and_no_secret_comes_back() {
    let python = env("TOOL_ENVELOPE_FASTMCP");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/mcp_python_server.py");
    let client = McpClient::spawn(move || {
        let mut command = tokio::process::Command::new(&python);
        command.arg(&script).stderr(std::process::Stdio::null());
        command
    })
    .await
    .expect("the Python SDK server starts");
    let login = client.tool("login").await.unwrap().unwrap();
    assert_eq!(
        login.input_schema["properties"]["password"]["writeOnly"],
        true
    );

    // pydantic's text quotes the rejected input: the violations do not.
    let invalid = client
        .call("login", json!({"password": 31_337_421}))
        .await
        .unwrap_err();
    assert_eq!(invalid.category(), ErrorCategory::Validation);
    assert_eq!(fields(&invalid), ["username", "password"], "{invalid:?}");
    // The tool's own text quotes the password it was sent.
    let rejected = client
        .call(
            "login",
            json!({"username": "ops", "password": "hunter2-SECRET"}),
        )
        .await
        .unwrap_err();
    assert_eq!(rejected.category(), ErrorCategory::Other);
    assert_eq!(
        rejected.message(),
        "Error executing tool login: the directory rejected ops with password [redacted]"
    );
    for failed in [&invalid, &rejected] {
        let shown = format!("{} {failed:?}", serde_json::to_string(failed).unwrap());
        assert!(!shown.contains("31337421"), "{shown}");
        assert!(!shown.contains("hunter2-SECRET"), "{shown}");
    }
    assert_eq!(
        rejected.attempted_query(),
        Some(&json!({"username": "ops", "password": "[redacted]"}))
    );
    let unknown = client.call("nope", json!({})).await.unwrap_err();
    assert_eq!(unknown.category(), ErrorCategory::Validation);
    let sum = client.call("add", json!({"a": 2, "b": 3})).await.unwrap();
    assert_eq!(sum, json!({"result": 5}));
}

#[tokio::test]
#[ignore = "needs the TypeScript SDK v2: scripts/test-client-servers.sh"]
async fn typescript_v2_failures_are_classified() {
    let node = env("TOOL_ENVELOPE_NODE");
    let script = env("TOOL_ENVELOPE_TS_V2");
    let server = |mode: &'static str| {
        let (node, script) = (node.clone(), script.clone());
        move || {
            let mut command = tokio::process::Command::new(&node);
            command.arg(&script).arg(mode);
            command
        }
    };
    // Serving 2026-07-28 only, it refuses a client pinned to 2025-11-25:
    // not something repeating fixes.
    let refused = McpClient::spawn(server("reject"))
        .revision(Revision::V2025_11_25)
        .await
        .unwrap_err();
    assert_eq!(refused.category(), ErrorCategory::Other);
    assert!(!refused.is_retryable());
    assert_eq!(
        refused.reason(),
        Some(reasons::UNSUPPORTED_PROTOCOL_VERSION)
    );
    assert!(
        refused.message().contains("2026-07-28"),
        "{}",
        refused.message()
    );
    // Negotiating, the client speaks 2026-07-28 with it.
    let modern = McpClient::spawn(server("reject")).await.unwrap();
    assert_eq!(modern.protocol_version().await.unwrap(), "2026-07-28");
    let sum = modern.call("add", json!({"a": 2, "b": 3})).await.unwrap();
    assert_eq!(sum, json!(5));

    let client = McpClient::spawn(server("serve")).await.unwrap();
    let sum = client.call("add", json!({"a": 2, "b": 3})).await.unwrap();
    assert_eq!(sum, json!(5));
    let invalid = client
        .call("add", json!({"a": "x", "opts": {"tags": [1]}}))
        .await
        .unwrap_err();
    assert_eq!(invalid.category(), ErrorCategory::Validation);
    assert_eq!(fields(&invalid), ["a", "b", "opts.tags[0]"], "{invalid:?}");
    let unknown = client.call("nope", json!({})).await.unwrap_err();
    assert_eq!(unknown.category(), ErrorCategory::Validation);
}

#[tokio::test]
#[ignore = "needs FastMCP and server-everything: scripts/test-client-servers.sh"]
async fn one_coordinator_across_three_servers_one_killed_mid_run() {
    let binary = server_binary().clone();
    let ours = McpClient::spawn(move || tokio::process::Command::new(&binary))
        .await
        .unwrap();
    let reference = everything().await;
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("fastmcp.pid");
    let python = env("TOOL_ENVELOPE_FASTMCP");
    let script = fastmcp_script().display().to_string();
    let pids = pid_file.clone();
    let doomed =
        McpClient::spawn(move || with_pid_file(&pids, &python, std::slice::from_ref(&script)))
            .await
            .unwrap();

    // The FastMCP server dies while its call runs: the call writes, so it
    // is not repeated, and its branch is a gap with its context.
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_owned();
    let killed = Arc::new(Mutex::new(false));
    let kill_once = Arc::clone(&killed);
    let report = Coordinator::new()
        .branch(
            "orders",
            quick().retry(|| ours.call("lookup_orders", json!({"customer_id": "C-1001"}))),
        )
        .branch(
            "sum",
            quick().retry(|| reference.call("get-sum", json!({"a": 20, "b": 22}))),
        )
        .branch(
            "ledger",
            quick().retry(|| {
                let pid = pid.clone();
                let kill_once = Arc::clone(&kill_once);
                doomed.call_with_progress("slow_write", json!({"seconds": 30}), move |_| {
                    let mut killed = kill_once.lock().unwrap();
                    if !*killed {
                        *killed = true;
                        let _ = std::process::Command::new("kill")
                            .args(["-9", &pid])
                            .status();
                    }
                })
            }),
        )
        .run()
        .await;
    assert!(*killed.lock().unwrap(), "the server was killed mid-call");
    let branches: Vec<&str> = report.completed.iter().map(|c| c.branch.as_str()).collect();
    assert_eq!(branches, ["orders", "sum"]);
    assert_eq!(
        report.completed[1].value,
        json!("The sum of 20 and 22 is 42.")
    );
    assert_eq!(report.gaps.len(), 1);
    let gap = &report.gaps[0];
    assert_eq!(gap.branch, "ledger");
    assert_eq!(gap.envelope().category(), ErrorCategory::Transient);
    assert_eq!(
        gap.envelope().reason(),
        Some(reasons::MAY_HAVE_TAKEN_EFFECT)
    );
    assert_eq!(gap.envelope().tool(), Some("slow_write"));
    assert_eq!(
        gap.envelope().attempted_query(),
        Some(&json!({"seconds": 30}))
    );
    assert_eq!(gap.escalation.attempts, 1);
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
#[ignore = "needs nginx and two replicas: scripts/test-nginx.sh"]
async fn a_thousand_calls_through_nginx_with_a_replica_killed_halfway() {
    const CALLS: u64 = 1_000;
    let client = McpClient::connect(env("TOOL_ENVELOPE_NGINX_URL"))
        .timeout(Duration::from_secs(30))
        .await
        .unwrap();
    let policy = RetryPolicy::default()
        .max_attempts(3)
        .constant(Duration::from_millis(5));
    let tally = Tally::default();
    // Two safe look-ups, then an unsafe refund, and again.
    let call = |index: u64| {
        let (tool, arguments) = if index % 3 != 2 {
            ("lookup_orders", json!({"customer_id": "C-1001"}))
        } else {
            (
                "process_refund",
                json!({"order": format!("O-{index}"), "amount": 40}),
            )
        };
        let (client, policy, tally) = (&client, &policy, &tally);
        async move {
            let outcome = policy.retry(|| client.call(tool, arguments.clone())).await;
            tally.count(tool, outcome.result.as_ref().err(), outcome.stats.attempts);
        }
    };
    // The first half ten at a time, both replicas up.
    futures_util::future::join_all((0..10).map(|worker| async move {
        for index in (worker..CALLS / 2).step_by(10) {
            call(index).await;
        }
    }))
    .await;
    let replica = env("TOOL_ENVELOPE_REPLICA_PID");
    let killed = std::process::Command::new("kill")
        .args(["-9", &replica])
        .status();
    assert!(killed.unwrap().success(), "the replica was killed");
    // The second half one at a time: nginx sends every other request to the
    // dead replica, and its 502 reaches the client.
    for index in CALLS / 2..CALLS {
        call(index).await;
    }
    let tally = tally.0.into_inner().unwrap();
    println!("{tally:?}, of {CALLS}");
    assert_eq!(
        tally.succeeded + tally.escalated,
        CALLS,
        "every call is accounted for"
    );
    assert!(
        tally.recovered > 0,
        "safe calls that met the dead replica recovered locally"
    );
    assert!(tally.escalated > 0, "unsafe calls that met it escalated");
    assert_eq!(
        tally.escalated, tally.refunds_escalated,
        "no safe call escalated"
    );
    // Nothing was sent that the loops do not account for (an attempt that
    // found the connection closed is not sent at all), so nothing was
    // repeated inside the client; and every refund loop, the successful ones
    // included, made exactly one attempt.
    assert!(
        client.sent() <= tally.attempts,
        "{} requests sent for {} attempts",
        client.sent(),
        tally.attempts
    );
    assert_eq!(
        tally.refund_attempts,
        (0..CALLS).filter(|i| i % 3 == 2).count() as u64,
        "a refund is sent once"
    );
}

/// What became of the calls.
#[derive(Debug, Default)]
struct Counts {
    succeeded: u64,
    recovered: u64,
    escalated: u64,
    refunds_escalated: u64,
    /// Requests sent, every attempt of every call.
    attempts: u64,
    /// Requests sent for refunds.
    refund_attempts: u64,
}

#[derive(Default)]
struct Tally(Mutex<Counts>);

impl Tally {
    fn count(&self, tool: &str, escalation: Option<&tool_envelope::Escalation>, attempts: u32) {
        let mut counts = self.0.lock().unwrap();
        counts.attempts += u64::from(attempts);
        if tool == "process_refund" {
            counts.refund_attempts += u64::from(attempts);
        }
        match escalation {
            None => {
                counts.succeeded += 1;
                counts.recovered += u64::from(attempts > 1);
            }
            Some(escalation) => {
                counts.escalated += 1;
                if tool == "process_refund" {
                    counts.refunds_escalated += 1;
                    assert_eq!(escalation.attempts, 1, "a refund is never repeated");
                    assert!(!escalation.envelope.is_retryable());
                }
            }
        }
    }
}

#[tokio::test]
#[ignore = "needs FastMCP: scripts/test-client-servers.sh"]
async fn fastmcp_behind_its_bearer_auth_serves_a_token_and_refuses_none() {
    let python = env("TOOL_ENVELOPE_FASTMCP");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/fastmcp_bearer_server.py");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = tokio::process::Command::new(&python)
        .arg(&script)
        .arg(port.to_string())
        .stderr(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("FastMCP starts");
    // Up once it accepts connections.
    let mut up = false;
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(up, "FastMCP did not listen on {port}");
    let url = format!("http://127.0.0.1:{port}/mcp");

    let refused = McpClient::connect(&url).await.unwrap_err();
    assert_eq!(refused.category(), ErrorCategory::Permission, "{refused:?}");
    assert_eq!(refused.reason(), Some("HTTP_401"));
    assert!(!refused.is_retryable());

    let wrong = McpClient::connect(&url).bearer("forged").await.unwrap_err();
    assert_eq!(wrong.category(), ErrorCategory::Permission, "{wrong:?}");

    let client = McpClient::connect(&url)
        .bearer("fastmcp-token")
        .await
        .expect("FastMCP serves the token");
    let greeting = client.call("greet", json!({"name": "Ada"})).await.unwrap();
    assert_eq!(greeting, json!({"result": "hello Ada"}));
    server.kill().await.unwrap();
}

#[tokio::test]
#[ignore = "needs two replicas on PostgreSQL behind nginx: scripts/test-replicas.sh"]
async fn twenty_tasks_through_nginx_each_followed_to_its_result() {
    let client = McpClient::connect(env("TOOL_ENVELOPE_REPLICAS_URL"))
        .bearer("refunds-token")
        .tasks()
        .timeout(Duration::from_secs(60))
        .await
        .unwrap();
    for n in 0..20 {
        let quarter = format!("Q-{n}");
        let report = client
            .call("slow_report", json!({"quarter": quarter, "seconds": 0}))
            .await
            .unwrap_or_else(|envelope| panic!("task {n}: {envelope}"));
        assert_eq!(report, json!({"result": format!("Report for {quarter}")}));
    }
}

#[tokio::test]
#[ignore = "needs two replicas on PostgreSQL behind nginx, one killed: scripts/test-replicas.sh"]
async fn tasks_whose_replica_dies_are_taken_over_and_the_refund_is_not_run_again() {
    // Every request of this client reaches one replica (nginx hashes on
    // the header) until it dies; then the other.
    let client = McpClient::connect(env("TOOL_ENVELOPE_PINNED_URL"))
        .bearer("refunds-token")
        .header("x-pin", "kill-test")
        .tasks()
        .timeout(Duration::from_secs(180))
        .await
        .unwrap();
    let refund = client.call("slow_refund", json!({"order": "O-KILL", "seconds": 8}));
    let report = client.call("slow_report", json!({"quarter": "Q-KILL", "seconds": 8}));
    let (refund, report) = tokio::join!(refund, report);
    let refund = refund.expect_err("the refund's replica died mid-run");
    assert_eq!(
        refund.reason(),
        Some(reasons::MAY_HAVE_TAKEN_EFFECT),
        "{refund}"
    );
    assert!(!refund.is_retryable(), "{refund}");
    assert_eq!(
        report.unwrap(),
        json!({"result": "Report for Q-KILL"}),
        "the report ran again"
    );
}
