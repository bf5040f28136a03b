//! Approvals the calling agent cannot give
//! (`Blocked::unless_approved_by(Approvers::scope(..))`): the call waits in
//! the store as a ticket, nothing the calling client sends decides it, an
//! approver who is not the caller decides it once, and the call runs once —
//! across two replicas sharing a SQLite file and across a restart — with the
//! ticket as its idempotency key; the same call made again reads the kept
//! result. A runner that died mid-call never runs a destructive tool twice.
#![cfg(all(feature = "rmcp", feature = "sqlite"))]

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation,
};
use rmcp::service::{RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::{Value, json};
use tool_envelope::guard::{Approvers, Blocked, Caller, Guards, ToolCall};
use tool_envelope::mcp::{DecisionError, ToolContext, ToolSet};
use tool_envelope::store::{
    self, ApprovalRecord, ApprovalState, AuditEntry, Decision, Escalate, EscalationRecord,
    EscalationState, MemoryStore, Store, StoreFuture, TaskRecord, TaskUpdate,
};
use tool_envelope::{ErrorEnvelope, Secret, tool};

/// What each tool did, by a label of its own: a test counts its own label.
static DONE: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn times(label: &str) -> usize {
    DONE.lock().unwrap().iter().filter(|l| *l == label).count()
}

/// Over $500 an approver with `refunds:approve` must decide.
fn cap(call: &ToolCall) -> Result<(), Blocked> {
    let amount: u64 = call.require("amount")?;
    if amount > 500 {
        return Err(
            Blocked::new(format!("Refund of ${amount} exceeds the $500 cap"))
                .with_reason("OVER_CAP")
                .with_alternative("Split it under the cap if policy allows")
                .unless_approved_by(Approvers::scope("refunds:approve")),
        );
    }
    Ok(())
}

/// Refund an order: records who asked, with which idempotency key.
#[tool(destructive)]
async fn refund(
    context: ToolContext,
    order: String,
    amount: u64,
    card: Secret<String>,
) -> Result<String, ErrorEnvelope> {
    let _ = card;
    let key = context.idempotency_key().unwrap_or("none").to_owned();
    let caller = context
        .caller()
        .map_or("nobody", Caller::subject)
        .to_owned();
    DONE.lock()
        .unwrap()
        .push(format!("refund {order} {amount}"));
    DONE.lock()
        .unwrap()
        .push(format!("refund {order} key={key} caller={caller}"));
    Ok(format!("Refunded ${amount} on {order}"))
}

/// Count an order's lines: read-only, safe to run again.
#[tool(read_only)]
fn audit_lines(order: String, amount: u64) -> Result<u64, ErrorEnvelope> {
    DONE.lock().unwrap().push(format!("audit {order} {amount}"));
    Ok(amount)
}

fn tools(store: Arc<dyn Store>) -> ToolSet {
    ToolSet::new()
        .tool::<refund>()
        .tool::<audit_lines>()
        .guards(Guards::new().for_all(cap))
        .store(store)
        // Each test runs approved calls itself, when it says so; the
        // background runner has a test of its own.
        .approvals_in_background(false)
}

fn alice() -> Caller {
    Caller::new("alice", ["refunds:write"])
}

fn approver() -> Caller {
    Caller::new("carol", ["refunds:approve"])
}

fn refund_args(order: &str, amount: u64) -> Value {
    json!({"order": order, "amount": amount, "card": "4111-1111-1111-1111"})
}

async fn call_as(tools: &ToolSet, caller: &Caller, tool: &str, arguments: Value) -> (bool, Value) {
    let reply = tools
        .call_with(
            tool,
            arguments,
            ToolContext::detached().with_caller(caller.clone()),
        )
        .await
        .expect("a reply");
    (reply.is_error, reply.structured_content.unwrap_or_default())
}

/// The ticket id of an `AWAITING_APPROVAL` reply, checked against the schema.
fn ticket_of(reply: &Value) -> String {
    assert_eq!(reply["reason"], "AWAITING_APPROVAL", "{reply}");
    assert_eq!(reply["errorCategory"], "business");
    assert_eq!(reply["isRetryable"], false);
    assert_eq!(reply["escalation"]["reason"], "awaiting_approval");
    assert_eq!(reply["escalation"]["attempts"], 0);
    let ticket = &reply["escalation"]["ticket"];
    assert_eq!(ticket["approvers"], "refunds:approve");
    assert!(ticket["read"].as_str().unwrap().contains("same arguments"));
    let schema: Value =
        serde_json::from_str(include_str!("../schema/error-envelope.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(validator.is_valid(reply), "{reply}");
    // The caller's secret never reaches the ticket.
    assert!(!reply.to_string().contains("4111-1111"), "{reply}");
    ticket["id"].as_str().unwrap().to_owned()
}

/// A new SQLite file's URL, in a folder removed when the guard drops.
fn sqlite_url(name: &str) -> (tempfile::TempDir, String) {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join(format!("{name}.db"));
    let url = format!("sqlite:{}", path.display());
    (folder, url)
}

/// Refunds need `refunds:write`.
fn writers_only(call: &ToolCall) -> Result<(), Blocked> {
    call.require_scope("refunds:write")
}

/// Whether `lifting_cap_of_scopes` lets every refund through.
static SCOPE_CAP_LIFTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// [`cap`], until it is lifted.
fn lifting_cap_of_scopes(call: &ToolCall) -> Result<(), Blocked> {
    match SCOPE_CAP_LIFTED.load(std::sync::atomic::Ordering::SeqCst) {
        true => Ok(()),
        false => cap(call),
    }
}

/// Two clients of one person: one token may refund and read orders, the
/// other only refund, or only read. The approval of the first's refund,
/// found by subject and arguments, once gave the others its result before
/// any guard asked for their scopes; and a token the guards let through
/// must not run the call beside its pending approval (it would run twice
/// on the yes). Such a token is refused, and reads nothing.
#[tokio::test]
async fn a_token_without_the_scope_never_reads_an_approved_calls_result() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tools = ToolSet::new()
        .tool::<refund>()
        .guards(
            Guards::new()
                .for_all(writers_only)
                .for_all(lifting_cap_of_scopes),
        )
        .store(store)
        .approvals_in_background(false);
    let args = refund_args("T-SCOPE", 620);
    let full = Caller::new("alice", ["refunds:write", "orders:read"]);
    let (_, reply) = call_as(&tools, &full, "refund", args.clone()).await;
    let ticket = ticket_of(&reply);
    let lean = Caller::new("alice", ["refunds:write"]);
    let read_only = Caller::new("alice", ["orders:read"]);
    // The cap lifted: the lean token's guards pass, yet it does not run.
    SCOPE_CAP_LIFTED.store(true, std::sync::atomic::Ordering::SeqCst);
    for token in [&lean, &read_only] {
        let (failed, pending) = call_as(&tools, token, "refund", args.clone()).await;
        assert!(failed);
        assert_eq!(pending["reason"], "INSUFFICIENT_SCOPE", "{pending}");
        assert!(!pending.to_string().contains(&ticket), "{pending}");
    }
    assert_eq!(times("refund T-SCOPE 620"), 0);
    tools.decide(&ticket, &approver(), true, "").await.unwrap();
    tools.run_approved().await.unwrap();
    assert_eq!(times("refund T-SCOPE 620"), 1);
    for token in [&lean, &read_only] {
        let (failed, done) = call_as(&tools, token, "refund", args.clone()).await;
        assert!(failed, "{done}");
        assert_eq!(done["reason"], "INSUFFICIENT_SCOPE", "{done}");
        assert!(!done.to_string().contains("Refunded"), "{done}");
    }
    // The token that asked reads its result.
    let (failed, result) = call_as(&tools, &full, "refund", args).await;
    assert!(!failed, "{result}");
    assert_eq!(times("refund T-SCOPE 620"), 1);
    SCOPE_CAP_LIFTED.store(false, std::sync::atomic::Ordering::SeqCst);
}

/// A store that never answers: its database's host gone from the
/// network, each query waiting for a reply that does not come.
#[derive(Debug)]
struct OutOfReach;

/// Every operation of [`OutOfReach`]: never answered.
macro_rules! never_answered {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        $(fn $name<'a>(&'a self, $($arg: $ty),*) -> StoreFuture<'a, $out> {
            let _ = ($($arg),*);
            Box::pin(std::future::pending())
        })*
    };
}

