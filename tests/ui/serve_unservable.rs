use tool_envelope::mcp::ToolSet;
use tool_envelope::{tool, ErrorEnvelope};

pub struct Pool;

/// Looks up an order with a pool the client cannot send.
#[tool(skip(pool))]
fn lookup(pool: &Pool, order: String) -> Result<u32, ErrorEnvelope> {
    let _ = (pool, order);
    Ok(1)
}

fn main() {
    let _ = ToolSet::new().tool::<lookup>();
}
