//! Whatever a caller starts on a protected server is that caller's: another
//! token cannot open its `requestState`, join its session, or read, answer
//! or cancel its task — each is answered as if it did not exist. Running
//! tasks are bounded per server and per caller, a text that echoes a
//! client's input is bounded, and the approval audit names the caller the
//! server authenticated. rmcp's own client and raw HTTP, over loopback.
#![cfg(feature = "rmcp")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::ClientHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    ErrorCode, GetTaskParams, Implementation, ProtocolVersion, UpdateTaskParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::session::store::{
    SessionState, SessionStore, SessionStoreError,
};
use serde_json::{Value, json};
use tool_envelope::guard::{Blocked, Caller, ToolCall};
use tool_envelope::mcp::{APPROVAL_META_KEY, BearerAuth, HttpOptions, TaskSupport, ToolSet};
use tool_envelope::store::{MemoryStore, Store};
use tool_envelope::{ErrorEnvelope, tool};

/// Over $500 a person approves.
fn cap(call: &ToolCall) -> Result<(), Blocked> {
    let amount: u64 = call.require("amount")?;
    if amount > 500 {
        return Err(
            Blocked::new(format!("Refund of ${amount} exceeds the $500 cap")).unless_approved(),
        );
    }
    Ok(())
}

/// Refund an order.
#[tool(destructive, guard = cap)]
fn refund(order: String, amount: u64) -> Result<String, ErrorEnvelope> {
    Ok(format!("Refunded ${amount} on {order}"))
}

/// Refund an order, as a task.
#[tool(destructive, guard = cap)]
fn task_refund(order: String, amount: u64) -> Result<String, ErrorEnvelope> {
    Ok(format!("Refunded ${amount} on {order}"))
}

/// Runs until it is cancelled.
#[tool(read_only)]
async fn long_job() -> Result<String, ErrorEnvelope> {
    std::future::pending::<()>().await;
    Ok("never".into())
}

async fn validate(token: String) -> Option<Caller> {
    match token.as_str() {
        "alice-token" => Some(Caller::new("alice", ["refunds:write"])),
        "bob-token" => Some(Caller::new("bob", ["refunds:write"])),
        // Another client of Alice's, granted less.
        "alice-reader-token" => Some(Caller::new("alice", ["refunds:read"])),
        // And one granted more.
        "alice-admin-token" => Some(Caller::new("alice", ["refunds:read", "refunds:write"])),
        _ => None,
    }
}

fn tools() -> ToolSet {
    ToolSet::new()
        .tool::<refund>()
        .tool::<task_refund>()
        .tool::<long_job>()
        .tasks(|tool| match tool.name.as_str() {
            "refund" => TaskSupport::Never,
            _ => TaskSupport::Required,
        })
        .max_tasks(3, 2)
        .request_state_key([5u8; 32], Duration::from_secs(60))
}

/// The protected tool set on a loopback port; its URL.
async fn serve(stateless: bool) -> String {
    serve_with(stateless, tools()).await
}

/// The protected `tools` on a loopback port; its URL.
async fn serve_with(stateless: bool, tools: ToolSet) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let auth = BearerAuth::new(url.clone(), validate);
    let options = match stateless {
        true => HttpOptions::new().stateless(),
        false => HttpOptions::new(),
    };
    let options = options.require_bearer(auth);
    tokio::spawn(async move { options.serve(listener, tools).await });
    url
}

/// A client that declares elicitation and the tasks extension.
#[derive(Clone)]
struct Agent;

impl ClientHandler for Agent {
    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder()
            .enable_elicitation()
            .enable_tasks()
            .build();
        ClientConfig::new(capabilities, Implementation::new("agent", "1"))
    }
}

/// `token`'s client of `url`, on 2026-07-28.
async fn client(url: &str, token: &str) -> RunningService<RoleClient, Agent> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    config.auth_header = Some(token.to_owned());
    let transport = StreamableHttpClientTransport::from_config(config);
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    Agent
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .expect("the client connects")
}

fn call(tool: &str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(tool.to_owned())
        .with_arguments(arguments.as_object().unwrap().clone())
}

