//! A tool asks its client — a form for the user, the client's model, its
//! roots — through `ToolContext`, and gets its answer on both revisions:
//! a request to the client on 2025-11-25, rounds of `InputRequiredResult`
//! on 2026-07-28. The client is rmcp's own, in the same process, answering
//! through its `ClientHandler` as an application would.
#![cfg(feature = "rmcp")]
#![allow(deprecated)] // Sampling and roots: deprecated by rmcp (SEP-2577), defined by both revisions.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientInfo,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, ErrorCode, Implementation, ListRootsResult, LoggingLevel,
    LoggingMessageNotificationParam, ProtocolVersion, Role, Root, SamplingMessage,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, RequestContext, RoleClient,
    RunningService,
};
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_envelope::Secret;
use tool_envelope::guard::{Blocked, ToolCall};
use tool_envelope::mcp::APPROVAL_META_KEY;
use tool_envelope::mcp::{Elicitation, Question, ToolContext, ToolSet};
use tool_envelope::retry::RetryPolicy;
use tool_envelope::{ErrorEnvelope, tool};

/// A name the user gives.
#[derive(Deserialize, JsonSchema)]
struct Name {
    /// The user's name.
    name: String,
}

/// How often `welcome`'s body ran.
static WELCOME_RUNS: AtomicU32 = AtomicU32::new(0);

/// `greet`, counting its runs; called by one test only.
#[tool(read_only)]
async fn welcome(context: ToolContext) -> Result<String, ErrorEnvelope> {
    WELCOME_RUNS.fetch_add(1, Ordering::SeqCst);
    greet(context).await
}

/// Greets the user by the name they give; a decline is no error.
#[tool(read_only)]
async fn greet(context: ToolContext) -> Result<String, ErrorEnvelope> {
    Ok(
        match context
            .elicit::<Name>("user_name", "What is your name?")
            .await?
        {
            Elicitation::Accepted(Name { name }) => format!("Hello, {name}!"),
            Elicitation::Declined => "declined".to_owned(),
            Elicitation::Cancelled => "cancelled".to_owned(),
        },
    )
}

/// Asks the model and the roots in one go, then the user: two rounds on
/// 2026-07-28.
#[tool(read_only)]
async fn survey(context: ToolContext) -> Result<Value, ErrorEnvelope> {
    let prompt = CreateMessageRequestParams::new(vec![SamplingMessage::user_text("Capital?")], 10);
    let first = context
        .ask_all(vec![
            Question::sample("capital", prompt),
            Question::roots("roots"),
        ])
        .await?;
    let name = context
        .elicit::<Name>("user_name", "What is your name?")
        .await?;
    Ok(json!({
        "model": first[0]["content"]["text"],
        "roots": first[1]["roots"].as_array().map(Vec::len),
        "name": name.accepted().map(|name| name.name),
    }))
}

/// Logs at `info` and `debug`; says which were sent.
#[tool(read_only)]
async fn chatty(context: ToolContext) -> Result<Vec<bool>, ErrorEnvelope> {
    Ok(vec![
        context.info("started").await,
        context.debug("detail").await,
    ])
}

/// Asks, then fails with a transient fault every time.
#[tool(read_only)]
async fn ask_then_fail(context: ToolContext) -> Result<String, ErrorEnvelope> {
    let name = context
        .elicit::<Name>("user_name", "What is your name?")
        .await?;
    let _ = name;
    Err(ErrorEnvelope::transient("the upstream is down").with_reason("UPSTREAM_DOWN"))
}

/// How often `refund`'s body ran, by amount: each test refunds its own.
static REFUNDS: std::sync::Mutex<Vec<u64>> = std::sync::Mutex::new(Vec::new());

fn refunds_of(amount: u64) -> usize {
    REFUNDS
        .lock()
        .unwrap()
        .iter()
        .filter(|&&a| a == amount)
        .count()
}

/// Refunds over $500 need a person's approval.
fn refund_cap(call: &ToolCall) -> Result<(), Blocked> {
    let amount: u64 = call.require("amount")?;
    if amount > 500 {
        return Err(
            Blocked::new(format!("Refund of ${amount} exceeds the $500 policy cap"))
                .with_reason("REFUND_OVER_CAP")
                .with_alternative("Offer store credit up to $500")
                .unless_approved(),
        );
    }
    Ok(())
}

/// Refund an order.
#[tool(destructive, guard = refund_cap)]
fn refund(order: String, amount: u64, card: Secret<String>) -> Result<String, ErrorEnvelope> {
    REFUNDS.lock().unwrap().push(amount);
    let _ = card;
    Ok(format!("Refunded ${amount} on {order}"))
}

