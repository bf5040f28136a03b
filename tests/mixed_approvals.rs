//! A call that two kinds of people must approve: its client's user
//! (`Blocked::unless_approved`) and approvers at the server
//! (`unless_approved_by(Approvers::scope(..))`), in either order. The
//! client's user is asked while the call is still theirs — before it waits
//! for the approvers, also for a block that only follows the approvers' —
//! and the approved run passes the blocks both said yes to, once. Served
//! over MCP to an rmcp client that can be asked, kept in a SQLite file.
#![cfg(all(feature = "rmcp", feature = "sqlite"))]

use std::sync::{Arc, Mutex};

use rmcp::model::ProtocolVersion;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, RequestContext, RoleClient, RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::{Value, json};
use tool_envelope::guard::{Approvers, Blocked, Caller, Guards, ToolCall};
use tool_envelope::mcp::{APPROVAL_META_KEY, BearerAuth, HttpOptions, ToolSet};
use tool_envelope::store::{self, ApprovalState};
use tool_envelope::{ErrorEnvelope, tool};

/// What the tools ran, by a label of each test's own.
static DONE: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn times(label: &str) -> usize {
    DONE.lock().unwrap().iter().filter(|l| *l == label).count()
}

/// Over $500, an approver with `payments:approve` decides.
fn cap(call: &ToolCall) -> Result<(), Blocked> {
    let amount: u64 = call.require("amount")?;
    match amount > 500 {
        true => Err(
            Blocked::new(format!("A transfer of ${amount} exceeds the $500 cap"))
                .with_reason("OVER_CAP")
                .unless_approved_by(Approvers::scope("payments:approve")),
        ),
        false => Ok(()),
    }
}

/// Money that leaves the bank: the client's user confirms.
fn external(call: &ToolCall) -> Result<(), Blocked> {
    let account: String = call.require("account")?;
    match account.starts_with("EXT-") {
        true => Err(Blocked::new(format!("{account} is outside the bank"))
            .with_reason("EXTERNAL_ACCOUNT")
            .unless_approved()),
        false => Ok(()),
    }
}

/// Transfer money, async, guarded by the tool set.
#[tool(destructive)]
async fn transfer(account: String, amount: u64) -> Result<String, ErrorEnvelope> {
    DONE.lock()
        .unwrap()
        .push(format!("transfer {account} {amount}"));
    Ok(format!("Transferred ${amount} to {account}"))
}

/// Wire money, sync, its own guard the client's: met after the tool set's.
#[tool(destructive, guard = external)]
fn wire(account: String, amount: u64) -> Result<String, ErrorEnvelope> {
    DONE.lock()
        .unwrap()
        .push(format!("wire {account} {amount}"));
    Ok(format!("Wired ${amount} to {account}"))
}

/// The tools, their guards in `order`, kept in a SQLite file.
async fn tools(url: &str, guards: Guards) -> ToolSet {
    ToolSet::new()
        .tool::<transfer>()
        .tool::<wire>()
        .guards(guards)
        .store(store::open(url).await.unwrap())
        .approvals_in_background(false)
}

fn client_first() -> Guards {
    Guards::new().for_tool("transfer", external).for_all(cap)
}

fn approvers_first() -> Guards {
    Guards::new().for_all(cap).for_tool("transfer", external)
}

/// A client whose user answers each question `answer`, and counts them.
#[derive(Clone)]
struct User {
    answer: Option<ElicitationAction>,
    asked: Arc<Mutex<Vec<String>>>,
    /// A call made at the server while the first question is answered.
    meanwhile: Arc<Mutex<Option<(ToolSet, Value)>>>,
}

impl User {
    fn answering(answer: Option<ElicitationAction>) -> Self {
        User {
            answer,
            asked: Arc::default(),
            meanwhile: Arc::default(),
        }
    }

