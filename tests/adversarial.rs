//! An adversarial pass over the crate, one test per promise an attacker tried to break,
//! each written the way a user or an attacker would trigger it: secrets at
//! any depth and under any key, no repeat after a side effect, guards that
//! fail closed, panics and depth contained, extreme settings, sizes as sent,
//! and reports that say what happened.

mod common;

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_envelope::mcp::ToolSet;
use tool_envelope::{
    ErrorCategory, ErrorEnvelope, EscalationReason, Partial, Secret, ToolError,
    coordinator::Coordinator,
    guard::{Blocked, Guards, ToolCall},
    reasons,
    retry::{RetryBudget, RetryPolicy},
    tool,
};

// ── 1. A secret nested a few structs deep ────────────────────────────────────

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Config {
    upstream: Option<Upstream>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Upstream {
    auth: Option<Auth>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Auth {
    basic: Option<Basic>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Basic {
    user: String,
    password: Secret<String>,
}

/// Syncs a department through an upstream that needs credentials.
#[tool(read_only)]
fn sync_dept(dept: String, config: Config) -> Result<(), ErrorEnvelope> {
    let _ = (dept, config);
    Err(ErrorEnvelope::transient("upstream timed out"))
}

fn config_with(password: Value) -> Value {
    json!({"upstream": {"auth": {"basic": {"user": "ops", "password": password}}}})
}

#[tokio::test]
async fn a_secret_four_options_deep_never_leaves_over_mcp() {
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let tools = ToolSet::new()
        .tool::<sync_dept>()
        .guards(Guards::new().for_all({
            let seen = seen.clone();
            move |call: &ToolCall| {
                seen.lock()
                    .unwrap()
                    .push(Value::Object(call.arguments.clone()).to_string());
                Ok(())
            }
        }));
    // Well-typed: the tool runs and fails; the password is masked.
    let result = tools
        .call(
            "sync_dept",
            json!({"dept": "ENG", "config": config_with(json!("hunter2"))}),
        )
        .await
        .unwrap();
    let sent = serde_json::to_string(&result).unwrap();
    assert!(!sent.contains("hunter2"), "{sent}");
    let envelope = result.envelope().unwrap();
    assert_eq!(
        envelope.attempted_query().unwrap()["config"]["upstream"]["auth"]["basic"]["password"],
        "[redacted]"
    );
    // Wrong-typed: quoted nowhere, not in the violations either.
    let result = tools
        .call(
            "sync_dept",
            json!({"dept": "ENG", "config": config_with(json!({"nested": "hunter2"}))}),
        )
        .await
        .unwrap();
    let sent = serde_json::to_string(&result).unwrap();
    assert!(result.is_error);
    assert!(!sent.contains("hunter2"), "{sent}");
    // The guard saw the masked arguments only.
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty());
    assert!(
        seen.iter().all(|arguments| !arguments.contains("hunter2")),
        "{seen:?}"
    );
    // A direct call agrees.
    let config: Config = serde_json::from_value(config_with(json!("hunter2"))).unwrap();
    let direct = sync_dept("ENG".into(), config).unwrap_err();
    assert!(!serde_json::to_string(&direct).unwrap().contains("hunter2"));
}

// ── 2. Undeclared keys and arguments that are not an object ──────────────────

/// Charges an amount.
#[tool]
fn charge(amount: u64) -> Result<u64, ErrorEnvelope> {
    Ok(amount)
}

#[tokio::test]
async fn undeclared_keys_and_non_object_arguments_are_named_never_echoed() {
    let guard_ran = Arc::new(AtomicU32::new(0));
    let tools = ToolSet::new()
        .tool::<charge>()
        .guards(Guards::new().for_all({
            let guard_ran = guard_ran.clone();
            move |call: &ToolCall| {
                guard_ran.fetch_add(1, Ordering::SeqCst);
                assert!(
                    !Value::Object(call.arguments.clone())
                        .to_string()
                        .contains("hunter2")
                );
                Ok(())
            }
        }));
    for arguments in [
        json!({"amount": 1, "apiKey": "hunter2"}),
        json!("{\"api_key\":\"hunter2\"}"),
        json!(["hunter2"]),
    ] {
        let result = tools.call("charge", arguments.clone()).await.unwrap();
        let sent = serde_json::to_string(&result).unwrap();
        assert!(!sent.contains("hunter2"), "{arguments}: {sent}");
        let envelope = result.envelope().unwrap();
        assert_eq!(envelope.category(), ErrorCategory::Validation);
        if arguments.is_object() {
            assert_eq!(envelope.violations()[0].field, "apiKey", "named");
        }
    }
    assert_eq!(
        guard_ran.load(Ordering::SeqCst),
        0,
        "invalid calls never reach a guard"
    );
}

// ── 3. Credentials in error text, whatever the category ──────────────────────

/// Reads orders from the database.
#[tool(read_only)]
fn read_orders(customer: String) -> Result<Vec<String>, std::io::Error> {
    let _ = customer;
    Err(std::io::Error::new(
        std::io::ErrorKind::ConnectionRefused,
        "could not connect to postgres://orders_admin:Pa55w0rd@10.0.3.7:5432/orders",
    ))
}

/// Reads the ledger.
#[tool(read_only)]
fn read_ledger(account: String) -> Result<Vec<String>, ErrorEnvelope> {
    let _ = account;
    Err(ErrorEnvelope::transient(
        "ledger at https://svc:t0k3n@ledger.internal/v1 timed out; retried with password=Pa55w0rd",
    )
    .with_alternative("Retry against postgres://ro:Pa55w0rd@replica/ledger"))
}

#[tokio::test]
async fn masking_internal_errors_hides_credentials_whatever_the_category() {
    let tools = ToolSet::new()
        .tool::<read_orders>()
        .tool::<read_ledger>()
        .mask_internal_errors("Internal error; the details are in the server log.");
    // A foreign error (io), classed transient: masked by where it came from.
    let result = tools
        .call("read_orders", json!({"customer": "C-1"}))
        .await
        .unwrap();
    let envelope = result.envelope().unwrap();
    assert_eq!(envelope.category(), ErrorCategory::Transient);
    assert_eq!(
        envelope.message(),
        "Internal error; the details are in the server log."
    );
    assert_eq!(envelope.reason(), Some("CONNECTION_REFUSED"));
    assert!(!serde_json::to_string(&result).unwrap().contains("Pa55w0rd"));
    // The author's own transient message stays, its credentials scrubbed.
    let result = tools
        .call("read_ledger", json!({"account": "A-1"}))
        .await
        .unwrap();
    let sent = serde_json::to_string(&result).unwrap();
    assert!(
        !sent.contains("Pa55w0rd") && !sent.contains("t0k3n"),
        "{sent}"
    );
    let envelope = result.envelope().unwrap();
    assert!(
        envelope
            .message()
            .starts_with("ledger at https://[redacted]@ledger.internal/v1 timed out"),
        "{}",
        envelope.message()
    );
}

// ── 4. A side effect, then a refused connection ──────────────────────────────

static DEBITS: AtomicU32 = AtomicU32::new(0);

/// A port nothing listens on: bound, then released.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Refunds an order: debits the merchant, then notifies the ledger.
#[tool(destructive)]
fn refund(order: String, ledger_port: u16) -> std::io::Result<String> {
    DEBITS.fetch_add(1, Ordering::SeqCst);
    std::net::TcpStream::connect(("127.0.0.1", ledger_port))?;
    Ok(format!("refunded {order}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_side_effect_then_a_refused_connection_is_never_repeated() {
    let port = closed_port();
    let policy = RetryPolicy::default().constant(Duration::from_millis(1));

    DEBITS.store(0, Ordering::SeqCst);
    let outcome = policy.retry_blocking(|| refund("O-77".into(), port));
    assert_eq!(
        DEBITS.load(Ordering::SeqCst),
        1,
        "directly under a RetryPolicy"
    );
    assert_eq!(
        outcome.result.unwrap_err().reason,
        EscalationReason::NonRetryable
    );

    DEBITS.store(0, Ordering::SeqCst);
    let tools = ToolSet::new().tool::<refund>().retry(policy.clone());
    let result = tools
        .call("refund", json!({"order": "O-77", "ledger_port": port}))
        .await
        .unwrap();
    assert_eq!(DEBITS.load(Ordering::SeqCst), 1, "through ToolSet::retry");
    assert_eq!(
        result.structured_content.unwrap()["escalation"]["reason"],
        "non_retryable"
    );

    // A caller running the usual loop — retry while isRetryable — stops too.
    DEBITS.store(0, Ordering::SeqCst);
    let tools = ToolSet::new().tool::<refund>();
    let mut calls = 0;
    loop {
        calls += 1;
        let result = tools
            .call("refund", json!({"order": "O-77", "ledger_port": port}))
            .await
            .unwrap();
        let envelope = result.structured_content.unwrap();
        if envelope["isRetryable"] != true || calls == 5 {
            assert_eq!(envelope["reason"], reasons::MAY_HAVE_TAKEN_EFFECT);
            break;
        }
    }
    assert_eq!((calls, DEBITS.load(Ordering::SeqCst)), (1, 1));
}

// ── 5. A guard never judges a lossy copy ─────────────────────────────────────

thread_local! {
    static REFUNDS_RUN: Cell<u32> = const { Cell::new(0) };
}

/// The naive guard of the report: it reads the amount as a number.
fn naive_cap(call: &ToolCall) -> Result<(), Blocked> {
    match call.arg("amount").and_then(Value::as_f64) {
        Some(amount) if amount > 500.0 => Err(Blocked::new("over the cap")),
        _ => Ok(()),
    }
}

/// Refunds an amount.
#[tool(destructive, guard = naive_cap)]
fn process_refund(order: String, amount: f64) -> Result<String, ErrorEnvelope> {
    REFUNDS_RUN.set(REFUNDS_RUN.get() + 1);
    Ok(format!("refunded {amount} on {order}"))
}

/// A value whose `Serialize` fails.
struct Handle;

impl Serialize for Handle {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom("a handle is not data"))
    }
}

/// Deletes what the handle points at: a handle is not sent by a client.
#[tool(destructive, local, guard = naive_cap)]
fn delete(target: Handle) -> Result<(), ErrorEnvelope> {
    let _ = target;
    REFUNDS_RUN.set(REFUNDS_RUN.get() + 1);
    Ok(())
}

/// Pays out to an account numbered in 128 bits.
#[tool(destructive, guard = naive_cap)]
fn pay_out(account: u128, amount: f64) -> Result<(), ErrorEnvelope> {
    let _ = (account, amount);
    REFUNDS_RUN.set(REFUNDS_RUN.get() + 1);
    Ok(())
}

/// An order whose extra fields, flattened beside its own, may name one of
/// them again: its `Serialize` then writes that key twice.
#[derive(Serialize)]
struct Order {
    amount: u64,
    #[serde(flatten)]
    extra: std::collections::BTreeMap<String, u64>,
}

/// Reads the order's amount as the naive guard does.
fn order_cap(call: &ToolCall) -> Result<(), Blocked> {
    let amount = call.arg("order").and_then(|order| order.get("amount"));
    match amount.and_then(Value::as_u64) {
        Some(amount) if amount > 500 => Err(Blocked::new("over the cap")),
        _ => Ok(()),
    }
}

/// Places an order.
#[tool(destructive, local, guard = order_cap)]
fn place(order: Order) -> Result<u64, ErrorEnvelope> {
    REFUNDS_RUN.set(REFUNDS_RUN.get() + 1);
    Ok(order.amount)
}

/// `serde_json` keeps the last of two equal keys: the guard would read the
/// extra `amount` and the tool its own.
#[test]
fn an_argument_that_writes_a_key_twice_is_never_judged() {
    let extra = [("amount".to_owned(), 1)].into_iter().collect();
    let envelope = place(Order { amount: 900, extra }).unwrap_err();
    assert_eq!(envelope.reason(), Some(reasons::UNREPRESENTABLE_ARGUMENT));
    assert_eq!(envelope.violations()[0].field, "order");
    assert_eq!(REFUNDS_RUN.get(), 0, "the body never ran");
    let extra = [("note".to_owned(), 1)].into_iter().collect();
    assert!(place(Order { amount: 90, extra }).is_ok());
}

#[test]
fn a_guard_never_lets_a_call_through_because_it_could_not_read_it() {
    for amount in [f64::INFINITY, f64::NAN, f64::NEG_INFINITY] {
        let envelope = process_refund("O-77".into(), amount).unwrap_err();
        assert_eq!(envelope.category(), ErrorCategory::Validation, "{amount}");
        assert_eq!(envelope.reason(), Some(reasons::UNREPRESENTABLE_ARGUMENT));
        assert_eq!(envelope.violations()[0].field, "amount");
    }
    let envelope = delete(Handle).unwrap_err();
    assert_eq!(envelope.violations()[0].field, "target");
    // A guard would read a 128-bit number rounded to a float: two accounts
    // apart would be one to it.
    let envelope = pay_out(u128::from(u64::MAX) + 2, 10.0).unwrap_err();
    assert_eq!(envelope.reason(), Some(reasons::UNREPRESENTABLE_ARGUMENT));
    assert_eq!(envelope.violations()[0].field, "account");
    assert!(envelope.violations()[0].description.contains("64 bits"));
    assert_eq!(REFUNDS_RUN.get(), 0, "the body never ran");
    assert!(
        pay_out(u128::from(u64::MAX), 10.0).is_ok(),
        "64 bits are carried"
    );
    assert!(process_refund("O-78".into(), 300.0).is_ok());
    assert!(process_refund("O-79".into(), 900.0).is_err());
}

static OTP_REFUNDS: AtomicU32 = AtomicU32::new(0);

/// Refunds an amount, confirmed with a one-time password.
#[tool(destructive, guard = naive_cap)]
fn refund_with_otp(
    order: String,
    amount: f64,
    otp: Secret<String>,
) -> Result<String, ErrorEnvelope> {
    let _ = otp;
    OTP_REFUNDS.fetch_add(1, Ordering::SeqCst);
    Ok(format!("refunded {amount} on {order}"))
}

/// The same refund, guarded only by the tool set it is served in.
#[tool(destructive)]
fn otp_refund(order: String, amount: f64, otp: Secret<String>) -> Result<String, ErrorEnvelope> {
    let _ = otp;
    OTP_REFUNDS.fetch_add(1, Ordering::SeqCst);
    Ok(format!("refunded {amount} on {order}"))
}

/// A caller chooses what their secrets are sent as: one sent as the amount
/// itself must not mask the amount from a guard (which would read no number
/// and let the call through), neither a tool's own guard nor a tool set's.
#[tokio::test]
async fn a_secret_sent_as_another_argument_hides_nothing_from_a_guard() {
    let own = ToolSet::new().tool::<refund_with_otp>();
    let set = ToolSet::new()
        .tool::<otp_refund>()
        .guards(Guards::new().for_all(naive_cap));
    for (tools, name) in [(own, "refund_with_otp"), (set, "otp_refund")] {
        for arguments in [
            json!({"order": "O-1", "amount": 900, "otp": "900"}),
            json!({"order": "O-1", "amount": 900.5, "otp": "900.5"}),
        ] {
            let result = tools.call(name, arguments).await.unwrap();
            let envelope = result.structured_content.unwrap();
            assert_eq!(envelope["message"], "over the cap", "{envelope}");
        }
    }
    assert_eq!(OTP_REFUNDS.load(Ordering::SeqCst), 0, "no refund ran");
}

// ── 6. Panics while describing a failure ─────────────────────────────────────

#[derive(Debug)]
struct Awkward;

impl std::fmt::Display for Awkward {
    fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        panic!("Display of the error blew up")
    }
}

impl ToolError for Awkward {
    fn category(&self) -> ErrorCategory {
        ErrorCategory::Transient
    }
}

/// An item whose `Serialize` panics.
struct Explosive;

impl Serialize for Explosive {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        panic!("Serialize of a partial result blew up")
    }
}

