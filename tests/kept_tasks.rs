//! Tasks kept in the store: two tool sets (two replicas) sharing a store,
//! each with its own rmcp client. A task made on one is read on the other,
//! its question is answered through the other, and it is cancelled from
//! the other; a task whose replica stopped renewing its lease is taken
//! over — run again when its tool is read-only, ended
//! `MAY_HAVE_TAKEN_EFFECT` when it is destructive — and a restart (a new
//! store on the same SQLite file) loses none. The clock is tokio's paused
//! one where the store is in memory, so the polling waits no real time.
#![cfg(all(feature = "rmcp", feature = "sqlite"))]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, Implementation, ProtocolVersion, UpdateTaskParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use tool_envelope::mcp::{Elicitation, TaskSupport, ToolContext, ToolSet};
use tool_envelope::store::{
    self, ApprovalRecord, ApprovalState, AuditEntry, Decision, Escalate, EscalationRecord,
    EscalationState, MemoryStore, Store, StoreError, StoreFuture, TaskRecord, TaskUpdate,
};
use tool_envelope::{ErrorEnvelope, tool};

static REFUNDS: AtomicU32 = AtomicU32::new(0);

/// What the tools below did, in order — the quarters reported, the orders
/// refunded over the cap: each test uses its own.
static DONE: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// How many times `what` was done.
fn times(what: &str) -> usize {
    DONE.lock()
        .unwrap()
        .iter()
        .filter(|done| *done == what)
        .count()
}

/// A report: read-only, safe to run again.
#[tool(read_only)]
fn report(quarter: String) -> Result<String, ErrorEnvelope> {
    DONE.lock().unwrap().push(quarter.clone());
    Ok(format!("report for {quarter}"))
}

/// A refund: run twice, it pays twice.
#[tool(destructive)]
fn refund(order: String) -> Result<String, ErrorEnvelope> {
    REFUNDS.fetch_add(1, Ordering::SeqCst);
    Ok(format!("refunded {order}"))
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

/// Takes an hour: long enough to be cancelled.
#[tool(read_only)]
async fn long_job() -> Result<String, ErrorEnvelope> {
    tokio::time::sleep(Duration::from_secs(3600)).await;
    Ok("done".to_owned())
}

/// Says it began, then takes an hour.
#[tool(read_only)]
async fn tagged_job(tag: String) -> Result<String, ErrorEnvelope> {
    DONE.lock().unwrap().push(tag);
    tokio::time::sleep(Duration::from_secs(3600)).await;
    Ok("done".to_owned())
}

/// Lets `held_report` finish, once a permit each.
static HELD_REPORTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(0);

/// A permit each time `held_report` begins.
static HELD_REPORTS_BEGUN: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(0);

/// A report that says it began, then waits to be let go: read-only.
#[tool(read_only)]
async fn held_report(tag: String) -> Result<String, ErrorEnvelope> {
    DONE.lock().unwrap().push(tag.clone());
    HELD_REPORTS_BEGUN.add_permits(1);
    HELD_REPORTS.acquire().await.expect("let go").forget();
    Ok(format!("report {tag}"))
}

fn replica(store: Arc<dyn Store>) -> ToolSet {
    ToolSet::new()
        .tool::<report>()
        .tool::<held_report>()
        .tool::<refund>()
        .tool::<confirmed>()
        .tool::<long_job>()
        .tool::<tagged_job>()
        .tasks(|_| TaskSupport::Optional)
        .store(store)
        .approvals_in_background(false)
}

#[derive(Clone)]
struct Client;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder()
            .enable_elicitation()
            .enable_tasks()
            .build();
        ClientConfig::new(capabilities, Implementation::new("kept-tasks-test", "1"))
    }
}

async fn connect(tools: ToolSet) -> RunningService<RoleClient, Client> {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = tools.serve(server_io).await.expect("the server starts");
        let _ = running.waiting().await;
    });
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    Client
        .serve_with_lifecycle(client_io, lifecycle)
        .await
        .expect("the client connects")
}

async fn task_of(
    client: &RunningService<RoleClient, Client>,
    tool: &str,
    arguments: Value,
) -> String {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(arguments.as_object().unwrap().clone());
    match client.call_tool_once(params).await.expect("an answer") {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("expected a task, got {other:?}"),
    }
}

async fn get(client: &RunningService<RoleClient, Client>, task: &str) -> Value {
    let detailed = client
        .get_task(GetTaskParams::new(task))
        .await
        .expect("tasks/get");
    serde_json::to_value(detailed).unwrap()
}

/// That `task` is unknown to `client`: not read, answered or cancelled.
async fn unknown_to(client: &RunningService<RoleClient, Client>, task: &str) {
    let read = client.get_task(GetTaskParams::new(task)).await;
    assert!(read.is_err(), "{read:?}");
    let cancelled = client.cancel_task(CancelTaskParams::new(task)).await;
    assert!(cancelled.is_err(), "{cancelled:?}");
    let answered = (client.update_task(UpdateTaskParams::new(task, Default::default()))).await;
    assert!(answered.is_err(), "{answered:?}");
}

/// Polls the task (on the paused clock) until its status message names
/// the ticket it waits for: the message, and the ticket.
async fn waiting_ticket(
    client: &RunningService<RoleClient, Client>,
    task: &str,
) -> (String, String) {
    for _ in 0..100 {
        let waiting = get(client, task).await;
        if let Some(message) = waiting["statusMessage"].as_str()
            && let Some((_, ticket)) = message.split_once("ticket ")
        {
            assert_eq!(waiting["status"], "working", "{waiting}");
            let ticket = ticket.trim_end_matches(')').to_owned();
            return (message.to_owned(), ticket);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("the task never said what it waits for");
}

/// Polls the task (on the paused clock) until its status is not `status`.
async fn past(client: &RunningService<RoleClient, Client>, task: &str, status: &str) -> Value {
    for _ in 0..1_000 {
        let state = get(client, task).await;
        if state["status"] != status {
            return state;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("the task stayed {status}");
}

#[tokio::test(start_paused = true)]
async fn a_task_made_on_one_replica_is_read_on_the_other() {
    let shared: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let one = connect(replica(Arc::clone(&shared))).await;
    let two = connect(replica(Arc::clone(&shared))).await;
    let mut tasks = Vec::new();
    for n in 0..20 {
        tasks.push(task_of(&one, "report", json!({"quarter": format!("Q{n}")})).await);
    }
    for (n, task) in tasks.iter().enumerate() {
        let done = past(&two, task, "working").await;
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(
            done["result"]["structuredContent"],
            json!({"result": format!("report for Q{n}")}),
            "task {n} read on the other replica"
        );
    }
}

/// A caller's bound on running tasks holds across the replicas sharing a
/// store: two running on one replica, the other refuses a third with
/// `TOO_MANY_TASKS` (each replica alone would take two), and takes it once
/// one of them ended.
#[tokio::test(start_paused = true)]
async fn a_callers_task_bound_holds_across_the_replicas() {
    let shared: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let one = connect(replica(Arc::clone(&shared)).max_tasks(100, 2)).await;
    let two = connect(replica(Arc::clone(&shared)).max_tasks(100, 2)).await;
    let first = task_of(&one, "long_job", json!({})).await;
    task_of(&one, "long_job", json!({})).await;

    let params = || CallToolRequestParams::new("long_job").with_arguments(serde_json::Map::new());
    match two.call_tool_once(params()).await.expect("an answer") {
        CallToolResponse::Complete(result) => {
            assert_eq!(result.is_error, Some(true));
            let envelope = result.structured_content.unwrap();
            assert_eq!(envelope["reason"], "TOO_MANY_TASKS", "{envelope}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }

    one.cancel_task(CancelTaskParams::new(&first))
        .await
        .expect("tasks/cancel");
    let stopped = past(&one, &first, "working").await;
    assert_eq!(stopped["status"], "cancelled", "{stopped}");
    // Its end reaches the store as the task's replica writes it.
    for _ in 0..1_000 {
        let kept = shared.task(&first).await.unwrap().unwrap();
        if kept.state.is_finished() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    match two.call_tool_once(params()).await.expect("an answer") {
        CallToolResponse::Task(_) => {}
        other => panic!("expected a task once one ended, got {other:?}"),
    }
}

/// The same bound is each service's own: the caller at it on one service
/// sharing the store starts a task on another, whose count of theirs is
/// apart (a subject there may be someone else).
#[tokio::test(start_paused = true)]
async fn a_callers_task_bound_is_each_services_own() {
    let shared: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let service = |name: &'static str| {
        let tools = replica(Arc::clone(&shared)).server_info(name, "1");
        connect(tools.max_tasks(100, 1))
    };
    let (shop, hr) = (service("shop").await, service("hr").await);
    let params = || CallToolRequestParams::new("long_job").with_arguments(serde_json::Map::new());
    task_of(&shop, "long_job", json!({})).await;
    match shop.call_tool_once(params()).await.expect("an answer") {
        CallToolResponse::Complete(result) => {
            let envelope = result.structured_content.unwrap();
            assert_eq!(envelope["reason"], "TOO_MANY_TASKS", "{envelope}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    task_of(&hr, "long_job", json!({})).await;
    assert_eq!(shared.running_tasks("hr", None).await.unwrap(), (1, 1));
    assert_eq!(shared.running_tasks("shop", None).await.unwrap(), (1, 1));
}

/// Calls starting tasks at the same moment on one replica do not pass the
/// caller's bound together: they start one at a time on the replica, and
/// the store counts again as it keeps each. One task runs on the other
/// replica, the bound is two, and of eight starts at once on this one, one
/// is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starts_at_the_same_moment_on_one_replica_do_not_pass_the_bound_together() {
    let folder = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", folder.path().join("bound.db").display());
    let shared = store::open(&url).await.unwrap();
    let one = connect(replica(Arc::clone(&shared)).max_tasks(100, 2)).await;
    let two = connect(replica(Arc::clone(&shared)).max_tasks(100, 2)).await;
    task_of(&two, "long_job", json!({})).await;

    let params = || CallToolRequestParams::new("long_job").with_arguments(serde_json::Map::new());
    let answers =
        futures_util::future::join_all((0..8).map(|_| one.call_tool_once(params()))).await;
    let (mut started, mut refused) = (0, 0);
    for answer in answers {
        match answer.expect("an answer") {
            CallToolResponse::Task(_) => started += 1,
            CallToolResponse::Complete(result) => {
                let envelope = result.structured_content.unwrap();
                assert_eq!(envelope["reason"], "TOO_MANY_TASKS", "{envelope}");
                refused += 1;
            }
            other => panic!("expected a task or a refusal, got {other:?}"),
        }
    }
    assert_eq!((started, refused), (1, 7));
}

/// Nor do starts at the same moment on two replicas: the store counts a
/// caller's tasks and keeps the next in one step. Eight starts at once on
/// each of two replicas sharing a SQLite file, against a bound of two: two
/// are taken, and the fourteen refused never run. (Which refusals the
/// store makes, rather than the count read before it, depends on timing
/// here; `runtime/src/mcp/server/tasks/tests.rs` holds that case without
/// any.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starts_at_the_same_moment_on_two_replicas_do_not_pass_the_bound_together() {
    let folder = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", folder.path().join("bound.db").display());
    let one = connect(replica(store::open(&url).await.unwrap()).max_tasks(100, 2)).await;
    let two = connect(replica(store::open(&url).await.unwrap()).max_tasks(100, 2)).await;
    let tag = |n: usize| format!("two-replicas-{n}");
    let start = |n: usize| {
        let params = CallToolRequestParams::new("tagged_job")
            .with_arguments(json!({"tag": tag(n)}).as_object().unwrap().clone());
        let on = if n.is_multiple_of(2) { &one } else { &two };
        on.call_tool_once(params)
    };
    let answers = futures_util::future::join_all((0..16).map(start)).await;
    let (mut started, mut refused) = (Vec::new(), Vec::new());
    for (n, answer) in answers.into_iter().enumerate() {
        match answer.expect("an answer") {
            CallToolResponse::Task(_) => started.push(n),
            CallToolResponse::Complete(result) => {
                let envelope = result.structured_content.unwrap();
                assert_eq!(envelope["reason"], "TOO_MANY_TASKS", "{envelope}");
                refused.push(n);
            }
            other => panic!("expected a task or a refusal, got {other:?}"),
        }
    }
    assert_eq!(started.len(), 2, "started {started:?}");
    // The two taken begin; by then a refused one would have too.
    for _ in 0..10_000 {
        if started.iter().all(|&n| times(&tag(n)) == 1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert!(started.iter().all(|&n| times(&tag(n)) == 1));
    for n in refused {
        assert_eq!(times(&tag(n)), 0, "refused start {n} ran");
    }
}

#[tokio::test(start_paused = true)]
async fn a_question_is_answered_and_a_task_cancelled_through_the_other_replica() {
    let shared: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let one = connect(replica(Arc::clone(&shared))).await;
    let two = connect(replica(Arc::clone(&shared))).await;

    let asking = task_of(&one, "confirmed", json!({})).await;
    let waiting = past(&two, &asking, "working").await;
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    assert_eq!(
        waiting["inputRequests"]["ok"]["method"],
        "elicitation/create"
    );
    let answer = json!({"action": "accept", "content": {"ok": true}});
    two.update_task(UpdateTaskParams::new(
        &asking,
        [("ok".to_owned(), answer)].into(),
    ))
    .await
    .expect("tasks/update on the other replica");
    let done = past(&two, &asking, "input_required").await;
    let done = match done["status"].as_str() {
        Some("working") => past(&two, &asking, "working").await,
        _ => done,
    };
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"result": "confirmed: true"})
    );

    let long = task_of(&one, "long_job", json!({})).await;
    two.cancel_task(CancelTaskParams::new(&long))
        .await
        .expect("tasks/cancel on the other replica");
    let stopped = past(&one, &long, "working").await;
    assert_eq!(stopped["status"], "cancelled", "{stopped}");
}

/// Answers reaching a replica that does not run the task are kept only
/// for what the task asks, the first to each: a caller cannot grow its
/// record with answers to nothing, nor change an answer given.
#[tokio::test(start_paused = true)]
async fn a_task_keeps_only_the_first_answer_to_each_question_it_asks() {
    let shared: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let one = connect(replica(Arc::clone(&shared))).await;
    let two = connect(replica(Arc::clone(&shared))).await;

    let asking = task_of(&one, "confirmed", json!({})).await;
    let waiting = past(&two, &asking, "working").await;
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    let filler = "x".repeat(10_000);
    let unasked: std::collections::BTreeMap<String, Value> = (0..100)
        .map(|n| (format!("unasked-{n}"), json!(filler)))
        .collect();
    two.update_task(UpdateTaskParams::new(&asking, unasked))
        .await
        .expect("tasks/update answering nothing asked");
    let declined = json!({"action": "decline"});
    let accepted = json!({"action": "accept", "content": {"ok": true}});
    for answer in [declined.clone(), accepted] {
        two.update_task(UpdateTaskParams::new(
            &asking,
            [("ok".to_owned(), answer)].into(),
        ))
        .await
        .expect("tasks/update on the other replica");
    }
    let kept = shared.task(&asking).await.unwrap().unwrap();
    assert_eq!(
        kept.input_responses,
        Some(json!({"ok": declined})),
        "only the first answer to what was asked"
    );
    let done = past(&two, &asking, "input_required").await;
    let done = match done["status"].as_str() {
        Some("working") => past(&two, &asking, "working").await,
        _ => done,
    };
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"result": "not confirmed"}),
        "{done}"
    );
}

/// The replica running a task shows a question it asks once the question
/// is kept in the store, where any replica takes its answer — not sooner,
/// when an answer through another replica would find nothing asked.
#[tokio::test(start_paused = true)]
async fn a_question_is_shown_once_any_replica_takes_its_answer() {
    let shared: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let one = connect(replica(Arc::clone(&shared))).await;
    let two = connect(replica(Arc::clone(&shared))).await;

    let asking = task_of(&one, "confirmed", json!({})).await;
    // Half a second in, the tool has asked; the question is kept within
    // the second.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let kept = shared.task(&asking).await.unwrap().unwrap();
    assert_eq!(kept.input_requests, None, "not kept yet");
    let shown = get(&one, &asking).await;
    assert_eq!(shown["status"], "working", "{shown}");
    let waiting = past(&one, &asking, "working").await;
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    let kept = shared.task(&asking).await.unwrap().unwrap();
    assert!(kept.input_requests.unwrap().get("ok").is_some());

    let accepted = json!({"action": "accept", "content": {"ok": true}});
    two.update_task(UpdateTaskParams::new(
        &asking,
        [("ok".to_owned(), accepted)].into(),
    ))
    .await
    .expect("tasks/update on the other replica");
    let done = past(&one, &asking, "input_required").await;
    let done = match done["status"].as_str() {
        Some("working") => past(&one, &asking, "working").await,
        _ => done,
    };
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"result": "confirmed: true"}),
        "{done}"
    );
}

#[tokio::test]
async fn a_dead_replicas_tasks_are_taken_over_and_a_destructive_one_never_runs_twice() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("kept-tasks.db");
    let url = format!("sqlite:{}", path.display());
    // A replica that made two tasks and died: its leases ran out.
    {
        let dead = store::open(&url).await.unwrap();
        let expired = store::now_ms() - 1;
        for (tool, arguments, safe) in [
            ("refund", json!({"order": "O-9"}), false),
            ("report", json!({"quarter": "restart"}), true),
        ] {
            let mut task = TaskRecord::new(tool, arguments, None, 600_000)
                .held_by("dead-replica", expired)
                .safe_to_repeat(safe);
            task.id = format!("task-{tool}");
            assert!(dead.create_task(&task, u64::MAX).await.unwrap());
        }
    }
    // After a restart: a new store on the same file.
    let tools = replica(store::open(&url).await.unwrap());
    let client = connect(tools.clone()).await;
    let refunds = REFUNDS.load(Ordering::SeqCst);
    tools.run_approved().await.unwrap();
    tools.run_approved().await.unwrap();

    let refund = get(&client, "task-refund").await;
    assert_eq!(refund["status"], "completed", "{refund}");
    assert_eq!(refund["result"]["isError"], true);
    assert_eq!(
        refund["result"]["structuredContent"]["reason"], "MAY_HAVE_TAKEN_EFFECT",
        "{refund}"
    );
    assert_eq!(
        REFUNDS.load(Ordering::SeqCst),
        refunds,
        "the refund was not run again"
    );

    let report = get(&client, "task-report").await;
    assert_eq!(report["status"], "completed", "{report}");
    assert_eq!(
        report["result"]["structuredContent"],
        json!({"result": "report for restart"})
    );
    assert_eq!(times("restart"), 1, "the report ran again, once");
}

