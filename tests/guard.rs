//! Deterministic guards: hard limits enforced before a call runs.

use std::cell::Cell;

use serde_json::json;
use tool_envelope::{
    ErrorCategory, ErrorEnvelope, Escalation, EscalationReason,
    guard::{Blocked, Guard, Guards, ToolCall},
    retry::RetryPolicy,
    tool,
};

thread_local! {
    /// How many times the refund tool ran on this test's thread.
    static REFUNDS_RUN: Cell<u32> = const { Cell::new(0) };
}

/// The refund policy: refunds above $500 are routed to a human.
fn refund_cap(call: &ToolCall) -> Result<(), Blocked> {
    let amount: u64 = call.require("amount")?;
    if amount > 500 {
        return Err(
            Blocked::new(format!("Refund of ${amount} exceeds the $500 policy cap"))
                .with_alternative("Escalate to a human for approval")
                .with_alternative("Offer store credit within the auto-approve limit")
                .with_reason("REFUND_OVER_CAP"),
        );
    }
    Ok(())
}

/// Refund an order.
#[tool(guard = refund_cap)]
fn process_refund(order: String, amount: u64) -> Result<String, ErrorEnvelope> {
    REFUNDS_RUN.set(REFUNDS_RUN.get() + 1);
    Ok(format!("refunded ${amount} on {order}"))
}

#[test]
fn a_refund_over_the_cap_is_blocked_before_it_runs_and_routed_to_a_human() {
    let envelope = process_refund("O-77".into(), 620).unwrap_err();
    assert_eq!(REFUNDS_RUN.get(), 0, "the tool never ran");

    assert_eq!(envelope.category(), ErrorCategory::Business);
    assert!(!envelope.is_retryable());
    assert_eq!(
        envelope.message(),
        "Refund of $620 exceeds the $500 policy cap"
    );
    assert_eq!(
        envelope.alternatives(),
        [
            "Escalate to a human for approval",
            "Offer store credit within the auto-approve limit"
        ]
    );
    assert_eq!(envelope.reason(), Some("REFUND_OVER_CAP"));
    assert_eq!(envelope.tool(), Some("process_refund"));
    assert_eq!(
        envelope.attempted_query(),
        Some(&json!({"order": "O-77", "amount": 620}))
    );

    let escalation = Escalation::from_envelope(envelope);
    assert_eq!(escalation.reason, EscalationReason::BlockedByGuard);
    assert_eq!(escalation.attempts, 0);
}

#[test]
fn a_refund_within_the_cap_goes_through() {
    assert_eq!(
        process_refund("O-78".into(), 300).unwrap(),
        "refunded $300 on O-78"
    );
    assert_eq!(REFUNDS_RUN.get(), 1);
}

#[test]
fn a_blocked_call_escalates_from_the_retry_loop_without_retrying() {
    let outcome = RetryPolicy::default().retry_blocking(|| process_refund("O-77".into(), 620));
    assert_eq!(REFUNDS_RUN.get(), 0, "the tool never ran");
    let escalation = outcome.result.unwrap_err();
    assert_eq!(escalation.reason, EscalationReason::BlockedByGuard);
    assert_eq!(escalation.attempts, 0, "the tool never ran");
    assert_eq!(outcome.stats.attempts, 1);
    let json = serde_json::to_value(&escalation).unwrap();
    assert_eq!(json["escalation"]["reason"], "blocked_by_guard");
    assert_eq!(json["errorCategory"], "business");
}

thread_local! {
    static CHARGES: Cell<u32> = const { Cell::new(0) };
}

/// Charges a fee, then refunds through `process_refund`.
#[tool]
fn charge_then_refund(order: String, amount: u64) -> Result<String, ErrorEnvelope> {
    CHARGES.set(CHARGES.get() + 1);
    process_refund(order, amount)
}

/// A tool that ran, then passed on the failure of a tool it called whose
/// guard blocked it, is not reported as never run: its escalation counts
/// one attempt, and is not the inner call's guard block (which a person's
/// yes to would not make this call's).
#[test]
fn a_tool_that_ran_before_the_tool_it_called_was_blocked_is_not_reported_never_run() {
    let envelope = charge_then_refund("O-79".into(), 620).unwrap_err();
    assert_eq!((CHARGES.get(), REFUNDS_RUN.get()), (1, 0));
    assert_eq!(envelope.reason(), Some("REFUND_OVER_CAP"));
    let escalation = Escalation::from_envelope(envelope);
    assert_eq!(escalation.attempts, 1, "the outer tool ran");
    assert_ne!(escalation.reason, EscalationReason::BlockedByGuard);
}

/// A cap that blocks with the guard's own code, `BLOCKED_BY_GUARD`.
fn plain_cap(call: &ToolCall) -> Result<(), Blocked> {
    let amount: u64 = call.require("amount")?;
    match amount > 500 {
        true => Err(Blocked::new(format!("Refund of ${amount} is over the cap"))),
        false => Ok(()),
    }
}

/// Refunds under `plain_cap`.
#[tool(guard = plain_cap)]
fn capped_refund(order: String, amount: u64) -> Result<String, ErrorEnvelope> {
    Ok(format!("refunded ${amount} on {order}"))
}

/// Charges a fee, then refunds through `capped_refund`.
#[tool]
fn charge_then_capped_refund(order: String, amount: u64) -> Result<String, ErrorEnvelope> {
    CHARGES.set(CHARGES.get() + 1);
    capped_refund(order, amount)
}