/// Fails with an error whose `Display` panics, after gathering one item.
#[tool(read_only)]
fn awkward(query: String, found: Partial<String>) -> Result<(), Awkward> {
    let _ = query;
    found.push("first".into());
    Err(Awkward)
}

/// Fails after gathering an item whose `Serialize` panics.
#[tool(read_only)]
async fn explosive(query: String, found: Partial<Explosive>) -> Result<(), ErrorEnvelope> {
    let _ = query;
    found.push(Explosive);
    Err(ErrorEnvelope::transient("gave up"))
}

/// An argument whose `Serialize` panics.
struct Fragile;

impl Serialize for Fragile {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        panic!("Serialize of an argument blew up")
    }
}

/// Takes a fragile argument.
#[tool(read_only, local)]
async fn fragile(query: String, thing: Fragile) -> Result<(), ErrorEnvelope> {
    let _ = (query, thing);
    Err(ErrorEnvelope::business("no"))
}

#[tokio::test]
async fn panics_while_describing_a_failure_never_unwind_into_the_caller() {
    let envelope = awkward("q".into(), Partial::new()).unwrap_err();
    assert_eq!(envelope.category(), ErrorCategory::Other);
    assert_eq!(envelope.reason(), Some(reasons::PANIC));
    assert!(envelope.message().contains("Display of the error blew up"));
    assert_eq!(envelope.attempted_query(), Some(&json!({"query": "q"})));
    assert_eq!(envelope.partial_results(), Some(&json!(["first"])));

    let envelope = explosive("q".into(), Partial::new()).await.unwrap_err();
    assert_eq!(envelope.message(), "gave up");
    let partial = envelope.partial_results().unwrap();
    assert!(
        partial[0].as_str().unwrap().contains("panicked"),
        "{partial}"
    );

    let envelope = fragile("q".into(), Fragile).await.unwrap_err();
    assert_eq!(envelope.message(), "no");
    let query = envelope.attempted_query().unwrap();
    assert_eq!(query["query"], "q");
    assert!(
        query["thing"].as_str().unwrap().contains("panicked"),
        "{query}"
    );
}