/// A task whose time to live ran out before any replica took it over is
/// not run again: its caller can no longer read or cancel it, and the
/// scopes it would run with are of then. It ends, and is not claimed on
/// every pass after.
#[tokio::test]
async fn a_task_past_its_time_to_live_is_not_run_again_when_taken_over() {
    let shared: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let now = store::now_ms();
    let arguments = json!({"quarter": "too-late"});
    let mut task = TaskRecord::new("report", arguments, Some("alice".into()), 600_000)
        .held_by("dead-replica", now - 60_000)
        .safe_to_repeat(true);
    (task.created_ms, task.updated_ms) = (now - 700_000, now - 700_000);
    assert!(shared.create_task(&task, u64::MAX).await.unwrap());
    let tools = replica(Arc::clone(&shared));
    tools.run_approved().await.unwrap();
    assert_eq!(times("too-late"), 0, "run again past its time to live");
    let ended = shared.task(&task.id).await.unwrap().unwrap();
    assert!(ended.state.is_finished(), "{ended:?}");
    let claimed = shared
        .claim_abandoned_tasks(
            "",
            None,
            "another",
            store::now_ms(),
            store::now_ms() + 30_000,
            10,
        )
        .await
        .unwrap();
    assert!(claimed.is_empty(), "{claimed:?}");
}

/// A release rolling out: a replica of the new release made a task of a
/// tool the old release lacks, and died. An old replica leaves it (it
/// would end it "unknown tool", or as may-have-run), and a new one runs it
/// again, once.
#[tokio::test]
async fn a_task_of_a_tool_a_replica_lacks_is_left_to_one_that_has_it() {
    let shared: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let now = store::now_ms();
    let arguments = json!({"quarter": "rolling"});
    let task = TaskRecord::new("report", arguments, Some("alice".into()), 600_000)
        .held_by("dead-replica", now - 1)
        .safe_to_repeat(true);
    assert!(shared.create_task(&task, u64::MAX).await.unwrap());
    let old = ToolSet::new()
        .tool::<refund>()
        .tasks(|_| TaskSupport::Optional)
        .store(Arc::clone(&shared))
        .approvals_in_background(false);
    old.run_approved().await.unwrap();
    let left = shared.task(&task.id).await.unwrap().unwrap();
    assert!(
        !left.state.is_finished(),
        "ended by a replica without the tool: {left:?}"
    );
    assert_eq!(left.runs, task.runs, "not claimed");
    let new = replica(Arc::clone(&shared));
    new.run_approved().await.unwrap();
    let ran = shared.task(&task.id).await.unwrap().unwrap();
    assert_eq!(ran.state, store::TaskState::Completed, "{ran:?}");
    assert_eq!(
        ran.result.as_ref().unwrap()["structuredContent"],
        json!({"result": "report for rolling"})
    );
    assert_eq!(times("rolling"), 1, "run again, once");
}

/// A task runs within one time to live from when it was made, wherever it
/// runs, as rmcp ends it on the replica that made it: taken over with its
/// lease renewed lately but made long ago, it is not run again; taken over
/// with ten seconds left, it runs again for ten seconds, then ends failed.
#[tokio::test(start_paused = true)]
async fn a_task_taken_over_runs_only_within_its_time_to_live_from_when_it_was_made() {
    let shared: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let now = store::now_ms();
    let mut old = TaskRecord::new("tagged_job", json!({"tag": "made-long-ago"}), None, 600_000)
        .held_by("dead-replica", now - 1)
        .safe_to_repeat(true);
    (old.created_ms, old.updated_ms) = (now - 700_000, now - 5_000);
    let mut late = TaskRecord::new(
        "tagged_job",
        json!({"tag": "ten-seconds-left"}),
        None,
        600_000,
    )
    .held_by("dead-replica", now - 1)
    .safe_to_repeat(true);
    (late.created_ms, late.updated_ms) = (now - 590_000, now - 5_000);
    for task in [&old, &late] {
        assert!(shared.create_task(task, u64::MAX).await.unwrap());
    }
    let tools = replica(Arc::clone(&shared));
    let pass = tokio::time::timeout(Duration::from_secs(60), tools.run_approved()).await;
    assert!(pass.is_ok(), "the pass ran the task past its time to live");
    assert_eq!(times("made-long-ago"), 0, "run again past its time to live");
    assert_eq!(times("ten-seconds-left"), 1, "run again in the time left");
    for task in [&old, &late] {
        let ended = shared.task(&task.id).await.unwrap().unwrap();
        assert!(ended.state.is_finished(), "{ended:?}");
    }
    let expired = shared.task(&late.id).await.unwrap().unwrap();
    assert_eq!(expired.state, store::TaskState::Failed, "{expired:?}");
}

/// A task that stopped each replica that ran it (it exhausts their memory,
/// say) is not handed on through the whole fleet: run twice in all, it
/// ends unrun the next time it is taken over.
#[tokio::test]
async fn a_task_that_stops_every_replica_is_not_run_a_third_time() {
    let shared: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let mut task = TaskRecord::new("report", json!({"quarter": "poison"}), None, 600_000)
        .held_by("second-dead-replica", store::now_ms() - 1)
        .safe_to_repeat(true);
    task.runs = 1; // run where it was made, then where it was taken over
    assert!(shared.create_task(&task, u64::MAX).await.unwrap());
    let tools = replica(Arc::clone(&shared));
    tools.run_approved().await.unwrap();
    assert_eq!(times("poison"), 0, "run a third time");
    let ended = shared.task(&task.id).await.unwrap().unwrap();
    assert_eq!(ended.state, store::TaskState::Completed, "{ended:?}");
    let result = ended.result.unwrap();
    assert_eq!(result["isError"], true, "{result}");
    let message = result["structuredContent"]["message"].as_str().unwrap();
    assert!(message.contains("stopped before it finished"), "{message}");
    assert_eq!(
        result["structuredContent"]["isRetryable"], false,
        "{result}"
    );
}