fn protocol_error(error: &rmcp::ServiceError) -> (ErrorCode, String) {
    match error {
        rmcp::ServiceError::McpError(data) => (data.code, data.message.to_string()),
        other => panic!("expected a protocol error, got {other}"),
    }
}

/// Alice's `requestState` opens for her token alone: not for Bob's, nor
/// for another token of hers that grants less.
#[tokio::test]
async fn another_callers_state_does_not_open_and_the_audit_names_the_caller() {
    let url = serve(true).await;
    let alice = client(&url, "alice-token").await;
    let bob = client(&url, "bob-token").await;
    let params = call("refund", json!({"order": "O-ALICE", "amount": 640}));
    let first = alice.call_tool_once(params.clone()).await.unwrap();
    let CallToolResponse::InputRequired(asked) = first else {
        panic!("expected the approval to be asked, got {first:?}");
    };
    let key = asked.input_requests.unwrap().keys().next().unwrap().clone();
    let yes = json!({"action": "accept", "content": {"approver": "Somebody Else"}});
    let round = params
        .with_input_responses([(key, yes)].into())
        .with_request_state(asked.request_state.unwrap());

    // Bob sends Alice's state: as if it were any state this server refuses.
    let refused = bob.call_tool_once(round.clone()).await.unwrap_err();
    assert_eq!(
        protocol_error(&refused),
        (
            ErrorCode::INVALID_PARAMS,
            "requestState was refused; call the tool again without it".to_owned()
        )
    );

    // Nor does another client of Alice's, whose token grants less: the
    // yes her first client's user gave does not carry to it.
    let reader = client(&url, "alice-reader-token").await;
    let refused = reader.call_tool_once(round.clone()).await.unwrap_err();
    assert_eq!(protocol_error(&refused).0, ErrorCode::INVALID_PARAMS);

    // Alice's own round runs it, and the audit says who the server knows her as.
    let done = alice.call_tool_once(round).await.unwrap();
    let CallToolResponse::Complete(result) = done else {
        panic!("expected the result, got {done:?}");
    };
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let record = &result.meta.unwrap().0[APPROVAL_META_KEY][0];
    assert_eq!(record["caller"], "alice", "{record}");
    assert_eq!(
        record["approver"], "Somebody Else",
        "what the client typed, kept apart"
    );
}

/// Two replicas sharing a store: a task one of them keeps for alice is
/// unknown to bob through the other — not read, answered or cancelled —
/// and alice's own there.
#[tokio::test]
async fn another_callers_kept_task_is_unknown_to_them_on_every_replica() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let one = serve_with(true, tools().store(Arc::clone(&store))).await;
    let two = serve_with(true, tools().store(Arc::clone(&store))).await;
    let alice = client(&one, "alice-token").await;
    let created = alice.call_tool_once(call("long_job", json!({}))).await;
    let CallToolResponse::Task(created) = created.unwrap() else {
        panic!("expected a task");
    };
    let id = created.task.task_id;

    let unknown = (
        ErrorCode::INVALID_PARAMS,
        "Failed to retrieve task: Task not found".to_owned(),
    );
    let bob = client(&two, "bob-token").await;
    let read = bob.get_task(GetTaskParams::new(id.clone())).await;
    assert_eq!(protocol_error(&read.unwrap_err()), unknown);
    let answer = UpdateTaskParams::new(id.clone(), [("x".to_owned(), json!({}))].into());
    let answered = bob.update_task(answer).await;
    assert_eq!(protocol_error(&answered.unwrap_err()), unknown);
    let cancelled = bob.cancel_task(CancelTaskParams::new(id.clone())).await;
    assert_eq!(protocol_error(&cancelled.unwrap_err()), unknown);

    let hers = client(&two, "alice-token").await;
    let read = hers.get_task(GetTaskParams::new(id.clone())).await.unwrap();
    assert_eq!(serde_json::to_value(&read).unwrap()["status"], "working");
    hers.cancel_task(CancelTaskParams::new(id)).await.unwrap();
}