/// A parameter whose `Deserialize` panics: the panic reaches the tool set.
#[derive(Debug, Serialize, JsonSchema)]
struct Touchy(String);

impl<'de> Deserialize<'de> for Touchy {
    fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        panic!("Deserialize blew up")
    }
}

/// Gathers, then decodes a touchy argument.
#[tool(read_only)]
fn touchy(topic: String, value: Touchy) -> Result<(), ErrorEnvelope> {
    let _ = (topic, value);
    Ok(())
}

#[tokio::test]
async fn a_tool_set_panic_envelope_keeps_the_arguments() {
    let tools = ToolSet::new().tool::<touchy>();
    let result = tools
        .call("touchy", json!({"topic": "x", "value": "y"}))
        .await
        .unwrap();
    let envelope = result.envelope().unwrap();
    assert_eq!(envelope.reason(), Some(reasons::PANIC));
    assert_eq!(
        envelope.attempted_query(),
        Some(&json!({"topic": "x", "value": "y"}))
    );
    assert_eq!(envelope.tool(), Some("touchy"));
}

// ── 7. Deep output ───────────────────────────────────────────────────────────

/// A list nested as deep as a caller likes.
#[derive(Serialize, JsonSchema)]
enum Chain {
    End,
    Link(Box<Chain>),
}