/// The replica running a task renews its lease every ten seconds by the
/// clock, however slow the store is to answer the reads between: with
/// reads of 2.5 s, a renewal every ten reads would come every 35 s, past
/// the 30 s lease, and another replica would take the task over.
#[tokio::test(start_paused = true)]
async fn a_running_tasks_lease_is_renewed_by_the_clock_however_slow_the_store() {
    let slow = Slow::new();
    let client = connect(replica(slow.clone())).await;
    slow.task_read_ms.store(2_500, Ordering::SeqCst);
    let task = task_of(&client, "tagged_job", json!({"tag": "slow-store"})).await;
    let renewals = || {
        let updates = slow.task_updates.lock().unwrap();
        (updates.iter())
            .filter(|(id, lease)| *id == task && lease.is_some())
            .count()
    };
    let before = renewals();
    tokio::time::sleep(Duration::from_secs(61)).await;
    let renewed = renewals() - before;
    assert!(renewed >= 5, "{renewed} renewals in a minute");
    client
        .cancel_task(CancelTaskParams::new(&task))
        .await
        .unwrap();
}

/// A task is kept with its time and lease as of when it is kept, not as
/// of when its call came: the caller's turn and the count before it may
/// take long on a slow store, and a lease taken at the call's coming could
/// have run out by then — another replica would take over a task this one
/// is about to run.
#[tokio::test]
async fn a_task_is_kept_with_a_lease_counted_from_when_it_is_kept() {
    let slow = Slow::new();
    slow.slow_count.store(true, Ordering::SeqCst);
    let client = connect(replica(slow.clone())).await;
    let task = task_of(&client, "tagged_job", json!({"tag": "stamped"})).await;
    let counted_at = slow.counted_at_ms.load(Ordering::SeqCst);
    let kept = slow.kept_tasks.lock().unwrap().clone();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let (created, lease) = kept[0];
    assert!(
        created >= counted_at,
        "made at {created}, counted at {counted_at}"
    );
    assert!(
        lease >= counted_at + 30_000,
        "lease to {lease}, counted at {counted_at}"
    );
    client
        .cancel_task(CancelTaskParams::new(&task))
        .await
        .unwrap();
}

/// A replica that finds its task taken over — by another (it could not
/// renew the lease in time), or by its own runner under the same holder's
/// name (its store was away past the lease) — stops running it, rather
/// than run it beside the run that took it over, and keeps nothing more of
/// it; its caller reads the task where it is now.
#[tokio::test(start_paused = true)]
async fn a_task_whose_lease_another_replica_took_stops_here() {
    for (n, other) in [Some("another-replica"), None].into_iter().enumerate() {
        let slow = Slow::new();
        let client = connect(replica(slow.clone())).await;
        let tag = format!("lease-lost-{n}");
        let task = task_of(&client, "tagged_job", json!({"tag": tag})).await;
        let record = slow.inner.task(&task).await.unwrap().unwrap();
        let taker = other.map_or_else(|| record.holder.clone().unwrap(), str::to_owned);
        let taken = (slow.inner)
            .claim_abandoned_tasks(&record.service, None, &taker, i64::MAX, i64::MAX, 1)
            .await
            .unwrap();
        assert_eq!(taken.len(), 1, "taken over");
        let updates = || {
            let updates = slow.task_updates.lock().unwrap();
            updates.iter().filter(|(id, _)| *id == task).count()
        };
        let before = updates();
        tokio::time::sleep(Duration::from_secs(3_700)).await;
        assert!(
            updates() - before <= 1,
            "{taker}: at most one renewal finds it taken; nothing after it, no end kept"
        );
        let record = slow.inner.task(&task).await.unwrap().unwrap();
        assert_eq!(record.holder.as_deref(), Some(taker.as_str()));
        assert!(!record.state.is_finished(), "{record:?}");
        // Its caller, asking this replica, reads where the task is — the
        // run that took it over — not "cancelled", as this one stopped it.
        let read = get(&client, &task).await;
        assert_eq!(read["status"], "working", "{taker}: {read}");
    }
}

/// A task the store could not keep runs all the same, as this replica's
/// alone: its renewals find no record, which is not another replica's
/// taking it over, and it is not stopped.
#[tokio::test(start_paused = true)]
async fn a_task_the_store_could_not_keep_runs_on_here() {
    let slow = Slow::new();
    slow.keeping_tasks_fails.store(true, Ordering::SeqCst);
    let client = connect(replica(slow.clone())).await;
    let task = task_of(&client, "tagged_job", json!({"tag": "not-kept"})).await;
    tokio::time::sleep(Duration::from_secs(61)).await;
    assert_eq!(times("not-kept"), 1);
    let read = get(&client, &task).await;
    assert_eq!(read["status"], "working", "{read}");
    client
        .cancel_task(CancelTaskParams::new(&task))
        .await
        .unwrap();
}

/// A task taken over runs again under a lease the replica renews while
/// it runs, and the next is claimed only once it ended: no other replica
/// takes either over meanwhile and runs it a second time.
#[tokio::test(start_paused = true)]
async fn a_task_taken_over_is_held_under_a_renewed_lease_and_runs_once() {
    let slow = Slow::new();
    let store: Arc<dyn Store> = slow.clone();
    let expired = store::now_ms() - 1;
    for n in 1..=2 {
        let arguments = json!({"tag": format!("held-{n}")});
        let mut task = TaskRecord::new("held_report", arguments, None, 600_000)
            .held_by("dead-replica", expired)
            .safe_to_repeat(true);
        task.id = format!("held-{n}");
        assert!(store.create_task(&task, u64::MAX).await.unwrap());
    }
    let tools = replica(Arc::clone(&store));
    let pass = tokio::spawn({
        let tools = tools.clone();
        async move { tools.run_approved().await }
    });
    HELD_REPORTS_BEGUN.acquire().await.unwrap().forget();
    // Whichever was claimed first runs; the other is still the dead one's.
    let mut holders = Vec::new();
    for n in 1..=2 {
        let task = store.task(&format!("held-{n}")).await.unwrap().unwrap();
        holders.push((task.id, task.holder));
    }
    let running = (holders.iter())
        .find(|(_, holder)| holder.as_deref() != Some("dead-replica"))
        .map(|(id, _)| id.clone())
        .unwrap_or_default();
    // Twenty-five seconds pass while it runs: its lease is renewed twice.
    tokio::time::sleep(Duration::from_secs(25)).await;
    let renewals = (slow.task_updates.lock().unwrap().iter())
        .filter(|(id, lease)| *id == running && lease.is_some())
        .count();
    // Let go before anything is asserted: a failure then ends the test.
    HELD_REPORTS.add_permits(2);
    pass.await.unwrap().unwrap();
    let still_dead = (holders.iter())
        .filter(|(_, holder)| holder.as_deref() == Some("dead-replica"))
        .count();
    assert_eq!(
        still_dead, 1,
        "the next is not claimed while the first runs: {holders:?}"
    );
    assert_eq!(renewals, 2, "{:?}", slow.task_updates.lock().unwrap());
    for n in 1..=2 {
        let task = store.task(&format!("held-{n}")).await.unwrap().unwrap();
        assert_eq!(task.state, store::TaskState::Completed, "{task:?}");
        assert_eq!(times(&format!("held-{n}")), 1, "held-{n} ran once");
    }
}

/// A task taken over and run again is cancelled by its caller while it
/// runs: the run stops, and the task ends cancelled, as on the replica
/// that made it.
#[tokio::test(start_paused = true)]
async fn a_task_taken_over_stops_when_its_caller_cancels_it() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let arguments = json!({"tag": "taken-over-job"});
    let mut task = TaskRecord::new("tagged_job", arguments, None, 7_200_000)
        .held_by("dead-replica", store::now_ms() - 1)
        .safe_to_repeat(true);
    task.id = "taken-over-job".to_owned();
    assert!(store.create_task(&task, u64::MAX).await.unwrap());
    let tools = replica(Arc::clone(&store));
    let pass = tokio::spawn({
        let tools = tools.clone();
        async move { tools.run_approved().await }
    });
    while times("taken-over-job") == 0 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(store.cancel_task(&task.id).await.unwrap());
    let stopped = tokio::time::timeout(Duration::from_secs(60), pass).await;
    let ended = store.task(&task.id).await.unwrap().unwrap();
    assert!(
        stopped.is_ok(),
        "the pass still runs the cancelled task: {ended:?}"
    );
    assert_eq!(ended.state, store::TaskState::Cancelled, "{ended:?}");
}

/// Over $500 an approver with `refunds:approve` decides.
fn cap(call: &tool_envelope::guard::ToolCall) -> Result<(), tool_envelope::guard::Blocked> {
    let amount: u64 = call.require("amount")?;
    if amount > 500 {
        return Err(tool_envelope::guard::Blocked::new(format!(
            "Refund of ${amount} exceeds the $500 cap"
        ))
        .unless_approved_by(tool_envelope::guard::Approvers::scope("refunds:approve")));
    }
    Ok(())
}

/// A refund over the cap, as a task.
#[tool(destructive, guard = cap)]
fn capped_refund(order: String, amount: u64) -> Result<String, ErrorEnvelope> {
    DONE.lock().unwrap().push(order.clone());
    Ok(format!("refunded ${amount} on {order}"))
}

/// Checks that `approver`'s yes to `ticket`, which its caller withdrew, is
/// refused.
async fn refused_as_withdrawn(
    tools: &ToolSet,
    ticket: &str,
    approver: &tool_envelope::guard::Caller,
) {
    let late = tools.decide(ticket, approver, true, "ok").await;
    assert!(
        matches!(
            late,
            Err(tool_envelope::mcp::DecisionError::NotPending(
                store::ApprovalState::Withdrawn
            ))
        ),
        "{late:?}"
    );
}

/// A replica that serves `capped_refund`, as a task when the client can,
/// its approvals in `store`, run when a test says so.
fn capped(store: Arc<dyn Store>) -> ToolSet {
    ToolSet::new()
        .tool::<capped_refund>()
        .tasks(|_| TaskSupport::Optional)
        .store(store)
        .approvals_in_background(false)
}

#[tokio::test(start_paused = true)]
async fn a_task_waits_for_its_approver_says_whom_and_ends_with_the_result() {
    let shared: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tools = capped(Arc::clone(&shared));
    let one = connect(tools.clone()).await;
    let other = connect(replica(Arc::clone(&shared))).await;
    let task = task_of(
        &one,
        "capped_refund",
        json!({"order": "T-620", "amount": 620}),
    )
    .await;

    // The task waits, and says for whom: here and on the other replica.
    let (message, ticket) = waiting_ticket(&one, &task).await;
    assert!(message.contains("refunds:approve"), "{message}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let there = get(&other, &task).await;
    assert_eq!(there["statusMessage"], message, "{there}");

    let approver = tool_envelope::guard::Caller::new("carol", ["refunds:approve"]);
    tools.decide(&ticket, &approver, true, "ok").await.unwrap();
    tools.run_approved().await.unwrap();
    let done = past(&one, &task, "working").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"result": "refunded $620 on T-620"})
    );
}

#[tokio::test(start_paused = true)]
async fn a_task_still_waiting_for_its_approver_ends_with_its_ticket_before_it_expires() {
    let tools = capped(Arc::new(MemoryStore::new()));
    let client = connect(tools.clone()).await;
    let arguments = json!({"order": "T-730", "amount": 730});
    let made = tokio::time::Instant::now();
    let task = task_of(&client, "capped_refund", arguments.clone()).await;

    // An approver says yes a minute in, but nothing runs the call yet.
    tokio::time::sleep(Duration::from_secs(60)).await;
    let waiting = get(&client, &task).await;
    assert_eq!(waiting["status"], "working", "{waiting}");
    let message = waiting["statusMessage"]
        .as_str()
        .expect("whom it waits for");
    let ticket = message
        .split("ticket ")
        .nth(1)
        .unwrap()
        .trim_end_matches(')');
    let approver = tool_envelope::guard::Caller::new("carol", ["refunds:approve"]);
    tools.decide(ticket, &approver, true, "ok").await.unwrap();

    // rmcp would fail the task at its time to live (5 minutes), saying
    // only that it expired; it ends before that with its ticket, as it
    // stands then, as the call not run as a task is answered.
    let ended = past(&client, &task, "working").await;
    let waited = made.elapsed();
    assert_eq!(ended["status"], "completed", "{ended}");
    assert!(
        waited >= Duration::from_secs(285) && waited < Duration::from_secs(300),
        "{waited:?}"
    );
    let reply = &ended["result"];
    assert_eq!(reply["isError"], true, "{reply}");
    let envelope = &reply["structuredContent"];
    assert_eq!(envelope["reason"], "AWAITING_APPROVAL", "{envelope}");
    assert_eq!(envelope["escalation"]["reason"], "awaiting_approval");
    assert_eq!(envelope["escalation"]["ticket"]["id"], ticket);
    assert_eq!(envelope["escalation"]["ticket"]["status"], "approved");
    // Its words say so too: no longer "waiting for an approver".
    let said = envelope["message"].as_str().unwrap();
    assert!(
        said.contains("approved by") && !said.contains("waiting for an approver"),
        "{said}"
    );
    assert_eq!(times("T-730"), 0);

    // The approval outlived the task: once run, the call made again reads
    // the outcome, and the refund ran once.
    tools.run_approved().await.unwrap();
    let again = task_of(&client, "capped_refund", arguments).await;
    let done = past(&client, &again, "working").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"result": "refunded $730 on T-730"})
    );
    assert_eq!(times("T-730"), 1);
}