#[tokio::test]
async fn a_task_is_unknown_to_a_token_of_its_caller_that_grants_less() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let one = serve_with(true, tools().store(Arc::clone(&store))).await;
    let two = serve_with(true, tools().store(Arc::clone(&store))).await;
    let alice = client(&one, "alice-token").await;
    let created = alice.call_tool_once(call("long_job", json!({}))).await;
    let CallToolResponse::Task(created) = created.unwrap() else {
        panic!("expected a task");
    };
    let id = created.task.task_id;
    let unknown = (
        ErrorCode::INVALID_PARAMS,
        "Failed to retrieve task: Task not found".to_owned(),
    );
    // The same person, with a token without `refunds:write`: on the
    // replica that runs the task, and on one that reads it in the store.
    for url in [&one, &two] {
        let reader = client(url, "alice-reader-token").await;
        let read = reader.get_task(GetTaskParams::new(id.clone())).await;
        assert_eq!(protocol_error(&read.unwrap_err()), unknown, "{url}");
        let answer = UpdateTaskParams::new(id.clone(), [("x".to_owned(), json!({}))].into());
        let answered = reader.update_task(answer).await;
        assert_eq!(protocol_error(&answered.unwrap_err()), unknown, "{url}");
        let cancelled = reader.cancel_task(CancelTaskParams::new(id.clone())).await;
        assert_eq!(protocol_error(&cancelled.unwrap_err()), unknown, "{url}");
    }
    // The token that made it reaches it, on either replica.
    for url in [&one, &two] {
        let hers = client(url, "alice-token").await;
        let read = hers.get_task(GetTaskParams::new(id.clone())).await.unwrap();
        assert_eq!(serde_json::to_value(&read).unwrap()["status"], "working");
    }
    alice.cancel_task(CancelTaskParams::new(id)).await.unwrap();
}

#[tokio::test]
async fn another_callers_task_is_unknown_to_them() {
    let url = serve(true).await;
    let alice = client(&url, "alice-token").await;
    let bob = client(&url, "bob-token").await;
    let created = alice
        .call_tool_once(call(
            "task_refund",
            json!({"order": "O-TASK", "amount": 640}),
        ))
        .await
        .unwrap();
    let CallToolResponse::Task(created) = created else {
        panic!("expected a task, got {created:?}");
    };
    let id = created.task.task_id;
    // Wait for the task to ask for its approval.
    let key = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let task = alice
                .get_task(GetTaskParams::new(id.clone()))
                .await
                .unwrap();
            let task = serde_json::to_value(&task).unwrap();
            if let Some(requests) = task["inputRequests"].as_object() {
                return requests.keys().next().unwrap().clone();
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the task asks");

    let unknown = (
        ErrorCode::INVALID_PARAMS,
        "Failed to retrieve task: Task not found".to_owned(),
    );
    let refused = bob
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .unwrap_err();
    assert_eq!(protocol_error(&refused), unknown);
    let yes = json!({"action": "accept", "content": {"approver": "bob"}});
    let refused = bob
        .update_task(UpdateTaskParams::new(
            id.clone(),
            [(key.clone(), yes.clone())].into(),
        ))
        .await
        .unwrap_err();
    assert_eq!(protocol_error(&refused), unknown);
    let refused = bob
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .unwrap_err();
    assert_eq!(protocol_error(&refused), unknown);
    // An id nobody has gets the same answer.
    let refused = bob
        .get_task(GetTaskParams::new("no-such-task"))
        .await
        .unwrap_err();
    assert_eq!(protocol_error(&refused), unknown);

    // Bob's answer reached nothing: the task still waits for Alice's.
    let task = alice
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&task).unwrap()["status"],
        "input_required"
    );
    alice
        .update_task(UpdateTaskParams::new(id.clone(), [(key, yes)].into()))
        .await
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let task = serde_json::to_value(
                alice
                    .get_task(GetTaskParams::new(id.clone()))
                    .await
                    .unwrap(),
            )
            .unwrap();
            if task["status"] == "completed" {
                return task["result"].clone();
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the task completes");
    assert_eq!(
        result["structuredContent"],
        json!({"result": "Refunded $640 on O-TASK"})
    );
}

/// `client` starts `long_job`.
async fn start(client: &RunningService<RoleClient, Agent>) -> CallToolResponse {
    client
        .call_tool_once(call("long_job", json!({})))
        .await
        .unwrap()
}