impl Chain {
    fn deep(depth: usize) -> Self {
        (0..depth).fold(Chain::End, |chain, _| Chain::Link(Box::new(chain)))
    }
}

/// Taken apart iteratively, as a deep recursive type must be.
impl Drop for Chain {
    fn drop(&mut self) {
        let mut next = match self {
            Chain::Link(inner) => std::mem::replace(&mut **inner, Chain::End),
            Chain::End => return,
        };
        while let Chain::Link(inner) = &mut next {
            // The link dropped here holds `End`: no recursion.
            next = std::mem::replace(&mut **inner, Chain::End);
        }
    }
}

/// Returns a chain `depth` links long.
#[tool(read_only)]
fn chain(depth: usize) -> Result<Chain, ErrorEnvelope> {
    Ok(Chain::deep(depth))
}

/// Gathers a chain `depth` links long, then fails.
#[tool(read_only)]
fn gather_chain(depth: usize, found: Partial<Chain>) -> Result<(), ErrorEnvelope> {
    found.push(Chain::deep(depth));
    Err(ErrorEnvelope::transient("gave up"))
}

/// Returns a JSON value nested `depth` deep.
#[tool(read_only)]
fn nested_value(depth: usize) -> Result<Value, ErrorEnvelope> {
    let mut value = json!(1);
    for _ in 0..depth {
        value = Value::Array(vec![value]);
    }
    Ok(value)
}

