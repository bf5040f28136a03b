use tool_envelope::{tool, ErrorEnvelope};

/// Looks up an order.
#[tool(nmae = "lookup_order", idempotnt)]
fn lookup(order: String) -> Result<u32, ErrorEnvelope> {
    let _ = order;
    Ok(1)
}

fn main() {}
