//! Recover locally, escalate the rest.
//!
//! - a flaky service is recovered inside the tool's layer: the caller only
//!   sees the value and the statistics;
//! - a permission error is escalated after exactly one call;
//! - a deadline stops a fault that does not clear;
//! - a non-idempotent refund that timed out is not retried, and the
//!   escalation says why.
//!
//! Run it with `cargo run --example retry`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tool_envelope::{
    ErrorEnvelope, ToolError,
    retry::{Backoff, Jitter, RetryPolicy},
    tool,
};

#[derive(Debug, thiserror::Error, ToolError)]
enum ServiceError {
    #[error("Inventory service returned 503")]
    #[tool_error(transient, reason = "UNAVAILABLE")]
    Unavailable,
    #[error("Access denied to payroll table")]
    #[tool_error(
        permission,
        alternatives(
            "Request read grant on payroll schema",
            "Escalate to data-owner for approval"
        )
    )]
    Denied,
    #[error("Payments API timed out after {0} ms")]
    #[tool_error(transient, reason = "TIMEOUT")]
    Timeout(u64),
}

/// Reads stock levels; the service is flaky and fails the first two calls.
#[tool(read_only, skip(calls))]
async fn stock_level(sku: String, calls: Arc<AtomicU32>) -> Result<u32, ServiceError> {
    if calls.fetch_add(1, Ordering::SeqCst) < 2 {
        return Err(ServiceError::Unavailable);
    }
    Ok(sku.len() as u32 * 10)
}

/// Reads the payroll of a department.
#[tool(read_only, skip(calls))]
async fn read_payroll(dept: String, calls: Arc<AtomicU32>) -> Result<Vec<String>, ServiceError> {
    calls.fetch_add(1, Ordering::SeqCst);
    let _ = dept;
    Err(ServiceError::Denied)
}

/// Reads a report from a service that is down for good.
#[tool(read_only, skip(calls))]
async fn slow_report(name: String, calls: Arc<AtomicU32>) -> Result<String, ServiceError> {
    calls.fetch_add(1, Ordering::SeqCst);
    let _ = name;
    Err(ServiceError::Unavailable)
}

/// Refunds an order. Not idempotent: a timed-out refund may have gone through.
#[tool(destructive, skip(calls))]
async fn refund(order: String, amount: u64, calls: Arc<AtomicU32>) -> Result<String, ServiceError> {
    calls.fetch_add(1, Ordering::SeqCst);
    let _ = (order, amount);
    Err(ServiceError::Timeout(5_000))
}

fn counter() -> Arc<AtomicU32> {
    Arc::new(AtomicU32::new(0))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), ErrorEnvelope> {
    // One policy, reused at every call site.
    let policy = RetryPolicy::default().max_attempts(4).backoff(
        Backoff::exponential(Duration::from_millis(20), Duration::from_millis(200))
            .jitter(Jitter::Equal),
    );

    println!("── a flaky service, recovered locally");
    let calls = counter();
    let outcome = policy
        .retry(|| stock_level("SKU-123".into(), calls.clone()))
        .await;
    println!(
        "value {:?} after {} attempts, {:?} slept; history: {:?}\n",
        outcome.result.as_ref().ok(),
        outcome.stats.attempts,
        outcome.stats.slept,
        outcome
            .stats
            .history
            .iter()
            .map(|a| (a.attempt, a.category, a.delay))
            .collect::<Vec<_>>()
    );

    println!("── a permission error: escalated after exactly one call");
    let calls = counter();
    let outcome = policy
        .retry(|| read_payroll("ENG".into(), calls.clone()))
        .await;
    let escalation = outcome.result.unwrap_err();
    println!("the tool ran {} time(s)", calls.load(Ordering::SeqCst));
    println!("{}\n", serde_json::to_string_pretty(&escalation).unwrap());

    println!("── a fault that does not clear, stopped by the deadline");
    let calls = counter();
    let outcome = policy
        .clone()
        .max_attempts(100)
        .constant(Duration::from_millis(40))
        .deadline(Duration::from_millis(150))
        .retry(|| slow_report("daily".into(), calls.clone()))
        .await;
    let escalation = outcome.result.unwrap_err();
    println!(
        "{escalation}: {}",
        escalation.detail.as_deref().unwrap_or_default()
    );
    println!("the tool ran {} time(s)\n", calls.load(Ordering::SeqCst));

    println!("── a non-idempotent refund that timed out is not retried");
    let calls = counter();
    let outcome = policy
        .retry(|| refund("O-77".into(), 120, calls.clone()))
        .await;
    let escalation = outcome.result.unwrap_err();
    println!("the tool ran {} time(s)", calls.load(Ordering::SeqCst));
    println!("{}", serde_json::to_string_pretty(&escalation).unwrap());
    Ok(())
}