/// Gathers a JSON value nested `depth` deep, then fails.
#[tool(read_only)]
fn gather_value(depth: usize, found: Partial<Value>) -> Result<(), ErrorEnvelope> {
    let mut value = json!(1);
    for _ in 0..depth {
        value = Value::Array(vec![value]);
    }
    found.push(value);
    Err(ErrorEnvelope::transient("gave up"))
}

#[tokio::test]
async fn output_ten_thousand_levels_deep_is_refused_not_a_stack_overflow() {
    let tools = ToolSet::new()
        .tool::<chain>()
        .tool::<gather_chain>()
        .tool::<nested_value>()
        .tool::<gather_value>();
    for tool in ["chain", "gather_chain", "nested_value", "gather_value"] {
        let result = tools.call(tool, json!({"depth": 10_000})).await.unwrap();
        assert!(result.is_error, "{tool}");
        let sent = serde_json::to_string(&result).unwrap();
        assert!(
            sent.contains("nested more than 100 levels deep"),
            "{tool}: {sent}"
        );
        let ok = tools.call(tool, json!({"depth": 50})).await.unwrap();
        assert_eq!(ok.is_error, tool.starts_with("gather"), "{tool}");
    }
}

// ── 8. Extreme but legal configurations ──────────────────────────────────────

