#![deny(deprecated)]
use tool_envelope::{tool, ErrorEnvelope};

#[tool]
fn lookup(order: String) -> Result<u32, ErrorEnvelope> {
    let _ = order;
    Ok(1)
}

fn main() {}