/// A store that kept an approval and lost the answer: the call is not told
/// its block is final (an approver's yes would still run it), but that it
/// did not run and may be made again — which finds the approval kept.
#[tokio::test]
async fn an_approval_kept_without_an_answer_is_found_by_the_call_made_again() {
    let slow = Slow::new();
    slow.held.add_permits(1_000);
    slow.opens_unanswered.store(true, Ordering::SeqCst);
    let shared: Arc<dyn Store> = slow.clone();
    let tools = capped(Arc::clone(&shared));
    let arguments = json!({"order": "T-lost", "amount": 640});
    let reply = (tools.call_with("capped_refund", arguments.clone(), ToolContext::detached()))
        .await
        .unwrap();
    let first = reply.structured_content.unwrap();
    assert_eq!(first["errorCategory"], "transient", "{first}");
    assert_eq!(first["isRetryable"], true, "{first}");
    assert_eq!(first["reason"], "NOT_APPLIED", "{first}");
    assert!(first["escalation"]["ticket"].is_null(), "{first}");
    let kept = shared
        .approvals("", None, &[ApprovalState::Pending], 10)
        .await
        .unwrap();
    assert_eq!(kept.len(), 1, "kept though unanswered");

    slow.opens_unanswered.store(false, Ordering::SeqCst);
    let reply = (tools.call_with("capped_refund", arguments, ToolContext::detached()))
        .await
        .unwrap();
    let again = reply.structured_content.unwrap();
    assert_eq!(again["reason"], "AWAITING_APPROVAL", "{again}");
    assert_eq!(again["escalation"]["ticket"]["id"], kept[0].id.as_str());
    assert_eq!(times("T-lost"), 0);
}

/// Calls `capped_refund` with `arguments`, over the cap, and approves the
/// ticket it waits for.
async fn approved(tools: &ToolSet, arguments: &Value) {
    let reply = (tools.call_with("capped_refund", arguments.clone(), ToolContext::detached()))
        .await
        .unwrap();
    let waiting = reply.structured_content.unwrap();
    let ticket = waiting["escalation"]["ticket"]["id"].as_str().unwrap();
    let approver = tool_envelope::guard::Caller::new("carol", ["refunds:approve"]);
    tools.decide(ticket, &approver, true, "ok").await.unwrap();
}

/// A claim of an approved call the store kept and did not answer (its
/// connection lost after the commit, or no answer in time): the runner
/// reads the approval back, finds the claim its own, and runs the call
/// now — not left for the lease to lapse, then ended unrun as "may have
/// taken effect", the approver's yes spent on nothing.
#[tokio::test]
async fn an_approved_calls_claim_kept_without_an_answer_is_run_by_its_claimant() {
    let slow = Slow::new();
    slow.held.add_permits(1_000);
    let shared: Arc<dyn Store> = slow.clone();
    let tools = capped(Arc::clone(&shared));
    let arguments = json!({"order": "T-claimed", "amount": 650});
    approved(&tools, &arguments).await;
    slow.claims_unanswered.store(true, Ordering::SeqCst);
    assert_eq!(
        tools.run_approved().await.unwrap(),
        1,
        "run by its claimant"
    );
    slow.claims_unanswered.store(false, Ordering::SeqCst);
    assert_eq!(times("T-claimed"), 1);
    let reply = (tools.call_with("capped_refund", arguments, ToolContext::detached()))
        .await
        .unwrap();
    let done = reply.structured_content.unwrap();
    assert_eq!(done, json!({"result": "refunded $650 on T-claimed"}));
    assert_eq!(times("T-claimed"), 1);
}

/// Two passes of one tool set (one holder) claim the same approved call at
/// once, and the store answers neither, though it kept the first: each
/// reads the approval back, and only the claim the store kept is run —
/// the other finds another lease than its own. The call runs once.
#[tokio::test]
async fn two_passes_whose_claims_go_unanswered_run_the_call_once() {
    let slow = Slow::new();
    slow.held.add_permits(1_000);
    let shared: Arc<dyn Store> = slow.clone();
    let tools = capped(Arc::clone(&shared));
    let arguments = json!({"order": "T-twice", "amount": 655});
    approved(&tools, &arguments).await;
    slow.claims_unanswered.store(true, Ordering::SeqCst);
    slow.claims_meeting.store(true, Ordering::SeqCst);
    // In step: both read the call approved, both claim it, and both read
    // it back, running, before either runs it.
    let (one, two) = tokio::join!(tools.run_approved(), tools.run_approved());
    slow.claims_meeting.store(false, Ordering::SeqCst);
    slow.claims_unanswered.store(false, Ordering::SeqCst);
    let ran: usize = [one, two].into_iter().filter_map(Result::ok).sum();
    assert_eq!(ran, 1);
    assert_eq!(times("T-twice"), 1);
}

/// A task that waits for its approver and fails to read its ticket once
/// waits on: it does not end with its block (which reads as final, while
/// the approval lives), and ends with the call's result once approved.
#[tokio::test(start_paused = true)]
async fn a_task_whose_ticket_cannot_be_read_once_waits_on_for_its_approver() {
    let slow = Slow::new();
    slow.held.add_permits(1_000);
    let shared: Arc<dyn Store> = slow.clone();
    let tools = capped(Arc::clone(&shared));
    let client = connect(tools.clone()).await;
    let arguments = json!({"order": "T-unread", "amount": 660});
    let task = task_of(&client, "capped_refund", arguments).await;
    let ticket = ticket_awaited(&client, &task).await;
    slow.approval_reads_fail.store(2, Ordering::SeqCst);
    // Read once a second: two reads fail within three (or the task ended).
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(slow.approval_reads_fail.load(Ordering::SeqCst), 0);
    let waiting = get(&client, &task).await;
    assert_eq!(waiting["status"], "working", "{waiting}");
    let approver = tool_envelope::guard::Caller::new("carol", ["refunds:approve"]);
    tools.decide(&ticket, &approver, true, "ok").await.unwrap();
    tools.run_approved().await.unwrap();
    let done = past(&client, &task, "working").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"result": "refunded $660 on T-unread"})
    );
    assert_eq!(times("T-unread"), 1);
}