/// Refund an order by a card the tool redacts by name, not a `Secret`:
/// the schema marks it `writeOnly`.
#[tool(destructive, guard = refund_cap, redact(card))]
fn refund_by_card(order: String, amount: u64, card: String) -> Result<String, ErrorEnvelope> {
    REFUNDS.lock().unwrap().push(amount);
    let _ = card;
    Ok(format!("Refunded ${amount} on {order}"))
}

/// Asks the client's model again and again, whatever it answers.
#[tool(read_only)]
async fn chatterbox(context: ToolContext) -> Result<String, ErrorEnvelope> {
    for n in 0..500 {
        let prompt = CreateMessageRequestParams::new(vec![SamplingMessage::user_text("More?")], 5);
        let _ = context.sample(&format!("more-{n}"), prompt).await;
    }
    Ok("done".into())
}

fn tools() -> ToolSet {
    ToolSet::new()
        .tool::<chatterbox>()
        .tool::<refund>()
        .tool::<refund_by_card>()
        .tool::<ask_then_fail>()
        .retry(
            RetryPolicy::default()
                .max_attempts(3)
                .constant(Duration::ZERO),
        )
        .tool::<greet>()
        .tool::<welcome>()
        .tool::<survey>()
        .tool::<chatty>()
        .tool::<purge>()
        .tool::<draw>()
        .tool::<purge_rows>()
        .request_state_key([7u8; 32], Duration::from_secs(60))
}

/// How many rows `purge_rows` would purge: its question says so.
static ROWS: AtomicU32 = AtomicU32::new(3);

/// Purges the stale rows once the user confirms their number.
#[tool(destructive)]
async fn purge_rows(context: ToolContext) -> Result<u32, ErrorEnvelope> {
    let rows = ROWS.load(Ordering::SeqCst);
    let asked = format!("Purge {rows} rows? Type your name");
    match context.elicit::<Name>("confirm", asked).await? {
        Elicitation::Accepted(_) => Ok(rows),
        Elicitation::Declined | Elicitation::Cancelled => Ok(0),
    }
}

/// Draws the next ticket once the user gives a name: read-only, but not
/// to be repeated (`idempotent = false`, as the retry decision reads it).
#[tool(read_only, idempotent = false)]
async fn draw(context: ToolContext) -> Result<u32, ErrorEnvelope> {
    match context.elicit::<Name>("confirm", "Your name?").await? {
        Elicitation::Accepted(_) => Ok(PURGES.fetch_add(0, Ordering::SeqCst)),
        Elicitation::Declined | Elicitation::Cancelled => Ok(0),
    }
}

/// How often `purge` purged.
static PURGES: AtomicU32 = AtomicU32::new(0);

/// Purges the archive once the user confirms: not safe to repeat.
#[tool(destructive)]
async fn purge(context: ToolContext) -> Result<u32, ErrorEnvelope> {
    match context
        .elicit::<Name>("confirm", "Type your name to purge the archive")
        .await?
    {
        Elicitation::Accepted(_) => Ok(PURGES.fetch_add(1, Ordering::SeqCst) + 1),
        Elicitation::Declined | Elicitation::Cancelled => Ok(0),
    }
}

/// A client that answers: "Ada" to a form (or declines, when `decline`),
/// "Paris" from its model, and one root.
#[derive(Clone, Default)]
struct Answers {
    decline: bool,
    /// Never answers a form, nor from its model.
    silent: bool,
    /// Told when the server says it no longer waits for a request.
    withdrawn: std::sync::Arc<tokio::sync::Notify>,
    capabilities: Option<ClientCapabilities>,
    logs: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl ClientHandler for Answers {
    fn get_info(&self) -> ClientInfo {
        let capabilities = self.capabilities.clone().unwrap_or_else(|| {
            ClientCapabilities::builder()
                .enable_elicitation()
                .enable_sampling()
                .enable_roots()
                .build()
        });
        ClientInfo::new(capabilities, Implementation::new("answers", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let request = serde_json::to_value(&request).unwrap();
        let message = request["message"].as_str().unwrap_or_default().to_owned();
        self.asked.lock().unwrap().push(message);
        if self.silent {
            std::future::pending::<()>().await;
        }
        Ok(match self.decline {
            true => ElicitResult::new(ElicitationAction::Decline),
            false => ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({"name": "Ada", "approver": "Grace"})),
        })
    }

    async fn create_message(
        &self,
        _: CreateMessageRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        if self.silent {
            std::future::pending::<()>().await;
        }
        Ok(CreateMessageResult::new(
            SamplingMessage::new(Role::Assistant, "Paris"),
            "test-model".to_owned(),
        ))
    }

    async fn list_roots(
        &self,
        _: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(vec![Root::new("file:///work")]))
    }

    async fn on_cancelled(
        &self,
        _: rmcp::model::CancelledNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.withdrawn.notify_one();
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.logs.lock().unwrap().push(params.data.to_string());
    }
}

/// The two revisions, as a client opens them.
#[derive(Clone, Copy, Debug)]
enum Revision {
    /// 2025-11-25: `initialize`, then requests from the server.
    Sessions,
    /// 2026-07-28: `server/discover`, then rounds.
    Rounds,
}

async fn connect(revision: Revision, client: Answers) -> RunningService<RoleClient, Answers> {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = tools().serve(server_io).await.expect("the server starts");
        let _ = running.waiting().await;
    });
    match revision {
        Revision::Sessions => client.serve(client_io).await,
        Revision::Rounds => {
            let lifecycle = ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            };
            client.serve_with_lifecycle(client_io, lifecycle).await
        }
    }
    .expect("the client connects")
}