#[tokio::test]
async fn running_tasks_are_bounded_per_caller_and_per_server() {
    let url = serve(true).await;
    let alice = client(&url, "alice-token").await;
    let bob = client(&url, "bob-token").await;
    let mut alices = Vec::new();
    for _ in 0..2 {
        match start(&alice).await {
            CallToolResponse::Task(created) => alices.push(created.task.task_id),
            other => panic!("expected a task, got {other:?}"),
        }
    }
    let refused_with = |answer: CallToolResponse| match answer {
        CallToolResponse::Complete(result) => {
            assert_eq!(result.is_error, Some(true));
            result.structured_content.unwrap()
        }
        other => panic!("expected a refusal, got {other:?}"),
    };
    // Alice runs as many as a caller may.
    let envelope = refused_with(start(&alice).await);
    assert_eq!(envelope["reason"], "TOO_MANY_TASKS", "{envelope}");
    assert_eq!(envelope["errorCategory"], "transient");
    assert_eq!(
        envelope["isRetryable"], true,
        "nothing ran: safe to send again"
    );
    assert!(
        envelope["message"]
            .as_str()
            .unwrap()
            .contains("this caller runs 2")
    );
    // Bob may start one; then the server runs as many as it may.
    assert!(matches!(start(&bob).await, CallToolResponse::Task(_)));
    let envelope = refused_with(start(&bob).await);
    assert!(
        envelope["message"]
            .as_str()
            .unwrap()
            .contains("this server runs 3"),
        "{envelope}"
    );

    // Once one of Alice's ends, she may start another.
    alice
        .cancel_task(CancelTaskParams::new(alices[0].clone()))
        .await
        .unwrap();
    let started = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let CallToolResponse::Task(created) = start(&alice).await {
                return created;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(started.is_ok(), "a slot freed when the task ended");
}

#[tokio::test]
async fn a_request_that_names_a_huge_task_id_is_answered_briefly() {
    let url = serve(true).await;
    let alice = client(&url, "alice-token").await;
    let huge = "x".repeat(100 * 1024);
    let refused = alice.get_task(GetTaskParams::new(huge)).await.unwrap_err();
    let (code, message) = protocol_error(&refused);
    assert_eq!(code, ErrorCode::INVALID_PARAMS);
    assert!(message.len() <= 1024, "{} bytes", message.len());
}

/// One caller's open sessions are bounded: past the bound an `initialize`
/// is answered 429 and opens nothing, another caller is not held back, and
/// a session ended frees its place.
#[tokio::test]
async fn a_callers_open_sessions_are_bounded_and_an_ended_one_frees_its_place() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let options = HttpOptions::new()
        .require_bearer(BearerAuth::new(url.clone(), validate))
        .sessions_per_caller(3);
    tokio::spawn(async move { options.serve(listener, tools()).await });
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "agent", "version": "1"}}});
    let mut sessions = Vec::new();
    for _ in 0..3 {
        let (status, session, _) = post(&url, "alice-token", None, initialize.clone()).await;
        assert_eq!(status, 200);
        sessions.push(session.expect("a session"));
    }
    let (status, session, body) = post(&url, "alice-token", None, initialize.clone()).await;
    assert_eq!((status, session), (429, None), "{body}");
    assert!(body.contains("as many sessions as it may"), "{body}");
    let (status, session, _) = post(&url, "bob-token", None, initialize.clone()).await;
    assert_eq!(status, 200);
    assert!(session.is_some());

    // Alice's sessions serve on; one ended, she may open another.
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let (status, _, body) = post(&url, "alice-token", Some(&sessions[0]), list).await;
    assert_eq!(status, 200, "{body}");
    let ended = reqwest::Client::new()
        .delete(&url)
        .bearer_auth("alice-token")
        .header("mcp-session-id", &sessions[1])
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert!(ended.status().is_success(), "{}", ended.status());
    let (status, session, body) = post(&url, "alice-token", None, initialize.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert!(session.is_some());
    let (status, _, _) = post(&url, "alice-token", None, initialize).await;
    assert_eq!(status, 429);
}