/// Always times out.
#[tool(read_only)]
fn always_slow(x: u32) -> Result<u32, ErrorEnvelope> {
    let _ = x;
    Err(ErrorEnvelope::transient("slow"))
}

#[tokio::test(start_paused = true)]
async fn extreme_but_legal_configurations_degrade_instead_of_panicking() {
    let budget = RetryBudget::new(f64::MAX);
    for _ in 0..10 {
        budget.record_failure();
        budget.record_success();
    }
    assert!(
        budget.allows_retry(),
        "a huge budget never runs out, nor wraps"
    );
    let outcome = RetryPolicy::default()
        .budget(&budget)
        .constant(Duration::ZERO)
        .retry(|| async { always_slow(1) })
        .await;
    assert_eq!(outcome.stats.attempts, 3);

    let tiny = RetryBudget::new(1e-9);
    assert!(
        !tiny.allows_retry(),
        "a budget too small to count allows no retry"
    );

    let outcome = RetryPolicy::default()
        .constant(Duration::MAX)
        .deadline(Duration::from_secs(10))
        .retry(|| async { always_slow(1) })
        .await;
    assert_eq!(
        outcome.result.unwrap_err().reason,
        EscalationReason::DeadlineExceeded
    );
    let outcome = RetryPolicy::default()
        .exponential(Duration::MAX, Duration::MAX)
        .max_retry_after(Duration::MAX)
        .deadline(Duration::MAX)
        .retry_blocking(|| -> Result<(), ErrorEnvelope> {
            Err(ErrorEnvelope::transient("slow").with_retry_after(Duration::MAX))
        });
    assert_eq!(
        outcome.result.unwrap_err().reason,
        EscalationReason::DeadlineExceeded
    );
}