async fn call_text(client: &RunningService<RoleClient, Answers>, name: &str) -> Value {
    let result = client
        .call_tool(CallToolRequestParams::new(name.to_owned()))
        .await
        .expect("the call answers");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    // A value that is not an object is sent as `{"result": value}`; an
    // object (a `serde_json::Value` that is one) as it is.
    let structured = result.structured_content.expect("structured content");
    match structured.get("result") {
        Some(value) if structured.as_object().is_some_and(|o| o.len() == 1) => value.clone(),
        _ => structured,
    }
}

#[tokio::test]
async fn a_tool_asks_the_user_on_both_revisions() {
    for revision in [Revision::Sessions, Revision::Rounds] {
        let client = connect(revision, Answers::default()).await;
        let runs = WELCOME_RUNS.load(Ordering::SeqCst);
        let greeting = call_text(&client, "welcome").await;
        assert_eq!(greeting, json!("Hello, Ada!"), "{revision:?}");
        // On 2026-07-28 the body runs once per round: once to ask, once with the answer.
        let expected = match revision {
            Revision::Sessions => 1,
            Revision::Rounds => 2,
        };
        assert_eq!(
            WELCOME_RUNS.load(Ordering::SeqCst) - runs,
            expected,
            "{revision:?}"
        );

        let declining = connect(
            revision,
            Answers {
                decline: true,
                ..Answers::default()
            },
        )
        .await;
        assert_eq!(
            call_text(&declining, "greet").await,
            json!("declined"),
            "{revision:?}"
        );
    }
}

#[tokio::test]
async fn sampling_roots_and_a_second_round_answer_on_both_revisions() {
    for revision in [Revision::Sessions, Revision::Rounds] {
        let client = connect(revision, Answers::default()).await;
        let answers = call_text(&client, "survey").await;
        assert_eq!(
            answers,
            json!({"model": "Paris", "roots": 1, "name": "Ada"}),
            "{revision:?}"
        );
    }
}

#[tokio::test]
async fn on_2026_07_28_the_call_answers_with_its_question_and_a_sealed_state() {
    let client = connect(Revision::Rounds, Answers::default()).await;
    let first = client
        .call_tool_once(CallToolRequestParams::new("greet"))
        .await
        .expect("the first round answers");
    let CallToolResponse::InputRequired(asked) = first else {
        panic!("expected an InputRequiredResult, got {first:?}");
    };
    let requests = asked.input_requests.expect("the question");
    let question = serde_json::to_value(&requests["user_name"]).unwrap();
    assert_eq!(question["method"], "elicitation/create");
    assert_eq!(question["params"]["message"], "What is your name?");
    assert_eq!(
        question["params"]["requestedSchema"]["properties"]["name"]["type"],
        "string"
    );
    let state = asked.request_state.expect("a sealed state");

    // The answer and the state, sent back: the call completes.
    let answer = json!({"action": "accept", "content": {"name": "Grace"}});
    let second = client
        .call_tool_once(
            CallToolRequestParams::new("greet")
                .with_input_responses([("user_name".to_owned(), answer.clone())].into())
                .with_request_state(state.clone()),
        )
        .await
        .expect("the second round answers");
    let CallToolResponse::Complete(done) = second else {
        panic!("expected a complete result, got {second:?}");
    };
    assert_eq!(
        done.structured_content,
        Some(json!({"result": "Hello, Grace!"}))
    );

    // A state that was changed is refused with the revision's error.
    let mut tampered = state.clone();
    tampered.push('x');
    let refused = client
        .call_tool_once(
            CallToolRequestParams::new("greet")
                .with_input_responses([("user_name".to_owned(), answer.clone())].into())
                .with_request_state(tampered),
        )
        .await
        .expect_err("a tampered state is refused");
    assert_eq!(
        error_code(&refused),
        Some(ErrorCode::INVALID_PARAMS),
        "{refused}"
    );

    // A state sealed for one call does not open on another (other arguments).
    let mut other = CallToolRequestParams::new("greet")
        .with_input_responses([("user_name".to_owned(), answer.clone())].into())
        .with_request_state(state);
    other.arguments = Some(serde_json::Map::from_iter([("x".to_owned(), json!(1))]));
    let refused = client
        .call_tool_once(other)
        .await
        .expect_err("bound to its call");
    assert_eq!(
        error_code(&refused),
        Some(ErrorCode::INVALID_PARAMS),
        "{refused}"
    );

    // An answer that is not an elicitation result is refused, not decoded.
    let first = client
        .call_tool_once(CallToolRequestParams::new("greet"))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(asked) = first else {
        panic!("expected an InputRequiredResult");
    };
    let refused = client
        .call_tool_once(
            CallToolRequestParams::new("greet")
                .with_input_responses([("user_name".to_owned(), json!(12345))].into())
                .with_request_state(asked.request_state.unwrap()),
        )
        .await
        .expect_err("a number is no answer");
    assert_eq!(
        error_code(&refused),
        Some(ErrorCode::INVALID_PARAMS),
        "{refused}"
    );
}

