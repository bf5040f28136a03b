//! A deterministic guard: refunds above $500 are blocked before the tool runs
//! and routed to a human; a refund of $300 goes through.
//!
//! Run it with `cargo run --example guard`.

use tool_envelope::{
    ErrorEnvelope, Escalation,
    guard::{Blocked, ToolCall},
    retry::RetryPolicy,
    tool,
};

/// The policy: a hard limit, checked in code, every time. It fails closed:
/// an amount it cannot read blocks the call (`require` and `?`).
fn refund_cap(call: &ToolCall) -> Result<(), Blocked> {
    const CAP: u64 = 500;
    let amount: u64 = call.require("amount")?;
    if amount > CAP {
        return Err(
            Blocked::new(format!("Refund of ${amount} exceeds the ${CAP} policy cap"))
                .with_reason("REFUND_OVER_CAP")
                .with_alternative("Escalate to a human for approval")
                .with_alternative(format!("Offer store credit up to ${CAP}")),
        );
    }
    Ok(())
}

/// Refund an order.
#[tool(destructive, guard = refund_cap)]
fn process_refund(order: String, amount: u64) -> Result<String, ErrorEnvelope> {
    println!("  (the refund tool ran for {order})");
    Ok(format!("refunded ${amount} on {order}"))
}

fn main() {
    println!("── a refund of $300");
    println!(
        "  {}\n",
        process_refund("O-78".into(), 300).expect("within the cap")
    );

    println!("── a refund of $620");
    let envelope = process_refund("O-77".into(), 620).unwrap_err();
    let escalation = Escalation::from_envelope(envelope);
    println!("{}\n", serde_json::to_string_pretty(&escalation).unwrap());

    println!("── under a retry policy, a blocked call is not retried");
    let outcome = RetryPolicy::default().retry_blocking(|| process_refund("O-77".into(), 620));
    println!(
        "  {} attempt(s): {}",
        outcome.stats.attempts,
        outcome.result.unwrap_err()
    );
}
