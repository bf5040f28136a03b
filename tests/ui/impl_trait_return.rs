use tool_envelope::{tool, ErrorEnvelope};

/// Lists order ids.
#[tool]
fn order_ids(customer: String) -> Result<impl Iterator<Item = u32>, ErrorEnvelope> {
    let _ = customer;
    Ok(0..3)
}

fn main() {}
