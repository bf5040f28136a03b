//! Five failures an agent's tools meet, end to end: each tool is an ordinary function with
//! `#[tool]`, and each failure comes back as an envelope a caller can route on.
//!
//! Run it with `cargo run --example quickstart`.

use serde::Serialize;
use serde_json::json;
use tool_envelope::{ErrorEnvelope, Found, Partial, ToolError, tool};

/// How the orders service can fail.
#[derive(Debug, thiserror::Error, ToolError)]
enum OrdersError {
    #[error("Connection to orders DB timed out after {0}s")]
    #[tool_error(
        transient,
        reason = "DB_TIMEOUT",
        alternatives("Retry against the read replica")
    )]
    Timeout(u64),
    #[error("Refund blocked by policy threshold")]
    #[tool_error(
        business,
        reason = "REFUND_OVER_CAP",
        alternatives(
            "Refund exceeds ${cap} policy cap — escalate to human",
            "Offer store credit within auto-approve limit"
        )
    )]
    OverCap {
        cap: u64,
        /// What was verified before the rule said no.
        #[tool_error(partial)]
        checked: serde_json::Value,
    },
}

/// An order, as the look-up returns it.
#[derive(Debug, Serialize)]
struct Order {
    id: String,
    status: String,
}

/// Look up a customer's orders, optionally filtered by status.
#[tool(read_only)]
fn lookup_orders(customer_id: String, status: Option<String>) -> Result<Found<Order>, OrdersError> {
    match customer_id.as_str() {
        // The database did not answer: a failure, worth a retry.
        "C-4821" => Err(OrdersError::Timeout(5)),
        // The query ran and matched nothing: a valid, final answer.
        _ => {
            let _ = status;
            Ok(Found::none())
        }
    }
}

/// Refund an order, within the auto-approve policy.
#[tool(destructive)]
fn process_refund(order: String, amount: u64) -> Result<String, OrdersError> {
    const CAP: u64 = 500;
    if amount > CAP {
        return Err(OrdersError::OverCap {
            cap: CAP,
            checked: json!({"order_total": amount, "customer_verified": true}),
        });
    }
    Ok(format!("refunded {amount} on {order}"))
}

/// Read the payroll of a department.
#[tool(read_only, redact(api_token))]
fn read_payroll(dept: String, api_token: String) -> Result<Vec<String>, ErrorEnvelope> {
    let _ = api_token;
    Err(ErrorEnvelope::permission("Access denied to payroll table")
        .with_attempted_query(format!("SELECT * FROM payroll WHERE dept='{dept}'"))
        .with_partial_results(json!([]))
        .with_alternatives([
            "Request read grant on payroll schema",
            "Escalate to data-owner for approval",
        ]))
}

/// A source found by the research tool.
#[derive(Debug, Clone, Serialize)]
struct Source {
    title: String,
}

/// Fetch `wanted` sources on a topic; the provider rate-limits after six.
#[tool(read_only)]
fn research(
    topic: String,
    wanted: usize,
    sources: Partial<Source>,
) -> Result<Vec<Source>, ErrorEnvelope> {
    for i in sources.len()..wanted {
        if i == 6 {
            return Err(ErrorEnvelope::transient(format!(
                "Provider rate-limited after {i} sources"
            ))
            .with_reason("RATE_LIMITED"));
        }
        sources.push(Source {
            title: format!("source {}", i + 1),
        });
    }
    let _ = topic;
    Ok(sources.to_vec())
}

fn show(title: &str, value: &impl Serialize) {
    println!("── {title}");
    println!(
        "{}\n",
        serde_json::to_string_pretty(value).expect("serializable")
    );
}

fn main() {
    // 1. A transient timeout: retryable, with the query that was attempted.
    let timeout = lookup_orders("C-4821".into(), Some("shipped".into())).unwrap_err();
    show("transient: the orders DB timed out", &timeout);

    // 2. A valid empty lookup: not an error, nothing to retry.
    let empty = lookup_orders("C-0000".into(), None).expect("empty is a success");
    show("success: the look-up ran and matched nothing", &empty);

    // 3. A business rule: not retryable, with what was checked and the next moves.
    let refund = process_refund("O-77".into(), 620).unwrap_err();
    show("business: refund above the policy cap", &refund);

    // 4. A permission denial: the secret never reaches the envelope.
    let payroll = read_payroll("ENG".into(), "tok-s3cr3t".into()).unwrap_err();
    show("permission: payroll is off limits", &payroll);

    // 5. Partial results: six of ten sources gathered before the rate limit.
    let sources = Partial::new();
    let research = research("EU AI Act timelines".into(), 10, sources.clone()).unwrap_err();
    show("transient with partial results: 6 of 10 sources", &research);
    println!(
        "the caller still holds {} sources to resume from",
        sources.len()
    );
}