/// A yes is to the question asked: the key asked again in other words
/// (3,000 rows where it said 3, the rows having grown between the rounds)
/// once took the answer given to the first — now it is asked afresh, and
/// the answer to the question as it reads now runs the tool.
#[tokio::test]
async fn a_yes_to_one_question_does_not_answer_another_under_its_key() {
    let client = connect(Revision::Rounds, Answers::default()).await;
    let state = first_round(&client, "purge_rows").await;
    ROWS.store(3000, Ordering::SeqCst);
    let answer = json!({"action": "accept", "content": {"name": "Ada"}});
    let round = CallToolRequestParams::new("purge_rows")
        .with_input_responses([("confirm".to_owned(), answer.clone())].into())
        .with_request_state(state);
    let reply = client.call_tool_once(round).await.unwrap();
    let CallToolResponse::InputRequired(asked) = reply else {
        panic!("the question changed: it is asked again, got {reply:?}");
    };
    let again = asked.input_requests.as_ref().unwrap();
    assert!(
        serde_json::to_string(&again["confirm"])
            .unwrap()
            .contains("3000 rows")
    );
    let round = CallToolRequestParams::new("purge_rows")
        .with_input_responses([("confirm".to_owned(), answer)].into())
        .with_request_state(asked.request_state.unwrap());
    let done = client.call_tool_once(round).await.unwrap();
    let CallToolResponse::Complete(done) = done else {
        panic!("answered as asked, it runs: {done:?}");
    };
    assert_eq!(done.structured_content, Some(json!({"result": 3000})));
}

/// The sealed state of `name`'s first round, which asks.
async fn first_round(client: &RunningService<RoleClient, Answers>, name: &str) -> String {
    let first = client
        .call_tool_once(CallToolRequestParams::new(name.to_owned()))
        .await
        .expect("the first round answers");
    let CallToolResponse::InputRequired(asked) = first else {
        panic!("expected a question, got {first:?}");
    };
    asked.request_state.expect("a sealed state")
}

/// The answers a round brought run a tool that is not safe to repeat
/// once: the same round sent again — a client's retry, a proxy's, or
/// someone holding the state — runs nothing. A read-only tool's round may
/// be sent again.
#[tokio::test]
async fn a_round_of_a_tool_not_safe_to_repeat_runs_it_once() {
    let client = connect(Revision::Rounds, Answers::default()).await;
    let round_two = |name: &str, key: &str, state: String| {
        let answer = json!({"action": "accept", "content": {"name": "Ada"}});
        CallToolRequestParams::new(name.to_owned())
            .with_input_responses([(key.to_owned(), answer)].into())
            .with_request_state(state)
    };
    let state = first_round(&client, "purge").await;
    let done = client
        .call_tool_once(round_two("purge", "confirm", state.clone()))
        .await
        .expect("the confirmed round runs");
    assert!(matches!(done, CallToolResponse::Complete(_)), "{done:?}");
    assert_eq!(PURGES.load(Ordering::SeqCst), 1);
    let again = client
        .call_tool_once(round_two("purge", "confirm", state))
        .await
        .expect_err("the same round, sent again, runs nothing");
    assert_eq!(
        error_code(&again),
        Some(ErrorCode::INVALID_PARAMS),
        "{again}"
    );
    assert_eq!(PURGES.load(Ordering::SeqCst), 1, "purged once");

    // Read-only but said not to be repeated: once, as the retry decision has it.
    let state = first_round(&client, "draw").await;
    client
        .call_tool_once(round_two("draw", "confirm", state.clone()))
        .await
        .expect("its first round runs");
    let again = client
        .call_tool_once(round_two("draw", "confirm", state))
        .await
        .expect_err("not again");
    assert_eq!(
        error_code(&again),
        Some(ErrorCode::INVALID_PARAMS),
        "{again}"
    );

    // A read-only tool's round is safe to send again.
    let state = first_round(&client, "greet").await;
    for _ in 0..2 {
        let done = client
            .call_tool_once(round_two("greet", "user_name", state.clone()))
            .await
            .expect("a read-only round may be sent again");
        assert!(matches!(done, CallToolResponse::Complete(_)), "{done:?}");
    }
}