/// An approved run that meets its next block while the store cannot open
/// that block's approval keeps the block as the approval's reply — not a
/// "call again" that every call made again would read again, retryable,
/// for as long as the first approval lives.
#[tokio::test]
async fn an_approved_run_whose_next_approval_cannot_be_opened_keeps_its_block() {
    let slow = Slow::new();
    slow.held.add_permits(1_000);
    let shared: Arc<dyn Store> = slow.clone();
    let tools = capped(shared).guards(tool_envelope::guard::Guards::new().for_all(finance));
    let arguments = json!({"order": "T-next", "amount": 1400});
    let call = || tools.call_with("capped_refund", arguments.clone(), ToolContext::detached());
    let first = call().await.unwrap().structured_content.unwrap();
    assert_eq!(first["reason"], "AWAITING_APPROVAL", "{first}");
    let ticket = first["escalation"]["ticket"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let approver = tool_envelope::guard::Caller::new("carol", ["finance:approve"]);
    tools.decide(&ticket, &approver, true, "ok").await.unwrap();
    slow.opening_fails.store(true, Ordering::SeqCst);
    tools.run_approved().await.unwrap();
    slow.opening_fails.store(false, Ordering::SeqCst);
    let again = call().await.unwrap().structured_content.unwrap();
    assert_eq!(again["errorCategory"], "business", "{again}");
    assert_eq!(again["isRetryable"], false, "{again}");
    assert!(
        again["message"]
            .as_str()
            .unwrap()
            .contains("exceeds the $500 cap"),
        "{again}"
    );
    assert_eq!(times("T-next"), 0);
}

/// The ticket the task `task` waits for, once its status message names it.
async fn ticket_awaited(client: &RunningService<RoleClient, Client>, task: &str) -> String {
    waiting_ticket(client, task).await.1
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_task_withdraws_its_approval_and_no_later_yes_runs_the_call() {
    let shared: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tools = capped(Arc::clone(&shared)).max_waiting_approvals(2);
    let one = connect(tools.clone()).await;
    let other = connect(replica(Arc::clone(&shared))).await;
    let approver = tool_envelope::guard::Caller::new("carol", ["refunds:approve"]);

    // Cancelled on its own replica, and on the other one through the store.
    let here = json!({"order": "T-640", "amount": 640});
    let there = json!({"order": "T-650", "amount": 650});
    let mut tickets = Vec::new();
    for (arguments, cancelling) in [(&here, &one), (&there, &other)] {
        let task = task_of(&one, "capped_refund", arguments.clone()).await;
        let ticket = ticket_awaited(&one, &task).await;
        cancelling
            .cancel_task(CancelTaskParams::new(&task))
            .await
            .expect("tasks/cancel");
        let ended = past(&one, &task, "working").await;
        assert_eq!(ended["status"], "cancelled", "{ended}");

        // An approver's yes after the cancel is refused, and nothing runs.
        refused_as_withdrawn(&tools, &ticket, &approver).await;
        tools.run_approved().await.unwrap();
        tickets.push(ticket);
    }
    assert_eq!((times("T-640"), times("T-650")), (0, 0));
    let audit = shared.audit_log(100).await.unwrap();
    for ticket in &tickets {
        let lines: Vec<_> = (audit.iter())
            .filter(|line| &line.subject == ticket)
            .collect();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0].what, "withdraw");
    }

    // The same call made again reads that it was taken back, and opens
    // nothing; the two withdrawn count against the caller's bound of two
    // until they expire, so taking approvals back frees no room to post
    // another to the approvers.
    for (arguments, reason) in [
        (here, "HUMAN_DECLINED"),
        (
            json!({"order": "T-660", "amount": 660}),
            "TOO_MANY_APPROVALS",
        ),
    ] {
        let again = task_of(&one, "capped_refund", arguments).await;
        let ended = past(&one, &again, "working").await;
        assert_eq!(ended["status"], "completed", "{ended}");
        let envelope = &ended["result"]["structuredContent"];
        assert_eq!(envelope["reason"], reason, "{envelope}");
        if reason == "HUMAN_DECLINED" {
            let says = envelope["message"].as_str().unwrap();
            assert!(says.contains("withdrew the call"), "{says}");
        }
    }
    let pending = shared
        .approvals("", None, &[store::ApprovalState::Pending], 100)
        .await;
    assert_eq!(pending.unwrap().len(), 0);
    assert_eq!(times("T-640") + times("T-660"), 0);
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_task_withdraws_an_approval_said_yes_to_but_not_yet_run() {
    let shared: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tools = capped(Arc::clone(&shared));
    let client = connect(tools.clone()).await;
    let task = task_of(
        &client,
        "capped_refund",
        json!({"order": "T-645", "amount": 645}),
    )
    .await;
    let ticket = ticket_awaited(&client, &task).await;
    // An approver says yes; before any replica runs it, the caller cancels.
    let approver = tool_envelope::guard::Caller::new("carol", ["refunds:approve"]);
    tools.decide(&ticket, &approver, true, "ok").await.unwrap();
    client
        .cancel_task(CancelTaskParams::new(&task))
        .await
        .expect("tasks/cancel");
    let ended = past(&client, &task, "working").await;
    assert_eq!(ended["status"], "cancelled", "{ended}");
    assert_eq!(tools.run_approved().await.unwrap(), 0);
    let kept = shared.approval(&ticket).await.unwrap().unwrap();
    assert_eq!(kept.state, store::ApprovalState::Withdrawn);
    assert_eq!(times("T-645"), 0);
}

#[tokio::test]
async fn a_cancelled_task_whose_replica_stopped_has_its_approval_withdrawn_on_takeover() {
    let shared: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tools = capped(Arc::clone(&shared));
    // A replica made the task, which waits for an approver; it stopped
    // (its lease ran out) after its caller cancelled the task.
    let arguments = json!({"order": "T-670", "amount": 670});
    let waiting = tools
        .call_with("capped_refund", arguments.clone(), ToolContext::detached())
        .await
        .unwrap();
    let envelope = waiting.structured_content.unwrap();
    assert_eq!(envelope["reason"], "AWAITING_APPROVAL", "{envelope}");
    let ticket = envelope["escalation"]["ticket"]["id"].as_str().unwrap();
    let mut task = TaskRecord::new("capped_refund", arguments, None, 600_000)
        .held_by("stopped-replica", store::now_ms() - 1);
    task.id = "task-capped-refund".to_owned();
    assert!(shared.create_task(&task, u64::MAX).await.unwrap());
    shared.cancel_task(&task.id).await.unwrap();

    // Taken over: the task ends cancelled, and so does its approval.
    tools.run_approved().await.unwrap();
    let ended = shared.task(&task.id).await.unwrap().unwrap();
    assert_eq!(ended.state, store::TaskState::Cancelled);
    let approver = tool_envelope::guard::Caller::new("carol", ["refunds:approve"]);
    refused_as_withdrawn(&tools, ticket, &approver).await;
    tools.run_approved().await.unwrap();
    assert_eq!(times("T-670"), 0);
}

/// The ticket of the approval alice's fuller token (`refunds:write`,
/// `refunds:large`) waits for, calling `capped_refund` with `arguments`.
async fn fuller_tokens_ticket(tools: &ToolSet, arguments: &Value) -> String {
    let full = tool_envelope::guard::Caller::new("alice", ["refunds:write", "refunds:large"]);
    let context = ToolContext::detached().with_caller(full);
    let waiting = tools
        .call_with("capped_refund", arguments.clone(), context)
        .await
        .unwrap();
    let envelope = waiting.structured_content.unwrap();
    assert_eq!(envelope["reason"], "AWAITING_APPROVAL", "{envelope}");
    envelope["escalation"]["ticket"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The task `id` of alice's leaner token (`refunds:write` only), calling
/// `capped_refund` with `arguments`, cancelled after its replica stopped.
async fn leaner_tokens_cancelled_task(
    shared: &Arc<dyn Store>,
    id: &str,
    arguments: Value,
) -> TaskRecord {
    let mut task = TaskRecord::new(
        "capped_refund",
        arguments,
        Some("alice".to_owned()),
        600_000,
    )
    .held_by("stopped-replica", store::now_ms() - 1);
    task.caller_scopes = vec!["refunds:write".to_owned()];
    task.id = id.to_owned();
    assert!(shared.create_task(&task, u64::MAX).await.unwrap());
    shared.cancel_task(&task.id).await.unwrap();
    task
}

/// A token of the same person that grants less started the same call as
/// a task, cancelled it, and its replica stopped: taken over, the task
/// ends cancelled, and the approval a fuller token opened for that call
/// stands — the leaner token neither reads nor takes it back.
#[tokio::test]
async fn a_leaner_tokens_cancelled_task_leaves_a_fuller_tokens_approval_standing() {
    let shared: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tools = capped(Arc::clone(&shared));
    let arguments = json!({"order": "T-690", "amount": 690});
    let ticket = &fuller_tokens_ticket(&tools, &arguments).await;
    let task = leaner_tokens_cancelled_task(&shared, "task-lean-refund", arguments).await;

    tools.run_approved().await.unwrap();
    let ended = shared.task(&task.id).await.unwrap().unwrap();
    assert_eq!(ended.state, store::TaskState::Cancelled);
    let approver = tool_envelope::guard::Caller::new("carol", ["refunds:approve"]);
    tools
        .decide(ticket, &approver, true, "ok")
        .await
        .expect("still pending");
    tools.run_approved().await.unwrap();
    assert_eq!(times("T-690"), 1);
}

/// The same, when the leaner token's approval of the call was approved and
/// is running: the cancel marks that run, and takes back the next
/// approvals of the call it finds — not the fuller token's.
#[tokio::test]
async fn a_leaner_tokens_cancelled_run_leaves_a_fuller_tokens_next_approval_standing() {
    let shared: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tools = capped(Arc::clone(&shared));
    let arguments = json!({"order": "T-695", "amount": 695});
    let ticket = &fuller_tokens_ticket(&tools, &arguments).await;
    let fuller = shared.approval(ticket).await.unwrap().unwrap();
    // The leaner token's approval of the same call, at another block,
    // approved and running elsewhere.
    let mut lean = ApprovalRecord::new(
        fuller.digest.clone(),
        "other@1",
        "capped_refund",
        arguments.clone(),
        json!({}),
        Some("alice".to_owned()),
        "refunds:approve",
        store::now_ms() + 600_000,
    );
    lean.caller_scopes = vec!["refunds:write".to_owned()];
    let lean = shared
        .open_approval(&lean, u64::MAX)
        .await
        .unwrap()
        .unwrap();
    let yes = store::Decision::new(true, "carol", "ok");
    assert!(shared.decide(&lean.id, &yes).await.unwrap());
    let later = store::now_ms() + 600_000;
    let claimed = shared.claim_approval(&lean.id, "elsewhere", store::now_ms(), later);
    assert!(claimed.await.unwrap().is_some());

    let task = leaner_tokens_cancelled_task(&shared, "task-lean-run", arguments).await;
    tools.run_approved().await.unwrap();
    let ended = shared.task(&task.id).await.unwrap().unwrap();
    assert_eq!(ended.state, store::TaskState::Cancelled);
    let standing = shared.approval(ticket).await.unwrap().unwrap();
    assert_eq!(
        standing.state,
        store::ApprovalState::Pending,
        "{standing:?}"
    );
}

/// A destructive task that waited for an approver, its replica stopped:
/// taken over, it ends with its ticket as it stands — not "may have taken
/// effect", which would tell its caller nothing waits — and the approval
/// lives on: an approver's yes runs the call, once.
#[tokio::test(start_paused = true)]
async fn a_waiting_task_whose_replica_stopped_ends_with_its_ticket() {
    let shared: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tools = capped(Arc::clone(&shared));
    let arguments = json!({"order": "T-680", "amount": 680});
    let waiting = tools
        .call_with("capped_refund", arguments.clone(), ToolContext::detached())
        .await
        .unwrap();
    let envelope = waiting.structured_content.unwrap();
    let ticket = envelope["escalation"]["ticket"]["id"].as_str().unwrap();
    // The replica that ran the task said what it waited for, then stopped.
    let mut task = TaskRecord::new("capped_refund", arguments, None, 600_000)
        .held_by("stopped-replica", store::now_ms() - 1);
    task.id = "task-waiting-refund".to_owned();
    task.status_message = Some(format!(
        "Waiting for an approver with `refunds:approve` (ticket {ticket})"
    ));
    assert!(shared.create_task(&task, u64::MAX).await.unwrap());

    tools.run_approved().await.unwrap();
    let ended = shared.task(&task.id).await.unwrap().unwrap();
    assert_eq!(ended.state, store::TaskState::Completed);
    let result = ended.result.unwrap();
    let envelope = &result["structuredContent"];
    assert_eq!(envelope["reason"], "AWAITING_APPROVAL", "{result}");
    assert_eq!(envelope["escalation"]["ticket"]["id"], ticket, "{result}");
    assert_eq!(times("T-680"), 0);

    let approver = tool_envelope::guard::Caller::new("carol", ["refunds:approve"]);
    tools.decide(ticket, &approver, true, "ok").await.unwrap();
    tools.run_approved().await.unwrap();
    assert_eq!(times("T-680"), 1);
}

/// Another service's `capped_refund`: the same name, another ledger.
#[tool(name = "capped_refund", destructive, guard = cap)]
fn shop_refund(order: String, amount: u64) -> Result<String, ErrorEnvelope> {
    DONE.lock().unwrap().push(format!("shop:{order}"));
    Ok(format!("shop refunded ${amount} on {order}"))
}

/// The ticket `capped_refund` called with `arguments` through `tools`
/// waits for, blocked for an approver.
async fn ticket_of_call(tools: &ToolSet, arguments: &Value) -> String {
    let waiting = (tools.call_with("capped_refund", arguments.clone(), ToolContext::detached()))
        .await
        .unwrap();
    let envelope = waiting.structured_content.as_ref().unwrap();
    assert_eq!(envelope["reason"], "AWAITING_APPROVAL", "{envelope}");
    envelope["escalation"]["ticket"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn two_services_sharing_a_store_never_run_each_others_calls_nor_read_their_outcomes() {
    let folder = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", folder.path().join("two-services.db").display());
    let shared = store::open(&url).await.unwrap();
    // Two services, one database, each with a `capped_refund` of its own.
    let billing = capped(Arc::clone(&shared)).server_info("billing", "1");
    let shop = ToolSet::new()
        .tool::<shop_refund>()
        .store(Arc::clone(&shared))
        .approvals_in_background(false)
        .server_info("shop", "1");
    let approver = tool_envelope::guard::Caller::new("carol", ["refunds:approve"]);
    let arguments = json!({"order": "S-710", "amount": 710});

    // The same call to each waits for an approval of its own.
    let ticket = ticket_of_call(&billing, &arguments).await;
    let theirs = ticket_of_call(&shop, &arguments).await;
    assert_ne!(ticket, theirs, "the shop's call met billing's approval");

    // Billing's call is billing's to decide, and once approved, to run.
    let there = shop.decide(&ticket, &approver, true, "ok").await;
    assert!(
        matches!(there, Err(tool_envelope::mcp::DecisionError::UnknownTicket)),
        "{there:?}"
    );
    billing
        .decide(&ticket, &approver, true, "ok")
        .await
        .unwrap();
    assert_eq!(shop.run_approved().await.unwrap(), 0);
    assert_eq!(times("shop:S-710"), 0, "the shop refunded billing's call");
    let kept = shared.approval(&ticket).await.unwrap().unwrap();
    assert_eq!(kept.state, ApprovalState::Approved);
    assert_eq!(billing.run_approved().await.unwrap(), 1);
    assert_eq!(times("S-710"), 1);
    // Billing's outcome is not the shop's: its same call still waits.
    assert_eq!(ticket_of_call(&shop, &arguments).await, theirs);
    assert_eq!(times("shop:S-710"), 0);

    // A task billing's stopped replica left is taken over by billing alone
    // (as safe to run again, so that the shop, taking it, would run it).
    let small = json!({"order": "S-711", "amount": 11});
    let task = TaskRecord::new("capped_refund", small, None, 600_000)
        .for_service("billing")
        .held_by("stopped-replica", store::now_ms() - 1)
        .safe_to_repeat(true);
    assert!(shared.create_task(&task, u64::MAX).await.unwrap());
    shop.run_approved().await.unwrap();
    assert_eq!(times("shop:S-711"), 0, "the shop took billing's task over");
    let left = shared.task(&task.id).await.unwrap().unwrap();
    assert_eq!(left.holder.as_deref(), Some("stopped-replica"));
    billing.run_approved().await.unwrap();
    let ended = shared.task(&task.id).await.unwrap().unwrap();
    assert_eq!(ended.state, store::TaskState::Completed);
    assert_eq!(times("S-711"), 1);
}

#[tokio::test(start_paused = true)]
async fn a_task_is_kept_as_its_services_and_unknown_to_another() {
    let shared: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let billing = capped(Arc::clone(&shared)).server_info("billing", "1");
    let client = connect(billing).await;
    let task = task_of(
        &client,
        "capped_refund",
        json!({"order": "S-712", "amount": 12}),
    )
    .await;
    let done = past(&client, &task, "working").await;
    assert_eq!(done["status"], "completed", "{done}");
    let kept = shared.task(&task).await.unwrap().unwrap();
    assert_eq!(kept.service, "billing");
    // Through another service sharing the store, the same (anonymous)
    // caller's task is unknown: not read, answered or cancelled.
    let shop = ToolSet::new()
        .tool::<shop_refund>()
        .tasks(|_| TaskSupport::Optional)
        .store(Arc::clone(&shared))
        .server_info("shop", "1");
    let elsewhere = connect(shop).await;
    unknown_to(&elsewhere, &task).await;
}

/// A task held by another replica, asked of while the store fails: an
/// internal error to ask again (`-32603`), not "not found" (`-32602`),
/// which a client takes as the task gone for good; once the store
/// answers, the task is read as it is.
#[tokio::test(start_paused = true)]
async fn a_task_asked_of_while_the_store_fails_is_not_said_to_be_gone() {
    let slow = Slow::new();
    let shared: Arc<dyn Store> = slow.clone();
    let one = connect(replica(Arc::clone(&shared))).await;
    let two = connect(replica(Arc::clone(&shared))).await;
    let task = task_of(&one, "report", json!({"quarter": "Q-DOWN"})).await;
    let done = past(&two, &task, "working").await;
    assert_eq!(done["status"], "completed", "{done}");
    slow.task_reads_fail.store(true, Ordering::SeqCst);
    let code = |error: rmcp::ServiceError| match error {
        rmcp::ServiceError::McpError(error) => (error.code.0, error.message.into_owned()),
        other => panic!("expected the server's error, got {other:?}"),
    };
    let read = two.get_task(GetTaskParams::new(&task)).await.unwrap_err();
    let cancelled = two
        .cancel_task(CancelTaskParams::new(&task))
        .await
        .unwrap_err();
    let answered = two.update_task(UpdateTaskParams::new(&task, Default::default()));
    for (code, message) in [read, cancelled, answered.await.unwrap_err()].map(code) {
        assert_eq!(code, -32603, "{message}");
        assert!(message.contains("ask again"), "{message}");
    }
    slow.task_reads_fail.store(false, Ordering::SeqCst);
    assert_eq!(get(&two, &task).await["status"], "completed");
}

/// A task past its time to live is its caller's no more, swept or not:
/// not read, answered or cancelled on any replica.
#[tokio::test(start_paused = true)]
async fn a_task_past_its_time_to_live_is_unknown_though_not_swept_yet() {
    let slow = Slow::new();
    let shared: Arc<dyn Store> = slow.clone();
    let one = connect(replica(Arc::clone(&shared))).await;
    let two = connect(replica(Arc::clone(&shared))).await;
    let task = task_of(&one, "report", json!({"quarter": "Q9"})).await;
    let done = past(&two, &task, "working").await;
    assert_eq!(done["status"], "completed", "{done}");
    let ttl = shared.task(&task).await.unwrap().unwrap().ttl_ms;
    slow.tasks_aged_ms.store(ttl + 1, Ordering::SeqCst);
    assert!(shared.task(&task).await.unwrap().is_some(), "not swept yet");
    unknown_to(&two, &task).await;
}

#[tokio::test(start_paused = true)]
async fn a_set_cloned_and_named_as_another_service_shares_no_tasks_with_its_original() {
    let base = ToolSet::new()
        .tool::<report>()
        .tasks(|_| TaskSupport::Optional);
    let billing = connect(base.clone().server_info("billing", "1")).await;
    let shop = connect(base.server_info("shop", "1")).await;
    let task = task_of(&billing, "report", json!({"quarter": "Q-clone"})).await;
    assert_eq!(
        past(&billing, &task, "working").await["status"],
        "completed"
    );
    let read = shop.get_task(GetTaskParams::new(&task)).await;
    assert!(read.is_err(), "{read:?}");
    let cancelled = shop.cancel_task(CancelTaskParams::new(&task)).await;
    assert!(cancelled.is_err(), "{cancelled:?}");
}

/// A store that keeps an approval as asked, then holds the call that kept
/// it until the test lets it go — as a database slow to answer a write it
/// has made — and fails, when told, to read a call's approvals.
#[derive(Debug)]
struct Slow {
    inner: Arc<dyn Store>,
    held: tokio::sync::Semaphore,
    /// A permit for each approval kept.
    kept: tokio::sync::Semaphore,
    reading_fails: std::sync::atomic::AtomicBool,
    /// Whether a claimed approval's run is held (at `runs`) once claimed,
    /// a permit given to `claimed` for each.
    holding_runs: std::sync::atomic::AtomicBool,
    runs: tokio::sync::Semaphore,
    claimed: tokio::sync::Semaphore,
    /// Holds a call that opens an approval before the store keeps it.
    before_open: Gate,
    /// Holds a run's end before the store keeps it.
    at_finish: Gate,
    /// Holds a decision (a withdrawal too) before the store takes it.
    at_decide: Gate,
    /// Every change to a task, its id and the lease it sets.
    task_updates: std::sync::Mutex<Vec<(String, Option<i64>)>>,
    /// How long reading a task takes, in milliseconds of the (paused) clock.
    task_read_ms: std::sync::atomic::AtomicU64,
    /// Whether reading a task fails, as a database out of reach.
    task_reads_fail: std::sync::atomic::AtomicBool,
    /// Whether a claim of an approved call is kept and answered with an
    /// error, as a database whose connection was lost after the commit.
    claims_unanswered: std::sync::atomic::AtomicBool,
    /// Whether each claim of an approved call (before it goes to the
    /// store), and each read of an approval (once read), waits for another
    /// at `claims_meet`: two passes in step.
    claims_meeting: std::sync::atomic::AtomicBool,
    claims_meet: tokio::sync::Barrier,
    /// How far ahead of the wall clock approvals are opened and read, in
    /// milliseconds: the store as it would be that much later.
    ahead_ms: std::sync::atomic::AtomicI64,
    /// How much older than they are tasks are read, in milliseconds.
    tasks_aged_ms: std::sync::atomic::AtomicI64,
    /// Whether expiring approvals ends none: a store of one's own that
    /// expires no approved call, or fails to expire.
    expires_nothing: std::sync::atomic::AtomicBool,
    /// Keeps each escalation and answers with an error, as a database
    /// whose connection was lost after the commit.
    escalations_unanswered: std::sync::atomic::AtomicBool,
    /// Whether keeping an escalation never ends: a database out of reach.
    escalations_hang: std::sync::atomic::AtomicBool,
    /// Whether counting a caller's tasks is slow: the wall clock moves on
    /// by a few milliseconds while it counts.
    slow_count: std::sync::atomic::AtomicBool,
    /// When the last count of a caller's tasks ended (wall clock, ms).
    counted_at_ms: std::sync::atomic::AtomicI64,
    /// Each task kept: when it says it was made, and its lease.
    kept_tasks: std::sync::Mutex<Vec<(i64, i64)>>,
    /// Whether keeping a task fails (the database went away).
    keeping_tasks_fails: std::sync::atomic::AtomicBool,
    /// Keeps each approval opened and answers with an error, as a
    /// database whose connection was lost after the commit.
    opens_unanswered: std::sync::atomic::AtomicBool,
    /// How many of the next reads of one approval fail.
    approval_reads_fail: std::sync::atomic::AtomicU32,
    /// Whether opening an approval fails before anything is kept.
    opening_fails: std::sync::atomic::AtomicBool,
}

/// A point in the store a call is held at, once the test closes it: the
/// test waits until a call is there, then lets it go.
#[derive(Debug)]
struct Gate {
    closed: std::sync::atomic::AtomicBool,
    there: tokio::sync::Semaphore,
    go: tokio::sync::Semaphore,
}

impl Gate {
    fn new() -> Self {
        Gate {
            closed: std::sync::atomic::AtomicBool::new(false),
            there: tokio::sync::Semaphore::new(0),
            go: tokio::sync::Semaphore::new(0),
        }
    }

    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    /// Until a call is held here.
    async fn reached(&self) {
        self.there.acquire().await.expect("reached").forget();
    }

    /// Opens the gate for good: the call held goes on.
    fn open(&self) {
        self.closed.store(false, Ordering::SeqCst);
        self.go.add_permits(1_000);
    }

    async fn pass(&self) {
        if self.closed.load(Ordering::SeqCst) {
            self.there.add_permits(1);
            self.go.acquire().await.expect("let go").forget();
        }
    }
}

impl Slow {
    fn new() -> Arc<Self> {
        Arc::new(Slow {
            inner: Arc::new(MemoryStore::new()),
            held: tokio::sync::Semaphore::new(0),
            kept: tokio::sync::Semaphore::new(0),
            reading_fails: std::sync::atomic::AtomicBool::new(false),
            holding_runs: std::sync::atomic::AtomicBool::new(false),
            runs: tokio::sync::Semaphore::new(0),
            claimed: tokio::sync::Semaphore::new(0),
            before_open: Gate::new(),
            at_finish: Gate::new(),
            at_decide: Gate::new(),
            task_updates: std::sync::Mutex::default(),
            task_read_ms: std::sync::atomic::AtomicU64::new(0),
            task_reads_fail: std::sync::atomic::AtomicBool::new(false),
            claims_unanswered: std::sync::atomic::AtomicBool::new(false),
            claims_meeting: std::sync::atomic::AtomicBool::new(false),
            claims_meet: tokio::sync::Barrier::new(2),
            ahead_ms: std::sync::atomic::AtomicI64::new(0),
            tasks_aged_ms: std::sync::atomic::AtomicI64::new(0),
            expires_nothing: std::sync::atomic::AtomicBool::new(false),
            escalations_unanswered: std::sync::atomic::AtomicBool::new(false),
            escalations_hang: std::sync::atomic::AtomicBool::new(false),
            slow_count: std::sync::atomic::AtomicBool::new(false),
            counted_at_ms: std::sync::atomic::AtomicI64::new(0),
            kept_tasks: std::sync::Mutex::default(),
            keeping_tasks_fails: std::sync::atomic::AtomicBool::new(false),
            opens_unanswered: std::sync::atomic::AtomicBool::new(false),
            approval_reads_fail: std::sync::atomic::AtomicU32::new(0),
            opening_fails: std::sync::atomic::AtomicBool::new(false),
        })
    }
}

/// The store's methods `Slow` does not hold, passed on as they are.
macro_rules! passed_on {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        $(fn $name<'a>(&'a self, $($arg: $ty),*) -> StoreFuture<'a, $out> {
            self.inner.$name($($arg),*)
        })*
    };
}

impl Store for Slow {
    passed_on! {
        answer_task(id: &'a str, responses: &'a Value) -> bool;
        cancel_task(id: &'a str) -> bool;
        claim_abandoned_tasks(service: &'a str, tools: Option<&'a [&'a str]>, holder: &'a str, now_ms: i64, lease_until_ms: i64, limit: u32) -> Vec<TaskRecord>;
        waiting_approvals(service: &'a str, caller: Option<&'a str>, now_ms: i64) -> u64;
        approvals(service: &'a str, approvers: Option<&'a [&'a str]>, states: &'a [ApprovalState], limit: u32) -> Vec<ApprovalRecord>;
        renew_approval(id: &'a str, holder: &'a str, lease_until_ms: i64) -> bool;
        approvals_to_run(service: &'a str, now_ms: i64, limit: u32) -> Vec<String>;
        escalations(service: &'a str, approvers: Option<&'a [&'a str]>, state: EscalationState, limit: u32) -> Vec<EscalationRecord>;
        escalation(id: &'a str) -> Option<EscalationRecord>;
        open_escalations(service: Option<&'a str>, caller: Option<&'a str>) -> u64;
        forget_resolved_escalations(service: &'a str, resolved_before_ms: i64) -> u64;
        resolve_escalation(id: &'a str, by: &'a str, note: &'a str, at_ms: i64) -> bool;
        audit(entry: &'a AuditEntry) -> ();
        audit_log(limit: u32) -> Vec<AuditEntry>;
        sweep(now_ms: i64) -> ();
        redeem(nonce: &'a str, until_ms: i64) -> bool;
        redeemed(nonce: &'a str) -> bool;
    }

    fn ledger(&self) -> &str {
        self.inner.ledger()
    }

    fn running_tasks<'a>(
        &'a self,
        service: &'a str,
        caller: Option<&'a str>,
    ) -> StoreFuture<'a, (u64, u64)> {
        Box::pin(async move {
            let counted = self.inner.running_tasks(service, caller).await;
            if self.slow_count.load(Ordering::SeqCst) {
                // A store that takes its time: the wall clock moves on
                // (a few milliseconds, spun, not slept).
                let until = store::now_ms() + 3;
                while store::now_ms() < until {
                    std::hint::spin_loop();
                }
            }
            self.counted_at_ms.store(store::now_ms(), Ordering::SeqCst);
            counted
        })
    }

    fn create_task<'a>(&'a self, task: &'a TaskRecord, most_running: u64) -> StoreFuture<'a, bool> {
        (self.kept_tasks.lock().unwrap()).push((task.created_ms, task.lease_until_ms));
        if self.keeping_tasks_fails.load(Ordering::SeqCst) {
            return Box::pin(async { Err(StoreError::new("the database went away")) });
        }
        self.inner.create_task(task, most_running)
    }

    fn task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move {
            let slow = self.task_read_ms.load(Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(slow)).await;
            if self.task_reads_fail.load(Ordering::SeqCst) {
                return Err(StoreError::new("no answer within 20 s"));
            }
            let aged = self.tasks_aged_ms.load(Ordering::SeqCst);
            let mut read = self.inner.task(id).await?;
            if let Some(task) = &mut read {
                task.created_ms -= aged;
                task.updated_ms -= aged;
            }
            Ok(read)
        })
    }

    fn record_escalation<'a>(
        &'a self,
        escalation: &'a EscalationRecord,
        most_open: u64,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            if self.escalations_hang.load(Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            let kept = self.inner.record_escalation(escalation, most_open).await?;
            if self.escalations_unanswered.load(Ordering::SeqCst) {
                return Err(StoreError::new("the connection was lost after the commit"));
            }
            Ok(kept)
        })
    }

    fn expire_approvals<'a>(
        &'a self,
        service: &'a str,
        now_ms: i64,
        escalate: &'a Escalate<'a>,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        if self.expires_nothing.load(Ordering::SeqCst) {
            return Box::pin(async { Ok(Vec::new()) });
        }
        self.inner.expire_approvals(service, now_ms, escalate)
    }

    fn update_task<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        update: &'a TaskUpdate,
    ) -> StoreFuture<'a, bool> {
        (self.task_updates.lock().unwrap()).push((id.to_owned(), update.lease_until_ms));
        self.inner.update_task(id, holder, update)
    }

    fn decide<'a>(&'a self, id: &'a str, decision: &'a Decision) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            self.at_decide.pass().await;
            self.inner.decide(id, decision).await
        })
    }

    fn finish_approval<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        result: &'a Value,
        at_ms: i64,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            self.at_finish.pass().await;
            self.inner.finish_approval(id, holder, result, at_ms).await
        })
    }

    fn claim_approval<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        now_ms: i64,
        lease_until_ms: i64,
    ) -> StoreFuture<'a, Option<ApprovalRecord>> {
        Box::pin(async move {
            if self.claims_meeting.load(Ordering::SeqCst) {
                self.claims_meet.wait().await;
            }
            let claimed = (self.inner)
                .claim_approval(id, holder, now_ms, lease_until_ms)
                .await?;
            if claimed.is_some() && self.holding_runs.load(Ordering::SeqCst) {
                self.claimed.add_permits(1);
                let _ = self.runs.acquire().await;
            }
            if self.claims_unanswered.load(Ordering::SeqCst) {
                return Err(StoreError::new("the connection was lost after the commit"));
            }
            Ok(claimed)
        })
    }

    fn open_approval<'a>(
        &'a self,
        approval: &'a ApprovalRecord,
        most_waiting: u64,
    ) -> StoreFuture<'a, Option<ApprovalRecord>> {
        Box::pin(async move {
            if self.opening_fails.load(Ordering::SeqCst) {
                return Err(StoreError::new("the database went away"));
            }
            self.before_open.pass().await;
            let ahead = self.ahead_ms.load(Ordering::SeqCst);
            let mut approval = approval.clone();
            approval.created_ms += ahead;
            approval.expires_ms += ahead;
            let kept = self.inner.open_approval(&approval, most_waiting).await?;
            self.kept.add_permits(1);
            let _ = self.held.acquire().await;
            if self.opens_unanswered.load(Ordering::SeqCst) {
                return Err(StoreError::new("the connection was lost"));
            }
            Ok(kept)
        })
    }

    fn approval<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<ApprovalRecord>> {
        let fails =
            self.approval_reads_fail
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        if fails.is_ok() {
            return Box::pin(async { Err(StoreError::new("the database went away")) });
        }
        Box::pin(async move {
            let read = self.inner.approval(id).await;
            if self.claims_meeting.load(Ordering::SeqCst) {
                self.claims_meet.wait().await;
            }
            read
        })
    }

    fn call_approvals<'a>(
        &'a self,
        digest: &'a str,
        now_ms: i64,
    ) -> StoreFuture<'a, Vec<ApprovalRecord>> {
        if self.reading_fails.load(Ordering::SeqCst) {
            return Box::pin(async { Err(StoreError::new("the database went away")) });
        }
        let ahead = self.ahead_ms.load(Ordering::SeqCst);
        self.inner.call_approvals(digest, now_ms + ahead)
    }
}

