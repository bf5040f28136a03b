use tool_envelope::{tool, ErrorEnvelope};

/// A synchronous body cannot be interrupted.
#[tool(timeout = "5s")]
fn sync_tool(order: String) -> Result<u32, ErrorEnvelope> {
    let _ = order;
    Ok(1)
}

/// Not a duration.
#[tool(timeout = "five seconds")]
async fn async_tool(order: String) -> Result<u32, ErrorEnvelope> {
    let _ = order;
    Ok(1)
}

fn main() {}