fn error_code(error: &rmcp::ServiceError) -> Option<ErrorCode> {
    match error {
        rmcp::ServiceError::McpError(data) => Some(data.code),
        _ => None,
    }
}

/// A client that never answers a form, or from its model, holds the call
/// no longer than the tool set's ask timeout (10 minutes by default, on
/// the paused clock): the question is not answered, the call ends saying
/// so, and the form is withdrawn from the client.
#[tokio::test(start_paused = true)]
async fn a_question_nobody_answers_ends_the_call_after_the_ask_timeout() {
    let silent = Answers {
        silent: true,
        ..Answers::default()
    };
    let client = connect(Revision::Sessions, silent.clone()).await;
    let asked = tokio::time::Instant::now();
    let call = client.call_tool(CallToolRequestParams::new("greet"));
    let result = tokio::time::timeout(Duration::from_secs(3600), call)
        .await
        .expect("the call ends before the hour is out")
        .expect("the call answers");
    assert_eq!(asked.elapsed().as_secs(), 600);
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let envelope = result.structured_content.unwrap();
    assert_eq!(envelope["reason"], "CLIENT_REQUEST_FAILED", "{envelope}");
    let said = envelope["message"].as_str().unwrap();
    assert!(said.contains("no answer within 600 s"), "{said}");
    assert_eq!(*silent.asked.lock().unwrap(), ["What is your name?"]);
    // Handled apart from the reply: waited for, bounded by the paused clock.
    let withdrawn = tokio::time::timeout(Duration::from_secs(60), silent.withdrawn.notified());
    assert!(withdrawn.await.is_ok(), "the form was not withdrawn");

    // The client's model, asked and never answering, the same.
    let call = client.call_tool(CallToolRequestParams::new("survey"));
    let result = tokio::time::timeout(Duration::from_secs(3600), call)
        .await
        .expect("the call ends before the hour is out")
        .expect("the call answers");
    let envelope = result.structured_content.unwrap();
    let said = envelope["message"].as_str().unwrap();
    assert!(
        said.contains("sampling request: no answer within 600 s"),
        "{said}"
    );
    let withdrawn = tokio::time::timeout(Duration::from_secs(60), silent.withdrawn.notified());
    assert!(
        withdrawn.await.is_ok(),
        "the model's request was not withdrawn"
    );
}