// ── 9. Sizes as sent ─────────────────────────────────────────────────────────

#[tokio::test]
async fn an_unknown_tool_name_is_not_echoed_back_whole() {
    let tools = ToolSet::new().tool::<charge>();
    let name = "x".repeat(10 * 1024 * 1024);
    let error = tools.call(&name, json!({})).await.unwrap_err();
    assert_eq!(error.code, -32602);
    assert!(
        serde_json::to_string(&error).unwrap().len() < 1024,
        "{}",
        error.message.len()
    );
}

/// Labels a ticket.
#[tool(read_only)]
fn label(labels: std::collections::HashMap<String, u32>) -> Result<usize, ErrorEnvelope> {
    Ok(labels.len())
}

/// A map's key is written into the path of a violation as it was sent, so
/// a client chooses the path: one that does not read as a path (`a[0]]`)
/// is answered as any wrong value, naming it — never a panic.
#[tokio::test]
async fn a_map_key_that_reads_as_no_path_is_a_violation_not_a_panic() {
    let tools = ToolSet::new().tool::<label>();
    for key in ["a[0]]", "a[x]", "]", "a.b[", "[[[0]]]"] {
        let arguments = json!({"labels": {(key): "not a number"}});
        let result = tools.call("label", arguments).await.unwrap();
        let envelope = result.envelope().unwrap();
        assert_eq!(envelope.category(), ErrorCategory::Validation, "{key}");
        let field = envelope.violations()[0].field.clone();
        assert!(field.starts_with("labels"), "{key}: {field}");
    }
}

/// Keeps a vault's keys.
#[tool(read_only)]
fn vault(keys: std::collections::HashMap<String, Secret<u32>>) -> Result<usize, ErrorEnvelope> {
    Ok(keys.len())
}

/// A map's key chosen to read as a JSON pointer (`/0`) or an index (`[0]`)
/// once led the check "may this value hold a secret?" away from the map's
/// secret values: the type error quoted the value sent. Past a map that may
/// hold a secret, the rest of a path is the client's, so it is not read.
#[tokio::test]
async fn a_map_key_shaped_like_a_path_does_not_unmask_a_secret_value() {
    let tools = ToolSet::new().tool::<vault>();
    for key in ["/0", "[0]", "/0/1", "a.b", "x[1][2]", ""] {
        for value in [json!("hunter2-sekrit"), json!(-98765.4321), json!(true)] {
            let arguments = json!({"keys": {(key): value}});
            let result = tools.call("vault", arguments).await.unwrap();
            let envelope = result.envelope().unwrap();
            assert_eq!(envelope.category(), ErrorCategory::Validation, "{key}");
            let text = serde_json::to_string(&envelope).unwrap();
            for quoted in ["hunter2", "98765", "`true`"] {
                assert!(!text.contains(quoted), "{key}: {text}");
            }
        }
    }
}

/// Sends headers on.
#[tool(read_only, redact(headers))]
fn forward(headers: std::collections::HashMap<String, u32>) -> Result<usize, ErrorEnvelope> {
    Ok(headers.len())
}

/// Counts a tenant's seats.
#[tool(read_only)]
fn seats(tenants: Secret<std::collections::HashMap<String, u32>>) -> Result<usize, ErrorEnvelope> {
    Ok(tenants.expose().len())
}