/// What the servers of [`Gated`] sessions share: the first `initialize`
/// waits at `go` (a permit given to `entered` as it does), and how many
/// servers are alive, each a session (`dropped` told as one ends).
struct Gate {
    first: AtomicBool,
    entered: tokio::sync::Semaphore,
    go: tokio::sync::Semaphore,
    alive: AtomicUsize,
    dropped: tokio::sync::Notify,
}

/// The server of one session, its first `initialize` held at the gate.
struct Gated(Arc<Gate>);

impl Gated {
    fn new(gate: &Arc<Gate>) -> Self {
        gate.alive.fetch_add(1, Ordering::SeqCst);
        Gated(Arc::clone(gate))
    }
}

impl Drop for Gated {
    fn drop(&mut self) {
        self.0.alive.fetch_sub(1, Ordering::SeqCst);
        self.0.dropped.notify_waiters();
    }
}

impl rmcp::ServerHandler for Gated {
    async fn initialize(
        &self,
        request: rmcp::model::InitializeRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::InitializeResult, rmcp::ErrorData> {
        if self.0.first.swap(false, Ordering::SeqCst) {
            self.0.entered.add_permits(1);
            let _ = self.0.go.acquire().await;
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }
}

/// A client that closes its connection while its session is being made
/// (`initialize` sent, then gone) leaves no session past its bound: rmcp
/// ends a session whose `initialize` answer finds nobody waiting. (One
/// answered in the instant before the connection closed would be left
/// uncounted until it idles out: a window this test does not reach.)
#[tokio::test]
async fn a_session_whose_client_left_while_it_was_made_is_ended() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let gate = Arc::new(Gate {
        first: AtomicBool::new(true),
        entered: tokio::sync::Semaphore::new(0),
        go: tokio::sync::Semaphore::new(0),
        alive: AtomicUsize::new(0),
        dropped: tokio::sync::Notify::new(),
    });
    let servers = {
        let gate = Arc::clone(&gate);
        move || Gated::new(&gate)
    };
    let options = HttpOptions::new()
        .require_bearer(BearerAuth::new(url.clone(), validate))
        .sessions_per_caller(1);
    tokio::spawn(async move { options.serve(listener, servers).await });
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "agent", "version": "1"}}});
    // Sent by hand, on a connection of its own, closed once the server
    // is making the session.
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut left = tokio::net::TcpStream::connect(address).await.unwrap();
    let body = initialize.to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer alice-token\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    tokio::io::AsyncWriteExt::write_all(&mut left, request.as_bytes())
        .await
        .unwrap();
    let _ = gate.entered.acquire().await.unwrap();
    drop(left);
    // Her next session is made and counted first; then the one she left.
    let (status, session, body) = post(&url, "alice-token", None, initialize).await;
    assert_eq!(status, 200, "{body}");
    assert!(session.is_some());
    gate.go.add_permits(1);
    let one_left = async {
        loop {
            let dropped = gate.dropped.notified();
            if gate.alive.load(Ordering::SeqCst) == 1 {
                return;
            }
            dropped.await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), one_left)
        .await
        .expect("the session past her bound is closed");
}

/// An rmcp session store that holds the first session it is given to keep
/// until the test lets it go: a slow database.
struct HeldSessions {
    first: AtomicBool,
    kept: std::sync::Mutex<Option<String>>,
    entered: tokio::sync::Semaphore,
    go: tokio::sync::Semaphore,
}

#[async_trait::async_trait]
impl SessionStore for HeldSessions {
    async fn load(&self, _: &str) -> Result<Option<SessionState>, SessionStoreError> {
        Ok(None)
    }

    async fn store(&self, id: &str, _: &SessionState) -> Result<(), SessionStoreError> {
        if !self.first.swap(true, Ordering::SeqCst) {
            *self.kept.lock().unwrap() = Some(id.to_owned());
            self.entered.add_permits(1);
            let _ = self.go.acquire().await;
        }
        Ok(())
    }

    async fn delete(&self, _: &str) -> Result<(), SessionStoreError> {
        Ok(())
    }
}