/// Nor does the guard's own code, passed on, say that the outer tool never
/// ran.
#[test]
fn a_guards_own_code_passed_on_does_not_say_the_outer_tool_never_ran() {
    let envelope = capped_refund("O-80".into(), 620).unwrap_err();
    assert_eq!(envelope.reason(), Some("BLOCKED_BY_GUARD"));
    let envelope = charge_then_capped_refund("O-80".into(), 620).unwrap_err();
    assert_eq!(CHARGES.get(), 1);
    assert_eq!(envelope.reason(), None);
    let escalation = Escalation::from_envelope(envelope);
    assert_eq!(escalation.attempts, 1, "the outer tool ran");
    assert_ne!(escalation.reason, EscalationReason::BlockedByGuard);
}

/// A guard as a value, with configuration.
struct MaxRows(u64);

impl Guard for MaxRows {
    fn check(&self, call: &ToolCall<'_>) -> Result<(), Blocked> {
        let rows = call
            .arg("rows")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        if rows > self.0 {
            return Err(Blocked::new(format!(
                "{} may read at most {} rows, not {rows}",
                call.tool, self.0
            )));
        }
        Ok(())
    }
}

static EXPORT_LIMIT: MaxRows = MaxRows(1_000);

/// Export rows.
#[tool(guard = EXPORT_LIMIT)]
async fn export(table: String, rows: u64) -> Result<u64, ErrorEnvelope> {
    let _ = table;
    Ok(rows)
}

#[tokio::test]
async fn guards_are_plain_rust_values_and_work_on_async_tools() {
    assert_eq!(export("orders".into(), 10).await.unwrap(), 10);
    let envelope = export("orders".into(), 5_000).await.unwrap_err();
    assert_eq!(
        envelope.message(),
        "export may read at most 1000 rows, not 5000"
    );
    assert_eq!(envelope.category(), ErrorCategory::Business);
}

/// A JSON object, as guards see arguments.
fn args(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    value.as_object().expect("an object").clone()
}

#[test]
fn a_set_of_tools_shares_guards_and_the_first_block_wins() {
    let guards = Guards::new()
        .for_all(|call: &ToolCall| {
            if call.tool.starts_with("drop_") {
                Err(Blocked::new("Dropping data is never automatic").with_alternative("Ask a DBA"))
            } else {
                Ok(())
            }
        })
        .for_tool("process_refund", refund_cap)
        .for_all(MaxRows(100));

    assert!(
        guards
            .check(
                "process_refund",
                &args(json!({"order": "O-1", "amount": 300}))
            )
            .is_ok()
    );
    let blocked = guards
        .check("process_refund", &args(json!({"amount": 900})))
        .unwrap_err();
    assert_eq!(
        blocked.to_string(),
        "Refund of $900 exceeds the $500 policy cap"
    );
    let blocked = guards
        .check("drop_table", &args(json!({"rows": 10_000})))
        .unwrap_err();
    assert_eq!(blocked.to_string(), "Dropping data is never automatic");
    let blocked = guards
        .check("export", &args(json!({"rows": 101})))
        .unwrap_err();
    assert_eq!(
        blocked.to_string(),
        "export may read at most 100 rows, not 101"
    );
    // The refund guard applies to that tool only.
    assert!(
        guards
            .check("lookup", &args(json!({"amount": 900})))
            .is_ok()
    );
}

#[test]
fn a_human_request_and_a_policy_gap_are_explicit_triggers() {
    let envelope = ErrorEnvelope::business("The customer asked for a human")
        .with_reason(tool_envelope::reasons::HUMAN_REQUESTED);
    assert_eq!(
        Escalation::from_envelope(envelope).reason,
        EscalationReason::HumanRequested
    );
    let envelope = ErrorEnvelope::business("No rule covers refunds on gift cards")
        .with_reason(tool_envelope::reasons::POLICY_GAP);
    assert_eq!(
        Escalation::from_envelope(envelope).reason,
        EscalationReason::PolicyGap
    );
}

/// Refund an order whose amount is optional: the guard must see one.
#[tool(guard = refund_cap)]
fn refund_maybe(order: String, amount: Option<u64>) -> Result<String, ErrorEnvelope> {
    REFUNDS_RUN.set(REFUNDS_RUN.get() + 1);
    Ok(format!("refunded {amount:?} on {order}"))
}

#[test]
fn a_guard_that_cannot_read_what_it_guards_blocks_the_call() {
    let before = REFUNDS_RUN.get();
    let envelope = refund_maybe("O-80".into(), None).unwrap_err();
    assert_eq!(envelope.category(), ErrorCategory::Business);
    assert_eq!(
        envelope.reason(),
        Some(tool_envelope::reasons::UNREADABLE_ARGUMENT)
    );
    assert!(
        envelope
            .message()
            .contains("could not read the argument `amount` (it does not have the type"),
        "{}",
        envelope.message()
    );
    assert_eq!(REFUNDS_RUN.get(), before, "the body never ran");
    assert!(refund_maybe("O-81".into(), Some(40)).is_ok());
    assert!(refund_maybe("O-82".into(), Some(620)).is_err());

    // Missing altogether: blocked too.
    let arguments = serde_json::Map::new();
    let blocked = refund_cap(&ToolCall::new("refund_maybe", &arguments)).unwrap_err();
    assert!(blocked.to_string().contains("(it is missing)"), "{blocked}");
}