#[tokio::test]
async fn what_the_client_did_not_declare_is_never_asked() {
    let nothing = || Answers {
        capabilities: Some(ClientCapabilities::default()),
        ..Answers::default()
    };
    // 2025-11-25: an envelope that says what could not be asked.
    let client = connect(Revision::Sessions, nothing()).await;
    let result = client
        .call_tool(CallToolRequestParams::new("greet"))
        .await
        .expect("a tool error");
    assert_eq!(result.is_error, Some(true));
    let envelope = result.structured_content.expect("an envelope");
    assert_eq!(envelope["errorCategory"], "business");
    assert_eq!(envelope["isRetryable"], false);
    assert_eq!(envelope["reason"], "CLIENT_CANNOT_ANSWER");
    assert!(
        envelope["message"]
            .as_str()
            .unwrap()
            .contains("elicitation"),
        "{envelope}"
    );

    // 2026-07-28: the revision's error, naming the capability.
    let client = connect(Revision::Rounds, nothing()).await;
    let refused = client
        .call_tool(CallToolRequestParams::new("greet"))
        .await
        .expect_err("missing capability");
    let rmcp::ServiceError::McpError(data) = &refused else {
        panic!("expected a protocol error, got {refused}");
    };
    assert_eq!(data.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
    assert!(data.data.as_ref().unwrap()["requiredCapabilities"]["elicitation"].is_object());
}

#[tokio::test]
async fn on_2026_07_28_a_tool_logs_only_under_the_requests_log_level() {
    let answers = Answers::default();
    let client = connect(Revision::Rounds, answers.clone()).await;
    // rmcp's client sends no logLevel: nothing is sent.
    assert_eq!(call_text(&client, "chatty").await, json!([false, false]));
    let mut params = CallToolRequestParams::new("chatty");
    let mut meta = rmcp::model::RequestMetaObject::default();
    meta.set_log_level(LoggingLevel::Info);
    params.meta = Some(meta);
    let result = client.call_tool(params).await.unwrap();
    assert_eq!(
        result.structured_content,
        Some(json!({"result": [true, false]}))
    );
    assert_eq!(answers.logs.lock().unwrap().as_slice(), ["\"started\""]);
}

#[tokio::test]
async fn retries_count_the_runs_of_the_last_round_not_the_rounds() {
    for revision in [Revision::Sessions, Revision::Rounds] {
        let client = connect(revision, Answers::default()).await;
        let result = client
            .call_tool(CallToolRequestParams::new("ask_then_fail"))
            .await
            .expect("a tool error");
        assert_eq!(result.is_error, Some(true));
        let escalation = result.structured_content.expect("an escalation");
        // The first round stopped at the question; the second ran the body
        // three times, under the retry policy.
        assert_eq!(
            escalation["escalation"]["attempts"], 3,
            "{revision:?}: {escalation}"
        );
        assert_eq!(escalation["reason"], "UPSTREAM_DOWN", "{revision:?}");
    }
}

fn refund_call(amount: u64) -> CallToolRequestParams {
    let arguments = json!({"order": "O-77", "amount": amount, "card": "4111-1111-1111-1111"});
    CallToolRequestParams::new("refund").with_arguments(arguments.as_object().unwrap().clone())
}

#[tokio::test]
async fn over_the_cap_a_person_approves_and_the_refund_runs_once() {
    for revision in [Revision::Sessions, Revision::Rounds] {
        let answers = Answers::default();
        let client = connect(revision, answers.clone()).await;
        let before = refunds_of(620);
        let result = client.call_tool(refund_call(620)).await.expect("an answer");
        assert_ne!(result.is_error, Some(true), "{revision:?}: {result:?}");
        assert_eq!(
            result.structured_content,
            Some(json!({"result": "Refunded $620 on O-77"}))
        );
        assert_eq!(refunds_of(620) - before, 1, "{revision:?}: ran once");
        // The person saw the block and the attempted query, the card masked.
        let asked = answers.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1, "{revision:?}: {asked:?}");
        assert!(
            asked[0].starts_with("Refund of $620 exceeds the $500 policy cap"),
            "{asked:?}"
        );
        assert!(asked[0].contains(r#""order":"O-77""#), "{asked:?}");
        assert!(
            !asked[0].contains("4111-1111"),
            "the card is masked: {asked:?}"
        );
        // Who answered what, and when, for audit.
        let meta = result.meta.expect("the audit record");
        let record = &meta.0[APPROVAL_META_KEY][0];
        assert_eq!(record["action"], "accept");
        assert_eq!(record["approver"], "Grace");
        assert_eq!(record["client"], "answers 1.0.0");
        assert!(record["answeredAtMs"].as_u64().unwrap() > 1_700_000_000_000);
    }
}

/// A person asked to approve a call sees all of it but its secrets: a call
/// whose card is sent as its amount, or quoted in its order, would show the
/// amount or the order `[redacted]`, and is not put to them — whether the
/// card is a `Secret` or a parameter the schema marks secret.
#[tokio::test]
async fn a_call_that_repeats_its_secret_elsewhere_is_not_put_to_a_person() {
    for revision in [Revision::Sessions, Revision::Rounds] {
        let answers = Answers::default();
        let client = connect(revision, answers.clone()).await;
        for (tool, arguments) in [
            (
                "refund",
                json!({"order": "O-77", "amount": 7301, "card": "7301"}),
            ),
            (
                "refund",
                json!({"order": "O-4111-7302", "amount": 7302, "card": "4111-7302"}),
            ),
            (
                "refund_by_card",
                json!({"order": "O-77", "amount": 7301, "card": "7301"}),
            ),
            (
                "refund_by_card",
                json!({"order": "O-4111-7302", "amount": 7302, "card": "4111-7302"}),
            ),
        ] {
            let call = CallToolRequestParams::new(tool)
                .with_arguments(arguments.as_object().unwrap().clone());
            let result = client.call_tool(call).await.expect("a tool error");
            assert_eq!(result.is_error, Some(true), "{revision:?}: {result:?}");
            let envelope = result.structured_content.expect("an envelope");
            assert_eq!(envelope["reason"], "HIDDEN_FROM_APPROVERS", "{envelope}");
            assert_eq!(envelope["errorCategory"], "validation", "{envelope}");
            assert_eq!(envelope["isRetryable"], false, "{envelope}");
        }
        assert_eq!(
            answers.asked.lock().unwrap().len(),
            0,
            "{revision:?}: nobody asked"
        );
        assert_eq!(
            refunds_of(7301) + refunds_of(7302),
            0,
            "{revision:?}: nothing ran"
        );
    }
}

#[tokio::test]
async fn over_the_cap_a_declined_refund_is_a_business_envelope_and_never_runs() {
    for revision in [Revision::Sessions, Revision::Rounds] {
        let client = connect(
            revision,
            Answers {
                decline: true,
                ..Answers::default()
            },
        )
        .await;
        let result = client
            .call_tool(refund_call(900))
            .await
            .expect("a tool error");
        assert_eq!(result.is_error, Some(true));
        let envelope = result.structured_content.expect("an escalation");
        assert_eq!(envelope["errorCategory"], "business", "{revision:?}");
        assert_eq!(envelope["isRetryable"], false);
        assert_eq!(envelope["reason"], "HUMAN_DECLINED");
        assert_eq!(
            envelope["escalation"]["reason"], "human_declined",
            "{envelope}"
        );
        assert_eq!(
            envelope["escalation"]["attempts"], 0,
            "the refund never ran"
        );
        assert_eq!(
            envelope["alternatives"],
            json!(["Offer store credit up to $500"])
        );
        assert_eq!(
            envelope["attempted_query"]["card"], "[redacted]",
            "{envelope}"
        );
        assert_eq!(refunds_of(900), 0, "{revision:?}: never ran");
        assert_eq!(
            result.meta.unwrap().0[APPROVAL_META_KEY][0]["action"],
            "decline"
        );
    }
}

#[tokio::test]
async fn a_client_that_cannot_be_asked_gets_the_block_and_its_alternatives() {
    let nothing = Answers {
        capabilities: Some(ClientCapabilities::builder().enable_sampling().build()),
        ..Answers::default()
    };
    for revision in [Revision::Sessions, Revision::Rounds] {
        let client = connect(revision, nothing.clone()).await;
        let result = client
            .call_tool(refund_call(700))
            .await
            .expect("a tool error");
        let envelope = result.structured_content.expect("an escalation");
        assert_eq!(
            envelope["reason"], "REFUND_OVER_CAP",
            "{revision:?}: {envelope}"
        );
        assert_eq!(envelope["escalation"]["reason"], "blocked_by_guard");
        assert_eq!(
            envelope["alternatives"],
            json!(["Offer store credit up to $500"])
        );
        assert!(nothing.asked.lock().unwrap().is_empty());
        // Under the cap, nobody is asked.
        let result = client.call_tool(refund_call(100)).await.unwrap();
        assert_ne!(result.is_error, Some(true));
    }
}

/// A stateless server has no session to carry a request to a 2025-11-25
/// client, whatever the request's `_meta` says the client can answer: the
/// tool's question is answered at once that it cannot be asked.
#[tokio::test]
async fn a_stateless_server_asks_a_2025_11_25_client_nothing_whatever_its_meta_declares() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let options = tool_envelope::mcp::HttpOptions::new().stateless();
    tokio::spawn(async move { options.serve(listener, tools()).await });
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "greet", "arguments": {},
        "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}}});
    let sent = reqwest::Client::new()
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&call)
        .send();
    let answer = tokio::time::timeout(Duration::from_secs(20), async {
        sent.await.unwrap().json::<Value>().await.unwrap()
    })
    .await
    .expect("answered, not held on a question nobody can carry");
    let envelope = &answer["result"]["structuredContent"];
    assert_eq!(envelope["reason"], "CLIENT_CANNOT_ANSWER", "{answer}");
}