/// With an rmcp session store, a session is made, and kept in the store,
/// before its `initialize` is answered. A client that leaves meanwhile (an
/// HTTP/2 stream reset, a server that drops the request's future when its
/// connection closes — the service mounted in one's own server) still has
/// it counted against its bound: it could otherwise open sessions without
/// end, none of them counted.
#[tokio::test]
async fn a_session_kept_in_a_session_store_as_its_client_left_is_counted() {
    // Its `initialize` labelled as another method, with no version header
    // or 2025-11-25's: rmcp makes the session all the same.
    for version in [None, Some("2025-11-25")] {
        kept_in_a_session_store_as_its_client_left(version).await;
    }
}

async fn kept_in_a_session_store_as_its_client_left(version: Option<&str>) {
    let store = Arc::new(HeldSessions {
        first: AtomicBool::new(false),
        kept: std::sync::Mutex::new(None),
        entered: tokio::sync::Semaphore::new(0),
        go: tokio::sync::Semaphore::new(0),
    });
    let mut config = StreamableHttpServerConfig::default();
    config.session_store = Some(store.clone());
    let service = HttpOptions::from(config)
        .require_bearer(BearerAuth::new("http://127.0.0.1/mcp", validate))
        .sessions_per_caller(1)
        .service(tools());
    let send = |session: Option<&str>, body: &Value| {
        let mut request = axum::http::Request::post("http://127.0.0.1/mcp")
            .header("host", "127.0.0.1")
            .header("authorization", "Bearer alice-token")
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json");
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        let request = request
            .body(axum::body::Body::from(body.to_string()))
            .unwrap();
        tower_service::Service::call(&mut service.clone(), request)
    };
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "agent", "version": "1"}}});
    // Her request's future is dropped while the store keeps her session.
    // Labelled as another method, which rmcp does not check before
    // 2026-07-28.
    let mislabelled = {
        let mut request = axum::http::Request::post("http://127.0.0.1/mcp")
            .header("host", "127.0.0.1")
            .header("authorization", "Bearer alice-token")
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-method", "tools/call");
        if let Some(version) = version {
            request = request.header("mcp-protocol-version", version);
        }
        let body = axum::body::Body::from(initialize.to_string());
        tower_service::Service::call(&mut service.clone(), request.body(body).unwrap())
    };
    let opening = tokio::spawn(mislabelled);
    let _ = store.entered.acquire().await.unwrap();
    opening.abort();
    assert!(opening.await.unwrap_err().is_cancelled());
    store.go.add_permits(1);
    // The session she left is hers once counted: until then the server
    // answers it as unknown.
    let id = store.kept.lock().unwrap().clone().unwrap();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let mut status = 404;
    for _ in 0..100 {
        status = send(Some(&id), &initialized)
            .await
            .unwrap()
            .status()
            .as_u16();
        if status != 404 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(
        status, 202,
        "the session she left was never counted as hers"
    );
    let refused = send(None, &initialize).await.unwrap();
    assert_eq!(
        refused.status(),
        429,
        "a second session past her bound of one"
    );
}

static WAITS_STARTED: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(0);
static WAITS_CANCELLED: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(0);

/// Waits until its client leaves.
#[tool(read_only)]
async fn waits(context: tool_envelope::mcp::ToolContext) -> Result<String, ErrorEnvelope> {
    WAITS_STARTED.add_permits(1);
    context.cancelled().await;
    WAITS_CANCELLED.add_permits(1);
    Ok("cancelled".into())
}

/// A call of `waits` sent to a protected service of `options` with
/// `headers` and `body`, its future dropped once the tool runs, as a
/// server drops it when its client leaves: the tool is told.
async fn told_when_its_client_leaves(options: HttpOptions, headers: &[(&str, &str)], body: Value) {
    let service = options
        .require_bearer(BearerAuth::new("http://127.0.0.1/mcp", validate))
        .service(ToolSet::new().tool::<waits>());
    let mut request = axum::http::Request::post("http://127.0.0.1/mcp")
        .header("host", "127.0.0.1")
        .header("authorization", "Bearer alice-token")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    let sent = tokio::spawn(tower_service::Service::call(&mut service.clone(), request));
    WAITS_STARTED.acquire().await.unwrap().forget();
    sent.abort();
    let _ = sent.await;
    let told = tokio::time::timeout(Duration::from_secs(20), WAITS_CANCELLED.acquire()).await;
    told.expect("the tool was not told its client left")
        .unwrap()
        .forget();
}

