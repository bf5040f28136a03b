use tool_envelope::{tool, ErrorEnvelope};

/// Looks up an order.
#[tool]
fn lookup(order: String, #[cfg(any())] trace: bool) -> Result<u32, ErrorEnvelope> {
    let _ = order;
    Ok(1)
}

fn main() {}