// ---- this crate's client, on both revisions ----

/// `tools()` over Streamable HTTP on a free port, stateless or with sessions.
#[cfg(feature = "client")]
async fn http_server(stateless: bool) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let options = match stateless {
        true => tool_envelope::mcp::HttpOptions::new().stateless(),
        false => tool_envelope::mcp::HttpOptions::new(),
    };
    tokio::spawn(async move { options.serve(listener, tools()).await });
    url
}

#[cfg(feature = "client")]
#[tokio::test]
async fn mcp_client_answers_the_servers_questions_on_both_revisions() {
    use tool_envelope::mcp::client::{McpClient, Revision};

    for (stateless, revision, expected) in [
        (true, Revision::Negotiate, "2026-07-28"),
        (false, Revision::Negotiate, "2026-07-28"),
        (false, Revision::V2025_11_25, "2025-11-25"),
    ] {
        let url = http_server(stateless).await;
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let approving = {
            let asked = std::sync::Arc::clone(&asked);
            McpClient::connect(&url)
                .revision(revision)
                .on_elicitation(move |request| {
                    let request = serde_json::to_value(&request).unwrap();
                    asked
                        .lock()
                        .unwrap()
                        .push(request["message"].as_str().unwrap().to_owned());
                    async move {
                        ElicitResult::new(ElicitationAction::Accept)
                            .with_content(json!({"name": "Ada", "approver": "Grace"}))
                    }
                })
                .on_sampling(|_| async {
                    Ok(CreateMessageResult::new(
                        SamplingMessage::new(Role::Assistant, "Paris"),
                        "test-model".to_owned(),
                    ))
                })
                .on_roots(|| async { vec![Root::new("file:///work")] })
                .await
                .expect("the client connects")
        };
        let label = format!("stateless={stateless}, {revision:?}");
        assert_eq!(
            approving.protocol_version().await.unwrap(),
            expected,
            "{label}"
        );
        let greeting = approving.call("greet", json!({})).await.expect("greeted");
        assert_eq!(greeting, json!({"result": "Hello, Ada!"}), "{label}");
        let survey = approving.call("survey", json!({})).await.expect("surveyed");
        let expected_survey = json!({"model": "Paris", "roots": 1, "name": "Ada"});
        assert_eq!(survey, expected_survey, "{label}");
        let refund = json!({"order": "O-77", "amount": 777, "card": "4111-1111-1111-1111"});
        let refunded = approving
            .call("refund", refund.clone())
            .await
            .expect("approved");
        assert_eq!(
            refunded,
            json!({"result": "Refunded $777 on O-77"}),
            "{label}"
        );
        assert!(
            asked
                .lock()
                .unwrap()
                .iter()
                .any(|q| q.starts_with("Refund of $777")),
            "{label}"
        );

        // Declined: the server's envelope, never retryable.
        let declining = McpClient::connect(&url)
            .revision(revision)
            .on_elicitation(|_| async { ElicitResult::new(ElicitationAction::Decline) })
            .await
            .unwrap();
        let declined = declining.call("refund", refund.clone()).await.unwrap_err();
        assert_eq!(
            declined.reason(),
            Some("HUMAN_DECLINED"),
            "{label}: {declined:?}"
        );
        assert!(!declined.is_retryable());

        // No handler: nothing to answer with. On 2026-07-28 the server
        // refuses to ask a client that declared nothing (-32021); on
        // 2025-11-25 the tool says it could not ask.
        let mute = McpClient::connect(&url).revision(revision).await.unwrap();
        let unanswered = mute.call("greet", json!({})).await.unwrap_err();
        assert!(!unanswered.is_retryable(), "{label}: {unanswered:?}");
        assert!(
            unanswered.message().contains("elicitation"),
            "{label}: {}",
            unanswered.message()
        );
        // A refund over the cap, nobody to ask: the block and its alternatives.
        let blocked = mute.call("refund", refund).await.unwrap_err();
        assert_eq!(
            blocked.reason(),
            Some("REFUND_OVER_CAP"),
            "{label}: {blocked:?}"
        );
    }
}