/// The runner takes up no yes past its time to live, whatever the store
/// expires: with a store that expires no approved call (one of your own,
/// written before approved calls expired), a call approved while every
/// runner was down is not run when one comes back; once the store expires
/// it, the call made again is asked anew.
#[tokio::test]
async fn no_runner_takes_up_a_yes_past_its_time_whatever_the_store_expires() {
    let slow = Slow::new();
    slow.held.add_permits(2);
    let shared: Arc<dyn Store> = slow.clone();
    let tools = capped(Arc::clone(&shared)).approval_ttl(Duration::from_secs(3600));
    let arguments = json!({"order": "T-1800", "amount": 1800});
    let call = |tools: ToolSet, arguments: Value| async move {
        let reply = (tools.call_with("capped_refund", arguments, ToolContext::detached()))
            .await
            .unwrap();
        reply.structured_content.unwrap()
    };
    // Opened two hours ago for an hour (read now, lapsed already: its
    // ticket is read in the store); approved ninety minutes ago.
    slow.ahead_ms.store(-7_200_000, Ordering::SeqCst);
    let _ = call(tools.clone(), arguments.clone()).await;
    let opened = shared.approvals("", None, &[ApprovalState::Pending], 10);
    let ticket = opened.await.unwrap()[0].id.clone();
    let yes = Decision::new(true, "carol", "ok").at(store::now_ms() - 5_400_000);
    assert!(shared.decide(&ticket, &yes).await.unwrap());
    slow.ahead_ms.store(0, Ordering::SeqCst);

    slow.expires_nothing.store(true, Ordering::SeqCst);
    assert_eq!(tools.run_approved().await.unwrap(), 0);
    assert_eq!(times("T-1800"), 0, "the lapsed yes ran");
    let kept = shared.approval(&ticket).await.unwrap().unwrap();
    assert_eq!(
        kept.state,
        ApprovalState::Approved,
        "left for the store to expire"
    );

    slow.expires_nothing.store(false, Ordering::SeqCst);
    assert_eq!(tools.run_approved().await.unwrap(), 0);
    let kept = shared.approval(&ticket).await.unwrap().unwrap();
    assert_eq!(kept.state, ApprovalState::Expired);
    let again = call(tools.clone(), arguments).await;
    assert_eq!(again["reason"], "AWAITING_APPROVAL", "{again}");
    assert_ne!(again["escalation"]["ticket"]["id"], ticket.as_str());
    tools.run_approved().await.unwrap();
    assert_eq!(times("T-1800"), 0);
}