impl Store for OutOfReach {
    never_answered! {
        create_task(task: &'a TaskRecord, most_running: u64) -> bool;
        task(id: &'a str) -> Option<TaskRecord>;
        update_task(id: &'a str, holder: &'a str, update: &'a TaskUpdate) -> bool;
        answer_task(id: &'a str, responses: &'a Value) -> bool;
        cancel_task(id: &'a str) -> bool;
        running_tasks(service: &'a str, caller: Option<&'a str>) -> (u64, u64);
        claim_abandoned_tasks(service: &'a str, tools: Option<&'a [&'a str]>, holder: &'a str, now_ms: i64, lease_until_ms: i64, limit: u32) -> Vec<TaskRecord>;
        open_approval(approval: &'a ApprovalRecord, most_waiting: u64) -> Option<ApprovalRecord>;
        call_approvals(digest: &'a str, now_ms: i64) -> Vec<ApprovalRecord>;
        waiting_approvals(service: &'a str, caller: Option<&'a str>, now_ms: i64) -> u64;
        approval(id: &'a str) -> Option<ApprovalRecord>;
        approvals(service: &'a str, approvers: Option<&'a [&'a str]>, states: &'a [ApprovalState], limit: u32) -> Vec<ApprovalRecord>;
        decide(id: &'a str, decision: &'a Decision) -> bool;
        claim_approval(id: &'a str, holder: &'a str, now_ms: i64, lease_until_ms: i64) -> Option<ApprovalRecord>;
        renew_approval(id: &'a str, holder: &'a str, lease_until_ms: i64) -> bool;
        approvals_to_run(service: &'a str, now_ms: i64, limit: u32) -> Vec<String>;
        finish_approval(id: &'a str, holder: &'a str, result: &'a Value, at_ms: i64) -> bool;
        expire_approvals(service: &'a str, now_ms: i64, escalate: &'a Escalate<'a>) -> Vec<ApprovalRecord>;
        redeem(nonce: &'a str, until_ms: i64) -> bool;
        redeemed(nonce: &'a str) -> bool;
        record_escalation(escalation: &'a EscalationRecord, most_open: u64) -> bool;
        escalations(service: &'a str, approvers: Option<&'a [&'a str]>, state: EscalationState, limit: u32) -> Vec<EscalationRecord>;
        escalation(id: &'a str) -> Option<EscalationRecord>;
        open_escalations(service: Option<&'a str>, caller: Option<&'a str>) -> u64;
        resolve_escalation(id: &'a str, by: &'a str, note: &'a str, at_ms: i64) -> bool;
        forget_resolved_escalations(service: &'a str, resolved_before_ms: i64) -> u64;
        audit(entry: &'a AuditEntry) -> ();
        audit_log(limit: u32) -> Vec<AuditEntry>;
        sweep(now_ms: i64) -> ();
    }

    fn ledger(&self) -> &str {
        "out-of-reach"
    }
}

/// A store out of reach fails what needs it once its answer is 20 s late,
/// as any failure of the store does, instead of holding a call, the
/// approvals runner or a person's decision until TCP gives up (about a
/// quarter of an hour; for a reply lost, never).
#[tokio::test(start_paused = true)]
async fn a_store_out_of_reach_fails_what_needs_it_instead_of_hanging() {
    use std::time::Duration;
    use tokio::time::{Instant, timeout};
    const AN_HOUR: Duration = Duration::from_secs(3600);
    let tools = tools(Arc::new(OutOfReach));
    // Over the cap and under it: a call not safe to repeat whose approvals
    // cannot be read is refused unrun, once the store has had its time.
    for amount in [900, 100] {
        let asked = Instant::now();
        let alice = alice();
        let call = call_as(&tools, &alice, "refund", refund_args("OUT-1", amount));
        let (failed, reply) = timeout(AN_HOUR, call).await.expect("answered");
        assert!(failed, "{reply}");
        assert_eq!(reply["errorCategory"], "transient", "{reply}");
        assert_eq!(reply["reason"], "NOT_APPLIED", "{reply}");
        assert!(
            asked.elapsed() >= Duration::from_secs(20),
            "waited for the store"
        );
        assert_eq!(times(&format!("refund OUT-1 {amount}")), 0);
    }
    // The runner's pass ends with the store's failure; the next tries again.
    let pass = timeout(AN_HOUR, tools.run_approved()).await.expect("ended");
    let error = pass.unwrap_err().to_string();
    assert!(error.contains("no answer within 20 s"), "{error}");
    // A person's decision is refused, not left hanging.
    let decided = timeout(AN_HOUR, tools.decide("a-ticket", &approver(), true, "")).await;
    assert!(decided.expect("ended").is_err());
}

/// The lean token's call, held in its guard until the test lets it go:
/// (told when it is there, told to go on).
type Gate = (std::sync::mpsc::Sender<()>, std::sync::mpsc::Receiver<()>);
static GATE: Mutex<Option<Gate>> = Mutex::new(None);

/// [`cap`]; a call without `orders:read` first waits at [`GATE`].
fn gated_cap(call: &ToolCall) -> Result<(), Blocked> {
    let lean = call.caller().is_some_and(|c| !c.has_scope("orders:read"));
    if lean && let Some((reached, go_on)) = GATE.lock().unwrap().take() {
        reached.send(()).unwrap();
        go_on.recv().unwrap();
    }
    cap(call)
}

/// The same call made at once by two tokens of one person: the lean one
/// past its look for a live approval, in its guards, while the full one
/// opens the approval. The lean one, blocked by the same guard, once met
/// that approval and took its ticket (and, as a task, its outcome).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_without_the_scope_does_not_take_an_approval_opened_meanwhile() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tools = ToolSet::new()
        .tool::<refund>()
        .guards(Guards::new().for_all(gated_cap))
        .store(store)
        .approvals_in_background(false);
    let (reached, at_gate) = std::sync::mpsc::channel();
    let (go_on, gate) = std::sync::mpsc::channel();
    *GATE.lock().unwrap() = Some((reached, gate));
    let args = refund_args("T-RACE", 620);
    let lean = Caller::new("alice", ["refunds:write"]);
    let full = Caller::new("alice", ["refunds:write", "orders:read"]);
    let leaning = tokio::spawn({
        let (tools, args) = (tools.clone(), args.clone());
        async move { call_as(&tools, &lean, "refund", args).await }
    });
    at_gate.recv().unwrap();
    let (_, reply) = call_as(&tools, &full, "refund", args).await;
    let ticket = ticket_of(&reply);
    go_on.send(()).unwrap();
    let (failed, leaned) = leaning.await.unwrap();
    assert!(failed);
    assert_eq!(leaned["reason"], "INSUFFICIENT_SCOPE", "{leaned}");
    assert!(!leaned.to_string().contains(&ticket), "{leaned}");
}

#[tokio::test]
async fn a_refund_over_the_cap_waits_for_an_approver_and_runs_once() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tools = tools(Arc::clone(&store));
    let args = refund_args("T-1", 620);

    let (failed, reply) = call_as(&tools, &alice(), "refund", args.clone()).await;
    assert!(failed);
    let ticket = ticket_of(&reply);
    assert_eq!(times("refund T-1 620"), 0, "nothing ran");

    // The same call again: the same ticket, not another.
    let (_, again) = call_as(&tools, &alice(), "refund", args.clone()).await;
    assert_eq!(ticket_of(&again), ticket);
    assert_eq!(
        store
            .approvals("", None, &[ApprovalState::Pending], 100)
            .await
            .unwrap()
            .iter()
            .filter(|approval| approval.id == ticket)
            .count(),
        1
    );

    // Who may not decide: the caller itself (even holding the scope), a
    // token without the scope, an unknown ticket.
    let alice_with_scope = Caller::new("alice", ["refunds:write", "refunds:approve"]);
    assert!(matches!(
        tools.decide(&ticket, &alice_with_scope, true, "mine").await,
        Err(DecisionError::OwnCall)
    ));
    assert!(matches!(
        tools.decide(&ticket, &Caller::new("bob", ["refunds:write"]), true, "").await,
        Err(DecisionError::NotAnApprover { scope }) if scope == "refunds:approve"
    ));
    assert!(matches!(
        tools.decide("no-such-ticket", &approver(), true, "").await,
        Err(DecisionError::UnknownTicket)
    ));

    let decided = tools
        .decide(&ticket, &approver(), true, "checked the receipt")
        .await
        .unwrap();
    assert_eq!(decided.decided_by.as_deref(), Some("carol"));
    // Decided once: a second decision, either way, is refused.
    assert!(matches!(
        tools.decide(&ticket, &approver(), false, "too late").await,
        Err(DecisionError::NotPending(_))
    ));

    tools.run_approved().await.unwrap();
    tools.run_approved().await.unwrap();
    assert_eq!(times("refund T-1 620"), 1, "approved once, run once");
    assert_eq!(
        times(&format!("refund T-1 key={ticket} caller=alice")),
        1,
        "the tool ran as its caller, with the ticket as its idempotency key"
    );

    // The same call made again reads the kept result; nothing runs.
    let (failed, result) = call_as(&tools, &alice(), "refund", args.clone()).await;
    assert!(!failed, "{result}");
    assert_eq!(result["result"], "Refunded $620 on T-1");
    assert_eq!(times("refund T-1 620"), 1);

    // Another caller's same arguments are another call: a ticket of its own.
    let dave = Caller::new("dave", ["refunds:write"]);
    let (_, theirs) = call_as(&tools, &dave, "refund", args).await;
    assert_ne!(ticket_of(&theirs), ticket);

    // The decision is in the audit: who, what, which, why.
    let audit = store.audit_log(10).await.unwrap();
    assert!(
        audit.iter().any(|entry| entry.who == "carol"
            && entry.what == "approve"
            && entry.subject == ticket
            && entry.note == "checked the receipt"),
        "{audit:?}"
    );
}

/// Whether the cap of [`liftable_cap`] is lifted — the day changed, the
/// policy did: the same refund passes it now.
static LIFTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// [`cap`], until it is lifted.
fn liftable_cap(call: &ToolCall) -> Result<(), Blocked> {
    match LIFTED.load(std::sync::atomic::Ordering::SeqCst) {
        true => Ok(()),
        false => cap(call),
    }
}

/// [`cap`], until it is lifted: for the test below alone.
static NOTED_LIFTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn noted_cap(call: &ToolCall) -> Result<(), Blocked> {
    match NOTED_LIFTED.load(std::sync::atomic::Ordering::SeqCst) {
        true => Ok(()),
        false => cap(call),
    }
}

/// Refund an order, with an optional note.
#[tool(destructive)]
fn noted_refund(order: String, amount: f64, note: Option<String>) -> Result<String, ErrorEnvelope> {
    let _ = note;
    DONE.lock().unwrap().push(format!("noted refund {order}"));
    Ok(format!("Refunded ${amount} on {order}"))
}

/// The same call written again another way — a whole amount as `620.0`,
/// an optional note as `null`, as an agent that renders its arguments
/// anew does — is the same call: it meets its pending approval, and does
/// not run beside it once the guard lets it pass (to run a second time on
/// the approver's yes).
#[tokio::test]
async fn the_same_call_written_another_way_still_meets_its_approval() {
    let tools = ToolSet::new()
        .tool::<noted_refund>()
        .guards(Guards::new().for_all(noted_cap))
        .store(Arc::new(MemoryStore::new()))
        .approvals_in_background(false);
    let first = json!({"order": "N-1", "amount": 620});
    let (_, reply) = call_as(&tools, &alice(), "noted_refund", first).await;
    let ticket = ticket_of(&reply);
    NOTED_LIFTED.store(true, std::sync::atomic::Ordering::SeqCst);
    let again = json!({"order": "N-1", "amount": 620.0, "note": null});
    let (failed, reply) = call_as(&tools, &alice(), "noted_refund", again).await;
    assert!(failed, "{reply}");
    assert_eq!(ticket_of(&reply), ticket);
    assert_eq!(
        times("noted refund N-1"),
        0,
        "nothing ran beside the approval"
    );
    tools.decide(&ticket, &approver(), true, "").await.unwrap();
    tools.run_approved().await.unwrap();
    assert_eq!(times("noted refund N-1"), 1, "approved once, run once");
}

/// The same call made again meets its approval whatever the guards say of
/// it now: told to call again, the agent does once the cap is lifted — and
/// the refund does not run beside its pending approval, to run again when
/// the approver says yes; nor does a declined one run once the guard lets
/// it pass.
#[tokio::test]
async fn a_call_made_again_once_its_guard_passes_still_waits_for_its_approval() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tools = ToolSet::new()
        .tool::<refund>()
        .guards(Guards::new().for_all(liftable_cap))
        .store(Arc::clone(&store))
        .approvals_in_background(false);
    let (args, declined) = (refund_args("L-1", 620), refund_args("L-2", 640));
    let (_, reply) = call_as(&tools, &alice(), "refund", args.clone()).await;
    let ticket = ticket_of(&reply);
    let (_, reply) = call_as(&tools, &alice(), "refund", declined.clone()).await;
    let no = ticket_of(&reply);
    tools
        .decide(&no, &approver(), false, "not this one")
        .await
        .unwrap();

    LIFTED.store(true, std::sync::atomic::Ordering::SeqCst);
    let (failed, again) = call_as(&tools, &alice(), "refund", args.clone()).await;
    assert!(failed, "{again}");
    assert_eq!(ticket_of(&again), ticket);
    assert!(
        again["message"]
            .as_str()
            .unwrap()
            .contains("exceeds the $500 cap"),
        "{again}"
    );
    assert_eq!(
        times("refund L-1 620"),
        0,
        "nothing ran beside the approval"
    );
    let (failed, refused) = call_as(&tools, &alice(), "refund", declined).await;
    assert!(failed, "{refused}");
    assert_eq!(refused["reason"], "HUMAN_DECLINED", "{refused}");
    assert_eq!(times("refund L-2 640"), 0, "declined: never run");

    tools.decide(&ticket, &approver(), true, "").await.unwrap();
    tools.run_approved().await.unwrap();
    let (failed, result) = call_as(&tools, &alice(), "refund", args).await;
    assert!(!failed, "{result}");
    assert_eq!(result["result"], "Refunded $620 on L-1");
    assert_eq!(times("refund L-1 620"), 1, "approved once, run once");
    // A call with no approval of its own runs as the guard now says.
    let (failed, _) = call_as(&tools, &alice(), "refund", refund_args("L-3", 700)).await;
    assert!(!failed);
    assert_eq!(times("refund L-3 700"), 1);
}

/// Leaves a note on an order: destructive, and guarded by nothing.
#[tool(destructive)]
fn note(order: String) -> Result<String, ErrorEnvelope> {
    DONE.lock().unwrap().push(format!("note {order}"));
    Ok(format!("noted {order}"))
}

/// Leaves a note on an order, under a guard of its own.
#[tool(destructive, guard = cap)]
fn own_guarded_note(order: String, amount: u64) -> Result<String, ErrorEnvelope> {
    DONE.lock().unwrap().push(format!("own note {order}"));
    Ok(format!("noted {order} ({amount})"))
}

/// Only a guarded tool's calls read the store's approvals: an unguarded
/// one runs when the store cannot be read. A guarded call that cannot read
/// them runs nothing — unless its tool is safe to run twice.
#[tokio::test]
async fn only_guarded_calls_read_their_approvals_and_none_runs_unread() {
    let (_folder, url) = sqlite_url("unreadable-approvals");
    let store = store::open(&url).await.unwrap();
    let tools = ToolSet::new()
        .tool::<refund>()
        .tool::<audit_lines>()
        .tool::<note>()
        .tool::<own_guarded_note>()
        .guards(
            Guards::new()
                .for_tool("refund", cap)
                .for_tool("audit_lines", cap),
        )
        .store(store)
        .approvals_in_background(false);
    // The approvals are gone from under the store, as a database that
    // lost a table: every read of them fails.
    let beside = sqlx::SqlitePool::connect(&url).await.unwrap();
    sqlx::query("DROP TABLE te_approvals")
        .execute(&beside)
        .await
        .unwrap();
    beside.close().await;

    let (failed, noted) = call_as(&tools, &alice(), "note", json!({"order": "U-1"})).await;
    assert!(!failed, "{noted}");
    assert_eq!(times("note U-1"), 1);
    let (failed, audited) = call_as(
        &tools,
        &alice(),
        "audit_lines",
        json!({"order": "U-2", "amount": 10}),
    )
    .await;
    assert!(!failed, "{audited}");
    assert_eq!(times("audit U-2 10"), 1);
    let (failed, refused) = call_as(&tools, &alice(), "refund", refund_args("U-3", 10)).await;
    assert!(failed, "{refused}");
    assert_eq!(refused["errorCategory"], "transient", "{refused}");
    assert_eq!(refused["reason"], "NOT_APPLIED", "{refused}");
    // Not decoded, so none of its secrets noted: the arguments not shown.
    assert!(refused["attempted_query"].is_string(), "{refused}");
    // A tool's own guard makes it read its approvals too.
    let (failed, refused) = call_as(
        &tools,
        &alice(),
        "own_guarded_note",
        json!({"order": "U-4", "amount": 10}),
    )
    .await;
    assert!(failed, "{refused}");
    assert_eq!(refused["reason"], "NOT_APPLIED", "{refused}");
    assert_eq!(times("own note U-4"), 0, "not run unread");
    assert_eq!(times("refund U-3 10"), 0, "not run unread");
}

/// One caller cannot bury the approvers under blocked calls: past the
/// bound, a blocked call of theirs opens no approval (so no notice goes
/// out), is not kept as an escalation either, and nothing runs — however
/// many are in flight at once; their calls that wait already are read as
/// before, another caller opens theirs, and once one of theirs is decided
/// the refused call opens its approval. Counted in a SQLite file two
/// replicas share, half the calls in flight on each: exactly the bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_caller_cannot_flood_the_approvers_with_blocked_calls() {
    let (_folder, url) = sqlite_url("flood");
    let store = store::open(&url).await.unwrap();
    let tools = tools(Arc::clone(&store)).max_waiting_approvals(3);
    // A second replica on the same file.
    let replica = self::tools(store::open(&url).await.unwrap()).max_waiting_approvals(3);
    let mallory = Caller::new("mallory", ["refunds:write"]);
    let args = |n: u64| refund_args(&format!("F-{n}"), 600 + n);
    // Forty at once, each its own call, half of them on each replica: three
    // open, the rest are refused.
    let replies = futures_util::future::join_all((0..40).map(|n| {
        let on = if n % 2 == 0 { &tools } else { &replica };
        call_as(on, &mallory, "refund", args(n))
    }))
    .await;
    let mut tickets = Vec::new();
    for (n, (failed, reply)) in replies.into_iter().enumerate() {
        assert!(failed);
        match reply["reason"].as_str() {
            Some("AWAITING_APPROVAL") => tickets.push((n as u64, ticket_of(&reply))),
            _ => assert_eq!(reply["reason"], "TOO_MANY_APPROVALS", "{reply}"),
        }
    }
    assert_eq!(tickets.len(), 3, "{tickets:?}");
    let (opened, tickets): (Vec<u64>, Vec<String>) = tickets.into_iter().unzip();
    let refused: Vec<u64> = (0..103).filter(|n| !opened.contains(n)).collect();
    let schema: Value =
        serde_json::from_str(include_str!("../schema/error-envelope.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for &n in &refused {
        let (failed, reply) = call_as(&tools, &mallory, "refund", args(n)).await;
        assert!(failed);
        assert_eq!(reply["reason"], "TOO_MANY_APPROVALS", "{reply}");
        assert_eq!(reply["errorCategory"], "business");
        assert_eq!(reply["escalation"]["attempts"], 0, "nothing ran");
        assert!(reply["escalation"].get("ticket").is_none(), "{reply}");
        assert!(validator.is_valid(&reply), "{reply}");
        assert!(!reply.to_string().contains("4111-1111"), "{reply}");
    }
    let mallorys = |pending: Vec<store::ApprovalRecord>| {
        (pending.iter())
            .filter(|approval| approval.caller.as_deref() == Some("mallory"))
            .count()
    };
    let pending = store
        .approvals("", None, &[ApprovalState::Pending], 1000)
        .await;
    assert_eq!(mallorys(pending.unwrap()), 3);
    let open = store
        .escalations("", None, EscalationState::Open, 1000)
        .await
        .unwrap();
    assert!(
        open.iter().all(|e| e.caller.as_deref() != Some("mallory")),
        "the refusals moved into the escalations: {open:?}"
    );

    // A call that waits already is read as before.
    let (_, again) = call_as(&tools, &mallory, "refund", args(opened[0])).await;
    assert_eq!(ticket_of(&again), tickets[0]);
    // Another caller is not held back by mallory's.
    let (_, alices) = call_as(&tools, &alice(), "refund", args(refused[0])).await;
    assert!(!tickets.contains(&ticket_of(&alices)));
    // One of mallory's decided: the refused call opens its approval.
    tools
        .decide(&tickets[1], &approver(), false, "no")
        .await
        .unwrap();
    let (_, now) = call_as(&tools, &mallory, "refund", args(refused[0])).await;
    assert!(!tickets.contains(&ticket_of(&now)));
    let (_, full) = call_as(&tools, &mallory, "refund", args(refused[1])).await;
    assert_eq!(full["reason"], "TOO_MANY_APPROVALS", "{full}");
    tools.run_approved().await.unwrap();
    for n in refused {
        assert_eq!(times(&format!("refund F-{n} {}", 600 + n)), 0);
    }
}

/// An approver's yes that meets the next guard's block opens that block's
/// approval even when its caller has as many waiting as they may: the
/// approvers, not the caller, made it, and the yes is not wasted.
#[tokio::test]
async fn an_approved_call_that_meets_the_next_block_opens_it_whatever_waits() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tools = ToolSet::new()
        .tool::<refund>()
        .guards(Guards::new().for_all(cap).for_all(finance))
        .store(Arc::clone(&store))
        .approvals_in_background(false)
        .max_waiting_approvals(1);
    let args = refund_args("BOUND-1", 1200);
    let (_, reply) = call_as(&tools, &alice(), "refund", args.clone()).await;
    let first = ticket_of(&reply);
    tools.decide(&first, &approver(), true, "").await.unwrap();
    // Alice fills her one place with another call.
    let (_, other) = call_as(&tools, &alice(), "refund", refund_args("BOUND-2", 700)).await;
    ticket_of(&other);

    tools.run_approved().await.unwrap();
    let (_, waiting) = call_as(&tools, &alice(), "refund", args).await;
    assert_eq!(waiting["reason"], "AWAITING_APPROVAL", "{waiting}");
    assert_eq!(
        waiting["escalation"]["ticket"]["approvers"], "finance:approve",
        "{waiting}"
    );
}

#[tokio::test]
async fn a_declined_ticket_is_human_declined_and_never_runs() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tools = tools(Arc::clone(&store));
    let args = refund_args("T-2", 700);
    let (_, reply) = call_as(&tools, &alice(), "refund", args.clone()).await;
    let ticket = ticket_of(&reply);
    tools
        .decide(&ticket, &approver(), false, "duplicate claim")
        .await
        .unwrap();
    tools.run_approved().await.unwrap();
    let (failed, reply) = call_as(&tools, &alice(), "refund", args).await;
    assert!(failed);
    assert_eq!(reply["reason"], "HUMAN_DECLINED", "{reply}");
    assert_eq!(reply["escalation"]["reason"], "human_declined");
    assert!(
        reply["message"]
            .as_str()
            .unwrap()
            .contains("duplicate claim"),
        "{reply}"
    );
    assert_eq!(times("refund T-2 700"), 0);
    // A person decided: the call does not go back to the inbox, nor their
    // name and note to everyone who may enter it.
    let open = store
        .escalations("", None, EscalationState::Open, 10)
        .await
        .unwrap();
    assert!(open.is_empty(), "{open:?}");
}

/// A client whose user accepts every question it is asked.
#[derive(Clone, Default)]
struct Agreeable {
    asked: Arc<Mutex<usize>>,
}

impl ClientHandler for Agreeable {
    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder().enable_elicitation().build();
        ClientConfig::new(capabilities, Implementation::new("agent", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        _: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        *self.asked.lock().unwrap() += 1;
        Ok(ElicitResult::new(ElicitationAction::Accept)
            .with_content(json!({"approver": "agent", "note": "approve"})))
    }
}

#[tokio::test]
async fn nothing_the_calling_client_sends_decides_a_ticket() {
    let tools = tools(Arc::new(MemoryStore::new()));
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let served = tools.clone();
    tokio::spawn(async move {
        let running = served.serve(server_io).await.expect("the server starts");
        let _ = running.waiting().await;
    });
    let agent = Agreeable::default();
    let client = agent
        .clone()
        .serve(client_io)
        .await
        .expect("the client connects");
    let arguments = refund_args("T-3", 900);
    for _ in 0..3 {
        let result = client
            .call_tool(
                CallToolRequestParams::new("refund")
                    .with_arguments(arguments.as_object().unwrap().clone()),
            )
            .await
            .unwrap();
        assert_eq!(result.is_error, Some(true));
        ticket_of(&result.structured_content.unwrap());
    }
    assert_eq!(*agent.asked.lock().unwrap(), 0, "the agent was never asked");
    assert_eq!(times("refund T-3 900"), 0, "and nothing ran");
    client.cancel().await.unwrap();
}

/// Two replicas on one store: `n` calls blocked on either, decided on the
/// other, and both racing to run every one: each runs once.
async fn replicas(one: Arc<dyn Store>, two: Arc<dyn Store>, label: &str, n: u64) {
    let (one, two) = (tools(one), tools(two));
    let order = |i: u64| format!("{label}-{i}");
    let mut tickets = Vec::new();
    for i in 0..n {
        let replica = if i % 2 == 0 { &one } else { &two };
        let (_, reply) =
            call_as(replica, &alice(), "refund", refund_args(&order(i), 600 + i)).await;
        tickets.push(ticket_of(&reply));
    }
    for (i, ticket) in tickets.iter().enumerate() {
        let replica = if i % 2 == 0 { &two } else { &one };
        replica
            .decide(ticket, &approver(), true, "ok\0 (a NUL typed in)")
            .await
            .unwrap();
    }
    let (ran_one, ran_two) = tokio::join!(one.run_approved(), two.run_approved());
    // A shared database may hold approved calls of other tests too: at
    // least these ran, each once (counted below by its own order).
    let ran = ran_one.unwrap() + ran_two.unwrap();
    assert!(
        ran >= n as usize,
        "every approved call ran, on one replica or the other"
    );
    let (again_one, again_two) = tokio::join!(one.run_approved(), two.run_approved());
    assert_eq!(
        again_one.unwrap() + again_two.unwrap(),
        0,
        "nothing left to run"
    );
    for i in 0..n {
        assert_eq!(
            times(&format!("refund {} {}", order(i), 600 + i)),
            1,
            "{} ran once",
            order(i)
        );
        let replica = if i % 2 == 0 { &two } else { &one };
        let (failed, result) =
            call_as(replica, &alice(), "refund", refund_args(&order(i), 600 + i)).await;
        assert!(!failed, "{result}");
    }
}

#[tokio::test]
async fn two_replicas_on_one_sqlite_file_run_each_approved_call_once() {
    let (_folder, url) = sqlite_url("replicas");
    replicas(
        store::open(&url).await.unwrap(),
        store::open(&url).await.unwrap(),
        "R",
        20,
    )
    .await;
}

/// Postgres, when `TOOL_ENVELOPE_TEST_POSTGRES` names one
/// (`scripts/test-postgres.sh`): 100 approvals, 100 runs, no duplicate.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_two_replicas_run_a_hundred_approved_calls_once_each() {
    let Ok(url) = std::env::var("TOOL_ENVELOPE_TEST_POSTGRES") else {
        eprintln!("TOOL_ENVELOPE_TEST_POSTGRES is not set: scripts/test-postgres.sh runs this");
        return;
    };
    let label = format!("P{}", store::now_ms());
    replicas(
        store::open(&url).await.unwrap(),
        store::open(&url).await.unwrap(),
        &label,
        100,
    )
    .await;
}

#[tokio::test]
async fn a_ticket_outlives_a_restart_and_runs_once_after_it() {
    let (_folder, url) = sqlite_url("restart");
    let before = tools(store::open(&url).await.unwrap());
    let (_, reply) = call_as(&before, &alice(), "refund", refund_args("S-1", 650)).await;
    let ticket = ticket_of(&reply);
    drop(before);

    // A new process: a new tool set, a new store on the same file.
    let after = tools(store::open(&url).await.unwrap());
    let (_, waiting) = call_as(&after, &alice(), "refund", refund_args("S-1", 650)).await;
    assert_eq!(ticket_of(&waiting), ticket, "the pending approval was kept");
    after
        .decide(&ticket, &approver(), true, "after the restart")
        .await
        .unwrap();
    after.run_approved().await.unwrap();
    assert_eq!(times("refund S-1 650"), 1);
    let (failed, result) = call_as(&after, &alice(), "refund", refund_args("S-1", 650)).await;
    assert!(!failed, "{result}");
}

/// The ticket of a $650 refund of `order` that waits for an approver in
/// the store at `url`, opened by a release before the one a test builds.
async fn waiting_before_a_release(url: &str, order: &str) -> String {
    let before = tools(store::open(url).await.unwrap());
    let (_, reply) = call_as(&before, &alice(), "refund", refund_args(order, 650)).await;
    ticket_of(&reply)
}

/// A release that removed the tool's guard runs no call approved under it:
/// the same call made again now runs without looking for the approval, so
/// the approver's yes, run too, would refund twice. The approved run says
/// so; the call made again runs, once.
#[tokio::test]
async fn a_call_approved_under_a_guard_since_removed_is_not_run_by_the_approval() {
    let (_folder, url) = sqlite_url("guard-removed");
    let ticket = waiting_before_a_release(&url, "G-1").await;

    // The next release: the same tools, no guard.
    let after = ToolSet::new()
        .tool::<refund>()
        .store(store::open(&url).await.unwrap())
        .approvals_in_background(false);
    let (failed, ran) = call_as(&after, &alice(), "refund", refund_args("G-1", 650)).await;
    assert!(!failed, "{ran}");
    assert_eq!(times("refund G-1 650"), 1);
    after.decide(&ticket, &approver(), true, "").await.unwrap();
    after.run_approved().await.unwrap();
    assert_eq!(times("refund G-1 650"), 1, "the approval ran nothing");
    let store = store::open(&url).await.unwrap();
    let done = store.approval(&ticket).await.unwrap().unwrap();
    assert_eq!(done.state, ApprovalState::Done);
    let result = done.result.unwrap();
    assert_eq!(
        result["structuredContent"]["reason"], "NOT_APPLIED",
        "{result}"
    );
    // Sent as every failure of the set is: its text copy the JSON of the
    // envelope, not the message alone.
    let text = result["content"][0]["text"].as_str().unwrap();
    let sent: Value = serde_json::from_str(text).expect("the text copy is the envelope's JSON");
    assert_eq!(sent, result["structuredContent"], "{result}");
    assert_eq!(sent["isError"], true);
}

/// An approver's yes holds for one time to live after it. A call approved
/// while every runner was down is not run when one comes back hours later,
/// with its caller's scopes as they were: it expires unrun, escalated for
/// the approvers with who said yes, and the same call made again asks
/// anew.
#[tokio::test]
async fn a_yes_no_runner_took_up_in_its_time_is_not_run_late() {
    // The call as it waited, read from the store it was opened in, then
    // kept in the store of this test as if opened two hours ago for an
    // hour, and approved ninety minutes ago (the yes held for an hour).
    let (_before, first) = sqlite_url("late-yes-opened");
    let ticket = waiting_before_a_release(&first, "L-1").await;
    let opened = store::open(&first).await.unwrap();
    let mut waited = opened.approval(&ticket).await.unwrap().unwrap();
    let now = store::now_ms();
    (waited.created_ms, waited.expires_ms) = (now - 7_200_000, now - 3_600_000);
    let (_folder, url) = sqlite_url("late-yes");
    let store = store::open(&url).await.unwrap();
    assert!(
        store
            .open_approval(&waited, u64::MAX)
            .await
            .unwrap()
            .is_some()
    );
    let yes = store::Decision::new(true, "carol", "go").at(now - 5_400_000);
    assert!(store.decide(&ticket, &yes).await.unwrap());

    let tools = tools(Arc::clone(&store));
    assert_eq!(tools.run_approved().await.unwrap(), 0, "nothing ran");
    assert_eq!(times("refund L-1 650"), 0);
    let expired = store.approval(&ticket).await.unwrap().unwrap();
    assert_eq!(expired.state, ApprovalState::Expired);
    let open = store
        .escalations("", Some(&["refunds:approve"]), EscalationState::Open, 50)
        .await
        .unwrap();
    let escalation = open
        .iter()
        .find(|e| {
            e.envelope["escalation"]["detail"]
                .as_str()
                .unwrap_or("")
                .contains(&ticket)
        })
        .expect("the lapsed yes is escalated");
    assert_eq!(escalation.envelope["reason"], "APPROVAL_EXPIRED");
    let detail = escalation.envelope["escalation"]["detail"]
        .as_str()
        .unwrap();
    assert!(detail.contains("approved by carol"), "{detail}");
    assert!(detail.contains("not run"), "{detail}");

    // The same call made again waits for a new yes; nothing ran.
    let (failed, again) = call_as(&tools, &alice(), "refund", refund_args("L-1", 650)).await;
    assert!(failed);
    assert_ne!(
        ticket_of(&again),
        ticket,
        "a new approval, not the lapsed one"
    );
    tools.run_approved().await.unwrap();
    assert_eq!(times("refund L-1 650"), 0);
}

/// An approved call whose runner died while it ran, and whose yes's time
/// ran out before another replica took it over, is not run again late —
/// even when its tool is safe to repeat.
#[tokio::test]
async fn a_yes_whose_runner_died_is_not_run_again_past_its_time() {
    let (_folder, url) = sqlite_url("late-takeover");
    let store = store::open(&url).await.unwrap();
    let now = store::now_ms();
    let mut approval = store::ApprovalRecord::new(
        "late-takeover-digest",
        "cap@0",
        "audit_lines",
        json!({"order": "LT-1", "amount": 100}),
        json!({"isError": true, "errorCategory": "business", "isRetryable": false,
               "message": "Counting LT-1 needs an approver"}),
        Some("alice".to_owned()),
        "refunds:approve",
        now - 3_600_000,
    );
    approval.created_ms = now - 7_200_000;
    approval.safe_to_repeat = true;
    assert!(
        store
            .open_approval(&approval, u64::MAX)
            .await
            .unwrap()
            .is_some()
    );
    let yes = store::Decision::new(true, "carol", "go").at(now - 5_400_000);
    assert!(store.decide(&approval.id, &yes).await.unwrap());
    // Claimed by a replica that died: its lease ran out.
    let claimed = store
        .claim_approval(&approval.id, "dead", i64::MIN, now - 1)
        .await;
    assert!(claimed.unwrap().is_some());

    let tools = tools(Arc::clone(&store));
    assert_eq!(tools.run_approved().await.unwrap(), 0);
    assert_eq!(times("audit LT-1 100"), 0, "run again late");
    let ended = store.approval(&approval.id).await.unwrap().unwrap();
    assert_eq!(ended.state, ApprovalState::Done);
    let result = ended.result.unwrap();
    let message = result["structuredContent"]["message"].as_str().unwrap();
    assert!(message.contains("was not run again"), "{result}");
}

/// Approves `ticket` through `tools`, then claims its call to run as a
/// replica that dies at once: the approval is left running, its lease
/// out.
async fn approved_then_its_runner_died(tools: &ToolSet, store: &Arc<dyn Store>, ticket: &str) {
    tools.decide(ticket, &approver(), true, "").await.unwrap();
    let died = store
        .claim_approval(ticket, "dead-replica", i64::MIN, store::now_ms() - 1)
        .await
        .unwrap();
    assert!(died.is_some(), "claimed by a runner that then died");
}

/// An approved call of a tool this replica does not have is left to one
/// that has it — a release rolling out that adds the tool, an inbox served
/// apart with no tools — not claimed and failed here, which would spend
/// the person's yes with nothing run.
#[tokio::test]
async fn an_approved_call_of_a_tool_this_replica_lacks_is_left_to_one_that_has_it() {
    let (_folder, url) = sqlite_url("tool-missing");
    let ticket = waiting_before_a_release(&url, "R-9").await;
    let without = ToolSet::new()
        .tool::<audit_lines>()
        .guards(Guards::new().for_all(cap))
        .store(store::open(&url).await.unwrap())
        .approvals_in_background(false);
    let inbox_only = ToolSet::new()
        .store(store::open(&url).await.unwrap())
        .approvals_in_background(false);
    without
        .decide(&ticket, &approver(), true, "")
        .await
        .unwrap();
    assert_eq!(without.run_approved().await.unwrap(), 0);
    assert_eq!(inbox_only.run_approved().await.unwrap(), 0);
    let store = store::open(&url).await.unwrap();
    let waiting = store.approval(&ticket).await.unwrap().unwrap();
    assert_eq!(
        waiting.state,
        ApprovalState::Approved,
        "the yes is not spent"
    );
    assert_eq!(times("refund R-9 650"), 0);

    let with = tools(store::open(&url).await.unwrap());
    assert_eq!(with.run_approved().await.unwrap(), 1);
    assert_eq!(times("refund R-9 650"), 1, "run once, where the tool is");
    let done = store.approval(&ticket).await.unwrap().unwrap();
    assert_eq!(done.state, ApprovalState::Done);

    // One whose runner died as it ran is ended by whichever replica comes
    // first, the tool or not: nothing else would end it, and it may have
    // taken effect.
    let ticket = waiting_before_a_release(&url, "R-10").await;
    approved_then_its_runner_died(&without, &store, &ticket).await;
    assert_eq!(inbox_only.run_approved().await.unwrap(), 0);
    let ended = store.approval(&ticket).await.unwrap().unwrap();
    assert_eq!(ended.state, ApprovalState::Done, "{ended:?}");
    let result = ended.result.unwrap();
    assert_eq!(
        result["structuredContent"]["reason"], "MAY_HAVE_TAKEN_EFFECT",
        "{result}"
    );
    assert_eq!(times("refund R-10 650"), 0);

    // One safe to run again, its yes still live, is left to a replica
    // with the tool, which runs it again.
    let (_, reply) = call_as(
        &with,
        &alice(),
        "audit_lines",
        json!({"order": "R-11", "amount": 650}),
    )
    .await;
    let ticket = ticket_of(&reply);
    approved_then_its_runner_died(&without, &store, &ticket).await;
    assert_eq!(inbox_only.run_approved().await.unwrap(), 0);
    let left = store.approval(&ticket).await.unwrap().unwrap();
    assert_eq!(left.state, ApprovalState::Running, "{left:?}");
    assert_eq!(with.run_approved().await.unwrap(), 1);
    assert_eq!(times("audit R-11 650"), 1, "run again where the tool is");
}

/// Over $1,000 someone with `finance:approve` must decide as well.
fn finance(call: &ToolCall) -> Result<(), Blocked> {
    let amount: u64 = call.require("amount")?;
    if amount > 1000 {
        return Err(Blocked::new(format!("Refund of ${amount} needs finance"))
            .with_reason("OVER_FINANCE_CAP")
            .unless_approved_by(Approvers::scope("finance:approve")));
    }
    Ok(())
}

#[tokio::test]
async fn a_call_two_guards_block_waits_for_both_approvals_then_runs_once() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tools = ToolSet::new()
        .tool::<refund>()
        .guards(Guards::new().for_all(cap).for_all(finance))
        .store(Arc::clone(&store))
        .approvals_in_background(false);
    let args = refund_args("TWO-1", 1200);
    let (_, reply) = call_as(&tools, &alice(), "refund", args.clone()).await;
    let first = ticket_of(&reply);

    // The cap's approver says yes; the run meets the second guard, whose
    // approval opens then.
    tools.decide(&first, &approver(), true, "").await.unwrap();
    tools.run_approved().await.unwrap();
    assert_eq!(times("refund TWO-1 1200"), 0, "finance has not decided");
    let (failed, waiting) = call_as(&tools, &alice(), "refund", args.clone()).await;
    assert!(failed);
    assert_eq!(waiting["reason"], "AWAITING_APPROVAL", "{waiting}");
    let ticket = &waiting["escalation"]["ticket"];
    assert_eq!(ticket["approvers"], "finance:approve", "{waiting}");
    let second = ticket["id"].as_str().unwrap().to_owned();
    assert_ne!(second, first);

    // Finance says yes: the call runs once, past both blocks, and the same
    // call made again reads its result.
    let frank = Caller::new("frank", ["finance:approve"]);
    tools.decide(&second, &frank, true, "").await.unwrap();
    tools.run_approved().await.unwrap();
    tools.run_approved().await.unwrap();
    assert_eq!(times("refund TWO-1 1200"), 1, "two yeses, one refund");
    let (failed, result) = call_as(&tools, &alice(), "refund", args.clone()).await;
    assert!(!failed, "{result}");
    assert_eq!(result["result"], "Refunded $1200 on TWO-1");
    assert_eq!(times("refund TWO-1 1200"), 1);

    // A declined first ticket ends the call: finance is never asked.
    let other = refund_args("TWO-2", 1300);
    let (_, reply) = call_as(&tools, &alice(), "refund", other.clone()).await;
    let cap_ticket = ticket_of(&reply);
    tools
        .decide(&cap_ticket, &approver(), false, "no")
        .await
        .unwrap();
    tools.run_approved().await.unwrap();
    let (failed, declined) = call_as(&tools, &alice(), "refund", other).await;
    assert!(failed);
    assert_eq!(declined["reason"], "HUMAN_DECLINED", "{declined}");
    assert_eq!(times("refund TWO-2 1300"), 0);
}

/// Lets `slow_refund` finish.
static RELEASE: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// A refund whose back end takes its time: it ends when the test says.
#[tool(destructive)]
async fn slow_refund(order: String, amount: u64) -> Result<String, ErrorEnvelope> {
    RELEASE.notified().await;
    DONE.lock().unwrap().push(format!("slow {order} {amount}"));
    Ok(format!("Refunded ${amount} on {order}"))
}

#[tokio::test(start_paused = true)]
async fn a_running_approved_call_keeps_renewing_its_lease_and_runs_once() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tools = ToolSet::new()
        .tool::<slow_refund>()
        .guards(Guards::new().for_all(cap))
        .store(Arc::clone(&store))
        .approvals_in_background(false);
    let args = json!({"order": "SLOW-1", "amount": 700});
    let (_, reply) = call_as(&tools, &alice(), "slow_refund", args.clone()).await;
    let ticket = ticket_of(&reply);
    tools.decide(&ticket, &approver(), true, "").await.unwrap();
    let runner = tokio::spawn({
        let tools = tools.clone();
        async move { tools.run_approved().await.unwrap() }
    });
    // The call runs (on tokio's paused clock, minutes pass at once, and
    // the renewals with them) and its lease is renewed while it does.
    let mut first = None;
    let mut renewed = false;
    for _ in 0..10_000 {
        tokio::time::sleep(std::time::Duration::from_secs(61)).await;
        let approval = store.approval(&ticket).await.unwrap().unwrap();
        if approval.state != ApprovalState::Running {
            continue;
        }
        let lease = *first.get_or_insert(approval.lease_until_ms);
        if approval.lease_until_ms > lease {
            renewed = true;
            break;
        }
    }
    assert!(renewed, "the lease was renewed while the call ran");
    // Past the first lease, no replica takes the call for abandoned.
    let first = first.unwrap();
    let abandoned = store.approvals_to_run("", first + 1, 100).await.unwrap();
    assert!(!abandoned.contains(&ticket), "{abandoned:?}");
    RELEASE.notify_one();
    assert_eq!(runner.await.unwrap(), 1);
    assert_eq!(times("slow SLOW-1 700"), 1);
    let (failed, result) = call_as(&tools, &alice(), "slow_refund", args).await;
    assert!(!failed, "{result}");
    assert_eq!(result["result"], "Refunded $700 on SLOW-1");
}

#[tokio::test]
async fn the_runner_sweeps_what_no_one_can_read_any_more() {
    let (_folder, url) = sqlite_url("swept");
    let store = store::open(&url).await.unwrap();
    let tools = tools(Arc::clone(&store));
    // A state spent long ago: its record is of no use past its expiry.
    let now = store::now_ms();
    assert!(store.redeem("spent-long-ago", now - 1).await.unwrap());
    assert!(store.redeem("spent-just-now", now + 60_000).await.unwrap());
    tools.run_approved().await.unwrap();
    assert!(
        store.redeem("spent-long-ago", now + 60_000).await.unwrap(),
        "the expired record was swept"
    );
    assert!(
        !store.redeem("spent-just-now", now + 60_000).await.unwrap(),
        "what is still in force stays"
    );
}

#[tokio::test]
async fn a_runner_that_died_mid_call_never_runs_a_destructive_tool_twice() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tools = tools(Arc::clone(&store));
    let (_, destructive) = call_as(&tools, &alice(), "refund", refund_args("L-1", 800)).await;
    let (_, read_only) = call_as(
        &tools,
        &alice(),
        "audit_lines",
        json!({"order": "L-2", "amount": 800}),
    )
    .await;
    let (destructive, read_only) = (ticket_of(&destructive), ticket_of(&read_only));
    for ticket in [&destructive, &read_only] {
        tools.decide(ticket, &approver(), true, "").await.unwrap();
        // A replica claimed it and died: its lease ran out already.
        let now = store::now_ms();
        let claimed = store
            .claim_approval(ticket, "dead-replica", now, now - 1)
            .await
            .unwrap();
        assert!(claimed.is_some());
    }
    tools.run_approved().await.unwrap();
    assert_eq!(
        times("refund L-1 800"),
        0,
        "the destructive call is not run again"
    );
    assert_eq!(times("audit L-2 800"), 1, "the read-only one is");
    let (failed, reply) = call_as(&tools, &alice(), "refund", refund_args("L-1", 800)).await;
    assert!(failed);
    assert_eq!(reply["reason"], "MAY_HAVE_TAKEN_EFFECT", "{reply}");
    let (failed, reply) = call_as(
        &tools,
        &alice(),
        "audit_lines",
        json!({"order": "L-2", "amount": 800}),
    )
    .await;
    assert!(!failed, "{reply}");
}

#[tokio::test]
async fn an_approval_nobody_decides_expires_as_an_escalation() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tools = tools(Arc::clone(&store)).approval_ttl(std::time::Duration::ZERO);
    let (_, reply) = call_as(&tools, &alice(), "refund", refund_args("E-1", 990)).await;
    let ticket = ticket_of(&reply);
    let expires = reply["escalation"]["ticket"]["expiresAtMs"]
        .as_i64()
        .unwrap();
    // The clock passes the expiry (no sleep: at most a millisecond of spinning).
    while store::now_ms() <= expires {
        std::hint::spin_loop();
    }
    // Refused as expired before any runner swept it, and after.
    for swept in [false, true] {
        if swept {
            tools.run_approved().await.unwrap();
        }
        let late = tools.decide(&ticket, &approver(), true, "late").await;
        assert!(
            matches!(late, Err(DecisionError::NotPending(ApprovalState::Expired))),
            "swept: {swept}, {late:?}"
        );
    }
    let open = store
        .escalations("", None, EscalationState::Open, 50)
        .await
        .unwrap();
    let kept = open
        .iter()
        .find(|escalation| {
            escalation.envelope["escalation"]["detail"]
                .as_str()
                .is_some_and(|d| d.contains(&ticket))
        })
        .expect("the expiry is kept as an escalation");
    assert_eq!(kept.envelope["reason"], "APPROVAL_EXPIRED");
    assert_eq!(kept.envelope["escalation"]["reason"], "approval_expired");
    assert_eq!(kept.caller.as_deref(), Some("alice"));
    assert_eq!(times("refund E-1 990"), 0);
}

#[tokio::test]
async fn without_a_store_the_block_stands() {
    let tools = ToolSet::new()
        .tool::<refund>()
        .guards(Guards::new().for_all(cap));
    let (failed, reply) = call_as(&tools, &alice(), "refund", refund_args("N-1", 999)).await;
    assert!(failed);
    assert_eq!(reply["reason"], "OVER_CAP", "{reply}");
    assert!(matches!(
        tools.decide("anything", &approver(), true, "").await,
        Err(DecisionError::NoStore)
    ));
}

/// Signals each refund of the background test.
static RAN: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Refund, and say so.
#[tool(destructive)]
fn signalled_refund(order: String, amount: u64) -> Result<String, ErrorEnvelope> {
    DONE.lock()
        .unwrap()
        .push(format!("signalled {order} {amount}"));
    RAN.notify_one();
    Ok(format!("Refunded ${amount} on {order}"))
}

/// On a paused clock: the runner's once-a-second look can only come after
/// the 900 ms bound has passed, whatever the machine's load.
#[tokio::test(start_paused = true)]
async fn the_background_runner_runs_a_call_approved_here_at_once() {
    let tools = ToolSet::new()
        .tool::<signalled_refund>()
        .guards(Guards::new().for_all(cap))
        .store(Arc::new(MemoryStore::new()));
    let args = json!({"order": "B-1", "amount": 777});
    let (_, reply) = call_as(&tools, &alice(), "signalled_refund", args.clone()).await;
    let ticket = ticket_of(&reply);
    let ran = RAN.notified();
    tools.decide(&ticket, &approver(), true, "").await.unwrap();
    // Woken by the decision, not by its once-a-second look.
    tokio::time::timeout(std::time::Duration::from_millis(900), ran)
        .await
        .expect("the runner ran the approved call");
    assert_eq!(times("signalled B-1 777"), 1);
    // Its reply is kept as soon as the runner is done with it.
    let result = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            let (failed, result) =
                call_as(&tools, &alice(), "signalled_refund", args.clone()).await;
            if !failed {
                return result;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the kept result");
    assert_eq!(result["result"], "Refunded $777 on B-1");
    assert_eq!(times("signalled B-1 777"), 1);
}

/// Lets the held refund of the long-call test finish; says it began; says
/// the call approved after it ran.
static HOLD: tokio::sync::Notify = tokio::sync::Notify::const_new();
static BEGAN: tokio::sync::Notify = tokio::sync::Notify::const_new();
static NEXT_RAN: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Refund, once let go: a call that runs long.
#[tool(destructive)]
async fn held_refund(order: String, amount: u64) -> Result<String, ErrorEnvelope> {
    BEGAN.notify_one();
    HOLD.notified().await;
    Ok(format!("Refunded ${amount} on {order}"))
}

/// Refund, and say so.
#[tool(destructive)]
fn next_refund(order: String, amount: u64) -> Result<String, ErrorEnvelope> {
    DONE.lock().unwrap().push(format!("next {order} {amount}"));
    NEXT_RAN.notify_one();
    Ok(format!("Refunded ${amount} on {order}"))
}

/// An approved call that runs long holds back none approved after it: the
/// background runner takes the next up beside it, before its yes lapses.
#[tokio::test(start_paused = true)]
async fn a_long_approved_call_holds_back_none_approved_after_it() {
    let tools = ToolSet::new()
        .tool::<held_refund>()
        .tool::<next_refund>()
        .guards(Guards::new().for_all(cap))
        .store(Arc::new(MemoryStore::new()));
    let ten_seconds = std::time::Duration::from_secs(10);
    let long = json!({"order": "L-1", "amount": 888});
    let (_, reply) = call_as(&tools, &alice(), "held_refund", long).await;
    let began = BEGAN.notified();
    tools
        .decide(&ticket_of(&reply), &approver(), true, "")
        .await
        .unwrap();
    let began = tokio::time::timeout(ten_seconds, began).await;
    began.expect("the long call began");

    let next = json!({"order": "L-2", "amount": 777});
    let (_, reply) = call_as(&tools, &alice(), "next_refund", next).await;
    let ran = NEXT_RAN.notified();
    tools
        .decide(&ticket_of(&reply), &approver(), true, "")
        .await
        .unwrap();
    tokio::time::timeout(ten_seconds, ran)
        .await
        .expect("the call approved next ran beside the long one");
    assert_eq!(times("next L-2 777"), 1);
    HOLD.notify_one();
}

/// Lets the held audit of the dropped-set test finish; says it began.
static HOLD_AUDIT: tokio::sync::Notify = tokio::sync::Notify::const_new();
static AUDIT_BEGAN: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// An audit over the cap, once let go: a call that runs long.
#[tool(idempotent)]
async fn held_audit(order: String, amount: u64) -> Result<String, ErrorEnvelope> {
    AUDIT_BEGAN.notify_one();
    HOLD_AUDIT.notified().await;
    Ok(format!("Audited ${amount} on {order}"))
}

/// A tool set dropped while its runner's pass still runs a long call
/// starts no other pass: a call approved after it is run by no runner of
/// the dropped set (a hot reload leaves one runner, not two).
#[tokio::test(start_paused = true)]
async fn a_dropped_sets_runner_starts_no_pass_beside_one_still_running() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tools = ToolSet::new()
        .tool::<held_audit>()
        .guards(Guards::new().for_all(cap))
        .store(Arc::clone(&store));
    let ten_seconds = std::time::Duration::from_secs(10);
    let long = json!({"order": "D-1", "amount": 901});
    let (_, reply) = call_as(&tools, &alice(), "held_audit", long).await;
    let began = AUDIT_BEGAN.notified();
    tools
        .decide(&ticket_of(&reply), &approver(), true, "")
        .await
        .unwrap();
    tokio::time::timeout(ten_seconds, began)
        .await
        .expect("the long call began");
    let next = json!({"order": "D-2", "amount": 902});
    let (_, reply) = call_as(&tools, &alice(), "held_audit", next).await;
    let ticket = ticket_of(&reply);
    drop(tools);

    let yes = store::Decision::new(true, "carol", "");
    assert!(store.decide(&ticket, &yes).await.unwrap());
    tokio::time::sleep(ten_seconds).await;
    let waiting = store.approval(&ticket).await.unwrap().unwrap();
    assert_eq!(
        waiting.state,
        ApprovalState::Approved,
        "run by a dropped set"
    );
    HOLD_AUDIT.notify_one();
}

/// A frozen order is never refunded: a block nobody may approve.
fn frozen(call: &ToolCall) -> Result<(), Blocked> {
    let order: String = call.require("order")?;
    if order.starts_with("FROZEN") {
        return Err(Blocked::new(format!("Order {order} is frozen")).with_reason("FROZEN"));
    }
    Ok(())
}

#[tokio::test]
async fn every_escalation_of_a_tool_set_with_a_store_is_kept_once_with_its_caller() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tools = ToolSet::new()
        .tool::<refund>()
        .guards(Guards::new().for_all(frozen).for_all(cap))
        .store(Arc::clone(&store))
        .approvals_in_background(false);
    let (failed, reply) = call_as(&tools, &alice(), "refund", refund_args("FROZEN-9", 20)).await;
    assert!(failed);
    assert_eq!(reply["escalation"]["reason"], "blocked_by_guard", "{reply}");
    // A call that waits for an approver is kept as its approval only.
    let (_, waiting) = call_as(&tools, &alice(), "refund", refund_args("K-1", 620)).await;
    ticket_of(&waiting);

    let open = store
        .escalations("", None, EscalationState::Open, 50)
        .await
        .unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
    let kept = &open[0];
    assert_eq!(kept.envelope, reply, "the envelope as the caller got it");
    assert_eq!(kept.caller.as_deref(), Some("alice"));
    assert_eq!(kept.tool.as_deref(), Some("refund"));
    // Secrets stay masked in what is kept.
    assert!(!kept.envelope.to_string().contains("4111-1111"));
}

/// A tool set over a new SQLite file `name` in which alice's refund of
/// `order` over the cap waits, approved by an approver and not yet run:
/// the folder (kept while it lives), the file's URL, the store, the set.
async fn approved_refund(
    name: &str,
    order: &str,
    amount: u64,
) -> (tempfile::TempDir, String, Arc<dyn Store>, ToolSet) {
    let (folder, url) = sqlite_url(name);
    let store = store::open(&url).await.unwrap();
    let tools = tools(Arc::clone(&store));
    let (_, reply) = call_as(&tools, &alice(), "refund", refund_args(order, amount)).await;
    let ticket = ticket_of(&reply);
    tools.decide(&ticket, &approver(), true, "").await.unwrap();
    (folder, url, store, tools)
}

/// Opens, in `store`, bob's approval of a refund of `order` that fell due a
/// moment ago, as a call of his would have: its id.
async fn due_approval(store: &dyn Store, order: &str, amount: u64) -> String {
    let due = store::ApprovalRecord::new(
        format!("due-{order}"),
        "cap@0",
        "refund",
        json!({"order": order, "amount": amount}),
        json!({"message": format!("Refund of ${amount} exceeds the $500 cap")}),
        Some("bob".to_owned()),
        "refunds:approve",
        store::now_ms() - 1,
    );
    let opened = store.open_approval(&due, u64::MAX).await.unwrap();
    opened.expect("opened: no bound to pass").id
}

/// A call whose arguments are longer than an approver is shown whole is
/// not put to them: a part they could not see might be the part that
/// matters. Nothing waits, nothing runs; the same refund with a short
/// order waits for an approver.
#[tokio::test]
async fn a_call_an_approver_could_not_see_whole_is_not_put_to_them() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tools = tools(Arc::clone(&store));
    let order = format!("L-{}", "9".repeat(20_000));
    let (failed, reply) = call_as(&tools, &alice(), "refund", refund_args(&order, 730)).await;
    assert!(failed);
    assert_eq!(reply["reason"], "TOO_LONG_TO_APPROVE", "{reply}");
    assert_eq!(reply["errorCategory"], "validation");
    assert_eq!(reply["isRetryable"], false);
    let waiting = store
        .approvals("", None, &[ApprovalState::Pending], 10)
        .await
        .unwrap();
    assert!(waiting.is_empty(), "{waiting:?}");
    assert_eq!(tools.run_approved().await.unwrap(), 0);
    assert_eq!(times(&format!("refund {order} 730")), 0);

    let (_, reply) = call_as(&tools, &alice(), "refund", refund_args("L-1", 730)).await;
    ticket_of(&reply);
}

/// A row the store cannot read back (written by hand, its arguments not
/// JSON) that falls due holds nothing back: it expires with its line of
/// the audit (no escalation can be made of it), the approvals due with it
/// expire, and the approved refund runs. In a SQLite file.
#[tokio::test]
async fn an_approval_that_cannot_be_read_holds_nothing_back() {
    let (_folder, url, store, tools) = approved_refund("poisoned", "P-1", 640).await;

    let beside = sqlx::SqlitePool::connect(&url).await.unwrap();
    sqlx::query(
        "INSERT INTO te_approvals (id, digest, block, tool, arguments, shown, caller, \
         caller_scopes, approvers, state, created_ms, expires_ms, lease_until_ms, safe_to_repeat, \
         service) \
         VALUES ('unreadable', 'unreadable', 'cap@0', 'refund', 'not json', '{}', 'mallory', \
         '[]', 'refunds:approve', 'pending', $1, $1, 0, false, '')",
    )
    .bind(store::now_ms() - 10)
    .execute(&beside)
    .await
    .unwrap();

    // Due after it: a readable approval of bob's.
    let later = due_approval(&*store, "P-2", 650).await;

    assert_eq!(tools.run_approved().await.unwrap(), 1);
    assert_eq!(times("refund P-1 640"), 1, "the approved refund ran");
    let escalated = store.escalations("", None, EscalationState::Open, 100);
    let escalated = escalated.await.unwrap();
    assert!(
        escalated
            .iter()
            .all(|e| e.caller.as_deref() != Some("mallory")),
        "no escalation made of what cannot be read"
    );
    assert!(
        escalated.iter().any(|e| e.caller.as_deref() == Some("bob")),
        "the readable one's expiry escalated"
    );
    let (failed, result) = call_as(&tools, &alice(), "refund", refund_args("P-1", 640)).await;
    assert!(!failed, "{result}");
    let state = |id: &'static str| {
        let beside = beside.clone();
        async move {
            sqlx::query_scalar::<_, String>("SELECT state FROM te_approvals WHERE id = $1")
                .bind(id)
                .fetch_one(&beside)
                .await
                .unwrap()
        }
    };
    assert_eq!(state("unreadable").await, "expired");
    let later = store.approval(&later).await.unwrap().unwrap();
    assert_eq!(later.state, ApprovalState::Expired);
    let audit = store.audit_log(1000).await.unwrap();
    assert!(
        audit.iter().any(|entry| entry.subject == "unreadable"),
        "{audit:?}"
    );
}

/// Approved calls the store cannot read back (written by hand: their
/// arguments not JSON, or a flag SQLite keeps as text), more than a batch
/// of them, and one whose runner died, all due before an approved refund:
/// each is ended `done`, unrun, the reply kept in its row saying why, and
/// the refund runs on the same pass. The next pass finds nothing to end
/// again. In a SQLite file.
#[tokio::test]
async fn approved_calls_that_cannot_be_read_hold_no_approved_call_back() {
    let (_folder, url, _store, tools) = approved_refund("unreadable-approved", "U-1", 680).await;

    let beside = sqlx::SqlitePool::connect(&url).await.unwrap();
    let before = store::now_ms() - 60_000;
    for n in 0..20 {
        let (state, holder) = match n {
            0 => ("running", "'replica-dead'"),
            _ => ("approved", "NULL"),
        };
        // One's JSON is JSON, but SQLite keeps its flag as text.
        let (arguments, safe) = match n {
            1 => ("{}", "'false'"),
            _ => ("not json", "false"),
        };
        let sql = format!(
            "INSERT INTO te_approvals (id, digest, block, tool, arguments, shown, caller, \
             caller_scopes, approvers, state, created_ms, expires_ms, holder, lease_until_ms, \
             safe_to_repeat, service) \
             VALUES ('unreadable-{n}', 'unreadable-{n}', 'cap@0', 'refund', '{arguments}', '{{}}', \
             'mallory', '[]', 'refunds:approve', '{state}', $1, $2, {holder}, 0, {safe}, '')"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(before + n)
            .bind(store::now_ms() + 600_000)
            .execute(&beside)
            .await
            .unwrap();
    }

    assert_eq!(tools.run_approved().await.unwrap(), 1);
    assert_eq!(times("refund U-1 680"), 1, "the approved refund ran");
    let ended: Vec<(String, String, String, Option<String>)> = sqlx::query_as(
        "SELECT id, state, arguments, result FROM te_approvals WHERE id LIKE 'unreadable-%'",
    )
    .fetch_all(&beside)
    .await
    .unwrap();
    assert_eq!(ended.len(), 20);
    for (id, state, arguments, result) in &ended {
        assert_eq!(state, "done");
        assert!(
            ["not json", "{}"].contains(&arguments.as_str()),
            "nothing ran with them"
        );
        let result: Value = serde_json::from_str(result.as_deref().unwrap()).unwrap();
        let text = result.to_string();
        assert!(
            text.contains("could not be read back from the store"),
            "{text}"
        );
        // The one a stopped replica was running may have taken effect.
        let stopped = id == "unreadable-0";
        assert_eq!(
            text.contains("MAY_HAVE_TAKEN_EFFECT"),
            stopped,
            "{id}: {text}"
        );
    }
    assert_eq!(
        tools.run_approved().await.unwrap(),
        0,
        "nothing left to end"
    );
    let (failed, result) = call_as(&tools, &alice(), "refund", refund_args("U-1", 680)).await;
    assert!(!failed, "{result}");
}

/// Approved calls another approval of which (same call, another block)
/// the store cannot read back are left for a later pass, unrun — more of
/// them than a batch — and hold no approved call after them back. In a
/// SQLite file.
#[tokio::test]
async fn unreadable_approvals_of_the_same_calls_hold_no_other_call_back() {
    const LEFT: u64 = 17;
    let (_folder, url, _store, tools) = approved_refund("unreadable-siblings", "T-1", 701).await;
    for n in 2..=LEFT + 1 {
        let (_, reply) = call_as(
            &tools,
            &alice(),
            "refund",
            refund_args(&format!("T-{n}"), 700 + n),
        )
        .await;
        let ticket = ticket_of(&reply);
        tools.decide(&ticket, &approver(), true, "").await.unwrap();
    }

    let beside = sqlx::SqlitePool::connect(&url).await.unwrap();
    for n in 1..=LEFT {
        let (digest, created): (String, i64) =
            sqlx::query_as("SELECT digest, created_ms FROM te_approvals WHERE arguments LIKE $1")
                .bind(format!("%\"T-{n}\"%"))
                .fetch_one(&beside)
                .await
                .unwrap();
        sqlx::query(
            "INSERT INTO te_approvals (id, digest, block, tool, arguments, shown, caller, \
             caller_scopes, approvers, state, created_ms, expires_ms, lease_until_ms, \
             safe_to_repeat, service) \
             VALUES ($1, $2, 'other@0', 'refund', 'not json', '{}', 'alice', '[]', \
             'refunds:approve', 'done', $3, $4, 0, false, '')",
        )
        .bind(format!("mangled-{n}"))
        .bind(&digest)
        .bind(created - 1)
        .bind(store::now_ms() + 600_000)
        .execute(&beside)
        .await
        .unwrap();
    }

    assert_eq!(tools.run_approved().await.unwrap(), 1);
    let last = format!("refund T-{} {}", LEFT + 1, 700 + LEFT + 1);
    assert_eq!(times(&last), 1, "the call after them ran");
    assert_eq!(times("refund T-1 701"), 0, "left, unrun");
    assert_eq!(tools.run_approved().await.unwrap(), 0);
    let left: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM te_approvals WHERE state = 'approved' AND id NOT LIKE 'mangled-%'",
    )
    .fetch_one(&beside)
    .await
    .unwrap();
    assert_eq!(left, LEFT as i64, "still there for a later pass");
}

/// A store that refuses to expire approvals for a while (their lines of
/// the audit cannot be written) holds no approved call back: the pass runs
/// the approved refund, then reports the failure; once the store mends,
/// the due approval expires. In a SQLite file.
#[tokio::test]
async fn an_expiry_the_store_refuses_holds_no_approved_call_back() {
    let (_folder, url, store, tools) = approved_refund("refusing", "R-1", 660).await;
    let due = due_approval(&*store, "R-2", 670).await;

    let beside = sqlx::SqlitePool::connect(&url).await.unwrap();
    let run = async |statement: &'static str| {
        sqlx::query(statement).execute(&beside).await.unwrap();
    };
    run(
        "CREATE TRIGGER no_expiry BEFORE INSERT ON te_audit WHEN NEW.what = 'expire' \
         BEGIN SELECT RAISE(ABORT, 'the audit cannot be written'); END",
    )
    .await;
    let failed = tools.run_approved().await;
    assert!(
        failed.is_err(),
        "the expiry's failure is reported: {failed:?}"
    );
    assert_eq!(
        times("refund R-1 660"),
        1,
        "the approved refund ran all the same"
    );
    let pending = store.approval(&due).await.unwrap().unwrap();
    assert_eq!(pending.state, ApprovalState::Pending);

    run("DROP TRIGGER no_expiry").await;
    assert_eq!(tools.run_approved().await.unwrap(), 0);
    let expired = store.approval(&due).await.unwrap().unwrap();
    assert_eq!(expired.state, ApprovalState::Expired);
}

/// A caller's bounds are each service's own: the same subject with as many
/// approvals waiting and escalations open as one service keeps still
/// opens approvals and is escalated on another service sharing the store,
/// where the name may be someone else's. In a SQLite file.
#[tokio::test]
async fn a_callers_bounds_are_each_services_own() {
    let (_folder, url) = sqlite_url("bounds-per-service");
    let store = store::open(&url).await.unwrap();
    let service = |name: &'static str| {
        ToolSet::new()
            .tool::<refund>()
            .guards(Guards::new().for_all(frozen).for_all(cap))
            .store(Arc::clone(&store))
            .approvals_in_background(false)
            .max_waiting_approvals(1)
            .max_open_escalations(1)
            .server_info(name, "1")
    };
    let (shop, hr) = (service("shop"), service("hr"));
    let reason = async |tools: &ToolSet, order: &str, amount: u64| {
        let (_, reply) = call_as(tools, &alice(), "refund", refund_args(order, amount)).await;
        reply["reason"].as_str().unwrap_or_default().to_owned()
    };
    let open = async |service: &str| {
        let open = store.open_escalations(Some(service), Some("alice"));
        open.await.unwrap()
    };

    // Alice fills both of her bounds on the shop.
    assert_eq!(reason(&shop, "B-1", 700).await, "AWAITING_APPROVAL");
    assert_eq!(reason(&shop, "B-2", 800).await, "TOO_MANY_APPROVALS");
    assert_eq!(reason(&shop, "FROZEN-1", 20).await, "FROZEN");
    assert_eq!(reason(&shop, "FROZEN-2", 20).await, "FROZEN");
    assert_eq!(open("shop").await, 1, "the second not kept: past the bound");

    // On HR, nothing of hers waits or is open.
    assert_eq!(reason(&hr, "B-3", 700).await, "AWAITING_APPROVAL");
    assert_eq!(reason(&hr, "FROZEN-3", 20).await, "FROZEN");
    assert_eq!(open("hr").await, 1);
    assert_eq!(reason(&hr, "B-4", 900).await, "TOO_MANY_APPROVALS");
}

/// Each service expires its own approvals, and keeps their escalations
/// under its own bound: bob has one escalation open on the shop, which
/// keeps two of a caller's, and the HR service, which keeps one, leaves
/// the shop's due approval of his to the shop, whose runner expires it
/// into a second. In a SQLite file.
#[tokio::test]
async fn each_service_expires_its_own_approvals_under_its_own_bounds() {
    let (_folder, url) = sqlite_url("expiry-per-service");
    let store = store::open(&url).await.unwrap();
    let service = |name: &'static str, most_open: usize| {
        ToolSet::new()
            .tool::<refund>()
            .guards(Guards::new().for_all(cap))
            .store(Arc::clone(&store))
            .approvals_in_background(false)
            .max_open_escalations(most_open)
            .server_info(name, "1")
    };
    let (shop, hr) = (service("shop", 2), service("hr", 1));
    let open = EscalationRecord::new(json!({}), Some("bob".into())).for_service("shop");
    assert!(store.record_escalation(&open, u64::MAX).await.unwrap());
    let due = store::ApprovalRecord::new(
        "due-S-1",
        "cap@0",
        "refund",
        json!({"order": "S-1", "amount": 690}),
        json!({"message": "Refund of $690 exceeds the $500 cap"}),
        Some("bob".to_owned()),
        "refunds:approve",
        store::now_ms() - 1,
    )
    .for_service("shop");
    let due = store.open_approval(&due, u64::MAX).await.unwrap().unwrap();

    hr.run_approved().await.unwrap();
    let state = async || store.approval(&due.id).await.unwrap().unwrap().state;
    assert_eq!(state().await, ApprovalState::Pending, "left to the shop");
    shop.run_approved().await.unwrap();
    assert_eq!(state().await, ApprovalState::Expired);
    let open = store.escalations(
        "shop",
        Some(&["refunds:approve"]),
        EscalationState::Open,
        10,
    );
    let open = open.await.unwrap();
    assert_eq!(open.len(), 2, "{open:?}");
    assert!(open.iter().all(|e| e.caller.as_deref() == Some("bob")));
    assert!(
        open.iter()
            .any(|e| e.envelope.to_string().contains("approval_expired")),
        "{open:?}"
    );
}

/// A caller who makes calls fail on purpose cannot fill the store and
/// bury the inbox: past the bound, their escalations are not kept (each
/// still reaches them whole in its reply), another caller's still are, and
/// once a person resolves theirs, theirs are kept again. In a SQLite file.
#[tokio::test]
async fn one_caller_cannot_fill_the_store_with_escalations() {
    let (_folder, url) = sqlite_url("escalations");
    let store = store::open(&url).await.unwrap();
    let tools = ToolSet::new()
        .tool::<refund>()
        .guards(Guards::new().for_all(frozen))
        .store(Arc::clone(&store))
        .approvals_in_background(false)
        .max_open_escalations(5);
    let mallory = Caller::new("mallory", ["refunds:write"]);
    for n in 0..60 {
        let (failed, reply) = call_as(
            &tools,
            &mallory,
            "refund",
            refund_args(&format!("FROZEN-{n}"), 20),
        )
        .await;
        assert!(failed);
        assert_eq!(reply["escalation"]["reason"], "blocked_by_guard", "{reply}");
    }
    let of = |who: &'static str| {
        let store = Arc::clone(&store);
        async move {
            (store
                .escalations("", None, EscalationState::Open, 1000)
                .await
                .unwrap())
            .into_iter()
            .filter(|escalation| escalation.caller.as_deref() == Some(who))
            .collect::<Vec<_>>()
        }
    };
    let mallorys = of("mallory").await;
    assert_eq!(mallorys.len(), 5, "kept up to the bound, no more");
    assert_eq!(
        store
            .open_escalations(Some(""), Some("mallory"))
            .await
            .unwrap(),
        5
    );

    // Another caller is not held back by mallory's.
    call_as(&tools, &alice(), "refund", refund_args("FROZEN-A", 20)).await;
    assert_eq!(of("alice").await.len(), 1);

    // Resolved by a person: room again.
    store
        .resolve_escalation(&mallorys[0].id, "carol", "looked into it", store::now_ms())
        .await
        .unwrap();
    call_as(&tools, &mallory, "refund", refund_args("FROZEN-61", 20)).await;
    let kept = of("mallory").await;
    assert_eq!(kept.len(), 5);
    assert!(
        kept.iter()
            .any(|escalation| escalation.envelope.to_string().contains("FROZEN-61"))
    );
}

#[tokio::test]
async fn a_local_agents_escalations_land_in_the_same_store_once() {
    use tool_envelope::coordinator::Coordinator;
    use tool_envelope::retry::RetryPolicy;

    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let policy = RetryPolicy::never().keep_escalations(Arc::clone(&store));
    let denied = || async { Err::<u32, _>(ErrorEnvelope::permission("Access denied to payroll")) };
    // A branch whose own loop keeps its escalation, and one that has none:
    // the coordinator keeps the second, and not the first again.
    let report = Coordinator::new()
        .branch("payroll", policy.retry(denied))
        .branch("ledger", async {
            Err::<u32, _>(ErrorEnvelope::business("The ledger is closed for the day"))
        })
        .keep_escalations(Arc::clone(&store))
        .run()
        .await;
    assert_eq!(report.gaps.len(), 2);
    let open = store
        .escalations("", None, EscalationState::Open, 50)
        .await
        .unwrap();
    let messages: Vec<&str> = open
        .iter()
        .map(|kept| kept.envelope["message"].as_str().unwrap())
        .collect();
    assert_eq!(open.len(), 2, "{messages:?}");
    assert!(messages.contains(&"Access denied to payroll"));
    assert!(messages.contains(&"The ledger is closed for the day"));
}