/// A request that opens no session stays tied to its connection: its
/// client leaving cancels the call — stateless, on 2026-07-28 with
/// sessions, and a call with its revision in `_meta` and no session
/// (whatever its headers) — as it does without a token check. (Only an `initialize` is
/// run apart from its connection, for its session to be counted.)
#[tokio::test]
async fn a_call_whose_client_left_is_cancelled_with_a_token_check() {
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "waits", "arguments": {}}});
    let stateless = HttpOptions::new().stateless();
    told_when_its_client_leaves(stateless, &[("mcp-protocol-version", "2025-11-25")], call).await;
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "waits", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "agent", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let sessions =
        HttpOptions::from(StreamableHttpServerConfig::default().with_json_response(true));
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "waits"),
    ];
    told_when_its_client_leaves(sessions, &headers, call).await;
    // A request that carries its revision in `_meta` is served without a
    // session whatever revision it names, and before 2026-07-28 rmcp reads
    // no `Mcp-Method`: only its body says it is no `initialize`.
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "waits", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2025-11-25",
            "io.modelcontextprotocol/clientInfo": {"name": "agent", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let sessions =
        HttpOptions::from(StreamableHttpServerConfig::default().with_json_response(true));
    told_when_its_client_leaves(sessions, &[("mcp-protocol-version", "2025-11-25")], call).await;
}

/// A POST of `body` to `url` with `token` and, if given, `session`; the
/// status, the session header of the reply, and its body.
async fn post(
    url: &str,
    token: &str,
    session: Option<&str>,
    body: Value,
) -> (u16, Option<String>, String) {
    let mut request = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(&body);
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let opened =
        (response.headers().get("mcp-session-id")).map(|id| id.to_str().unwrap().to_owned());
    let text = tokio::time::timeout(Duration::from_secs(15), response.text())
        .await
        .map(Result::unwrap_or_default)
        .unwrap_or_default();
    (status, opened, text)
}

#[tokio::test]
async fn another_callers_session_is_unknown_to_them() {
    let url = serve(false).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "alice", "version": "1"}}});
    let (status, session, _) = post(&url, "alice-token", None, initialize).await;
    assert_eq!(status, 200);
    let session = session.expect("a session");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = post(&url, "alice-token", Some(&session), initialized).await;
    assert_eq!(status, 202);

    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let (status, _, body) = post(&url, "bob-token", Some(&session), list.clone()).await;
    assert_eq!(
        (status, body.as_str()),
        (404, "Not Found: Session not found")
    );
    // A session that does not exist gets the very same answer.
    let (status, _, body) = post(&url, "bob-token", Some("no-such-session"), list.clone()).await;
    assert_eq!(
        (status, body.as_str()),
        (404, "Not Found: Session not found")
    );

    // Another client of Alice's, its token granting less, does not take
    // the session either: not its requests, not its streams to resume,
    // not its end.
    let (status, _, body) = post(&url, "alice-reader-token", Some(&session), list.clone()).await;
    assert_eq!(
        (status, body.as_str()),
        (404, "Not Found: Session not found")
    );
    let http = reqwest::Client::new();
    let resume = http
        .get(&url)
        .bearer_auth("alice-reader-token")
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .header("last-event-id", "0/0")
        .send()
        .await
        .unwrap();
    assert_eq!(resume.status().as_u16(), 404);
    let end = http
        .delete(&url)
        .bearer_auth("alice-reader-token")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(end.status().as_u16(), 404);

    // One granted as much and more takes it.
    let (status, _, body) = post(&url, "alice-admin-token", Some(&session), list.clone()).await;
    assert_eq!(status, 200);
    assert!(body.contains("long_job"), "{body}");
    let (status, _, body) = post(&url, "alice-token", Some(&session), list).await;
    assert_eq!(status, 200);
    assert!(body.contains("long_job"), "{body}");
}