#[cfg(feature = "client")]
#[tokio::test]
async fn on_2025_11_25_a_server_that_floods_the_client_with_questions_ends_the_call() {
    use std::sync::atomic::AtomicUsize;
    use tool_envelope::mcp::client::{McpClient, Revision};

    let url = http_server(false).await;
    let sampled = std::sync::Arc::new(AtomicUsize::new(0));
    let client = {
        let sampled = std::sync::Arc::clone(&sampled);
        McpClient::connect(&url)
            .revision(Revision::V2025_11_25)
            .max_questions(4)
            .on_sampling(move |_| {
                sampled.fetch_add(1, Ordering::SeqCst);
                async {
                    Ok(CreateMessageResult::new(
                        SamplingMessage::new(Role::Assistant, "yes"),
                        "test-model".to_owned(),
                    ))
                }
            })
            .await
            .unwrap()
    };
    let flooded = client.call("chatterbox", json!({})).await.unwrap_err();
    assert_eq!(
        flooded.reason(),
        Some(tool_envelope::reasons::TOO_MANY_QUESTIONS),
        "{flooded:?}"
    );
    assert!(!flooded.is_retryable());
    // Four a round, ten rounds' worth, and not one more.
    assert_eq!(sampled.load(Ordering::SeqCst), 40);
}
