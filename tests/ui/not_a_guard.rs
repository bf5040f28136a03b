use tool_envelope::{tool, ErrorEnvelope, guard::ToolCall};

/// Returns a bool instead of `Result<(), Blocked>`.
fn refund_cap(call: &ToolCall) -> bool {
    call.arg("amount").and_then(|a| a.as_u64()).unwrap_or(0) <= 500
}

/// Refunds an order.
#[tool(guard = refund_cap)]
fn process_refund(order: String, amount: u64) -> Result<String, ErrorEnvelope> {
    Ok(format!("refunded {amount} on {order}"))
}

fn main() {}