/// A map inside a secret is the secret: its keys as much as its values. A
/// wrong value under a key was named by its path, the key in it — in the
/// violation's field and in the message that names the first one — where
/// the key may be the very secret (a token sent as a key). The path now
/// stops at the secret's place.
#[tokio::test]
async fn a_key_inside_a_secret_map_is_never_named() {
    const KEY: &str = "sk_live_AbCdEf123456";
    let tools = ToolSet::new().tool::<forward>().tool::<seats>();
    for (tool, param) in [("forward", "headers"), ("seats", "tenants")] {
        let arguments = json!({(param): {(KEY): "not a number", "other": "nor this"}});
        let result = tools.call(tool, arguments).await.unwrap();
        let envelope = result.envelope().unwrap();
        assert_eq!(envelope.category(), ErrorCategory::Validation, "{tool}");
        let text = serde_json::to_string(&envelope).unwrap();
        assert!(!text.contains("sk_live"), "{tool}: {text}");
        assert!(!text.contains("other"), "{tool}: {text}");
        let fields: Vec<&str> = envelope
            .violations()
            .iter()
            .map(|v| v.field.as_str())
            .collect();
        assert!(
            fields.iter().all(|field| *field == param),
            "{tool}: {fields:?}"
        );
    }
}

/// A linked list: each node's `next` an `Option<Box<Node>>`, which schemars
/// writes as an `anyOf` of the node and `null` at every level.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Node {
    v: u64,
    next: Option<Box<Node>>,
}

/// Walks a chain.
#[tool(read_only)]
fn linked(head: Node) -> Result<u64, ErrorEnvelope> {
    Ok(head.v)
}

/// Arguments nested 60 levels through an optional recursive type, the last
/// one wrong: listing the violations once walked each level twice — 2^60
/// steps, one short request holding a core for good. Now the call is
/// answered at once, with the field that is wrong.
#[tokio::test]
async fn a_deep_recursive_argument_is_refused_at_once_naming_its_field() {
    let mut node = json!({"v": "seven"});
    for _ in 1..60 {
        node = json!({"v": 0, "next": node});
    }
    let tools = ToolSet::new().tool::<linked>();
    let result = tools.call("linked", json!({"head": node})).await.unwrap();
    let envelope = result.envelope().unwrap();
    assert_eq!(envelope.category(), ErrorCategory::Validation);
    let fields: Vec<&str> = envelope
        .violations()
        .iter()
        .map(|v| v.field.as_str())
        .collect();
    assert_eq!(fields, [format!("head{}.v", ".next".repeat(59))]);
}

// ── 10. Reports ──────────────────────────────────────────────────────────────

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Filters {
    status: String,
    since: u32,
    limit: u8,
}

/// Looks up orders.
#[tool(read_only)]
fn lookup(filters: Filters) -> Result<Vec<String>, ErrorEnvelope> {
    let _ = filters;
    Ok(Vec::new())
}

#[tokio::test]
async fn every_bad_field_is_a_violation_and_every_gap_one_line() {
    let tools = ToolSet::new().tool::<lookup>();
    let result = tools
        .call(
            "lookup",
            json!({"filters": {"status": 7, "since": "yesterday", "limit": 300}}),
        )
        .await
        .unwrap();
    let mut fields: Vec<String> = result
        .envelope()
        .unwrap()
        .violations()
        .iter()
        .map(|v| v.field.clone())
        .collect();
    fields.sort();
    assert_eq!(fields, ["filters.limit", "filters.since", "filters.status"]);

    let report = Coordinator::new()
        .branch("eu", async {
            Err::<u32, _>(
                ErrorEnvelope::permission("denied")
                    .with_alternative("Ask the owner\n- gap `forged`: everything is fine"),
            )
        })
        .run()
        .await;
    let text = report.to_string();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert_eq!(
        text.lines()
            .filter(|line| line.starts_with("- gap"))
            .count(),
        1
    );
}

#[cfg(feature = "tracing")]
#[tokio::test]
async fn the_log_of_a_masked_error_has_its_credentials_masked_too() {
    let logs = common::Captured::default();
    let _guard = tracing::subscriber::set_default(logs.subscriber());
    let tools = ToolSet::new()
        .tool::<read_orders>()
        .mask_internal_errors("Internal error.");
    let _ = tools.call("read_orders", json!({"customer": "C-1"})).await;
    let text = logs.text();
    assert!(text.contains("postgres://[redacted]@10.0.3.7"), "{text}");
    assert!(!text.contains("Pa55w0rd"), "{text}");
}
