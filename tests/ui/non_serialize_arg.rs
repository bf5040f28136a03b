use tool_envelope::{tool, ErrorEnvelope};

pub struct Pool;

/// Looks up an order.
#[tool]
fn lookup(pool: &Pool, order: String) -> Result<u32, ErrorEnvelope> {
    let _ = (pool, order);
    Ok(1)
}

fn main() {}