    /// [`answering`](Self::answering), `tools` called with `arguments`
    /// (a transfer) while the first question is answered.
    fn meanwhile(self, tools: &ToolSet, arguments: Value) -> Self {
        *self.meanwhile.lock().unwrap() = Some((tools.clone(), arguments));
        self
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

impl ClientHandler for User {
    fn get_info(&self) -> ClientConfig {
        let capabilities = match self.answer {
            Some(_) => ClientCapabilities::builder().enable_elicitation().build(),
            None => ClientCapabilities::default(),
        };
        ClientConfig::new(capabilities, Implementation::new("agent", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let message = serde_json::to_value(&request).unwrap()["message"].to_string();
        self.asked.lock().unwrap().push(message);
        let meanwhile = self.meanwhile.lock().unwrap().take();
        if let Some((tools, arguments)) = meanwhile {
            tools.call("transfer", arguments).await.unwrap();
        }
        let action = self.answer.clone().expect("asked only when it can be");
        Ok(match action {
            ElicitationAction::Accept => {
                ElicitResult::new(action).with_content(json!({"approver": "dana", "note": "mine"}))
            }
            other => ElicitResult::new(other),
        })
    }
}

/// `tools` served over MCP to a client whose user is `user`, on
/// 2025-11-25 (a session, questions sent as requests).
async fn connect(tools: &ToolSet, user: &User) -> RunningService<RoleClient, User> {
    connect_on(tools, user, false).await
}

/// [`connect`], on 2026-07-28 when `rounds`: no session, each question a
/// round of `input_required` that rmcp's client answers and calls again.
async fn connect_on(
    tools: &ToolSet,
    user: &User,
    rounds: bool,
) -> RunningService<RoleClient, User> {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let served = tools.clone();
    tokio::spawn(async move {
        let running = served.serve(server_io).await.expect("the server starts");
        let _ = running.waiting().await;
    });
    let client = match rounds {
        false => user.clone().serve(client_io).await,
        true => {
            let lifecycle = ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            };
            user.clone()
                .serve_with_lifecycle(client_io, lifecycle)
                .await
        }
    };
    client.expect("the client connects")
}

async fn call(client: &RunningService<RoleClient, User>, tool: &str, arguments: Value) -> Value {
    call_meta(client, tool, arguments).await.0
}

/// [`call`], and the reply's `_meta`.
async fn call_meta(
    client: &RunningService<RoleClient, User>,
    tool: &str,
    arguments: Value,
) -> (Value, Value) {
    let result = client
        .call_tool(
            CallToolRequestParams::new(tool.to_owned())
                .with_arguments(arguments.as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    let content = result.structured_content.unwrap_or_default();
    assert_eq!(
        result.is_error,
        Some(content.get("errorCategory").is_some()),
        "{content}"
    );
    let meta = serde_json::to_value(result.meta).unwrap();
    (content, meta)
}

fn ticket_of(reply: &Value) -> String {
    assert_eq!(reply["reason"], "AWAITING_APPROVAL", "{reply}");
    reply["escalation"]["ticket"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn carol() -> Caller {
    Caller::new("carol", ["payments:approve"])
}

/// The approvals pending in the store at `url`, as any replica reads them.
async fn pending(url: &str) -> Vec<store::ApprovalRecord> {
    let store = store::open(url).await.unwrap();
    store
        .approvals("", None, &[ApprovalState::Pending], 10)
        .await
        .unwrap()
}

fn sqlite_url(name: &str) -> (tempfile::TempDir, String) {
    let folder = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite:{}",
        folder.path().join(format!("{name}.db")).display()
    );
    (folder, url)
}

/// The whole way: the call waits, its user was asked once and nothing ran;
/// an approver says yes, the run passes both blocks once; the call made
/// again reads the result, and nobody is asked again.
async fn both_say_yes(guards: Guards, tool: &str, account: &str, url: &str) {
    both_say_yes_on(guards, tool, account, url, false).await;
}

async fn both_say_yes_on(guards: Guards, tool: &str, account: &str, url: &str, rounds: bool) {
    let tools = tools(url, guards).await;
    let user = User::answering(Some(ElicitationAction::Accept));
    let client = connect_on(&tools, &user, rounds).await;
    let arguments = json!({"account": account, "amount": 900});
    let label = format!("{tool} {account} 900");

    let ticket = ticket_of(&call(&client, tool, arguments.clone()).await);
    let asked = user.asked();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("outside the bank"), "{asked:?}");
    assert_eq!(times(&label), 0, "looking ahead ran nothing");

    tools.decide(&ticket, &carol(), true, "fine").await.unwrap();
    assert_eq!(tools.run_approved().await.unwrap(), 1);
    assert_eq!(tools.run_approved().await.unwrap(), 0);
    assert_eq!(times(&label), 1, "approved by both, run once");

    let (done, meta) = call_meta(&client, tool, arguments).await;
    assert!(done["result"].as_str().unwrap().contains("$900"), "{done}");
    // The approved run's reply says who said yes at the client, as a call
    // approved at once does.
    let answers = &meta[APPROVAL_META_KEY];
    assert_eq!(answers.as_array().map(Vec::len), Some(1), "{meta}");
    assert_eq!(answers[0]["action"], "accept", "{meta}");
    assert_eq!(answers[0]["approver"], "dana", "{meta}");
    let question = answers[0]["question"].as_str().unwrap();
    assert!(question.contains("outside the bank"), "{meta}");
    assert_eq!(user.asked().len(), 1, "nobody is asked again");
    assert_eq!(times(&label), 1);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_call_its_user_confirms_then_approvers_approve_runs_once() {
    let (_folder, url) = sqlite_url("client-first");
    both_say_yes(client_first(), "transfer", "EXT-1", &url).await;
}

#[tokio::test]
async fn a_call_approvers_approve_then_its_user_confirms_is_asked_before_it_waits() {
    let (_folder, url) = sqlite_url("approvers-first");
    both_say_yes(approvers_first(), "transfer", "EXT-2", &url).await;
}

#[tokio::test]
async fn a_sync_tools_own_guard_after_the_sets_is_asked_before_it_waits() {
    let (_folder, url) = sqlite_url("own-guard");
    both_say_yes(Guards::new().for_all(cap), "wire", "EXT-3", &url).await;
}

/// On 2026-07-28 the question is a round: the call is made again with the
/// answer, looks ahead again, and then waits; the same once approved.
#[tokio::test]
async fn on_2026_07_28_the_question_ahead_is_a_round_and_the_call_completes() {
    let (_folder, url) = sqlite_url("rounds-approvers-first");
    both_say_yes_on(approvers_first(), "transfer", "EXT-R1", &url, true).await;
    let (_folder, url) = sqlite_url("rounds-client-first");
    both_say_yes_on(client_first(), "transfer", "EXT-R2", &url, true).await;
    let (_folder, url) = sqlite_url("rounds-own-guard");
    both_say_yes_on(Guards::new().for_all(cap), "wire", "EXT-R3", &url, true).await;
}

/// Postgres, when `TOOL_ENVELOPE_TEST_POSTGRES` names one
/// (`scripts/test-postgres.sh`): both orders, kept where replicas share.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_keeps_what_the_user_approved_for_the_approved_run() {
    let Ok(url) = std::env::var("TOOL_ENVELOPE_TEST_POSTGRES") else {
        eprintln!("TOOL_ENVELOPE_TEST_POSTGRES is not set: scripts/test-postgres.sh runs this");
        return;
    };
    let at = store::now_ms();
    both_say_yes(client_first(), "transfer", &format!("EXT-P{at}"), &url).await;
    both_say_yes(approvers_first(), "wire", &format!("EXT-Q{at}"), &url).await;
}

/// Declined by its user when only the approvers' block was met so far: no
/// approval is opened, nothing runs; a client nobody can ask gets the
/// block as it stands, and no approval either.
#[tokio::test]
async fn a_call_its_user_declines_or_cannot_be_asked_about_never_waits() {
    let (_folder, url) = sqlite_url("declined");
    let tools = tools(&url, approvers_first()).await;

    let user = User::answering(Some(ElicitationAction::Decline));
    let client = connect(&tools, &user).await;
    let declined = call(
        &client,
        "transfer",
        json!({"account": "EXT-4", "amount": 900}),
    )
    .await;
    assert_eq!(declined["reason"], "HUMAN_DECLINED", "{declined}");
    assert_eq!(user.asked().len(), 1);
    client.cancel().await.unwrap();

    let mute = User::answering(None);
    let client = connect(&tools, &mute).await;
    let stands = call(&client, "wire", json!({"account": "EXT-5", "amount": 900})).await;
    assert_eq!(stands["reason"], "EXTERNAL_ACCOUNT", "{stands}");
    client.cancel().await.unwrap();

    let pending = pending(&url).await;
    assert!(pending.is_empty(), "{pending:?}");
    assert_eq!(tools.run_approved().await.unwrap(), 0);
    assert_eq!(times("transfer EXT-4 900") + times("wire EXT-5 900"), 0);

    // Within the bank, the approvers' block alone: it waits, nobody asked.
    let client = connect(&tools, &user).await;
    let within = call(
        &client,
        "transfer",
        json!({"account": "ACC-6", "amount": 900}),
    )
    .await;
    ticket_of(&within);
    assert_eq!(
        user.asked().len(),
        1,
        "no question for the approvers' block"
    );
    client.cancel().await.unwrap();
}

/// A call that could not wait is not asked about ahead: without a store
/// the approvers' block stands and nobody is asked; past as many questions
/// as one call may ask, the block left stands, and no approval opens to
/// stop at it.
#[tokio::test]
async fn a_call_that_could_not_wait_asks_nobody_ahead_and_opens_nothing() {
    let storeless = ToolSet::new().tool::<transfer>().guards(approvers_first());
    let user = User::answering(Some(ElicitationAction::Accept));
    let client = connect(&storeless, &user).await;
    let stands = call(
        &client,
        "transfer",
        json!({"account": "EXT-7", "amount": 900}),
    )
    .await;
    assert_eq!(stands["reason"], "OVER_CAP", "{stands}");
    assert!(user.asked().is_empty(), "{:?}", user.asked());
    client.cancel().await.unwrap();

    let (_folder, url) = sqlite_url("five-checks");
    let mut guards = Guards::new().for_all(cap);
    for n in 1..=5 {
        guards = guards.for_tool("transfer", move |_: &ToolCall| {
            Err(Blocked::new(format!("check {n}"))
                .with_reason(format!("CHECK_{n}"))
                .unless_approved())
        });
    }
    let tools = tools(&url, guards).await;
    let client = connect(&tools, &user).await;
    let stands = call(
        &client,
        "transfer",
        json!({"account": "ACC-8", "amount": 900}),
    )
    .await;
    assert_eq!(stands["reason"], "CHECK_5", "{stands}");
    assert_eq!(user.asked().len(), 4, "{:?}", user.asked());
    client.cancel().await.unwrap();
    let pending = pending(&url).await;
    assert!(pending.is_empty(), "{pending:?}");
    assert_eq!(times("transfer EXT-7 900") + times("transfer ACC-8 900"), 0);
}

/// Over $800 the treasury decides too: a second approvers' block, after
/// the client's.
fn treasury(call: &ToolCall) -> Result<(), Blocked> {
    let amount: u64 = call.require("amount")?;
    match amount > 800 {
        true => Err(Blocked::new(format!("${amount} needs the treasury"))
            .with_reason("TREASURY")
            .unless_approved_by(Approvers::scope("treasury:approve"))),
        false => Ok(()),
    }
}

/// Approvers, the user, approvers again: the user is asked once, ahead;
/// the first approval's run meets the treasury's block and hands on to its
/// approval, which carries the user's yes and answers once; the last run
/// passes all three blocks, once, its reply holding the one answer.
#[tokio::test]
async fn a_chain_of_approvals_carries_what_the_user_approved_to_its_last_run() {
    let (_folder, url) = sqlite_url("chain");
    let guards = Guards::new()
        .for_all(cap)
        .for_tool("transfer", external)
        .for_all(treasury);
    let tools = tools(&url, guards).await;
    let user = User::answering(Some(ElicitationAction::Accept));
    let client = connect(&tools, &user).await;
    let arguments = json!({"account": "EXT-C1", "amount": 900});

    let first = ticket_of(&call(&client, "transfer", arguments.clone()).await);
    assert_eq!(user.asked().len(), 1, "{:?}", user.asked());
    tools.decide(&first, &carol(), true, "").await.unwrap();
    assert_eq!(tools.run_approved().await.unwrap(), 1);
    assert_eq!(times("transfer EXT-C1 900"), 0, "the treasury decides next");

    let second = ticket_of(&call(&client, "transfer", arguments.clone()).await);
    assert_ne!(second, first);
    let store = store::open(&url).await.unwrap();
    let opened = store.approval(&second).await.unwrap().unwrap();
    assert_eq!(opened.approvers, "treasury:approve");
    assert_eq!(opened.waived.len(), 1, "{opened:?}");
    assert_eq!(opened.client_answers.len(), 1, "{opened:?}");

    let tess = Caller::new("tess", ["treasury:approve"]);
    tools.decide(&second, &tess, true, "").await.unwrap();
    assert_eq!(tools.run_approved().await.unwrap(), 1);
    assert_eq!(times("transfer EXT-C1 900"), 1, "run once, past all three");
    let (done, meta) = call_meta(&client, "transfer", arguments).await;
    assert!(done["result"].as_str().unwrap().contains("$900"), "{done}");
    assert_eq!(
        meta[APPROVAL_META_KEY].as_array().map(Vec::len),
        Some(1),
        "{meta}"
    );
    assert_eq!(user.asked().len(), 1, "asked once in all");
    client.cancel().await.unwrap();
}

/// A call the store would not keep waiting is not asked about ahead: its
/// arguments too long for approvers to see whole, or its caller with as
/// many approvals waiting as may, it ends with that refusal, its user
/// asked nothing, no approval opened, nothing run.
#[tokio::test]
async fn a_call_the_store_would_not_keep_waiting_asks_its_user_nothing() {
    let (_folder, url) = sqlite_url("would-not-wait");
    let tools = tools(&url, approvers_first())
        .await
        .max_waiting_approvals(1);
    let user = User::answering(Some(ElicitationAction::Accept));
    let client = connect(&tools, &user).await;

    let long = format!("EXT-{}", "9".repeat(20_000));
    for tool in ["transfer", "wire"] {
        let refused = call(&client, tool, json!({"account": long, "amount": 900})).await;
        assert_eq!(
            refused["reason"], "TOO_LONG_TO_APPROVE",
            "{tool}: {refused}"
        );
        assert_eq!(user.asked().len(), 0, "{tool}: its user was asked");
    }

    // A client that cannot be asked meets the block nobody could answer,
    // as any call does: the store is not read for it.
    let mute = User::answering(None);
    let muted = connect(&tools, &mute).await;
    let stands = call(&muted, "transfer", json!({"account": long, "amount": 900})).await;
    assert_eq!(stands["reason"], "EXTERNAL_ACCOUNT", "{stands}");
    muted.cancel().await.unwrap();

    // One call waits (the approvers' block alone): the caller's bound.
    ticket_of(
        &call(
            &client,
            "transfer",
            json!({"account": "ACC-9", "amount": 900}),
        )
        .await,
    );
    for tool in ["transfer", "wire"] {
        let refused = call(&client, tool, json!({"account": "EXT-9", "amount": 900})).await;
        assert_eq!(refused["reason"], "TOO_MANY_APPROVALS", "{tool}: {refused}");
        assert_eq!(user.asked().len(), 0, "{tool}: its user was asked");
    }
    client.cancel().await.unwrap();

    let pending = pending(&url).await;
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(tools.run_approved().await.unwrap(), 0);
    assert_eq!(times("transfer EXT-9 900") + times("wire EXT-9 900"), 0);
}

/// Under `mask_internal_errors`, a question asked ahead is masked as the
/// reply is, and so is its record the approval keeps for approvers.
#[tokio::test]
async fn a_question_asked_ahead_is_masked_as_the_reply_is() {
    let (_folder, url) = sqlite_url("masked-ahead");
    let held = |call: &ToolCall| -> Result<(), Blocked> {
        let account: String = call.require("account")?;
        Err(Blocked::new(format!(
            "Billing at https://ops:hunter2@billing.internal held {account}: password=hunter2"
        ))
        .with_reason("HELD")
        .unless_approved())
    };
    let guards = Guards::new().for_all(cap).for_tool("transfer", held);
    let tools = tools(&url, guards)
        .await
        .mask_internal_errors("internal error");
    let user = User::answering(Some(ElicitationAction::Accept));
    let client = connect(&tools, &user).await;
    let ticket = ticket_of(
        &call(
            &client,
            "transfer",
            json!({"account": "ACC-M", "amount": 900}),
        )
        .await,
    );
    let asked = user.asked();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("Billing at https://"), "{asked:?}");
    assert!(!asked[0].contains("hunter2"), "{asked:?}");
    client.cancel().await.unwrap();

    let pending = pending(&url).await;
    let approval = pending
        .iter()
        .find(|approval| approval.id == ticket)
        .unwrap();
    let kept = serde_json::to_string(&approval.client_answers).unwrap();
    assert!(kept.contains("Billing at https://"), "{kept}");
    assert!(!kept.contains("hunter2"), "{kept}");
}

/// The same, the client's block met first: their user is not asked about
/// a call their yes would send to wait where the store would refuse it.
#[tokio::test]
async fn a_call_its_users_yes_would_send_where_the_store_refuses_asks_them_nothing() {
    let (_folder, url) = sqlite_url("would-not-wait-behind");
    let tools = tools(&url, client_first()).await.max_waiting_approvals(1);
    let user = User::answering(Some(ElicitationAction::Accept));
    let client = connect(&tools, &user).await;

    let long = format!("EXT-{}", "8".repeat(20_000));
    let refused = call(&client, "transfer", json!({"account": long, "amount": 900})).await;
    assert_eq!(refused["reason"], "TOO_LONG_TO_APPROVE", "{refused}");
    assert_eq!(user.asked().len(), 0, "its user was asked");

    // Under the cap, the approvers' block is not met: their user is asked.
    let done = call(
        &client,
        "transfer",
        json!({"account": "EXT-8", "amount": 80}),
    )
    .await;
    assert_eq!(done["result"], "Transferred $80 to EXT-8", "{done}");
    assert_eq!(user.asked().len(), 1);
    ticket_of(
        &call(
            &client,
            "transfer",
            json!({"account": "ACC-8", "amount": 900}),
        )
        .await,
    );
    let refused = call(
        &client,
        "transfer",
        json!({"account": "EXT-8", "amount": 900}),
    )
    .await;
    assert_eq!(refused["reason"], "TOO_MANY_APPROVALS", "{refused}");
    assert_eq!(user.asked().len(), 1, "its user was asked again");
    client.cancel().await.unwrap();

    assert_eq!(pending(&url).await.len(), 1);
    assert_eq!(times("transfer EXT-8 80"), 1);
    assert_eq!(times("transfer EXT-8 900"), 0);
}

/// Over $800, the client's user confirms too.
fn large(call: &ToolCall) -> Result<(), Blocked> {
    let amount: u64 = call.require("amount")?;
    match amount > 800 {
        true => Err(Blocked::new(format!("${amount} is a large sum"))
            .with_reason("LARGE")
            .unless_approved()),
        false => Ok(()),
    }
}

/// Two blocks of the client's user before the approvers': looked behind
/// both, their user is asked about neither when the store would refuse.
#[tokio::test]
async fn a_call_looked_behind_two_blocks_of_its_users_asks_them_nothing() {
    let (_folder, url) = sqlite_url("behind-two");
    let guards = Guards::new()
        .for_tool("transfer", external)
        .for_all(large)
        .for_all(cap);
    let tools = tools(&url, guards).await.max_waiting_approvals(1);
    let user = User::answering(Some(ElicitationAction::Accept));
    let client = connect(&tools, &user).await;
    // Waits, nobody asked: the approvers' block alone.
    let waits = json!({"account": "ACC-7", "amount": 600});
    ticket_of(&call(&client, "transfer", waits).await);
    assert_eq!(user.asked().len(), 0);

    let refused = call(
        &client,
        "transfer",
        json!({"account": "EXT-7", "amount": 900}),
    )
    .await;
    assert_eq!(refused["reason"], "TOO_MANY_APPROVALS", "{refused}");
    assert_eq!(
        user.asked().len(),
        0,
        "its user was asked: {:?}",
        user.asked()
    );
    client.cancel().await.unwrap();
    assert_eq!(pending(&url).await.len(), 1);
    assert_eq!(times("transfer EXT-7 900"), 0);
}

/// An approvers' block met past as many questions as one call may ask
/// is looked behind no further: it would stand unopened whatever the store
/// says, so the store is not read for it, and the call goes as any would —
/// its user asked four times, the approvers' block standing.
#[tokio::test]
async fn an_approvers_block_past_four_questions_is_not_read_for() {
    let (_folder, url) = sqlite_url("behind-four");
    let mut guards = Guards::new();
    for n in 1..=4 {
        guards = guards.for_tool("transfer", move |_: &ToolCall| {
            Err(Blocked::new(format!("check {n}"))
                .with_reason(format!("CHECK_{n}"))
                .unless_approved())
        });
    }
    let tools = tools(&url, guards.for_all(cap))
        .await
        .max_waiting_approvals(1);
    let user = User::answering(Some(ElicitationAction::Accept));
    let client = connect(&tools, &user).await;
    // One waits (through another tool), as many as may.
    ticket_of(&call(&client, "wire", json!({"account": "ACC-4", "amount": 900})).await);
    let stands = call(
        &client,
        "transfer",
        json!({"account": "ACC-4", "amount": 900}),
    )
    .await;
    assert_eq!(stands["reason"], "OVER_CAP", "{stands}");
    assert_eq!(user.asked().len(), 4, "{:?}", user.asked());
    client.cancel().await.unwrap();
    assert_eq!(pending(&url).await.len(), 1);
    assert_eq!(times("transfer ACC-4 900"), 0);
}

/// On 2026-07-28 the round that carries the user's answer does not read
/// the store again before it takes that answer, looked ahead of or behind:
/// here an approval of the caller's opens while they decline, and the
/// call ends with their no (not the store's bound), its reply keeping the
/// record of it.
#[tokio::test]
async fn a_round_that_carries_the_users_answer_takes_it_whatever_the_store_says_now() {
    for (order, guards) in [("behind", client_first()), ("ahead", approvers_first())] {
        let (_folder, url) = sqlite_url(&format!("rounds-{order}"));
        let tools = tools(&url, guards).await.max_waiting_approvals(1);
        let user = User::answering(Some(ElicitationAction::Decline))
            .meanwhile(&tools, json!({"account": "ACC-R", "amount": 900}));
        let client = connect_on(&tools, &user, true).await;
        let arguments = json!({"account": "EXT-R", "amount": 900});
        let (declined, meta) = call_meta(&client, "transfer", arguments).await;
        assert_eq!(declined["reason"], "HUMAN_DECLINED", "{order}: {declined}");
        assert_eq!(user.asked().len(), 1, "{order}");
        assert_eq!(
            meta[APPROVAL_META_KEY][0]["action"], "decline",
            "{order}: {meta}"
        );
        client.cancel().await.unwrap();
        assert_eq!(
            pending(&url).await.len(),
            1,
            "{order}: the one opened meanwhile"
        );
    }
}

/// Two clients of one person on a protected server: one token may pay and
/// read orders, the other only pay. The first's call waits for approvers
/// after its user said yes; the same call by the leaner token is refused
/// beside that approval (it grants less than the token that asked) before
/// any guard is met, so its user is asked nothing, and nothing more is
/// opened — the approvers' block met first or the client's.
#[tokio::test]
async fn a_token_that_grants_less_than_the_waiting_approvals_asks_its_user_nothing() {
    async fn validate(token: String) -> Option<Caller> {
        match token.as_str() {
            "alice-full" => Some(Caller::new("alice", ["payments:write", "orders:read"])),
            "alice-lean" => Some(Caller::new("alice", ["payments:write"])),
            _ => None,
        }
    }
    async fn client_of(url: &str, token: &str, user: &User) -> RunningService<RoleClient, User> {
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
        config.auth_header = Some(token.to_owned());
        let transport = StreamableHttpClientTransport::from_config(config);
        user.clone()
            .serve(transport)
            .await
            .expect("the client connects")
    }

    for (order, guards) in [("ahead", approvers_first()), ("behind", client_first())] {
        let (_folder, store_url) = sqlite_url(&format!("lean-token-{order}"));
        let tools = tools(&store_url, guards).await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let options = HttpOptions::new().require_bearer(BearerAuth::new(url.clone(), validate));
        tokio::spawn(async move { options.serve(listener, tools).await });

        let account = format!("EXT-LEAN-{order}");
        let arguments = json!({"account": account, "amount": 900});
        let full = User::answering(Some(ElicitationAction::Accept));
        let client = client_of(&url, "alice-full", &full).await;
        let ticket = ticket_of(&call(&client, "transfer", arguments.clone()).await);
        assert_eq!(full.asked().len(), 1, "{order}: {:?}", full.asked());
        client.cancel().await.unwrap();

        let lean = User::answering(Some(ElicitationAction::Accept));
        let client = client_of(&url, "alice-lean", &lean).await;
        let refused = call(&client, "transfer", arguments).await;
        assert_eq!(
            refused["reason"], "INSUFFICIENT_SCOPE",
            "{order}: {refused}"
        );
        assert!(!refused.to_string().contains(&ticket), "{order}: {refused}");
        assert_eq!(lean.asked().len(), 0, "{order}: its user was asked");
        client.cancel().await.unwrap();

        let pending = pending(&store_url).await;
        assert_eq!(pending.len(), 1, "{order}: {pending:?}");
        assert_eq!(pending[0].id, ticket);
        assert_eq!(times(&format!("transfer {account} 900")), 0);
    }
}