#[tokio::test(start_paused = true)]
async fn a_task_cancelled_while_its_approval_is_being_kept_withdraws_it_once_kept() {
    let slow = Slow::new();
    let shared: Arc<dyn Store> = slow.clone();
    let tools = capped(Arc::clone(&shared));
    let client = connect(tools.clone()).await;
    let task = task_of(
        &client,
        "capped_refund",
        json!({"order": "T-680", "amount": 680}),
    )
    .await;
    // The approval is kept, and the store has not answered yet: the
    // caller cancels then.
    slow.kept.acquire().await.expect("kept").forget();
    client
        .cancel_task(CancelTaskParams::new(&task))
        .await
        .expect("tasks/cancel");
    slow.held.add_permits(1);
    let ended = past(&client, &task, "working").await;
    assert_eq!(ended["status"], "cancelled", "{ended}");
    let kept = shared
        .approvals(
            "",
            None,
            &[
                store::ApprovalState::Pending,
                store::ApprovalState::Withdrawn,
            ],
            10,
        )
        .await;
    let kept = kept.unwrap();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].state, store::ApprovalState::Withdrawn);
    let approver = tool_envelope::guard::Caller::new("carol", ["refunds:approve"]);
    assert!(
        tools
            .decide(&kept[0].id, &approver, true, "ok")
            .await
            .is_err()
    );
    tools.run_approved().await.unwrap();
    assert_eq!(times("T-680"), 0);
}

#[tokio::test]
async fn a_taken_over_cancelled_task_whose_approval_cannot_be_withdrawn_ends_failed_saying_so() {
    let slow = Slow::new();
    slow.held.add_permits(1_000);
    let shared: Arc<dyn Store> = slow.clone();
    let tools = capped(Arc::clone(&shared));
    let mut task = TaskRecord::new(
        "capped_refund",
        json!({"order": "T-690", "amount": 690}),
        None,
        600_000,
    )
    .held_by("stopped-replica", store::now_ms() - 1);
    task.id = "task-unwithdrawn".to_owned();
    assert!(shared.create_task(&task, u64::MAX).await.unwrap());
    shared.cancel_task(&task.id).await.unwrap();
    slow.reading_fails.store(true, Ordering::SeqCst);
    tools.run_approved().await.unwrap();
    let ended = shared.task(&task.id).await.unwrap().unwrap();
    assert_eq!(ended.state, store::TaskState::Failed);
    let said = ended.error.unwrap().to_string();
    assert!(said.contains("could not be withdrawn"), "{said}");
}

/// Over $1,000 someone with `finance:approve` must decide as well.
fn finance(call: &tool_envelope::guard::ToolCall) -> Result<(), tool_envelope::guard::Blocked> {
    let amount: u64 = call.require("amount")?;
    if amount > 1000 {
        return Err(tool_envelope::guard::Blocked::new(format!(
            "Refund of ${amount} needs finance"
        ))
        .unless_approved_by(tool_envelope::guard::Approvers::scope("finance:approve")));
    }
    Ok(())
}

/// The two-guard refund `arguments` as a task, its first guard's approval
/// said yes to, and cancelled by its caller while a replica's run of it is
/// held under way: the set, its client, the run (let go with a permit of
/// `slow.runs`) and the first approval's ticket.
async fn cancelled_during_its_approved_run(
    slow: &Arc<Slow>,
    arguments: &Value,
) -> (
    ToolSet,
    RunningService<RoleClient, Client>,
    tokio::task::JoinHandle<Result<usize, tool_envelope::store::StoreError>>,
    String,
) {
    slow.held.add_permits(1_000);
    let shared: Arc<dyn Store> = slow.clone();
    let tools = capped(shared).guards(tool_envelope::guard::Guards::new().for_all(finance));
    let client = connect(tools.clone()).await;
    let task = task_of(&client, "capped_refund", arguments.clone()).await;
    let ticket = ticket_awaited(&client, &task).await;
    let approver =
        tool_envelope::guard::Caller::new("carol", ["refunds:approve", "finance:approve"]);
    tools.decide(&ticket, &approver, true, "ok").await.unwrap();
    slow.holding_runs.store(true, Ordering::SeqCst);
    let runner = run_approved_in_background(&tools);
    slow.claimed.acquire().await.expect("claimed").forget();
    slow.holding_runs.store(false, Ordering::SeqCst);
    client
        .cancel_task(CancelTaskParams::new(&task))
        .await
        .expect("tasks/cancel");
    let ended = past(&client, &task, "working").await;
    assert_eq!(ended["status"], "cancelled", "{ended}");
    (tools, client, runner, ticket)
}

#[tokio::test(start_paused = true)]
async fn a_task_cancelled_while_its_approved_run_goes_on_opens_no_next_approval() {
    let slow = Slow::new();
    let shared: Arc<dyn Store> = slow.clone();
    let arguments = json!({"order": "T-1200", "amount": 1200});
    let (tools, _client, runner, _) = cancelled_during_its_approved_run(&slow, &arguments).await;

    // The run meets the other guard: no approval is opened for it, and
    // nothing is refunded; the same call made again reads why.
    slow.runs.add_permits(1);
    runner.await.unwrap().unwrap();
    let pending = shared
        .approvals("", None, &[store::ApprovalState::Pending], 10)
        .await
        .unwrap();
    assert!(pending.is_empty(), "{pending:?}");
    assert_eq!(times("T-1200"), 0);
    let again = tools
        .call_with("capped_refund", arguments, ToolContext::detached())
        .await
        .unwrap();
    let envelope = again.structured_content.unwrap();
    assert_eq!(envelope["reason"], "HUMAN_DECLINED", "{envelope}");
    let says = envelope["message"].as_str().unwrap();
    assert!(
        says.contains("withdrew the call while its approved run went on"),
        "{says}"
    );
}

/// A withdrawal stops the run it was made during, and no other: the same
/// call made again a day later (its first approval expired, the mark the
/// withdrawal left still kept), approved anew, hands on to its next
/// approver as any call does.
#[tokio::test(start_paused = true)]
async fn a_withdrawal_stops_the_run_it_was_made_during_and_no_later_one() {
    let slow = Slow::new();
    let shared: Arc<dyn Store> = slow.clone();
    let arguments = json!({"order": "T-1400", "amount": 1400});
    let (tools, client, runner, ticket) =
        cancelled_during_its_approved_run(&slow, &arguments).await;
    slow.runs.add_permits(1);
    runner.await.unwrap().unwrap();
    let approver =
        tool_envelope::guard::Caller::new("carol", ["refunds:approve", "finance:approve"]);

    // A day and an hour later, the caller makes the same call again.
    slow.ahead_ms.store(25 * 60 * 60 * 1000, Ordering::SeqCst);
    let again = task_of(&client, "capped_refund", arguments).await;
    let second = ticket_awaited(&client, &again).await;
    assert_ne!(second, ticket);
    tools.decide(&second, &approver, true, "ok").await.unwrap();
    tools.run_approved().await.unwrap();
    let pending = shared
        .approvals("", None, &[store::ApprovalState::Pending], 10)
        .await
        .unwrap();
    assert_eq!(pending.len(), 1, "the next approver is asked: {pending:?}");
    assert_eq!(pending[0].approvers, "refunds:approve");
    let waiting = get(&client, &again).await;
    assert_eq!(waiting["status"], "working", "{waiting}");
    assert_eq!(times("T-1400"), 0);
}

/// One pass of the runner of `tools`, in the background: the test holds
/// the store at a point of it, then lets it go on.
fn run_approved_in_background(
    tools: &ToolSet,
) -> tokio::task::JoinHandle<Result<usize, tool_envelope::store::StoreError>> {
    let tools = tools.clone();
    tokio::spawn(async move { tools.run_approved().await })
}

/// The two-guard refund of `order`, run as a task, its first approval
/// said yes to: the set, its client, the task and the ticket.
async fn a_refund_past_its_first_approver(
    slow: &Arc<Slow>,
    order: &str,
) -> (ToolSet, RunningService<RoleClient, Client>, String) {
    let shared: Arc<dyn Store> = slow.clone();
    let tools = capped(shared).guards(tool_envelope::guard::Guards::new().for_all(finance));
    let client = connect(tools.clone()).await;
    let arguments = json!({"order": order, "amount": 1300});
    let task = task_of(&client, "capped_refund", arguments).await;
    let ticket = ticket_awaited(&client, &task).await;
    let approver =
        tool_envelope::guard::Caller::new("carol", ["refunds:approve", "finance:approve"]);
    tools.decide(&ticket, &approver, true, "ok").await.unwrap();
    (tools, client, task)
}

/// Nothing of the call waits for an approver, and nothing was refunded.
async fn nothing_waits_nor_ran(slow: &Arc<Slow>, order: &str) {
    let waiting = slow
        .approvals(
            "",
            None,
            &[
                store::ApprovalState::Pending,
                store::ApprovalState::Approved,
            ],
            10,
        )
        .await
        .unwrap();
    assert!(waiting.is_empty(), "{waiting:?}");
    let withdrawn = slow
        .approvals("", None, &[store::ApprovalState::Withdrawn], 10)
        .await
        .unwrap();
    assert_eq!(
        withdrawn.len(),
        1,
        "the next approval, withdrawn: {withdrawn:?}"
    );
    assert_eq!(times(order), 0);
}

/// A task cancelled while its approved run, which looked for its caller's
/// withdrawal and found none, opens the next guard's approval: the run
/// looks again once it is kept, and withdraws it.
#[tokio::test(start_paused = true)]
async fn a_task_cancelled_as_its_approved_run_opens_the_next_approval_withdraws_it() {
    let slow = Slow::new();
    slow.held.add_permits(1_000);
    let (tools, client, task) = a_refund_past_its_first_approver(&slow, "T-1300").await;
    slow.before_open.close();
    let runner = run_approved_in_background(&tools);
    slow.before_open.reached().await;
    client
        .cancel_task(CancelTaskParams::new(&task))
        .await
        .expect("tasks/cancel");
    assert_eq!(past(&client, &task, "working").await["status"], "cancelled");
    slow.before_open.open();
    runner.await.unwrap().unwrap();
    nothing_waits_nor_ran(&slow, "T-1300").await;
}

/// A task cancelled once its approved run opened the next guard's
/// approval, and before the run ended: the cancellation withdraws that
/// one too, and no later yes runs the call.
#[tokio::test(start_paused = true)]
async fn a_task_cancelled_after_its_approved_run_opened_the_next_approval_withdraws_it() {
    let slow = Slow::new();
    slow.held.add_permits(1_000);
    let (tools, client, task) = a_refund_past_its_first_approver(&slow, "T-1310").await;
    slow.at_finish.close();
    let runner = run_approved_in_background(&tools);
    slow.at_finish.reached().await;
    let opened = slow
        .approvals("", None, &[store::ApprovalState::Pending], 10)
        .await
        .unwrap();
    assert_eq!(opened.len(), 1, "the next guard's, opened: {opened:?}");
    client
        .cancel_task(CancelTaskParams::new(&task))
        .await
        .expect("tasks/cancel");
    assert_eq!(past(&client, &task, "working").await["status"], "cancelled");
    slow.at_finish.open();
    runner.await.unwrap().unwrap();
    nothing_waits_nor_ran(&slow, "T-1310").await;
    let approver = tool_envelope::guard::Caller::new("dave", ["finance:approve"]);
    assert!(
        tools
            .decide(&opened[0].id, &approver, true, "ok")
            .await
            .is_err()
    );
    tools.run_approved().await.unwrap();
    assert_eq!(times("T-1310"), 0);
}

/// A task cancelled while its approved run opened the next guard's
/// approval, its run ending (handing on to it) before the cancel reads the
/// first approval again: the cancel follows the hand-on and withdraws the
/// next approval.
#[tokio::test(start_paused = true)]
async fn a_task_cancelled_as_its_approved_run_hands_on_withdraws_the_next_approval() {
    let slow = Slow::new();
    slow.held.add_permits(1_000);
    let (tools, client, task) = a_refund_past_its_first_approver(&slow, "T-1320").await;
    slow.at_finish.close();
    let runner = run_approved_in_background(&tools);
    slow.at_finish.reached().await;
    slow.at_decide.close();
    let cancel = tokio::spawn(async move {
        client
            .cancel_task(CancelTaskParams::new(&task))
            .await
            .expect("tasks/cancel");
        (client, task)
    });
    // The cancel read the first approval running and is withdrawing it;
    // the run ends, handing on to the next, before the store answers.
    slow.at_decide.reached().await;
    slow.at_finish.open();
    runner.await.unwrap().unwrap();
    slow.at_decide.open();
    let (client, task) = cancel.await.unwrap();
    assert_eq!(past(&client, &task, "working").await["status"], "cancelled");
    nothing_waits_nor_ran(&slow, "T-1320").await;
}

/// A task cancelled on the replica that runs it is cancelled in the store
/// at once, before its approval is withdrawn: should this replica stop
/// before the withdrawal is kept, the replica that takes the task over
/// reads it cancelled and withdraws the approval, rather than leave it to
/// an approver's yes.
#[tokio::test(start_paused = true)]
async fn a_task_cancelled_on_its_own_replica_is_cancelled_in_the_store_before_it_withdraws() {
    let slow = Slow::new();
    slow.held.add_permits(1_000);
    let tools = capped(slow.clone());
    let client = connect(tools.clone()).await;
    let arguments = json!({"order": "T-1330", "amount": 1330});
    let task = task_of(&client, "capped_refund", arguments).await;
    ticket_awaited(&client, &task).await;
    slow.at_decide.close();
    client
        .cancel_task(CancelTaskParams::new(&task))
        .await
        .expect("tasks/cancel");
    // The withdrawal is held on its way to the store; the task's record
    // says it was cancelled already.
    slow.at_decide.reached().await;
    let record = slow.inner.task(&task).await.unwrap().unwrap();
    assert!(record.cancel_requested, "{record:?}");
    slow.at_decide.open();
    assert_eq!(past(&client, &task, "working").await["status"], "cancelled");
    nothing_waits_nor_ran(&slow, "T-1330").await;
}

/// A store that keeps an escalation and loses its answer (the connection
/// gone after the commit) is asked again by whoever keeps it next — the
/// coordinator above a retry loop — and the escalation is kept once.
#[tokio::test]
async fn an_escalation_whose_store_lost_the_answer_is_kept_once() {
    use tool_envelope::coordinator::Coordinator;
    use tool_envelope::retry::RetryPolicy;

    let slow = Slow::new();
    slow.escalations_unanswered.store(true, Ordering::SeqCst);
    let store: Arc<dyn Store> = slow.clone();
    let policy = RetryPolicy::never().keep_escalations(Arc::clone(&store));
    let denied = || async { Err::<u32, _>(ErrorEnvelope::permission("Access denied to payroll")) };
    let report = Coordinator::new()
        .branch("payroll", policy.retry(denied))
        .keep_escalations(Arc::clone(&store))
        .run()
        .await;
    assert_eq!(report.gaps.len(), 1);
    let open = (slow.inner)
        .escalations("", None, EscalationState::Open, 50)
        .await
        .unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(open[0].envelope["message"], "Access denied to payroll");
}

/// A served call's escalation kept in a store that never answers: the
/// reply goes out, the escalation unkept, 10 seconds later at most — and
/// the caller's next call is not held behind the first.
#[tokio::test(start_paused = true)]
async fn a_store_that_hangs_holds_a_failing_calls_reply_ten_seconds_at_most() {
    let slow = Slow::new();
    slow.escalations_hang.store(true, Ordering::SeqCst);
    let store: Arc<dyn Store> = slow.clone();
    let tools = ToolSet::new()
        .tool::<refund>()
        .guards(tool_envelope::guard::Guards::new().for_all(
            |_: &tool_envelope::guard::ToolCall| {
                Err(
                    tool_envelope::guard::Blocked::new("Refunds are closed today")
                        .with_reason("CLOSED"),
                )
            },
        ))
        .store(store);
    for order in ["A-1", "A-2"] {
        let started = tokio::time::Instant::now();
        let call = tools.call("refund", json!({"order": order}));
        let reply = tokio::time::timeout(std::time::Duration::from_secs(60), call).await;
        let reply = reply.expect("replied within a minute").unwrap();
        assert!(reply.is_error);
        let content = reply.structured_content.unwrap();
        assert_eq!(content["reason"], "CLOSED", "{content}");
        assert_eq!(started.elapsed(), std::time::Duration::from_secs(10));
    }
}

/// Money that leaves the bank: the client's user confirms.
fn external(call: &tool_envelope::guard::ToolCall) -> Result<(), tool_envelope::guard::Blocked> {
    let account: String = call.require("account")?;
    match account.starts_with("EXT-") {
        true => Err(
            tool_envelope::guard::Blocked::new(format!("{account} is outside the bank"))
                .unless_approved(),
        ),
        false => Ok(()),
    }
}

/// A transfer its own guard puts to the client's user, after the set's
/// cap that approvers decide.
#[tool(destructive, guard = external)]
fn wire_out(account: String, amount: u64) -> Result<String, ErrorEnvelope> {
    DONE.lock().unwrap().push(account.clone());
    Ok(format!("wired ${amount} to {account}"))
}

/// A task blocked for approvers first and for its user after: the user is
/// asked through the task before it waits (the look ahead runs nothing),
/// then the approver's yes runs it once, past both, and the task ends
/// with the result.
#[tokio::test(start_paused = true)]
async fn a_task_asks_its_user_ahead_then_waits_for_its_approver_and_ends_with_the_result() {
    let tools = ToolSet::new()
        .tool::<wire_out>()
        .guards(tool_envelope::guard::Guards::new().for_all(cap))
        .tasks(|_| TaskSupport::Optional)
        .store(Arc::new(MemoryStore::new()))
        .approvals_in_background(false);
    let client = connect(tools.clone()).await;
    let arguments = json!({"account": "EXT-910", "amount": 910});
    let task = task_of(&client, "wire_out", arguments).await;

    let asking = past(&client, &task, "working").await;
    assert_eq!(asking["status"], "input_required", "{asking}");
    let requests = asking["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{asking}");
    let (key, request) = requests.iter().next().unwrap();
    assert!(
        request.to_string().contains("EXT-910 is outside the bank"),
        "{request}"
    );
    assert_eq!(times("EXT-910"), 0, "looking ahead ran nothing");
    let yes = json!({"action": "accept", "content": {"approver": "dana"}});
    client
        .update_task(UpdateTaskParams::new(&task, [(key.clone(), yes)].into()))
        .await
        .expect("tasks/update");

    let ticket = ticket_awaited(&client, &task).await;
    assert_eq!(times("EXT-910"), 0, "nothing ran before the approver's yes");

    let approver = tool_envelope::guard::Caller::new("carol", ["refunds:approve"]);
    tools.decide(&ticket, &approver, true, "ok").await.unwrap();
    assert_eq!(tools.run_approved().await.unwrap(), 1);
    let done = past(&client, &task, "working").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"result": "wired $910 to EXT-910"})
    );
    assert_eq!(times("EXT-910"), 1, "run once, past both blocks");
}
